"""Fixtures of the integration suite that only need the SQLite file store."""
from __future__ import annotations

from typing import Any

import pytest

from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model


@pytest.fixture
def sqlite_catalog(sqlite_settings: Settings) -> Any:
    app = open_catalog(sqlite_settings)
    yield app
    app.close()


@pytest.fixture
def sqlite_read_model(sqlite_settings: Settings) -> Any:
    con = open_read_model(sqlite_settings)
    yield con
    con.close()
