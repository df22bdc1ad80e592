"""The server's catalog keeps aggregates in memory between writes; a write made meanwhile by another
process (the command line on the same store) is still seen, and the server's next write builds on it."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.base import Meta
from domain.grants import SubjectGrants, grants_key
from infra.http.metrics import ServerMetrics
from infra.http.state import ServerState
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.support import run_example

META = Meta(actor="tester")


@pytest.fixture
def state(sqlite_settings: Settings) -> Iterator[ServerState]:
    run_example(sqlite_settings.home)
    server = ServerState(sqlite_settings, "store", ServerMetrics())
    try:
        yield server
    finally:
        server.stop()


def _grants(state: ServerState) -> SubjectGrants:
    grants = state.catalog.get_or_none(grants_key("unit:eng"), SubjectGrants)
    assert grants is not None
    return grants


def test_a_kept_aggregate_is_brought_up_to_date_with_another_writers_events(
        state: ServerState, sqlite_settings: Settings) -> None:
    # given the server has read (and kept) unit:eng's grants
    assert state.catalog.repository.cache is not None
    before = _grants(state)
    # when another process grants unit:eng one more tool
    other = open_catalog(sqlite_settings)
    try:
        other.add_grant("unit:eng", "webfetch", META)
    finally:
        other.close()
    # then the server reads that grant too, and its own next grant follows it without a conflict
    assert _grants(state).version == before.version + 1
    assert state.catalog.add_grant("unit:eng", "websearch", META).position is not None
    assert _grants(state).version == before.version + 2
