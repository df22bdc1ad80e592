"""`toolcat audit verify` and `toolcat audit seal` against a SQLite event store that someone altered behind
the catalog's back, through the real command line.

The story is the bundled example (`examples/tyrum.toolcat`), written in-process for speed; every audit
question is then asked of the `toolcat` command line, as an operator would.
"""
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support import Run, ok

ACTOR = b'"actor":"tester"'
FORGED = b'"actor":"tesTer"'  # one byte changed, still valid JSON, same length


@contextlib.contextmanager
def events_table(home: Path) -> Iterator[tuple[sqlite3.Connection, str]]:
    """The stored events of the SQLite file, opened as an intruder would: (connection, table). The
    table is eventsourcing's (`catalog_events` or `stored_events`, per version); its rowid is the position."""
    db = sqlite3.connect(home / "events.sqlite")
    try:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        candidates = [t for t in tables
                      if {"state", "topic"} <= {row[1] for row in db.execute(f"PRAGMA table_info({t})")}]
        assert len(candidates) == 1, f"expected one events table among {tables}"
        yield db, candidates[0]
        db.commit()
    finally:
        db.close()


def tamper(home: Path, position: int, change: Any) -> None:
    """Replace the `state` BLOB of the event at `position` by `change(state)`, same length."""
    with events_table(home) as (db, table):
        (state,) = db.execute(f"SELECT state FROM {table} WHERE rowid = ?", [position]).fetchone()
        forged = change(bytes(state))
        assert forged != state and len(forged) == len(state)
        assert db.execute(f"UPDATE {table} SET state = ? WHERE rowid = ?", [forged, position]).rowcount == 1


def forge_actor(state: bytes) -> bytes:
    assert state.count(ACTOR) == 1, state
    return state.replace(ACTOR, FORGED)


def integrity_failure(run: Run) -> dict[str, Any]:
    """An audit that found the history altered: exit 5, nothing on stdout, the JSON error on stderr."""
    assert run.code == 5, f"expected exit 5, got {run.code}\nstdout: {run.stdout}\nstderr: {run.stderr}"
    assert run.stdout.strip() == ""
    error = run.error
    assert error["code"] == "integrity", error
    assert isinstance(error["message"], str) and error["message"]
    return error


def test_a_clean_catalog_with_two_seals_verifies(story: int, cli: Any, toolcat: Any) -> None:
    first = ok(toolcat("audit", "seal"))
    assert first["position"] > story and {e["type"] for e in first["events"]} >= {"Audit.Sealed"}
    ok(cli("unit", "create", "after-first-seal"))
    second = ok(toolcat("audit", "seal"))
    assert [e["type"] for e in second["events"]] == ["Audit.Sealed"]

    report = ok(toolcat("audit", "verify"))
    assert report["ok"] is True
    assert report["seals"] == 2
    assert report["events"] == second["position"]
    # the two seals are stored and projected like any other event
    seals = ok(cli("sql", "select position from events where type = 'Audit.Sealed' order by position"))
    assert [s["position"] for s in seals] == [first["position"], second["position"]]


def test_an_altered_event_before_any_seal_is_found_at_its_position(story: int, home: Path, toolcat: Any) -> None:
    clean = ok(toolcat("audit", "verify"))
    assert clean["ok"] is True and clean["seals"] == 0 and clean["events"] == story

    p = story // 2
    tamper(home, p, forge_actor)

    error = integrity_failure(toolcat("audit", "verify"))
    assert error["details"]["position"] == p
    assert str(p) in error["message"]


def test_an_altered_event_before_the_seal_is_found_at_its_position(story: int, home: Path, toolcat: Any) -> None:
    sealed = ok(toolcat("audit", "seal"))
    assert ok(toolcat("audit", "verify"))["seals"] == 1

    p = story // 3
    assert p < sealed["position"]
    tamper(home, p, forge_actor)

    error = integrity_failure(toolcat("audit", "verify"))
    assert error["details"]["position"] == p
    assert str(p) in error["message"]


def test_a_rebuilt_read_model_agrees_with_the_altered_store_but_the_seal_does_not(
        story: int, home: Path, toolcat: Any) -> None:
    sealed = ok(toolcat("audit", "seal"))
    p = story // 2
    tamper(home, p, forge_actor)

    # when the read model is rebuilt from the altered store, it vouches for the forged event
    rebuilt = ok(toolcat("rebuild"))
    assert rebuilt["position"] == sealed["position"]
    forged = ok(toolcat("sql", f"select actor from events where position = {p}"))
    assert forged == [{"actor": "tesTer"}]

    # then the seal, stored before the forgery, still finds it
    error = integrity_failure(toolcat("audit", "verify"))
    assert "seal" in error["message"]
    assert error["details"]["seal_position"] == sealed["position"]
    assert str(sealed["position"]) in error["message"]
    # the seal vouches for the head at sealing time; the forged event lies at or before it
    assert p <= error["details"]["position"] <= story


def test_a_deleted_event_is_named_as_a_hole(story: int, home: Path, toolcat: Any) -> None:
    ok(toolcat("audit", "verify"))
    p = story // 2
    with events_table(home) as (db, table):
        assert db.execute(f"DELETE FROM {table} WHERE rowid = ?", [p]).rowcount == 1

    error = integrity_failure(toolcat("audit", "verify"))
    assert error["details"]["position"] == p
    assert str(p) in error["message"]
    assert "missing" in error["message"] or "hole" in error["message"]


def test_a_deleted_event_is_found_even_after_a_seal(story: int, home: Path, toolcat: Any) -> None:
    sealed = ok(toolcat("audit", "seal"))
    p = story - 5
    with events_table(home) as (db, table):
        assert db.execute(f"DELETE FROM {table} WHERE rowid = ?", [p]).rowcount == 1
    assert p < sealed["position"]

    error = integrity_failure(toolcat("audit", "verify"))
    assert error["details"]["position"] == p
    assert str(p) in error["message"]


def test_an_event_whose_bytes_no_longer_parse_is_named_not_a_crash(story: int, home: Path, toolcat: Any) -> None:
    ok(toolcat("audit", "verify"))
    p = story // 2
    tamper(home, p, lambda state: state[:-1] + b"!")  # the closing brace becomes garbage

    run = toolcat("audit", "verify")
    assert "Traceback" not in run.stderr
    error = integrity_failure(run)
    assert error["details"]["position"] == p
    assert str(p) in error["message"]
