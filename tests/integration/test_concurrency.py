"""Two writers at once: exactly one wins, the other is told so, and nothing is lost or doubled.

(a) two real `toolcat` processes racing on the same home (SQLite file store);
(b) a deterministic race on both stores: two child processes build their batches, meet at a barrier,
    then save at the same moment.
"""
from __future__ import annotations

import json
import multiprocessing
import queue
import subprocess
from pathlib import Path
from typing import Any

import pytest

from domain.base import Meta
from domain.errors import Conflict
from domain.naming import preset
from domain.values import ToolSpec
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections import queries
from projections.verify import verify
from projections.catchup import catch_up
from projections.projector import Projector
from tests.integration.helpers import child_open, child_race, stored_records
from tests.support import TOOLCAT, toolcat_env


def _env(home: Path) -> dict[str, str]:
    return toolcat_env("racer", {"TOOLCAT_HOME": str(home)})


def _registrations(catalog: Any, tool_id: str) -> list[Any]:
    return [r for r in stored_records(catalog)
            if r.topic == "Tool.Registered" and r.state["tool_id"] == tool_id]


# -- (a) the command line ----------------------------------------------------------------------------

def test_two_cli_processes_registering_the_same_id_have_exactly_one_winner(home: Path) -> None:
    env = _env(home)
    init = subprocess.run([TOOLCAT, "init", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr

    for round_number in range(1, 6):
        tool_id = f"same.tool-{round_number}"
        command = [TOOLCAT, "tool", "register", tool_id, "--source", "builtin", "--group", "core",
                   "--tier", "default", "--visibility", "public", "--json"]
        # when two operators register the same ID at the same moment
        racers = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True) for _ in range(2)]
        outcomes = []
        for racer in racers:
            stdout, stderr = racer.communicate(timeout=120)
            outcomes.append((racer.returncode, stdout, stderr))

        # then exactly one wins and the other is told it lost (conflict, or the duplicate it now is)
        codes = sorted(code for code, _, _ in outcomes)
        assert codes in ([0, 3], [0, 4]), f"round {round_number}: {outcomes}"
        winner = next(o for o in outcomes if o[0] == 0)
        loser = next(o for o in outcomes if o[0] != 0)
        assert {"Tool.Registered", "Name.Claimed"} <= {e["type"] for e in json.loads(winner[1])["events"]}
        assert loser[1] == ""
        error = json.loads(loser[2])["error"]
        assert error["code"] == {3: "duplicate_tool", 4: "conflict"}[loser[0]]

    # and the store holds exactly one registration per ID
    catalog = open_catalog(Settings(home=home, event_store_url=None))
    try:
        for round_number in range(1, 6):
            assert len(_registrations(catalog, f"same.tool-{round_number}")) == 1
    finally:
        catalog.close()


def test_two_first_ever_commands_on_a_fresh_home_have_exactly_one_winner(tmp_path: Path) -> None:
    # given nothing at all in the home yet, not even the event store file,
    # when two operators register the same ID as the very first command, at the same moment
    for round_number in range(1, 4):
        home = tmp_path / f"fresh-{round_number}"
        command = [TOOLCAT, "tool", "register", "same.tool", "--source", "builtin", "--group", "core",
                   "--tier", "default", "--visibility", "public", "--json"]
        racers = [subprocess.Popen(command, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True) for _ in range(2)]
        outcomes = []
        for racer in racers:
            stdout, stderr = racer.communicate(timeout=120)
            outcomes.append((racer.returncode, stdout, stderr))

        # then exactly one wins, the other is told it lost, and the store holds one registration
        codes = sorted(code for code, _, _ in outcomes)
        assert codes in ([0, 3], [0, 4]), f"round {round_number}: {outcomes}"
        catalog = open_catalog(Settings(home=home, event_store_url=None))
        try:
            assert len(_registrations(catalog, "same.tool")) == 1
        finally:
            catalog.close()


# -- (b) the application, deterministic, on both stores ----------------------------------------------

def _race(settings: Settings, action: str, args_by_racer: dict[str, list[Any]]) -> dict[str, tuple]:
    """Start one child per racer; each builds its batch, waits for the other, then saves."""
    context = multiprocessing.get_context("spawn")
    open_lock = context.Lock()
    barrier = context.Barrier(len(args_by_racer))
    results = context.Queue()
    children = [context.Process(target=child_race,
                                args=(settings.model_dump(), open_lock, barrier, results, name, action, args))
                for name, args in args_by_racer.items()]
    for child in children:
        child.start()
    outcomes: dict[str, tuple] = {}
    try:
        for _ in children:
            name, *outcome = results.get(timeout=120)
            outcomes[name] = tuple(outcome)
    except queue.Empty:
        pytest.fail(f"a racer never answered; answers so far: {outcomes}")
    finally:
        for child in children:
            child.join(timeout=60)
    assert [child.exitcode for child in children] == [0, 0]
    return outcomes


