"""A small MCP server on the official SDK, for the sync's stories: it lists the tools of a JSON file (read
at each tools/list, so a story can change them between syncs), in pages, and can play a faulty server.

    python faulty.py TOOLS.json [--page-size N] [--fault exit|hang-initialize|die-mid-list|many:N] [--notify-changes]

--notify-changes: once a client has listed the tools, a change of TOOLS.json (its modification time) is
sent to it as `notifications/tools/list_changed`.

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

    server = Server("faulty", version="1.0.0", on_list_tools=list_tools)

    async def tell_changes() -> None:
        seen = options.tools.stat().st_mtime_ns
        while True:
            await anyio.sleep(0.1)  # a test server's look at its file, not a wait for anything
            now = options.tools.stat().st_mtime_ns
            if now != seen and listeners:
                seen = now
                await listeners[0].send_tool_list_changed()

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
