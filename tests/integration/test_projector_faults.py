"""The projector under faults, on the SQLite store and real DuckDB files: replays, crashes between
pages and inside a batch (in a real child process that dies without cleanup), gaps and tampering."""
from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from domain.errors import IntegrityFailure
from infra.settings import Settings
from infra.wiring import open_read_model
from projections.catalog_part import CatalogPart
from projections.catchup import catch_up
from projections.effective.maintenance import valid_through
from projections.canonical import GENESIS_HASH
from projections.envelope import chain_all
from projections.projector import Projector
from projections.tracking import read_tracking
from tests.integration.helpers import (
    TABLES,
    row_counts,
    run_child,
    snapshot,
    stored_records,
    tell_story,
    tracking_row,
)


@pytest.fixture
def written(sqlite_catalog: Any, meta: Any) -> Any:
    """Given the catalog story is in the SQLite store."""
    tell_story(sqlite_catalog, meta)
    return sqlite_catalog


def fresh_snapshot(catalog: Any, settings: Settings, tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    """The read model built from scratch in a second DuckDB file."""
    con = open_read_model(settings, tmp_path / "fresh.duckdb")
    try:
        catch_up(catalog, Projector(con))
        return snapshot(con)
    finally:
        con.close()


def assert_complete(con: Any, catalog: Any, settings: Settings, tmp_path: Path) -> None:
    """Every stored position once, tracking at the head, and rows equal to a from-scratch build."""
    stored = [r.position for r in stored_records(catalog)]
    projected = [row[0] for row in con.execute("SELECT position FROM events ORDER BY position").fetchall()]
    assert projected == stored
    tracking = read_tracking(con)
    assert tracking.position == stored[-1]
    assert tracking.events == len(stored)
    expected = fresh_snapshot(catalog, settings, tmp_path)
    actual = snapshot(con)
    differing = {table: f"{len(actual[table])} rows, a fresh build has {len(expected[table])}"
                 for table in TABLES if actual[table] != expected[table]}
    assert not differing, f"tables differ from a read model built from scratch: {differing}"


# -- replay ------------------------------------------------------------------------------------------

def test_catching_up_twice_changes_nothing(written: Any, sqlite_read_model: Any) -> None:
    first = catch_up(written, Projector(sqlite_read_model))
    before, tracking_before = snapshot(sqlite_read_model), tracking_row(sqlite_read_model)

    second = catch_up(written, Projector(sqlite_read_model))

    assert second == first
    assert snapshot(sqlite_read_model) == before
    assert tracking_row(sqlite_read_model) == tracking_before


def test_applying_the_same_envelopes_again_changes_nothing(written: Any, sqlite_read_model: Any) -> None:
    envelopes = chain_all(stored_records(written), 0, GENESIS_HASH)
    projector = Projector(sqlite_read_model)
    applied = projector.apply(envelopes)
    before, tracking_before = snapshot(sqlite_read_model), tracking_row(sqlite_read_model)

    again = projector.apply(envelopes)              # the whole batch delivered twice
    tail = Projector(sqlite_read_model).apply(envelopes[-3:])  # a redelivered tail, new projector

    assert again == applied == tail
    assert snapshot(sqlite_read_model) == before
    assert tracking_row(sqlite_read_model) == tracking_before
    assert row_counts(sqlite_read_model)["events"] == len(envelopes)


def test_an_overlapping_batch_applies_only_its_new_events(written: Any, sqlite_read_model: Any,
                                                          sqlite_settings: Settings, tmp_path: Path) -> None:
    envelopes = chain_all(stored_records(written), 0, GENESIS_HASH)
    projector = Projector(sqlite_read_model)
    projector.apply(envelopes[:10])

    projector.apply(envelopes[5:20])  # at-least-once delivery: 5 already applied, 10 new
    projector.apply(envelopes)

    assert_complete(sqlite_read_model, written, sqlite_settings, tmp_path)


@pytest.mark.parametrize("page_size", [1, 2, 3, 7])
def test_the_page_size_does_not_change_the_read_model(written: Any, sqlite_read_model: Any,
                                                      sqlite_settings: Settings, tmp_path: Path,
                                                      page_size: int) -> None:
    pages: list[int] = []
    catch_up(written, Projector(sqlite_read_model), page_size=page_size,
             progress=lambda tracking: pages.append(tracking.position))
    stored = stored_records(written)
    assert len(pages) == -(-len(stored) // page_size)
    assert_complete(sqlite_read_model, written, sqlite_settings, tmp_path)


# -- crashes -----------------------------------------------------------------------------------------

def test_a_crash_between_pages_loses_nothing_and_applies_nothing_twice(
        written: Any, sqlite_settings: Settings, tmp_path: Path) -> None:
    # given a projector process that dies abruptly after committing its second page of three events
    code = run_child("child_crash_between_pages", sqlite_settings.home, 3, 2)
    assert code == 9

    con = open_read_model(sqlite_settings)
    try:
        # then the two committed pages survived, and nothing more
        assert read_tracking(con).position == stored_records(written)[5].position
        assert row_counts(con)["events"] == 6

        # when the projector runs again, it carries on where the crash left it
        catch_up(written, Projector(con), page_size=3)

        assert_complete(con, written, sqlite_settings, tmp_path)
    finally:
        con.close()


def _partial_read_model(catalog: Any, settings: Settings, until: int) -> tuple[Any, dict[str, int]]:
    """The read model projected up to position `until`, closed so a child can open it."""
    con = open_read_model(settings)
    catch_up(catalog, Projector(con), until=until)
    tracking, counts = tracking_row(con), row_counts(con)
    con.close()
    return tracking, counts


@pytest.mark.parametrize("crash", ["in-handler", "after-insert"],
                         ids=["in the handler of the 3rd registration", "after the rows were inserted"])
def test_a_crash_inside_a_batch_leaves_no_part_of_it(written: Any, sqlite_settings: Settings,
                                                     tmp_path: Path, crash: str) -> None:
    stored = stored_records(written)
    # given a read model at the position before the registrations of the story
    first_tool = next(r.position for r in stored if r.topic == "Tool.Registered")
    tracking_before, counts_before = _partial_read_model(written, sqlite_settings, first_tool - 1)
    assert counts_before["tools"] == 0

    # when a projector dies in the middle of the batch holding the rest of the store
    if crash == "in-handler":
        code = run_child("child_crash_in_handler", sqlite_settings.home, "Tool.Registered", 3)
    else:
        code = run_child("child_crash_after_flush", sqlite_settings.home)
    assert code == 9

    # then the read model holds no part of that batch
    con = open_read_model(sqlite_settings)
    try:
        assert tracking_row(con) == tracking_before
        assert row_counts(con) == counts_before

        # and a normal catch-up then completes it correctly
        catch_up(written, Projector(con))
        assert_complete(con, written, sqlite_settings, tmp_path)
    finally:
        con.close()


class TransientFailure(Exception):
    """Stands for any error inside a batch that a long-running projector would retry (a full disk,
    a DuckDB error, an interrupted write)."""


def test_a_batch_that_fails_is_rolled_back_and_a_retry_by_the_same_projector_completes_it(
        written: Any, sqlite_read_model: Any, sqlite_settings: Settings, tmp_path: Path) -> None:
    # given a projector whose handling of the 2nd removal step fails once, mid-batch
    part = CatalogPart()
    handle_step = part.handlers["Tool.StepRecorded"]
    calls = 0

    def fails_once(envelope: Any, data: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise TransientFailure("the disk was full for a moment")
        handle_step(envelope, data)

    part.handlers["Tool.StepRecorded"] = fails_once
    projector = Projector(sqlite_read_model, parts=[part])
    before, tracking_before = snapshot(sqlite_read_model), tracking_row(sqlite_read_model)

    # when the batch fails, nothing of it is written
    with pytest.raises(TransientFailure):
        catch_up(written, projector)
    assert snapshot(sqlite_read_model) == before
    assert not [t for t in threading.enumerate() if t.name == "toolcat-read-ahead"]  # stopped with it
    assert tracking_row(sqlite_read_model) == tracking_before

    # and when the same (long-running) projector retries, the result is as if it never failed
    catch_up(written, projector)
    assert_complete(sqlite_read_model, written, sqlite_settings, tmp_path)


# -- gaps and tampering ------------------------------------------------------------------------------

def test_a_gap_in_the_stream_stops_the_projector(written: Any, sqlite_read_model: Any) -> None:
    stored = stored_records(written)
    projector = Projector(sqlite_read_model)
    projector.apply(chain_all(stored[:3], 0, GENESIS_HASH))
    before, tracking_before = snapshot(sqlite_read_model), tracking_row(sqlite_read_model)
    at = stored[2].position

    # events after a missing one: the batch starts after position stored[3], not after `at`
    later = chain_all(stored[4:], stored[3].position, "f" * 64)
    with pytest.raises(IntegrityFailure) as raised:
        projector.apply(later)

    error = raised.value
    assert (error.code, error.exit_code) == ("integrity", 5)
    assert error.details["expected_prev_position"] == at
    assert error.details["position"] == stored[4].position
    assert error.details["prev_position"] == stored[3].position
    assert str(at) in error.message and str(stored[4].position) in error.message
    assert snapshot(sqlite_read_model) == before
    assert tracking_row(sqlite_read_model) == tracking_before


@pytest.mark.parametrize("index", [0, 4], ids=["first of the batch", "inside the batch"])
def test_a_tampered_envelope_is_rejected_and_nothing_is_written(written: Any, sqlite_read_model: Any,
                                                                index: int) -> None:
    stored = stored_records(written)
    projector = Projector(sqlite_read_model)
    projector.apply(chain_all(stored[:3], 0, GENESIS_HASH))
    tracking = projector.tracking()
    before, tracking_before = snapshot(sqlite_read_model), tracking_row(sqlite_read_model)

    envelopes = chain_all(stored[3:12], tracking.position, tracking.hash)
    victim = envelopes[index]
    forged = victim.model_copy(update={"data": {**victim.data, "forged": True}})  # hash kept
    assert forged.hash == victim.hash
    envelopes[index] = forged

    with pytest.raises(IntegrityFailure) as raised:
        projector.apply(envelopes)

    assert (raised.value.code, raised.value.exit_code) == ("integrity", 5)
    assert raised.value.details["position"] == victim.position
    assert snapshot(sqlite_read_model) == before
    assert tracking_row(sqlite_read_model) == tracking_before


# -- the read-ahead thread ---------------------------------------------------------------------------

def _overwrite_state(settings: Settings, position: int, state: bytes) -> bytes:
    """Replace the stored bytes of one event (as a damaged disk or another writer could); returns the old."""
    with closing(sqlite3.connect(settings.event_store_path)) as store:
        (old,) = store.execute("SELECT state FROM stored_events WHERE rowid = ?", [position]).fetchone()
        store.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", [state, position])
        store.commit()
    return bytes(old)


def test_a_page_that_fails_to_read_ahead_stops_the_catch_up_where_it_failed_and_a_later_run_completes_it(
        written: Any, sqlite_read_model: Any, sqlite_settings: Settings, tmp_path: Path) -> None:
    stored = stored_records(written)
    # given the 8th stored event no longer decodes: the read-ahead thread meets it while reading the
    # third page of three events
    damaged = stored[7].position
    original = _overwrite_state(sqlite_settings, damaged, b'{"not json')

    # when a catch-up runs over it
    with pytest.raises(IntegrityFailure) as raised:
        catch_up(written, Projector(sqlite_read_model), page_size=3)

    # then the caller gets the reader's failure with its position, and no reading thread is left behind
    assert raised.value.details["position"] == damaged
    assert not [t for t in threading.enumerate() if t.name == "toolcat-read-ahead"]
    # and the pages handed over before it are committed, with the effective sets marked behind them
    tracking = read_tracking(sqlite_read_model)
    assert tracking.position == stored[5].position
    assert row_counts(sqlite_read_model)["events"] == 6
    assert valid_through(sqlite_read_model) < tracking.position

    # when the stored bytes are restored and the catch-up runs again, it completes as if nothing happened
    _overwrite_state(sqlite_settings, damaged, original)
    catch_up(written, Projector(sqlite_read_model), page_size=3)
    assert valid_through(sqlite_read_model) == read_tracking(sqlite_read_model).position
    assert_complete(sqlite_read_model, written, sqlite_settings, tmp_path)
