"""The routing reads over HTTP: a route decision (ADR-027) and a node selection (ARCH-19), each the command
line's read command run on the server's read model."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response

from infra.http.answers import respond, run_command
from infra.http.reads import FRESH, READ, Fresh, path

router = APIRouter(tags=["routing"])


@router.get(path("route check"))
def route_check(request: Request, subject: str, call: str, after: list[str] = Query([]),
                at: int | None = Query(None, ge=0), fresh: Fresh = FRESH, _: Any = READ) -> Response:
    values = {"subject": subject, "call": call, "after": after, "at": at, **fresh.values}
    return respond(request, run_command(request, "route check", values))


@router.get(path("route node"))
def route_node(request: Request, tool: str, node: str | None = None, lane: str | None = None,
               secret_ref: str | None = None, fresh: Fresh = FRESH, _: Any = READ) -> Response:
    values = {"tool": tool, "node": node, "lane": lane, "secret_ref": secret_ref, **fresh.values}
    return respond(request, run_command(request, "route node", values))


@router.get(path("secret alias resolve"))
def secret_alias_resolve(request: Request, subject: str, alias: str, tool: str, fresh: Fresh = FRESH,
                         _: Any = READ) -> Response:
    values = {"subject": subject, "alias": alias, "tool": tool, **fresh.values}
    return respond(request, run_command(request, "secret alias resolve", values))
