"""`GET /v1/tools/{tool}/who-can`: the `who-can` read over HTTP (every subject that could call a tool)."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response

from infra.http.answers import respond, run_command
from infra.read_routes import READ_ROUTES
from infra.http.reads import FRESH, READ, SELECTORS, Fresh, Selectors

router = APIRouter(tags=["reads"])


@router.get(READ_ROUTES["who-can"][1])
def who_can(request: Request, tool: str, at: int | None = Query(None, ge=0), as_of: str | None = None,
            fresh: Fresh = FRESH, _: Any = READ, __: Selectors = SELECTORS) -> Response:
    values = {"tool": tool, "at": at, "as_of": as_of, **fresh.values}
    return respond(request, run_command(request, "who-can", values))
