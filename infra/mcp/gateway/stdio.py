"""`toolcat gateway --stdio --token-file F`: the gateway for desktop clients that start a process.

Where it gets its sets: from the `toolcat serve` running on the home. DuckDB lets one process own the read
model (DESIGN.md section 5) and that process is the server, so this process holds no sets of its own: it
relays each MCP message between stdin/stdout and the server's `/mcp`, with the token read from the file.
Every decision is thus the server's (the same policy, the same decision log, `tools/list_changed` when the
set changes, the session ended when the token is revoked). With no server running it says so and exits 6."""
from __future__ import annotations

import logging
import sys
from typing import Any

log = logging.getLogger("toolcat.gateway")


async def relay(url: str, token: str, request_seconds: float) -> None:
    """Pass every message from stdin to the server and back until either side ends."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    timeout = httpx2.Timeout(request_seconds, connect=10.0)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as client, \
            streamable_http_client(url, http_client=client) as (up_read, up_write), \
            stdio_server() as (down_read, down_write), anyio.create_task_group() as group:

        async def pump(source: Any, sink: Any, side: str) -> None:
            async with sink:
                async for message in source:
                    if isinstance(message, Exception):  # a transport's complaint: said on stderr, not relayed
                        sys.stderr.write(f"toolcat gateway: {side}: {message}\n")
                        continue
                    await sink.send(stamped(message) if side == "client" else message)
            group.cancel_scope.cancel()  # one side ended: so does the relay
        group.start_soon(pump, down_read, up_write, "client")
        group.start_soon(pump, up_read, down_write, "server")


def stamped(message: Any) -> Any:
    """A client's message as the SDK's own client would send it over HTTP. A 2026-07-28 request carries its
    protocol version in its envelope (`_meta`), and the server routes it by headers that repeat it (version,
    method, the tool's name): the SDK's client transport sets them from what its session stamped, which a
    relay does not have, so they are set here from the envelope. Older versions need nothing."""
    from mcp.shared.inbound import (MCP_METHOD_HEADER, MCP_NAME_HEADER, MCP_PROTOCOL_VERSION_HEADER,
                                    NAME_BEARING_METHODS, encode_header_value)
    from mcp.shared.message import ClientMessageMetadata, SessionMessage
    from mcp_types import PROTOCOL_VERSION_META_KEY
    method, params = getattr(message.message, "method", None), getattr(message.message, "params", None) or {}
    version = (params.get("_meta") or {}).get(PROTOCOL_VERSION_META_KEY)
    if method is None or not isinstance(version, str) or message.metadata is not None:
        return message
    headers = {MCP_PROTOCOL_VERSION_HEADER: version, MCP_METHOD_HEADER: method}
    named = params.get(NAME_BEARING_METHODS.get(method, ""))
    if isinstance(named, str):
        headers[MCP_NAME_HEADER] = encode_header_value(named)
    return SessionMessage(message.message, ClientMessageMetadata(headers=headers))
