"""The server's catalog keeps aggregates in memory between writes; a write made meanwhile by another
process (the command line on the same store) is still seen, and the server's next write builds on it. A
command reads the kept aggregates themselves (no copy): one that is refused, or a dry run, leaves nothing
of what it changed in them."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import Conflict, UnknownSubject, UnknownTool
from domain.grants import SubjectGrants, grants_key
from domain.values import ToolSpec
from infra.http.metrics import ServerMetrics
from infra.http.state import ServerState
from infra.settings import Settings
from infra.wiring import open_catalog, store_env
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


class RacingCatalog(Catalog):
    """A catalog keeping aggregates, whose `competitor` (another process's command) runs just before its own
    next save."""

    competitor: Callable[[], object] | None = None

    def save(self, *objects: Any, **kwargs: Any) -> Any:
        competitor, self.competitor = self.competitor, None
        if competitor is not None:
            competitor()
        return super().save(*objects, **kwargs)


def _targets(catalog: Catalog, subject: str) -> set[str]:
    grants = catalog.get_or_none(grants_key(subject), SubjectGrants)
    return set() if grants is None else set(grants.targets.values())


def test_a_write_refused_as_a_conflict_leaves_nothing_of_it_in_the_kept_aggregates(
        sqlite_settings: Settings) -> None:
    run_example(sqlite_settings.home)
    server = RacingCatalog(env={**store_env(sqlite_settings), "AGGREGATE_CACHE_MAXSIZE": "1000"})
    other = open_catalog(sqlite_settings)
    try:
        before = _targets(server, "unit:eng")  # kept from here on
        # given another process grants unit:eng a tool just before the server saves its own grant to it
        server.competitor = lambda: other.add_grant("unit:eng", "webfetch", META)
        with pytest.raises(Conflict):
            server.add_grant("unit:eng", "websearch", META)
        # then the server's kept unit holds the other's grant and not its refused one
        assert _targets(server, "unit:eng") == before | {"webfetch"}
        # and the same write run again is saved on top of it
        assert server.add_grant("unit:eng", "websearch", META).position is not None
        assert _targets(server, "unit:eng") == _targets(other, "unit:eng") == before | {"webfetch", "websearch"}
    finally:
        other.close()
        server.close()


def test_a_dry_run_leaves_nothing_of_it_in_the_kept_aggregates(state: ServerState) -> None:
    catalog = state.catalog
    before = _targets(catalog, "unit:eng")
    # a plan's dry run: the commands build into one batch, which is dropped
    with catalog.compound(META):
        catalog.add_grant("unit:eng", "webfetch", META)
        assert _targets(catalog, "unit:eng") == before | {"webfetch"}  # seen inside the batch
    assert _targets(catalog, "unit:eng") == before
    assert catalog.add_grant("unit:eng", "webfetch", META).position is not None
    assert _targets(catalog, "unit:eng") == before | {"webfetch"}


class CountingReads:
    """The store reads of a catalog's recorder, counted by kind (another process's writes are not)."""

    def __init__(self, catalog: Catalog) -> None:
        self.counts: dict[str, int] = {}
        for name in ("select_events", "select_notifications", "max_notification_id"):
            self._count(catalog.recorder, name)

    def _count(self, recorder: Any, name: str) -> None:
        read = getattr(recorder, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[name] = self.counts.get(name, 0) + 1
            return read(*args, **kwargs)
        setattr(recorder, name, counted)


def test_a_command_on_kept_aggregates_reads_the_store_once_besides_its_save(state: ServerState) -> None:
    catalog = state.catalog
    # given every aggregate a grant of webfetch to unit:eng reads is kept (the policy, the unit, its grants,
    # the tool and its name)
    catalog.add_grant("unit:eng", "webfetch", META)
    catalog.revoke_grant("unit:eng", "webfetch", META)
    reads = CountingReads(catalog)
    # when it is granted again
    assert catalog.add_grant("unit:eng", "webfetch", META).position is not None
    # then the store was read once, for what others wrote since the last command, not once per aggregate
    assert reads.counts == {"select_notifications": 1}


def test_what_another_process_writes_is_seen_by_the_next_command(
        state: ServerState, sqlite_settings: Settings) -> None:
    catalog = state.catalog
    # given the server kept unit:eng's grants, and found no unit:later and no tool web.crawl
    catalog.add_grant("unit:eng", "webfetch", META)
    with pytest.raises(UnknownSubject):
        catalog.add_grant("unit:later", "webfetch", META)
    with pytest.raises(UnknownTool):
        catalog.add_grant("unit:eng", "web.crawl", META)
    # when another process grants unit:eng a tool, creates unit:later and registers web.crawl
    other = open_catalog(sqlite_settings)
    try:
        other.add_grant("unit:eng", "websearch", META)
        other.create_unit("later", None, META)
        other.register_tool("web.crawl", ToolSpec(source="builtin", group="retrieval", tier="default",
                                                  visibility="public"), META)
    finally:
        other.close()
    # then the server's next commands build on all three: no conflict, no unknown subject or tool
    assert catalog.add_grant("unit:eng", "web.crawl", META).position is not None
    assert catalog.add_grant("unit:later", "web.crawl", META).position is not None
    assert _targets(catalog, "unit:eng") >= {"webfetch", "websearch", "web.crawl"}


def test_on_either_store_kept_aggregates_follow_another_writer(store_settings: Settings) -> None:
    # given a catalog keeping aggregates (a server's) and another writer on the same store, SQLite or PostgreSQL
    kept = Catalog(env={**store_env(store_settings), "AGGREGATE_CACHE_MAXSIZE": "1000"})
    other = open_catalog(store_settings)
    try:
        other.register_tool("web.find", ToolSpec(source="builtin", group="retrieval", tier="default",
                                                  visibility="public"), META)
        kept.create_unit("eng", None, META)
        kept.add_grant("unit:eng", "web.find", META)
        with pytest.raises(UnknownSubject):
            kept.add_grant("unit:ops", "web.find", META)
        # when the other writer grants unit:eng a tool it registers and creates unit:ops
        other.register_tool("web.crawl", ToolSpec(source="builtin", group="retrieval", tier="default",
                                                   visibility="public"), META)
        other.add_grant("unit:eng", "web.crawl", META)
        other.create_unit("ops", None, META)
        # then the keeping catalog's next commands build on all of it, and agree with the store
        assert kept.revoke_grant("unit:eng", "web.find", META).position is not None
        assert kept.add_grant("unit:ops", "web.crawl", META).position is not None
        assert _targets(kept, "unit:eng") == _targets(other, "unit:eng") == {"web.crawl"}
    finally:
        other.close()
        kept.close()
