"""The MCP part of the read model: server entries (a version per change) and the evidence of each sync."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb

from projections.catalog_part import Handler, when
from projections.envelope import Envelope
from projections.rows import AppendRows, BufferedPart, HistoryRows


class McpPart(BufferedPart):
    def __init__(self) -> None:
        self.servers = HistoryRows("mcp_server_history", ("name",))
        self.syncs = AppendRows("mcp_syncs")
        self.handlers: dict[str, Handler] = {
            "McpServer.Added": self.added,
            "McpServer.Changed": self.changed,
            "McpServer.Removed": self.removed,
            "McpServer.Synced": self.synced,
        }

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        """Nothing to read ahead: every event carries its server's name."""

    def _buffers(self) -> tuple[HistoryRows | AppendRows, ...]:
        return (self.servers, self.syncs)

    def added(self, e: Envelope, data: dict[str, Any]) -> None:
        self._version(e, data)

    def changed(self, e: Envelope, data: dict[str, Any]) -> None:
        self._version(e, data)

    def _version(self, e: Envelope, data: dict[str, Any]) -> None:
        c = data["connection"]
        row = {"transport": c["transport"], "command": c.get("command"), "args": list(c.get("args") or []),
               "env": json.dumps(c.get("env") or {}, sort_keys=True),
               "env_refs": json.dumps(c.get("env_refs") or {}, sort_keys=True), "url": c.get("url"),
               "header_refs": json.dumps(c.get("header_refs") or {}, sort_keys=True), "tier": data["tier"]}
        self.servers.set((data["name"],), row, e.position, when(e))

    def removed(self, e: Envelope, data: dict[str, Any]) -> None:
        self.servers.set((data["name"],), None, e.position, when(e))

    def synced(self, e: Envelope, data: dict[str, Any]) -> None:
        self.syncs.add(server=data["name"], server_name=data["server_name"],
                       server_version=data["server_version"], protocol_version=data["protocol_version"],
                       tools_hash=data["tools_hash"], tool_count=data["tool_count"],
                       proposal_id=data["proposal_id"], listed_at=datetime.fromisoformat(data["listed_at"]), position=e.position,
                       synced_at=when(e), actor=e.actor)
