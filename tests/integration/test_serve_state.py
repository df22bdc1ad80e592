"""The server's owner of the read model, in process: its follower applies what is written to the store,
a reader's lease is one snapshot however the writer moves on, writes can be paused, and hooks run after
batches at most as often as asked."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.base import Meta
from domain.errors import Unavailable
from infra.freshness import Freshness
from infra.http.metrics import ServerMetrics
from infra.http.state import ServerState
from infra.settings import Settings
from infra.wiring import open_catalog
from projections.projector import read_tracking

META = Meta(actor="tester")


@pytest.fixture
def state(sqlite_settings: Settings) -> Iterator[ServerState]:
    catalog = open_catalog(sqlite_settings)
    catalog.create_unit("eng", None, META)
    catalog.close()
    server = ServerState(sqlite_settings.model_copy(update={"follow_poll_seconds": 0.05}), "store", ServerMetrics())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_lease_is_one_snapshot_while_the_follower_applies_more(state: ServerState) -> None:
    head = state.catalog.recorder.max_notification_id()
    with state.read_model(Freshness()) as before:
        assert read_tracking(before).position == head
        written = state.catalog.create_unit("ops", None, META).position
        state.wait_for(written, 30)
        assert read_tracking(before).position == head  # the lease still sees its snapshot
        with state.read_model(Freshness()) as after:
            assert read_tracking(after).position == written


def test_paused_writes_hold_the_follower_and_hooks_run_after_batches(state: ServerState) -> None:
    seen: list[int] = []
    state.every(0, lambda: seen.append(state.position))
    with state.pause_writes():
        written = state.catalog.create_unit("paused", None, META).position
        with pytest.raises(Unavailable):
            state.wait_for(written, 0.5)
    state.wait_for(written, 30)
    assert state.position >= written and seen and seen[-1] >= written
    with pytest.raises(Unavailable):
        with state.read_model(Freshness(min_position=written + 100, timeout=0.2)):
            pass
