"""The server's writer (infra/http/writer.py) on a real SQLite store: the write commands that queue while it
is busy are recorded by one commit, each keeps its own outcome (one that fails is undone alone), none is
answered before its commit, and a store it cannot write to refuses the command as unavailable without
stopping the writer. On PostgreSQL the writer runs them the same way, each committed on its own."""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import RecordConflictError

from domain.application import WriteResult
from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import Unavailable, UnknownTool
from domain.grants import SubjectGrants, grants_key
from domain.values import ToolSpec
from infra.http.writer import Writer
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.integration.kafka_support import store_head
from tests.support import run_example

META = Meta(actor="tester")
TOOLS = ["webfetch", "websearch", "codesearch", "glob"]


class Probe(Aggregate):
    """An aggregate of this test's own, saved beside a stale one so that the save fails halfway."""


@pytest.fixture
def catalog(sqlite_settings: Settings) -> Iterator[Catalog]:
    run_example(sqlite_settings.home)
    kept = open_catalog(sqlite_settings, cached_aggregates=1000)
    try:
        yield kept
    finally:
        kept.close()


class Recorder:
    """A writer on `catalog`, and the number of commands of each of its commits."""

    def __init__(self, catalog: Catalog) -> None:
        self.commits: list[int] = []
        self.writer = Writer(catalog, self.commits.append)

    def __enter__(self) -> Recorder:
        self.writer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.writer.stop()


def _committed_head(settings: Settings) -> int:
    """The store's last position as another process sees it: what is committed."""
    with sqlite3.connect(settings.event_store_path) as other:
        return other.execute("SELECT max(rowid) FROM stored_events").fetchone()[0]


def _noting(seen: list[int], committed_head: Callable[[], int], catalog: Catalog,
            tool: str) -> Callable[[], WriteResult]:
    """A grant of `tool` to unit:eng that first notes the store's head as another process sees it."""
    def grant() -> WriteResult:
        seen.append(committed_head())
        return catalog.add_grant("unit:eng", tool, META)
    return grant


def _targets(catalog: Catalog) -> set[str]:
    grants = catalog.repository.get(grants_key("unit:eng"))
    assert isinstance(grants, SubjectGrants)
    return set(grants.targets.values())


def _behind_a_busy_writer(recorder: Recorder, calls: list[Callable[[], Any]]) -> list[Future[Any]]:
    """`calls` submitted while the writer is busy with another command (which writes nothing), so that they
    queue behind it and run as one group; each one's future, answered once committed (as a route awaits it)."""
    go, busy = threading.Event(), threading.Event()

    def blocker() -> None:
        busy.set()
        go.wait(10)
    blocking = recorder.writer.submit(blocker)
    busy.wait(10)
    futures = [recorder.writer.submit(call) for call in calls]
    assert recorder.writer.queued == len(calls) and not any(future.done() for future in futures)
    go.set()
    blocking.result(10)
    return futures


def test_commands_queued_behind_a_busy_writer_are_recorded_by_one_commit(
        catalog: Catalog, sqlite_settings: Settings) -> None:
    head = _committed_head(sqlite_settings)
    seen_by_others: list[int] = []
    grants = [_noting(seen_by_others, lambda: _committed_head(sqlite_settings), catalog, tool) for tool in TOOLS]
    # given four grants sent while the writer is busy with another command
    with Recorder(catalog) as recorder:
        results = [future.result(10) for future in _behind_a_busy_writer(recorder, grants)]
    # then one commit recorded all four, at the next four positions
    assert recorder.commits == [1, 4]  # (the first: the command they queued behind)
    assert [result.position for result in results] == [head + 1, head + 2, head + 3, head + 4]
    # and while they ran, no other process saw any of them
    assert seen_by_others == [head] * 4
    assert _committed_head(sqlite_settings) == head + 4


