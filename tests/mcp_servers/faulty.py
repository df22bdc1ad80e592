"""A small MCP server on the official SDK, for the sync's stories: it lists the tools of a JSON file (read
at each tools/list, so a story can change them between syncs), in pages, and can play a faulty server.

    python faulty.py TOOLS.json [--page-size N] [--fault exit|hang-initialize|die-mid-list|many:N] [--notify-changes]
                                [--http PORT]

tools/call (for the gateway's stories), by the tool's name: `echo` answers its `message` (with two progress
notifications when the call asks for progress), `crash` exits in the middle of the call, `slow` never
answers, `garbage` answers with a result that is not a tools/call result, `big` answers `size` bytes of
text, `has-secret` answers whether the variable FAULTY_API_TOKEN is set (never its value); any other name
answers an MCP error.

--notify-changes: once a client has listed the tools, a change of TOOLS.json (its modification time) is
sent to it as `notifications/tools/list_changed`.

--http PORT: serve streamable HTTP on 127.0.0.1:PORT (0: a free one) instead of stdio, printing
`listening on http://127.0.0.1:PORT/mcp` once it accepts connections.

A cancelled `slow` call says so on stderr (`faulty: slow call cancelled`): how a story sees that the
client's `notifications/cancelled` arrived.

TOOLS.json: a list of MCP tool objects ({"name", "description", "inputSchema", "annotations", …}), passed
as they are (invalid schemas and duplicate names included)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError as McpError


def _tools(path: Path, fault: str) -> list[dict[str, Any]]:
    if fault.startswith("many:"):
        count = int(fault.partition(":")[2])
        return [{"name": f"tool-{i:05d}", "description": f"generated tool {i}",
                 "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
                for i in range(count)]
    return json.loads(path.read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tools", type=Path)
    parser.add_argument("--page-size", type=int, default=50)
    parser.add_argument("--fault", default="")
    parser.add_argument("--notify-changes", action="store_true")
    parser.add_argument("--http", type=int, default=None)
    options = parser.parse_args()
    if options.fault == "exit":
        sys.stderr.write("faulty: exiting at once, as asked\n")
        sys.exit(3)
    if options.fault == "hang-initialize":
        sys.stderr.write("faulty: never answering initialize\n")
        while True:
            time.sleep(3600)

    listeners: list[Any] = []  # the session of the client that listed the tools

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        listeners[:] = [ctx.session]
        start = int(params.cursor) if params is not None and params.cursor else 0
        if start > 0 and options.fault == "die-mid-list":
            sys.stderr.write("faulty: dying in the middle of tools/list\n")
            sys.stderr.flush()
            os._exit(4)
        tools = _tools(options.tools, options.fault)
        page = tools[start:start + options.page_size]
        more = start + options.page_size < len(tools)
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in page],
                                     next_cursor=str(start + options.page_size) if more else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        arguments = params.arguments or {}
        if params.name == "echo":
            token = (ctx.meta or {}).get("progress_token", (ctx.meta or {}).get("progressToken"))
            if token is not None:
                for step in (1, 2):
                    await ctx.session.send_progress_notification(token, step, 2, f"step {step}",
                                                                 related_request_id=str(ctx.request_id))
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(arguments.get("message")))])
        if params.name == "crash":
            sys.stderr.write("faulty: crashing in the middle of tools/call\n")
            sys.stderr.flush()
            os._exit(5)
        if params.name == "slow":
            try:
                await anyio.sleep_forever()
            finally:
                sys.stderr.write("faulty: slow call cancelled\n")
                sys.stderr.flush()
        if params.name == "garbage":
            return {"content": "this is not a list of content blocks", "isError": "maybe"}
        if params.name == "big":
            return types.CallToolResult(content=[types.TextContent(type="text", text="x" * int(arguments["size"]))])
        if params.name == "has-secret":
            return types.CallToolResult(content=[types.TextContent(
                type="text", text="set" if os.environ.get("FAULTY_API_TOKEN") else "unset")])
        raise McpError(-32601, f"faulty: no tool {params.name}")

    server = Server("faulty", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def tell_changes() -> None:
        seen = options.tools.stat().st_mtime_ns
        while True:
            await anyio.sleep(0.1)  # a test server's look at its file, not a wait for anything
            now = options.tools.stat().st_mtime_ns
            if now != seen and listeners:
                seen = now
                await listeners[0].send_tool_list_changed()

    if options.http is not None:
        from infra.dev.echo_mcp import serve  # the echo server's way: Nagle off, the port said
        serve(server, options.http)
        return

    async def run() -> None:
        notify = NotificationOptions(tools_changed=options.notify_changes)
        async with stdio_server() as (read, write), anyio.create_task_group() as tasks:
            if options.notify_changes:
                tasks.start_soon(tell_changes)
            await server.run(read, write, server.create_initialization_options(notify))
            tasks.cancel_scope.cancel()
    anyio.run(run)


if __name__ == "__main__":
    main()
