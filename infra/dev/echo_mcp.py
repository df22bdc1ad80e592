"""An echo MCP server on the official SDK over streamable HTTP: the upstream of `toolcat bench --only gateway`
and of the gateway's tests. Every tool answers its `text` argument back, so a call through the gateway and
the same call straight to this server do the same work upstream and differ only by the path.

    python -m infra.dev.echo_mcp [--port P] [--tools N]

--tools N: the tools `echo` and `echo-00001` … (N in all), for a large synced set. Prints
`listening on http://127.0.0.1:PORT/mcp` once it accepts connections (--port 0: a free port)."""
from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def echo_tools(count: int) -> list[types.Tool]:
    names = ["echo", *(f"echo-{index:05d}" for index in range(1, count))]
    return [types.Tool(name=name, title=f"Echo {name}", description="answers its text argument back",
                       input_schema=ECHO_SCHEMA, annotations=types.ToolAnnotations(read_only_hint=True))
            for name in names]


def echo_server(count: int = 1) -> Server[Any]:
    tools = echo_tools(count)
    names = {tool.name for tool in tools}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)
        text = str((params.arguments or {}).get("text", ""))
        return types.CallToolResult(content=[types.TextContent(text=text)])
    return Server("echo", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="echo_mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tools", type=int, default=1)
    options = parser.parse_args(argv)
    serve(echo_server(max(1, options.tools)), options.port)
    sys.exit(0)


def serve(server: Server[Any], port: int) -> None:
    """`server` over streamable HTTP on 127.0.0.1:`port`, printing `listening on URL` once it accepts
    connections (also tests/mcp_servers/faulty.py's --http)."""
    import uvicorn
    # The socket is bound here so that port 0 can say which port it got before serving.
    # A TCP socket said to be one (as infra/http/server.bind makes it): asyncio turns Nagle's algorithm off
    # only then, and a kept connection's answers would otherwise wait 40 ms for the client's delayed ACK.
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listening.bind(("127.0.0.1", port))
    listening.listen(128)  # connections wait in the backlog until uvicorn serves
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    print(f"listening on http://127.0.0.1:{listening.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(config).run(sockets=[listening])


if __name__ == "__main__":
    main()
