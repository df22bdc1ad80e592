"""The story helpers of the unit tests: a catalog on eventsourcing's in-memory store (no I/O), tool
descriptions, the event types a write answered, and "rejected, and nothing written".

Plain functions, imported by the tests (`from tests.unit.conftest import META, spec, …`).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from domain.base import Meta
from domain.catalog import Catalog, WriteResult
from domain.errors import CatalogRuleError, ToolcatError
from domain.naming import preset
from domain.values import ToolSpec

META = Meta(actor="tester")
IN_MEMORY = {"PERSISTENCE_MODULE": "eventsourcing.popo"}


def new_catalog() -> Catalog:
    return Catalog(env=IN_MEMORY)


def spring_voyage_story() -> Catalog:
    """A Spring-Voyage catalog with unit `org` > `research`, agent `scout` in research, tool `web.search`
    and connector `arxiv` (arxiv.search, arxiv.fetch)."""
    app = new_catalog()
    app.init(preset("spring-voyage"), META)
    app.create_unit("org", None, META)
    app.create_unit("research", "org", META)
    app.create_agent("scout", "research", "stateful", META)
    app.register_tool("web.search", spec(), META)
    app.register_connector("arxiv", None, ["arxiv.search", "arxiv.fetch"], META)
    return app


def spec(source: str = "builtin", group: str = "core", **fields: Any) -> ToolSpec:
    return ToolSpec(source=source, group=group, tier="default", visibility="public", **fields)  # type: ignore[arg-type]


def types(result: WriteResult) -> list[str]:
    return [event.type for event in result.events]


def with_key(key: str) -> Meta:
    return Meta(actor="tester", idempotency_key=key)


@contextmanager
def rejected(catalog: Catalog, error: type[ToolcatError], code: str) -> Iterator[Any]:
    """The command raises `error` with `code`, and nothing at all is written; a catalog rule's
    rejection also exits 3."""
    before = catalog.recorder.max_notification_id()
    with pytest.raises(error) as info:
        yield info
    assert info.value.code == code
    if issubclass(error, CatalogRuleError):
        assert info.value.exit_code == 3
    assert catalog.recorder.max_notification_id() == before
