"""infra/held_transaction.py on a real SQLite file: the server's store is built through eventsourcing's
persistence-module setting on a datastore whose transactions join a held one, and only the thread that holds
it joins it. (The group commit built on it: test_serve_group_commit.py.)"""
from __future__ import annotations

import sqlite3
import threading
from importlib.metadata import version

import pytest
from eventsourcing.persistence import RecordConflictError

from domain.base import Meta
from domain.grants import grants_key
from infra.held_transaction import GroupCommitDatastore, HeldTransaction
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.support import run_example

META = Meta(actor="tester")

# The eventsourcing version this adapter was checked against, pinned in pyproject.toml.
CHECKED_EVENTSOURCING = "9.5.6"


def test_the_installed_eventsourcing_is_the_one_the_held_transaction_was_checked_against() -> None:
    # GroupCommitDatastore overrides SQLiteDatastore.transaction and builds on SQLiteFactory: a new version
    # may open transactions otherwise. Run this file and test_serve_group_commit.py against it, then move the
    # pin here and in pyproject.toml.
    assert version("eventsourcing") == CHECKED_EVENTSOURCING


def test_a_servers_catalog_holds_transactions_and_a_command_lines_does_not(sqlite_settings: Settings) -> None:
    server, command_line = open_catalog(sqlite_settings, cached_aggregates=10), open_catalog(sqlite_settings)
    try:
        assert isinstance(server.recorder.datastore, GroupCommitDatastore)  # type: ignore[attr-defined]
        assert HeldTransaction.of(server) is not None
        assert HeldTransaction.of(command_line) is None
    finally:
        server.close()
        command_line.close()


def _committed_head(settings: Settings) -> int:
    with sqlite3.connect(settings.event_store_path) as other:
        return other.execute("SELECT coalesce(max(rowid), 0) FROM stored_events").fetchone()[0]


def test_writes_in_a_held_transaction_are_seen_by_its_thread_only_until_committed(sqlite_settings: Settings) -> None:
    run_example(sqlite_settings.home)  # unit:eng, tools webfetch and glob among them
    catalog = open_catalog(sqlite_settings, cached_aggregates=10)
    try:
        held = HeldTransaction.of(catalog)
        assert held is not None
        head = _committed_head(sqlite_settings)
        # given a held transaction in which a grant was written
        held.begin()
        written = catalog.add_grant("unit:eng", "webfetch", META).position
        # then its thread reads it, another thread and another process do not
        seen_elsewhere: list[int | None] = []
        other = threading.Thread(target=lambda: seen_elsewhere.append(catalog.recorder.max_notification_id()))
        other.start()
        other.join()
        assert catalog.recorder.max_notification_id() == written == head + 1
        assert seen_elsewhere == [head] and _committed_head(sqlite_settings) == head
        # and a conflicting save inside it is refused as the library refuses one, undone alone
        reader = open_catalog(sqlite_settings)  # as another process reads: before the grant
        stale = reader.repository.get(grants_key("unit:eng"))
        reader.close()
        stale.add("glob", None, META)
        with pytest.raises(RecordConflictError):
            catalog.save(stale)
        # when it is committed, everyone sees the grant
        held.commit()
        assert _committed_head(sqlite_settings) == written
    finally:
        catalog.close()
