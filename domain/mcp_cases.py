"""Use cases of MCP server entries: add, change, remove, and the evidence of an applied sync."""
from __future__ import annotations

from typing import Any

from domain.application import Batch, CatalogApplication, WriteResult
from domain.base import Meta
from domain.errors import UsageError
from domain.mcp_servers import (Connection, DuplicateMcpServer, Evidence, McpServer, UnknownMcpServer, check_server_name,
                                mcp_server_key)
from domain.taxonomy import TIERS


def _check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise UsageError(f"unknown tier {tier!r}; tiers are {', '.join(TIERS)}", tier=tier)
    return tier


class McpServerUseCases(CatalogApplication):
    def mcp_server(self, name: str) -> McpServer:
        """The server entry by name; a removed or unknown one is refused."""
        server = self.get_or_none(mcp_server_key(check_server_name(name)), McpServer)
        if server is None or server.removed:
            raise UnknownMcpServer(f"no MCP server '{name}' in the catalog; 'toolcat mcp server list' shows them",
                                   server=name)
        return server

    def add_mcp_server(self, name: str, connection: Connection, tier: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_server_name(name)
            _check_tier(tier)
            server = self.get_or_none(mcp_server_key(name), McpServer)
            if server is not None and not server.removed:
                raise DuplicateMcpServer(f"MCP server '{name}' is already in the catalog; change it with "
                                         f"'toolcat mcp server change {name}'", server=name)
            if server is None:
                batch.add(McpServer.add(name, connection, tier, meta))
            else:  # a removed entry comes back under the same id
                server.change(connection, tier, meta)
                batch.add(server)
        return self.execute("mcp.server.add", {"name": name, "tier": tier,
                                               "connection": connection.model_dump(mode="json")}, meta, build)

    def change_mcp_server(self, name: str, connection: Connection | None, tier: str | None,
                          meta: Meta) -> WriteResult:
        """A new connection replaces the old one whole; a tier alone keeps the connection."""
        def build(batch: Batch) -> None:
            server = self.mcp_server(name)
            if connection is None and tier is None:
                raise UsageError("give what changes: --command or --url (the whole connection), or --tier")
            new_connection = connection or server.connection
            new_tier = server.tier if tier is None else _check_tier(tier)
            if (new_connection, new_tier) != (server.connection, server.tier):
                server.change(new_connection, new_tier, meta)
                batch.add(server)
        args: dict[str, Any] = {"name": name, "tier": tier,
                                "connection": None if connection is None else connection.model_dump(mode="json")}
        return self.execute("mcp.server.change", args, meta, build)

    def remove_mcp_server(self, name: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            server = self.mcp_server(name)
            server.remove(meta)
            batch.add(server)
        return self.execute("mcp.server.remove", {"name": name}, meta, build)

    def record_mcp_sync(self, name: str, evidence: Evidence, meta: Meta) -> WriteResult:
        """Evidence of an applied sync (`mcp sync --apply`, or `apply` of a sync's proposal): the last
        command of every sync's proposal."""
        def build(batch: Batch) -> None:
            server = self.mcp_server(name)
            server.synced(evidence, batch.releases().latest, meta)
            batch.add(server)
        return self.execute("mcp.record", {"name": name, **evidence.model_dump()}, meta, build)
