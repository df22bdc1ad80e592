"""The subjects part of the read model: units, agents, allowlists, images, connectors, bindings, grants."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from projections.catalog_part import Handler, when
from projections.envelope import Envelope
from projections.rows import BufferedPart, HistoryRows


def effective_at(data: dict[str, Any]) -> datetime | None:
    """When a grant or binding change takes effect, if the operator said (`--effective-at`)."""
    moment = data.get("effective_at")
    return datetime.fromisoformat(moment) if moment else None


class SubjectsPart(BufferedPart):
    """One small method per event type, each recording a version in a history table."""

    def __init__(self) -> None:
        self.units = HistoryRows("unit_history", ("name",))
        self.agents = HistoryRows("agent_history", ("name",))
        self.allowlists = HistoryRows("allowlist_history", ("agent",))
        self.images = HistoryRows("image_history", ("agent",))
        self.connectors = HistoryRows("connector_history", ("slug",))
        self.bindings = HistoryRows("binding_history", ("unit", "slug"))
        self.grants = HistoryRows("grant_history", ("subject_kind", "subject", "grant_id"))
        self.handlers: dict[str, Handler] = {
            "Unit.Created": self.unit_created,
            "Unit.ConnectorBound": self.connector_bound,
            "Unit.ConnectorUnbound": self.connector_unbound,
            "Agent.Created": self.agent_created,
            "Agent.AllowlistSet": self.allowlist_set,
            "Agent.AllowlistCleared": self.allowlist_cleared,
            "Agent.ImageDeclared": self.image_declared,
            "Connector.Registered": self.connector_registered,
            "Grants.Opened": lambda e, data: None,
            "Grants.Added": self.grant_added,
            "Grants.Revoked": self.grant_revoked,
        }

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        """Nothing to read ahead: every change is a new version."""

    def _buffers(self) -> tuple[HistoryRows, ...]:
        return (self.units, self.agents, self.allowlists, self.images, self.connectors, self.bindings,
                self.grants)


    def unit_created(self, e: Envelope, data: dict[str, Any]) -> None:
        self.units.set((data["name"],), {"parent": data["parent"]}, e.position, when(e))

    def connector_bound(self, e: Envelope, data: dict[str, Any]) -> None:
        self.bindings.set((data["unit"], data["slug"]), {}, e.position, when(e), effective_at(data))

    def connector_unbound(self, e: Envelope, data: dict[str, Any]) -> None:
        self.bindings.set((data["unit"], data["slug"]), None, e.position, when(e), effective_at(data))

    def agent_created(self, e: Envelope, data: dict[str, Any]) -> None:
        self.agents.set((data["name"],), {"unit": data["unit"], "state_mode": data["state_mode"]},
                        e.position, when(e))

    def allowlist_set(self, e: Envelope, data: dict[str, Any]) -> None:
        self.allowlists.set((data["agent"],), {"patterns": list(data["patterns"])}, e.position, when(e))

    def allowlist_cleared(self, e: Envelope, data: dict[str, Any]) -> None:
        self.allowlists.set((data["agent"],), None, e.position, when(e))

    def image_declared(self, e: Envelope, data: dict[str, Any]) -> None:
        self.images.set((data["agent"],), {"image": data["image"], "tool_ids": list(data["tools"]),
                                           "tool_keys": list(data["tool_keys"])}, e.position, when(e))

    def connector_registered(self, e: Envelope, data: dict[str, Any]) -> None:
        self.connectors.set((data["slug"],), {"namespace": data["namespace"], "tools": list(data["tools"])},
                            e.position, when(e))

    def grant_added(self, e: Envelope, data: dict[str, Any]) -> None:
        kind, _, name = data["subject"].partition(":")
        self.grants.set((kind, name, data["tool_key"] or data["target"]),
                        {"target": data["target"], "tool_key": data["tool_key"]}, e.position, when(e),
                        effective_at(data))

    def grant_revoked(self, e: Envelope, data: dict[str, Any]) -> None:
        kind, _, name = data["subject"].partition(":")
        self.grants.set((kind, name, data["tool_key"] or data["target"]), None, e.position, when(e),
                        effective_at(data))
