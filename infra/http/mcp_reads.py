"""The MCP server entries over HTTP: `mcp server list` and `mcp server show`, the command line's reads run
on the server's read model (references by name, never a value)."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from infra.http.answers import respond, run_command
from infra.http.reads import FRESH, READ, Fresh, path

router = APIRouter(tags=["mcp"])


@router.get(path("mcp server list"))
def mcp_server_list(request: Request, fresh: Fresh = FRESH, _: Any = READ) -> Response:
    return respond(request, run_command(request, "mcp server list", fresh.values))


@router.get(path("mcp server show"))
def mcp_server_show(request: Request, name: str, fresh: Fresh = FRESH, _: Any = READ) -> Response:
    return respond(request, run_command(request, "mcp server show", {"name": name, **fresh.values}))