def _one_winner(outcomes: dict[str, tuple]) -> tuple[str, dict[str, Any]]:
    assert not [o for o in outcomes.values() if o[0] == "error"], outcomes
    winners = [name for name, o in outcomes.items() if o[0] == "ok"]
    losers = [name for name, o in outcomes.items() if o[0] == "conflict"]
    assert len(winners) == 1 and len(losers) == 1, outcomes
    assert outcomes[losers[0]][1:] == (Conflict.exit_code, "conflict") == (4, "conflict")
    return winners[0], outcomes[winners[0]][1]


@pytest.fixture
def prepared(store_settings: Settings, meta: Meta) -> Settings:
    """Given an initialised catalog with one release and the tool `read`."""
    catalog = open_catalog(store_settings)
    try:
        catalog.init(preset("tyrum"), meta)
        catalog.publish_release("1.0.0", meta)
        catalog.register_tool("read", ToolSpec(source="builtin", group="core", tier="default",
                                               visibility="public"), meta)
    finally:
        catalog.close()
    return store_settings


def _project_and_verify(settings: Settings) -> tuple[Any, Any]:
    catalog = open_catalog(settings)
    con = open_read_model(settings)
    catch_up(catalog, Projector(con))
    report = verify(catalog, con)
    assert report["ok"] is True
    assert report["events"] == len(stored_records(catalog))
    return catalog, con


def test_two_writers_registering_the_same_id_at_once_have_exactly_one_winner(prepared: Settings) -> None:
    # when two processes register `same.tool`, each with its own description, at the same moment
    outcomes = _race(prepared, "register", {"alice": ["same.tool", "alice's tool"],
                                            "bob": ["same.tool", "bob's tool"]})

    # then exactly one returns a WriteResult and the other gets a Conflict
    winner, result = _one_winner(outcomes)
    assert [e["type"] for e in result["events"]] == ["Tool.Registered", "Name.Claimed"]

    # and the store holds the winner's registration only: no lost update, no double
    catalog, con = _project_and_verify(prepared)
    try:
        registrations = _registrations(catalog, "same.tool")
        assert len(registrations) == 1
        assert registrations[0].position == result["events"][0]["position"]
        assert registrations[0].state["actor"] == winner
        assert registrations[0].state["spec"]["description"] == f"{winner}'s tool"
        assert queries.tool_show(con, "same.tool")["description"] == f"{winner}'s tool"
    finally:
        con.close()
        catalog.close()


def test_two_writers_changing_the_same_tool_at_once_never_lose_an_update(prepared: Settings) -> None:
    # when two processes each add a different alias to the same tool at the same moment
    outcomes = _race(prepared, "alias", {"alice": ["read", "alice.read"], "bob": ["read", "bob.read"]})

    # then exactly one wins; the loser's alias was not written at all
    winner, result = _one_winner(outcomes)
    loser = ({"alice", "bob"} - {winner}).pop()
    catalog, con = _project_and_verify(prepared)
    try:
        added = [r for r in stored_records(catalog) if r.topic == "Tool.AliasAdded"]
        assert [r.state["alias"] for r in added] == [f"{winner}.read"]
        assert catalog.owner_of(f"{loser}.read") is None
        assert [a["id"] for a in queries.tool_show(con, "read")["aliases"]] == [f"{winner}.read"]
        assert queries.resolve(con, f"{winner}.read")["canonical_id"] == "read"
    finally:
        con.close()
        catalog.close()

    # and the loser, run again, now succeeds on top of the winner's change
    catalog = open_catalog(prepared)
    try:
        catalog.add_alias("read", f"{loser}.read", False, Meta(actor=loser))
        assert set(catalog.canonical_tool("read").aliases) == {"alice.read", "bob.read"}
    finally:
        catalog.close()


# -- opening the store at the same moment ------------------------------------------------------------

def test_processes_opening_the_catalog_at_the_same_moment_all_succeed(store_settings: Settings) -> None:
    """Several commands starting at once (the reason PostgreSQL is offered: several writers) must all
    get a working catalog: the first time, on a store nobody created yet, and every time after."""
    context = multiprocessing.get_context("spawn")
    racers = 4
    failures = []
    for round_number in range(1, 4):  # the fresh store, then twice an existing one
        barrier = context.Barrier(racers)
        results = context.Queue()
        names = [f"r{round_number}-p{i}" for i in range(racers)]
        children = [context.Process(target=child_open, args=(store_settings.model_dump(), barrier, results,
                                                              name)) for name in names]
        for child in children:
            child.start()
        try:
            outcomes = [results.get(timeout=120) for _ in children]
        finally:
            for child in children:
                child.join(timeout=60)
        failures += [f"round {round_number} ({'fresh store' if round_number == 1 else 'existing store'}): "
                     f"{name}: {message}" for name, status, message in outcomes if status != "ok"]
    assert not failures, "\n".join(failures)
