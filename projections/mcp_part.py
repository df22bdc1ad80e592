"""The MCP part of the read model: server entries (a version per change), the evidence of each applied
sync, and the tools each server backs (their upstream names, and which are gone upstream)."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb

from domain.versions import parse_version
from projections.catalog_part import Handler, when
from projections.envelope import Envelope
from projections.rows import AppendRows, BufferedPart, HistoryRows, select_rows


class McpPart(BufferedPart):
    def __init__(self) -> None:
        self.servers = HistoryRows("mcp_server_history", ("name",))
        self.tools = HistoryRows("mcp_tool_history", ("tool_id",))
        self.syncs = AppendRows("mcp_syncs")
        self._tools: dict[str, dict[str, Any]] = {}  # tool ID → its current row, for the servers in the batch
        self.handlers: dict[str, Handler] = {
            "McpServer.Added": self.changed,
            "McpServer.Changed": self.changed,
            "McpServer.Removed": self.removed,
            "McpServer.Synced": self.synced,
        }

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        """The current tool rows of the servers synced in the batch (a sync compares against them)."""
        if any(e.type == "McpServer.Synced" for e in envelopes):
            for row in select_rows(con, "SELECT * EXCLUDE (valid_from, valid_to, valid_from_time, valid_to_time) "
                                        "FROM mcp_tool_history WHERE valid_to IS NULL"):
                self._tools[row["tool_id"]] = row

    def _buffers(self) -> tuple[HistoryRows | AppendRows, ...]:
        return (self.servers, self.tools, self.syncs)

    def discard(self) -> None:
        super().discard()
        self._tools = {}

    def changed(self, e: Envelope, data: dict[str, Any]) -> None:
        c = data["connection"]
        row = {"transport": c["transport"], "command": c.get("command"), "args": list(c.get("args") or []),
               "env": json.dumps(c.get("env") or {}, sort_keys=True),
               "env_refs": json.dumps(c.get("env_refs") or {}, sort_keys=True), "url": c.get("url"),
               "header_refs": json.dumps(c.get("header_refs") or {}, sort_keys=True), "tier": data["tier"]}
        self.servers.set((data["name"],), row, e.position, when(e))

    def removed(self, e: Envelope, data: dict[str, Any]) -> None:
        self.servers.set((data["name"],), None, e.position, when(e))

    def synced(self, e: Envelope, data: dict[str, Any]) -> None:
        key = e.idempotency_key or ""
        self.syncs.add(server=data["name"], server_name=data["server_name"], server_version=data["server_version"],
                       protocol_version=data["protocol_version"], tools_hash=data["tools_hash"],
                       tool_count=data["tool_count"],
                       proposal_id=key.removeprefix("proposal:") if key.startswith("proposal:") else None,
                       listed_at=datetime.fromisoformat(data["listed_at"]), position=e.position,
                       synced_at=when(e), actor=e.actor)
        for tool in data["tools"]:
            self._tool(e, tool["tool_id"], server=data["name"], upstream_name=tool["upstream_name"], listed=True,
                       deprecated_release=None, earliest_removal_release=None, **_described(tool))
        release = data["release"]
        earliest = None if release is None else str(parse_version(release).bump_minor())
        for tool_id in data["gone"]:
            known = self._tools.get(tool_id)
            self._tool(e, tool_id, server=data["name"],
                       upstream_name=known["upstream_name"] if known else tool_id.rpartition(".")[2],
                       listed=False, deprecated_release=release, earliest_removal_release=earliest,
                       **{k: known[k] if known else None for k in ("title", "output_schema", "annotations")})

    def _tool(self, e: Envelope, tool_id: str, **row: Any) -> None:
        if {"tool_id": tool_id, **row} == self._tools.get(tool_id):
            return  # listed as before: no new version
        self._tools[tool_id] = {"tool_id": tool_id, **row}
        self.tools.set((tool_id,), row, e.position, when(e))


def _described(tool: dict[str, Any]) -> dict[str, Any]:
    """A synced tool's title, output schema and annotations as columns (JSON text; None when not given)."""
    def text(value: Any) -> str | None:
        return None if value is None else json.dumps(value, sort_keys=True)
    return {"title": tool["title"], "output_schema": text(tool["output_schema"]),
            "annotations": text(tool["annotations"])}
