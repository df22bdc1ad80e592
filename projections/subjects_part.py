"""Subjects, connectors, bindings, grants, images and allowlists; and which subjects a batch touched."""
from __future__ import annotations

from typing import Any

import duckdb

from projections.catalog_part import Handler, when
from projections.effective import refresh
from projections.envelope import Envelope
from projections.rows import HistoryRows, insert_rows, run


class SubjectsPart:
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

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        for rows in self._buffers():
            rows.flush(con)

    def discard(self) -> None:
        for rows in self._buffers():
            rows.clear()

    def unit_created(self, e: Envelope, data: dict[str, Any]) -> None:
        self.units.set((data["name"],), {"parent": data["parent"]}, e.position, when(e))

    def connector_bound(self, e: Envelope, data: dict[str, Any]) -> None:
        self.bindings.set((data["unit"], data["slug"]), {}, e.position, when(e))

    def connector_unbound(self, e: Envelope, data: dict[str, Any]) -> None:
        self.bindings.set((data["unit"], data["slug"]), None, e.position, when(e))

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
                        {"target": data["target"], "tool_key": data["tool_key"]}, e.position, when(e))

    def grant_revoked(self, e: Envelope, data: dict[str, Any]) -> None:
        kind, _, name = data["subject"].partition(":")
        self.grants.set((kind, name, data["tool_key"] or data["target"]), None, e.position, when(e))


# Changes to tools, aliases, the policy or connectors can change any subject's set.
_EVERYONE = ("Tool.", "Policy.", "Connector.")


class EffectivePart:
    """Keeps `effective_tools` current: after a batch, recomputes only the subjects it touched."""

    handlers: dict[str, Handler] = {}

    def __init__(self) -> None:
        self.everyone = False
        self.units: set[str] = set()
        self.agents: set[str] = set()
        self.last_position = 0

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        self.last_position = envelopes[-1].position
        for e in envelopes:
            data = e.data
            if e.type.startswith(_EVERYONE):
                self.everyone = True
            elif e.type.startswith("Unit."):
                self.units.add(data.get("unit") or data["name"])
            elif e.type.startswith("Agent."):
                self.agents.add(data.get("agent") or data["name"])
            elif e.type in ("Grants.Added", "Grants.Revoked"):
                kind, _, name = data["subject"].partition(":")
                (self.units if kind == "unit" else self.agents).add(name)

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        changed = refresh(con, self.touched(con))
        if changed:
            rows = [{"subject": subject, "position": self.last_position} for subject in changed]
            run(con, "DELETE FROM changelog_outbox WHERE subject IN (SELECT unnest($s::VARCHAR[]))",
                {"s": changed})
            insert_rows(con, "changelog_outbox", rows)
        self.discard()

    def discard(self) -> None:
        self.everyone, self.units, self.agents = False, set(), set()

    def touched(self, con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
        """The touched subjects; a unit brings its descendant units and their agents."""
        if self.everyone:
            return [tuple(r) for r in run(con, "SELECT 'unit', name FROM units UNION ALL "
                                               "SELECT 'agent', name FROM agent_history WHERE valid_to IS NULL")]
        if not self.units:
            return [("agent", name) for name in sorted(self.agents)]
        units = [r[0] for r in run(con, """
            WITH RECURSIVE tree AS (
                SELECT name FROM units WHERE name IN (SELECT unnest($seeds::VARCHAR[]))
                UNION SELECT u.name FROM units u JOIN tree t ON u.parent = t.name)
            SELECT name FROM tree""", {"seeds": sorted(self.units)})]
        agents = {r[0] for r in run(con, "SELECT name FROM agent_history WHERE valid_to IS NULL AND unit IN "
                                         "(SELECT unnest($units::VARCHAR[]))", {"units": units})}
        return [("unit", u) for u in units] + [("agent", a) for a in sorted(agents | self.agents)]
