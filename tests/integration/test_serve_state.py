"""The server's owner of the read model, in process: its follower applies what is written to the store,
a reader's lease is one snapshot however the writer moves on, writes can be paused, and snapshot.duckdb is
published at start and again after later batches."""
from __future__ import annotations

import time
from pathlib import Path
from collections.abc import Iterator
from contextlib import closing

import duckdb
import pytest

from domain.base import Meta
from domain.errors import Unavailable
from infra.freshness import Freshness
from infra.http.snapshot import snapshot_path
from infra.http.metrics import ServerMetrics
from infra.http.snapshots import SnapshotPublisher
from infra.http.state import ServerState
from infra.settings import Settings
from infra.wiring import open_catalog
from projections.tracking import read_tracking

from tests.serving import following_state

META = Meta(actor="tester")


@pytest.fixture
def state(sqlite_settings: Settings) -> Iterator[ServerState]:
    catalog = open_catalog(sqlite_settings)
    catalog.create_unit("eng", None, META)
    catalog.close()
    with following_state(sqlite_settings) as server:
        yield server


def test_a_lease_is_one_snapshot_while_the_follower_applies_more(state: ServerState) -> None:
    head = state.catalog.recorder.max_notification_id()
    with state.read_model(Freshness()) as before:
        assert read_tracking(before).position == head
        written = state.catalog.create_unit("ops", None, META).position
        state.wait_for(written, 30)
        assert read_tracking(before).position == head  # the lease still sees its snapshot
        with state.read_model(Freshness()) as after:
            assert read_tracking(after).position == written


def test_paused_writes_hold_the_follower(state: ServerState) -> None:
    with state.pause_writes():
        written = state.catalog.create_unit("paused", None, META).position
        with pytest.raises(Unavailable):
            state.wait_for(written, 0.5)
    state.wait_for(written, 30)
    assert state.position >= written
    with pytest.raises(Unavailable):
        with state.read_model(Freshness(min_position=written + 100, timeout=0.2)):
            pass


def test_snapshots_are_published_at_start_and_after_later_batches(state: ServerState) -> None:
    # Given a publisher publishing every 0.05 s while batches are applied
    state.settings = state.settings.model_copy(update={"snapshot_seconds": 0.05})
    publisher = SnapshotPublisher(state)
    publisher.start()
    try:
        # Then the snapshot holds the read model as it was at start
        started = state.position
        assert publisher.position == started == _snapshot_position(state)
        # When a write is applied, a later snapshot holds it without anyone asking
        written = state.catalog.create_unit("published", None, META).position
        state.wait_for(written, 30)
        deadline = time.monotonic() + 60
        while (publisher.position or 0) < written and time.monotonic() < deadline:
            time.sleep(0.05)
        assert publisher.position == written == _snapshot_position(state)
    finally:
        publisher.stop()


def _snapshot_position(state: ServerState) -> int:
    with closing(duckdb.connect(str(snapshot_path(state.settings.home)), read_only=True)) as con:
        return read_tracking(con).position


def test_the_follower_checkpoints_the_wal_it_grew_past_the_limit(state: ServerState,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB's own checkpoints are off in the server (a snapshot's copy runs beside the follower)."""
    wal = Path(f"{state.settings.read_model_path}.wal")
    # given a write applied with the limit high: its batch stays in the WAL
    written = state.catalog.create_unit("walled", None, META).position
    state.wait_for(written, 30)
    assert wal.exists() and wal.stat().st_size > 0
    # when the limit is below what the WAL holds and another batch is applied
    monkeypatch.setattr("infra.http.state.WAL_LIMIT_BYTES", 0)
    written = state.catalog.create_unit("checkpointed", None, META).position
    state.wait_for(written, 30)
    # then the follower checkpointed: the WAL is empty and the file holds the batch
    assert _emptied(wal)
    with state.read_model(Freshness()) as con:
        assert read_tracking(con).position == written


def test_the_follower_checkpoints_only_at_rest_until_the_wal_passes_the_hard_limit(
        state: ServerState, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint holds the follower: while more events wait for it, it waits up to the hard limit."""
    wal = Path(f"{state.settings.read_model_path}.wal")
    monkeypatch.setattr("infra.http.state.WAL_LIMIT_BYTES", 0)
    # given the store always holds more than a pass applied (writes keep coming)
    monkeypatch.setattr(state, "store_head", lambda: 2**62)
    # when a batch grows the WAL past the limit, it is not checkpointed
    state.wait_for(state.catalog.create_unit("busy-1", None, META).position, 30)
    time.sleep(0.5)
    assert wal.exists() and wal.stat().st_size > 0
    # until the WAL passes the hard limit
    monkeypatch.setattr("infra.http.state.WAL_HARD_LIMIT_BYTES", 0)
    state.wait_for(state.catalog.create_unit("busy-2", None, META).position, 30)
    assert _emptied(wal)


def test_a_copy_in_progress_does_not_hold_the_follower_past_the_wal_limit(state: ServerState,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot's copy holds `checkpoints`: the follower goes on applying batches meanwhile, and
    checkpoints the WAL after a pass once the copy is done."""
    wal = Path(f"{state.settings.read_model_path}.wal")
    monkeypatch.setattr("infra.http.state.WAL_LIMIT_BYTES", 0)
    # given a copy in progress
    with state.checkpoints:
        # when batches grow the WAL past the limit, they are applied all the same, the WAL left as it is
        for name in ("copied-1", "copied-2", "copied-3"):
            state.wait_for(state.catalog.create_unit(name, None, META).position, 10)
        assert wal.exists() and wal.stat().st_size > 0
    # then, the copy done, the next pass checkpoints
    written = state.catalog.create_unit("after-the-copy", None, META).position
    state.wait_for(written, 30)
    assert _emptied(wal)


def _emptied(wal: Path, seconds: float = 30) -> bool:
    """Whether the WAL is (or within `seconds` becomes) empty: the follower checkpointed."""
    deadline = time.monotonic() + seconds
    while wal.exists() and wal.stat().st_size > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return not wal.exists() or wal.stat().st_size == 0


def test_what_must_be_ready_at_start_runs_once_caught_up_before_any_read_is_answered(sqlite_settings: Settings) -> None:
    # given a store with history the server has not applied yet
    catalog = open_catalog(sqlite_settings)
    head = catalog.create_unit("eng", None, META).position
    catalog.close()
    server = ServerState(sqlite_settings.model_copy(update={"follow_poll_seconds": 0.05}), "store", ServerMetrics())
    seen: list[tuple[int, int]] = []  # (position announced, position in the read model) when called
    server.on_caught_up.append(lambda: seen.append((server.position, read_tracking(server.con).position)))
    # when it starts and catches up, and a later write is applied
    server.start()
    try:
        assert server.caught_up.wait(30)
        server.wait_for(head, 30)
        written = server.catalog.create_unit("ops", None, META).position
        server.wait_for(written, 30)
    finally:
        server.stop()
    # then the hook ran once, with the catch-up in the read model but not yet announced to readers
    assert len(seen) == 1
    announced, applied = seen[0]
    assert announced < head == applied
    # when a server starts on that read model, already caught up
    again = ServerState(sqlite_settings, "store", ServerMetrics())
    again.on_caught_up.append(lambda: seen.append((again.position, read_tracking(again.con).position)))
    again.start()
    # then the follower runs the hook all the same, before it says it is caught up
    caught_up = again.caught_up.wait(30)
    ran = len(seen)
    again.stop()
    assert caught_up and ran == 2 and seen[1] == (written, written)