def test_a_command_whose_save_fails_in_a_group_is_undone_alone(catalog: Catalog, sqlite_settings: Settings) -> None:
    head = _committed_head(sqlite_settings)
    reader = open_catalog(sqlite_settings)  # read as another process would: not the kept unit
    try:
        stale = reader.repository.get(grants_key("unit:eng"))  # soon behind the kept unit
    finally:
        reader.close()
    assert isinstance(stale, SubjectGrants)
    probe = Probe()

    def stale_save() -> Any:
        # the probe is inserted first, then the stale grants' event conflicts with the first grant's
        stale.add("edit", None, META)
        return catalog.save(probe, stale)
    calls = [lambda: catalog.add_grant("unit:eng", TOOLS[0], META), stale_save,
             lambda: catalog.add_grant("unit:eng", TOOLS[1], META)]
    with Recorder(catalog) as recorder:
        futures = _behind_a_busy_writer(recorder, calls)
        first, third = futures[0].result(10), futures[2].result(10)
        with pytest.raises(RecordConflictError):
            futures[1].result(10)
    # then nothing of the failed save is recorded, not even the probe inserted before the conflict
    with pytest.raises(AggregateNotFoundError):
        catalog.repository.get(probe.id)
    assert "edit" not in _targets(catalog)
    # and the two grants around it are recorded by the same commit, at consecutive positions
    assert recorder.commits == [1, 3]
    assert (first.position, third.position) == (head + 1, head + 2)
    assert _committed_head(sqlite_settings) == head + 2


def test_a_command_that_reads_the_read_model_first_commits_what_its_group_wrote(
        catalog: Catalog, sqlite_settings: Settings) -> None:
    head = _committed_head(sqlite_settings)
    answered: list[int | None] = []
    with Recorder(catalog) as recorder:
        def reader() -> int:
            recorder.writer.flush()  # what the server's read_model does before leasing the read model
            answered.append(futures[0].result(5).position)  # (a TimeoutError if it waited for this one)
            return _committed_head(sqlite_settings)
        futures: list[Future[Any]] = []
        futures += _behind_a_busy_writer(recorder, [lambda: catalog.add_grant("unit:eng", TOOLS[0], META), reader])
        first, committed = futures[0].result(10), futures[1].result(10)
    # then the grant was committed, and answered, before the command went on to read
    assert committed == first.position == head + 1
    assert answered == [head + 1]
    assert recorder.commits == [1, 1, 1]


def test_a_store_another_process_holds_refuses_the_command_as_unavailable_and_the_next_one_is_written(
        sqlite_settings: Settings) -> None:
    run_example(sqlite_settings.home)
    settings = sqlite_settings.model_copy(update={"sqlite_lock_timeout_seconds": 1})
    catalog = open_catalog(settings, cached_aggregates=1000)
    other = sqlite3.connect(settings.event_store_path, isolation_level=None)
    try:
        with Recorder(catalog) as recorder:
            # given another process holds the store's write lock
            other.execute("BEGIN IMMEDIATE")
            # when a command comes, it is refused as unavailable, saying why, and nothing is written
            head = _committed_head(settings)
            with pytest.raises(Unavailable, match="could not begin a write: database is locked"):
                recorder.writer.submit(lambda: catalog.add_grant("unit:eng", TOOLS[0], META)).result(30)
            # and once the other process lets go, the same command is written
            other.execute("ROLLBACK")
            written = recorder.writer.submit(lambda: catalog.add_grant("unit:eng", TOOLS[0], META)).result(30)
            assert written.position == head + 1
        assert recorder.commits == [1, 1]
    finally:
        other.close()
        catalog.close()


def test_on_postgresql_each_queued_command_commits_on_its_own(postgres_settings: Settings) -> None:
    catalog = open_catalog(postgres_settings, cached_aggregates=1000)
    try:
        catalog.create_unit("eng", None, META)
        for tool in TOOLS:
            catalog.register_tool(tool, ToolSpec(source="builtin", group="core", tier="default", visibility="public"),
                                  META)
        head = catalog.recorder.max_notification_id()
        seen: list[int] = []
        grants = [_noting(seen, lambda: store_head(postgres_settings), catalog, tool)
                  for tool in (TOOLS[0], "no.such.tool", TOOLS[1])]
        # given three grants, the middle one of a tool that does not exist, queued behind a busy writer
        with Recorder(catalog) as recorder:
            futures = _behind_a_busy_writer(recorder, grants)
            first, third = futures[0].result(10), futures[2].result(10)
            with pytest.raises(UnknownTool):
                futures[1].result(10)
        # then each was committed as it ran (the next saw it), the refused one wrote nothing
        assert seen == [head, first.position, first.position]
        assert third.position is not None and first.position is not None and third.position > first.position
        assert store_head(postgres_settings) == third.position
        assert recorder.commits == [1, 3]
    finally:
        catalog.close()

