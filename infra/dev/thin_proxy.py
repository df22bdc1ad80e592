"""The thinnest MCP proxy on the official SDK, over streamable HTTP: the SDK's low-level server in front,
one SDK client session behind (opened once, shared by every session), and no policy at all. It is
`toolcat bench --only gateway`'s reference: what a proxied call costs on this SDK before a gateway
decides anything, measured in the same run as the gateway.

    python -m infra.dev.thin_proxy --upstream URL [--port P]

Prints `listening on http://127.0.0.1:PORT/mcp` once it accepts connections (--port 0: a free port)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

from infra.dev.echo_mcp import serve


def thin_proxy(upstream: str) -> Server[Any]:
    """A server listing and calling `upstream`'s tools as they are, through one kept client session."""
    @asynccontextmanager
    async def upstream_session(_: Server[Any]) -> AsyncIterator[Any]:
        import httpx2  # the SDK's HTTP client (a dependency of mcp)
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as http, \
                streamable_http_client(upstream, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            # The SDK's client checks a call's result against the tool's listed output schema: listed once
            # here, or it would list again before the first call of each tool.
            await session.list_tools()
            yield session

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return await ctx.lifespan_context.list_tools(params=params)  # type: ignore[no-any-return]

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await ctx.lifespan_context.call_tool(params.name, params.arguments)  # type: ignore[no-any-return]
    return Server("thin-proxy", version="1.0.0", lifespan=upstream_session, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="thin_proxy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="the MCP server's streamable HTTP URL")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args(argv)
    serve(thin_proxy(options.upstream), options.port)
    sys.exit(0)


if __name__ == "__main__":
    main()
