"""`audit verify` against a real SQLite event store that someone altered behind the catalog's back."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from domain.errors import IntegrityFailure
from infra.settings import Settings
from projections.verify import verify
from projections.catchup import catch_up
from projections.projector import Projector
from tests.integration.helpers import stored_records, tell_story


@pytest.fixture
def projected(sqlite_catalog: Any, sqlite_read_model: Any, meta: Any) -> Any:
    """Given the catalog story is stored in SQLite and the read model projected all of it."""
    tell_story(sqlite_catalog, meta)
    catch_up(sqlite_catalog, Projector(sqlite_read_model))
    return sqlite_catalog


@contextmanager
def raw_store(settings: Settings) -> Iterator[tuple[sqlite3.Connection, str, str]]:
    """The events table of the SQLite file, opened as an intruder would: (connection, table, position
    column). eventsourcing's table holds `state` BLOBs; the position is `notification_id` when the
    table has one, else SQLite's rowid."""
    db = sqlite3.connect(settings.event_store_path)
    try:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            if "state" in columns and "topic" in columns:
                yield db, table, "notification_id" if "notification_id" in columns else "rowid"
                db.commit()
                return
        raise AssertionError(f"no events table among {tables}")
    finally:
        db.close()


def test_a_clean_catalog_verifies(projected: Any, sqlite_read_model: Any) -> None:
    report = verify(projected, sqlite_read_model)
    assert report["ok"] is True
    assert report["events"] == len(stored_records(projected))
    assert report["head"] == Projector(sqlite_read_model).tracking().hash


@pytest.mark.parametrize("which", ["Tool.Registered", "Tool.MilestoneRecorded", "last"])
def test_an_altered_event_is_found_at_its_position(projected: Any, sqlite_read_model: Any,
                                                   sqlite_settings: Settings, which: str) -> None:
    stored = stored_records(projected)
    victim = stored[-1] if which == "last" else next(r for r in stored if r.topic == which)
    p = victim.position

    # when someone rewrites who made that change, keeping the stored bytes the same length
    with raw_store(sqlite_settings) as (db, table, position):
        (state,) = db.execute(f"SELECT state FROM {table} WHERE {position} = ?", [p]).fetchone()
        assert state.count(b'"actor":"tester"') == 1
        forged = state.replace(b'"actor":"tester"', b'"actor":"mallor"')
        assert len(forged) == len(state)
        changed = db.execute(f"UPDATE {table} SET state = ? WHERE {position} = ?", [forged, p]).rowcount
        assert changed == 1

    # then verify stops at exactly that position
    with pytest.raises(IntegrityFailure) as raised:
        verify(projected, sqlite_read_model)
    assert (raised.value.code, raised.value.exit_code) == ("integrity", 5)
    assert raised.value.details["position"] == p
    assert str(p) in raised.value.message


@pytest.mark.parametrize("which", ["middle", "first", "last"])
def test_a_deleted_event_is_named_by_its_position(projected: Any, sqlite_read_model: Any,
                                                  sqlite_settings: Settings, which: str) -> None:
    stored = stored_records(projected)
    p = {"middle": stored[len(stored) // 2], "first": stored[0], "last": stored[-1]}[which].position

    # when someone deletes one stored event
    with raw_store(sqlite_settings) as (db, table, position):
        assert db.execute(f"DELETE FROM {table} WHERE {position} = ?", [p]).rowcount == 1

    # then verify names the missing position
    assert p not in [r.position for r in stored_records(projected)]
    with pytest.raises(IntegrityFailure) as raised:
        verify(projected, sqlite_read_model)
    assert (raised.value.code, raised.value.exit_code) == ("integrity", 5)
    assert raised.value.details["position"] == p
    assert str(p) in raised.value.message
