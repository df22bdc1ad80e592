"""The subjects part of the read model: units, agents, allowlists, images, connectors, bindings, grants.

Every version here is a pure function of one event, so each history table is built in SQL from the batch's
events (sql_history.py, `sql/history_*.sql`), not by a Python handler per event."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from projections.catalog_part import Handler, ignore
from projections.envelope import Envelope
from projections.rows import BufferedPart
from projections.sql_history import SqlHistory


def effective_at(data: dict[str, Any]) -> datetime | None:
    """When a grant or binding change takes effect, if the operator said (`--effective-at`). Its SQL twin
    is `sql/effective_at.sql`; tests/integration/test_sql_history.py holds the two to the same answers."""
    moment = data.get("effective_at")
    return datetime.fromisoformat(moment) if moment else None


# Who a unit or agent holder reaches (effective_ways.Reach) is read from unit_history and agent_history,
# which only these events change: a projector keeps what it learnt of it across batches without them.
REACH_EVENTS = frozenset({"Unit.Created", "Agent.Created"})


def _history(table: str, keys: tuple[str, ...], changes: str, *types: str) -> SqlHistory:
    return SqlHistory(table, keys, changes, frozenset(types))


class SubjectsPart(BufferedPart):
    """Its handlers do nothing: the batch's events are read back from `events` by each table's SQL."""

    def __init__(self) -> None:
        self.histories = (
            _history("unit_history", ("name",), "history_units", "Unit.Created"),
            _history("agent_history", ("name",), "history_agents", "Agent.Created"),
            _history("allowlist_history", ("agent",), "history_allowlists", "Agent.AllowlistSet",
                     "Agent.AllowlistCleared"),
            _history("image_history", ("agent",), "history_images", "Agent.ImageDeclared"),
            _history("connector_history", ("slug",), "history_connectors", "Connector.Registered"),
            _history("binding_history", ("unit", "slug"), "history_bindings", "Unit.ConnectorBound",
                     "Unit.ConnectorUnbound"),
            _history("grant_history", ("subject_kind", "subject", "grant_id"), "history_grants", "Grants.Added",
                     "Grants.Revoked"),
        )
        self.handlers: dict[str, Handler] = {event_type: ignore for history in self.histories
                                             for event_type in history.types}
        self.handlers["Grants.Opened"] = ignore

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        present = {e.type for e in envelopes}
        for history in self.histories:
            history.plan(envelopes, present)

    def _buffers(self) -> tuple[SqlHistory, ...]:
        return self.histories
