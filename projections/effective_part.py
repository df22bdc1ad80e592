"""The projection part that keeps the materialized effective sets current: after a batch, it works out
which subjects the batch can have changed, recomputes only those, and queues the changed ones for the
changelog topic (the outbox)."""
from __future__ import annotations

import duckdb

from projections.catalog_part import Handler
from projections.effective import subjects_at
from projections.envelope import Envelope
from projections.materialize import refresh
from projections.rows import insert_rows, run
from projections.sqlfiles import query


class EffectivePart:
    """Writes no rows of its own from events (no handlers); reads the batch ahead to see what it touches."""

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
            self._add(run(con, query("tool_reach"), {"ids": ids}))
        if self.moved_tools:
            self._add(run(con, "SELECT DISTINCT subject_kind, subject FROM effective_tools "
                               "WHERE tool_key IN (SELECT unnest($k::VARCHAR[]))", {"k": sorted(self.moved_tools)}))
        if self.aliases_changed:
            self._add(run(con, "SELECT 'agent', agent FROM allowlist_history WHERE valid_to IS NULL"))

    def touched(self, con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
        """The touched subjects; a unit brings its descendant units and their agents."""
        if self.everyone:
            return subjects_at(con)
        found = set(run(con, query("touched"), {"units": sorted(self.units)})) if self.units else set()
        return sorted(found | {("agent", name) for name in self.agents})
