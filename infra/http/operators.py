"""For operators: health, readiness and Prometheus metrics (no token needed: probes and scrapers).

Their work runs on threads of their own (`_PROBES`), never in the pool readers take: however many reads
wait or run, a probe answers at once."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from infra.http import models
from infra.http.answers import json_response, server_of

router = APIRouter(tags=["operators"])
# A few threads for the probes alone (anyio's default pool of 40 is shared by every other route).
_PROBES = anyio.CapacityLimiter(4)


async def _on_probe_thread(answer: Callable[[Request], Response], request: Request) -> Any:
    return await anyio.to_thread.run_sync(answer, request, limiter=_PROBES)


@router.get("/v1/health", responses=models.documented(models.Health))
async def health(request: Request) -> Response:
    return await _on_probe_thread(_health, request)


def _health(request: Request) -> Response:
    state = server_of(request)
    document = {"status": "failing" if state.failure else "ok", "position": state.position,
                "store_head": state.store_head()}
    if state.failure:
        document["failure"] = state.failure
    if state.mcp_drift is not None and (drift := state.mcp_drift.report()) is not None:
        document["mcp"] = drift  # only while the MCP drift check runs (TOOLCAT_MCP_SYNC_SECONDS > 0)
    if state.integrity is not None:
        # The history's integrity apart from `status`: a restart (what a failing /v1/health asks for)
        # cannot mend an altered history, so it is reported here for an alert, not as `failing`.
        document["integrity"] = state.integrity.report()
    return json_response(document)


@router.get("/v1/ready", responses={**models.documented(models.Readiness), 503: {
    "model": models.Readiness, "description": "not caught up with the store yet (Retry-After)",
    "headers": {"Retry-After": {"required": True, "schema": {"type": "string"}}}}})
async def ready(request: Request) -> Response:
    """200 once the read model has caught up with the store, else 503."""
    return await _on_probe_thread(_ready, request)


def _ready(request: Request) -> Response:
    state = server_of(request)
    head = state.store_head()
    position = state.position
    caught_up = position >= head and not state.catching_up() and state.failure is None
    # lag: the stored events not applied yet, so a probe or an operator sees how far catch-up has to go.
    return json_response({"ready": caught_up, "position": position, "store_head": head,
                          "lag": max(head - position, 0)},
                         status=200 if caught_up else 503, headers=None if caught_up else {"Retry-After": "1"})


@router.get("/metrics", response_class=Response, responses={200: {
    "description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}}})
async def metrics(request: Request) -> Response:
    return await _on_probe_thread(_metrics, request)


def _metrics(request: Request) -> Response:
    return Response(generate_latest(server_of(request).metrics.registry), media_type=CONTENT_TYPE_LATEST)
