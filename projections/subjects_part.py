"""Subjects, connectors, bindings, grants, images and allowlists; and which subjects a batch touched."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from projections.catalog_part import Handler, when
from projections.effective import refresh
from projections.envelope import Envelope
from projections.rows import BufferedPart, HistoryRows, insert_rows, run


def effective(data: dict[str, Any]) -> datetime | None:
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
        self.bindings = HistoryRows("binding_history", ("unit", "slug"), bitemporal=True)
        self.grants = HistoryRows("grant_history", ("subject_kind", "subject", "grant_id"), bitemporal=True)
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
        self.bindings.set((data["unit"], data["slug"]), {}, e.position, when(e), effective(data))

    def connector_unbound(self, e: Envelope, data: dict[str, Any]) -> None:
        self.bindings.set((data["unit"], data["slug"]), None, e.position, when(e), effective(data))

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
                        {"target": data["target"], "tool_key": data["tool_key"]}, e.position, when(e), effective(data))

    def grant_revoked(self, e: Envelope, data: dict[str, Any]) -> None:
        kind, _, name = data["subject"].partition(":")
        self.grants.set((kind, name, data["tool_key"] or data["target"]), None, e.position, when(e),
                        effective(data))


class EffectivePart:
    """Keeps `effective_tools` current: after a batch, recomputes only the subjects it can have changed."""

    handlers: dict[str, Handler] = {}

    def __init__(self) -> None:
        self.discard()
        self.last_position = 0

    def discard(self) -> None:
        self.everyone = False
        self.units: set[str] = set()
        self.agents: set[str] = set()
        self.new_tools: set[str] = set()       # canonical IDs registered or renamed to in this batch
        self.moved_tools: set[str] = set()     # tool keys whose canonical ID changed
        self.aliases_changed = False           # allowlists resolve through aliases

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        self.last_position = envelopes[-1].position
        for e in envelopes:
            data = e.data
            if e.type == "Policy.Recorded":
                self.everyone = True
            elif e.type == "Tool.Registered":
                self.new_tools.add(data["tool_id"])
            elif e.type == "Tool.Renamed":
                self.new_tools.add(data["new_id"])
                self.moved_tools.add(e.originator_id)
                self.aliases_changed = True
            elif e.type in ("Tool.AliasAdded", "Tool.AliasDeprecated", "Tool.AliasRetired"):
                self.aliases_changed = True
            elif e.type.startswith("Unit."):
                self.units.add(data.get("unit") or data["name"])
            elif e.type.startswith("Agent."):
                self.agents.add(data.get("agent") or data["name"])
            elif e.type in ("Grants.Added", "Grants.Revoked"):
                kind, _, name = data["subject"].partition(":")
                (self.units if kind == "unit" else self.agents).add(name)

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        self._reach_of_tool_changes(con)
        changed = refresh(con, self.touched(con))
        if changed:
            rows = [{"subject": subject, "position": self.last_position} for subject in changed]
            run(con, "DELETE FROM changelog_outbox WHERE subject IN (SELECT unnest($s::VARCHAR[]))",
                {"s": changed})
            insert_rows(con, "changelog_outbox", rows)
        self.discard()

    def _add(self, rows: list[tuple]) -> None:
        for kind, name in rows:
            (self.units if kind == "unit" else self.agents).add(name)

    def _reach_of_tool_changes(self, con: duckdb.DuckDBPyConnection) -> None:
        """Who a new or renamed tool can reach: connector namespaces and ns.* grants that cover it
        (a platform namespace reaches everyone); a renamed tool also leaves the sets it was in."""
        if self.new_tools:
            ids = sorted(self.new_tools)
            platform = run(con, "SELECT count(*) FROM platform_namespaces WHERE valid_to IS NULL AND namespace IN "
                                "(SELECT split_part(unnest($ids::VARCHAR[]), '.', 1))", {"ids": ids})[0][0]
            self.everyone = self.everyone or platform > 0
            self._add(run(con, """
                SELECT 'unit', b.unit FROM binding_history b JOIN connector_history k ON k.slug = b.slug
                WHERE b.valid_to IS NULL AND k.valid_to IS NULL
                  AND EXISTS (SELECT 1 FROM unnest($ids::VARCHAR[]) AS x(id) WHERE starts_with(x.id, k.namespace || '.'))
                UNION
                SELECT g.subject_kind, g.subject FROM grant_history g
                WHERE g.valid_to IS NULL AND g.tool_key IS NULL
                  AND EXISTS (SELECT 1 FROM unnest($ids::VARCHAR[]) AS x(id) WHERE starts_with(x.id, rtrim(g.target, '*')))
                """, {"ids": ids}))
        if self.moved_tools:
            self._add(run(con, "SELECT DISTINCT subject_kind, subject FROM effective_tools "
                               "WHERE tool_key IN (SELECT unnest($k::VARCHAR[]))", {"k": sorted(self.moved_tools)}))
        if self.aliases_changed:
            self._add(run(con, "SELECT 'agent', agent FROM allowlist_history WHERE valid_to IS NULL"))

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
