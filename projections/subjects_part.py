"""The subjects part of the read model: units, agents, allowlists, images, connectors, bindings, grants.

Every version here is a pure function of one event, so each history table is built in SQL from the batch's
events (sql_history.py, `sql/history_*.sql`), not by a Python handler per event. The grants of a follower's
few events, the frequent writes of a server, are worked out in Python instead (`grant_change`)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from projections.catalog_part import Handler, ignore, when
from projections.envelope import Envelope
from projections.rows import BufferedPart
from projections.sql_history import PythonChanges, SqlHistory


def effective_at(data: dict[str, Any]) -> datetime | None:
    """When a grant or binding change takes effect, if the operator said (`--effective-at`). Its SQL twin
    is `sql/effective_at.sql`; tests/integration/test_sql_history.py holds the two to the same answers."""
    moment = data.get("effective_at")
    return datetime.fromisoformat(moment) if moment else None


def grant_change(e: Envelope, data: dict[str, Any]) -> dict[str, Any]:
    """The row `sql/history_grants.sql` makes of a grant added or revoked (its Python twin, for a follower's
    few events: sql_history.PythonChanges)."""
    subject_kind, _, subject = data["subject"].partition(":")
    recorded_at = when(e)
    return {"subject_kind": subject_kind, "subject": subject, "grant_id": data.get("tool_key") or data.get("target"),
            "target": data.get("target"), "tool_key": data.get("tool_key"), "position": e.position,
            "recorded_at": recorded_at, "ended": e.type == "Grants.Revoked",
            "effective_at": effective_at(data) or recorded_at}


_GRANT_CHANGES = PythonChanges(grant_change, {
    "subject_kind": "VARCHAR", "subject": "VARCHAR", "grant_id": "VARCHAR", "target": "VARCHAR",
    "tool_key": "VARCHAR", "position": "BIGINT", "recorded_at": "TIMESTAMPTZ", "ended": "BOOLEAN",
    "effective_at": "TIMESTAMPTZ"}, opening=frozenset({"Grants.Added"}))  # SubjectGrants.add refuses a grant held


def _history(table: str, keys: tuple[str, ...], changes: str, *types: str,
             python: PythonChanges | None = None) -> SqlHistory:
    return SqlHistory(table, keys, changes, frozenset(types), python=python)


class SubjectsPart(BufferedPart):
    """Its handlers do nothing: the batch's events are read back from `events` by each table's SQL."""

    def __init__(self) -> None:
        self.histories = (
            _history("unit_history", ("name",), "history_units", "Unit.Created"),
            _history("agent_history", ("name",), "history_agents", "Agent.Created"),
            _history("allowlist_history", ("agent",), "history_allowlists", "Agent.AllowlistSet",
                     "Agent.AllowlistCleared"),
            _history("image_history", ("agent",), "history_images", "Agent.ImageDeclared"),
            _history("unit_image_history", ("unit",), "history_unit_images", "Unit.ImageDeclared"),
            _history("connector_history", ("slug",), "history_connectors", "Connector.Registered"),
            _history("binding_history", ("unit", "slug"), "history_bindings", "Unit.ConnectorBound",
                     "Unit.ConnectorUnbound"),
            _history("grant_history", ("subject_kind", "subject", "grant_id"), "history_grants", "Grants.Added",
                     "Grants.Revoked", python=_GRANT_CHANGES),
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
