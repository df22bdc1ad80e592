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


def test_a_rebuild_refuses_to_launder_an_altered_event(story: int, home: Path, toolcat: Any) -> None:
    # given a read model that recorded every event's hash, and one stored event altered since
    p = story // 2
    before = ok(toolcat("sql", f"select hash from events where position = {p}"))[0]["hash"]
    tamper(home, p, forge_actor)

    # when the read model is rebuilt, then the swap is refused naming the position, and nothing changes
    error = integrity_failure(toolcat("rebuild"))
    assert [a["position"] for a in error["details"]["altered"]] == [p]
    assert error["details"]["altered"][0]["old_hash"] == before
    assert f" {p}" in error["message"] and "--accept-altered-history" in error["message"]
    assert not (home / "catalog.duckdb.rebuild").exists()
    # the live read model still convicts the edit
    assert integrity_failure(toolcat("audit", "verify"))["details"]["position"] == p
    assert ok(toolcat("sql", f"select actor from events where position = {p}")) == [{"actor": "tester"}]


def test_accepting_altered_history_needs_a_reason_and_is_recorded_on_the_chain(
        story: int, home: Path, toolcat: Any) -> None:
    sealed = ok(toolcat("audit", "seal"))
    p = story // 2
    before = ok(toolcat("sql", f"select hash from events where position = {p}"))[0]["hash"]
    tamper(home, p, forge_actor)

    # when acceptance is asked without a reason, then it is a usage error and nothing is written
    refused = toolcat("rebuild", "--accept-altered-history")
    assert refused.code == 2 and "--reason" in refused.error["message"]

    # when it is asked with one, then the rebuild is swapped in and the acceptance is an audit event
    rebuilt = ok(toolcat("rebuild", "--accept-altered-history", "--reason", "restored from backup"))
    accepted = rebuilt["accepted"]
    assert [a["position"] for a in accepted["altered"]] == [p]
    assert accepted["altered"][0]["old_hash"] == before != accepted["altered"][0]["new_hash"]
    assert [s["seal_position"] for s in accepted["seals"]] == [sealed["position"]]
    assert rebuilt["position"] == accepted["position"] == sealed["position"] + 1
    recorded = ok(toolcat("sql", "select type, reason, data from events where position = "
                                 f"{accepted['position']}"))[0]
    assert recorded["type"] == "Audit.AlteredHistoryAccepted" and recorded["reason"] == "restored from backup"
    assert recorded["data"]["altered"] == accepted["altered"]
    assert recorded["data"]["seals"] == [sealed["position"]]
    assert ok(toolcat("sql", f"select actor from events where position = {p}")) == [{"actor": "tesTer"}]

    # then a later rebuild agrees with the model it replaces, and verify holds: the acceptance covers the seal
    assert ok(toolcat("rebuild"))["accepted"] is None
    assert ok(toolcat("audit", "verify"))["ok"] is True


def test_audit_replay_names_the_altered_positions(story: int, home: Path, toolcat: Any) -> None:
    # given an event altered after the read model recorded its hash
    p = story // 3
    tamper(home, p, forge_actor)

    # when the history is replayed, then it answers exit 5 naming the position with both hashes
    run = toolcat("audit", "replay")
    assert run.code == 5
    replayed = run.json
    assert replayed["matches"] is False
    assert [a["position"] for a in replayed["altered"]] == [p]
    assert replayed["altered"][0]["old_hash"] != replayed["altered"][0]["new_hash"]
    text = toolcat("audit", "replay", json_output=False)
    assert text.code == 5 and f"position(s) {p} " in text.stdout


def test_a_rebuild_with_no_old_read_model_still_answers_to_the_seals(story: int, home: Path, toolcat: Any) -> None:
    sealed = ok(toolcat("audit", "seal"))
    tamper(home, story // 2, forge_actor)
    (home / "catalog.duckdb").unlink()

    error = integrity_failure(toolcat("rebuild"))
    assert [s["seal_position"] for s in error["details"]["seals"]] == [sealed["position"]]
    assert str(sealed["position"]) in error["message"]


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
