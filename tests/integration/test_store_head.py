"""`store_head` reads a SQLite store's last position with sqlite3 alone (a command line read then never
imports eventsourcing's persistence): the same number as the recorder's, from the table the recorder
writes; and a home whose store is not there yet still goes the recorder's way (an empty store, head 0)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.settings import Settings
from infra.wiring import SQLITE_EVENTS_TABLE, sqlite_head, store_head
from tests.integration.helpers import tell_story


def test_the_sqlite_head_is_the_recorders(sqlite_catalog: Any, sqlite_settings: Settings, meta: Any) -> None:
    assert sqlite_catalog.recorder.events_table_name == SQLITE_EVENTS_TABLE
    assert sqlite_head(sqlite_settings.event_store_path, 1) == 0  # the table is there, empty
    tell_story(sqlite_catalog, meta)
    head = sqlite_catalog.recorder.max_notification_id()
    assert head > 0
    assert sqlite_head(sqlite_settings.event_store_path, 1) == head
    assert store_head(sqlite_settings) == head


def test_a_store_not_made_yet_is_made_by_the_recorder_as_before(home: Path) -> None:
    settings = Settings(home=home, event_store_url=None)
    assert sqlite_head(settings.event_store_path, 1) is None
    assert store_head(settings) == 0
    assert settings.event_store_path.is_file()
    assert sqlite_head(settings.event_store_path, 1) == 0


def test_a_file_without_the_table_is_left_to_the_recorder(home: Path) -> None:
    home.mkdir(parents=True)
    settings = Settings(home=home, event_store_url=None)
    settings.event_store_path.write_bytes(b"")  # an empty file: SQLite sees a database with no table
    assert sqlite_head(settings.event_store_path, 1) is None
    assert store_head(settings) == 0  # the recorder creates its table, as it did
    assert sqlite_head(settings.event_store_path, 1) == 0
