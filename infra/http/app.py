"""The FastAPI application of `toolcat serve`: routes, auth, error answers, limits and metrics."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from domain.errors import ToolcatError, UsageError
from infra.http import operators, reads, snapshots, sql, watch, who_can, writes
from infra.http import route_reads
from infra.http import mcp_reads
from infra.http import proposals
from infra.http import signin
from infra.http.answers import AnswerRead
from infra.http.auth import TokenBook, require
from infra.http.current_sets import CurrentSets
from infra.http.hosts import HostCheck, served_names
from infra.http.limits import SizeLimits
from infra.http.methods import HeadAsGet, allowed_methods
from infra.http.mcp_endpoint import McpEndpoint, McpFront
from infra.http.metrics import RequestTimer
from infra.http.openapi import truthful_openapi
from infra.http.problems import NotFound, Unauthenticated, problem
from infra.http.signin import session_of, signin_redirect, wants_page
from infra.http.snapshots import SnapshotPublisher
from projections.sql_worker import workers_for
from infra.http.state import ServerState
from infra.http.web import web_router
from infra.http.console_subjects import console_subjects_router
from infra.http.console_tools import console_tools_router
from projections.console import ConsoleIndex
from infra.wiring import infrastructure_error

log = logging.getLogger("toolcat.serve")
DESCRIPTION = """The toolcat catalog over HTTP. Bodies are the command line's `--json` documents; errors
are RFC 9457 `application/problem+json` with the command line's stable error `code`. Reads need a
bearer token with the `read` scope (`audit` for /v1/audit), writes the `write` scope; without any token
the server answers anonymous reads from loopback only."""


def create_app(state: ServerState, tokens: TokenBook, publisher: SnapshotPublisher, answer_read: AnswerRead
               ) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.loop = asyncio.get_running_loop()
        app.state.sql_workers.warm()  # the first query need not wait for a worker to start
        try:
            async with app.state.mcp.running():  # the MCP gateway at /mcp: its sessions, upstreams, decision log
                yield
        finally:
            app.state.sql_workers.close()

    app = FastAPI(title="toolcat", version="1", description=DESCRIPTION, lifespan=lifespan)
    app.state.server, app.state.tokens, app.state.snapshots = state, tokens, publisher
    app.state.answer_read = answer_read
    app.state.current_sets = CurrentSets(state)
    app.state.waits = {}  # reads waiting for a position, by client (infra/http/reads.py `waiting`)
    app.state.mcp = McpEndpoint(state, tokens)
    # User SQL runs in worker processes, bounded in memory and killed at the timeout (POST /v1/sql).
    app.state.sql_workers = workers_for(state.settings.sql_memory_bytes, state.settings.duckdb_memory_limit)
    state.user_sql = lambda query: sql.run_user_sql(app, query)
    drift = lambda: state.mcp_drift.report() if state.mcp_drift else None  # noqa: E731
    integrity = lambda: state.integrity.report() if state.integrity else None  # noqa: E731
    console_index = ConsoleIndex()  # the console's names in natural order, shared by `/` and the search
    # Append new routers at the end (other issues add theirs).
    for router in (operators.router, reads.router, watch.router, sql.router, writes.router, snapshots.router,
                   route_reads.router, proposals.router, who_can.router, mcp_reads.router,
                   web_router(state.new_cursor, Depends(require("read")), mcp_drift=drift, session=session_of,
                              integrity=integrity, index=console_index),
                   console_tools_router(state.new_cursor, Depends(require("read")), session=session_of,
                                        integrity=integrity, index=console_index),
                   signin.router,
                   console_subjects_router(state.new_cursor, Depends(require("read")), session=session_of,
                                           integrity=integrity, mcp_drift=drift)):
        app.include_router(router)
    app.openapi = lambda: truthful_openapi(app)  # type: ignore[method-assign]
    # MCP streamable HTTP (issue 34): a raw ASGI app; its auth answers are its own (mcp_endpoint.py).
    app.add_route("/mcp", app.state.mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    app.add_exception_handler(ToolcatError, _toolcat_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(SizeLimits)
    app.add_middleware(HostCheck, names=served_names(state.settings.allowed_hosts))
    app.add_middleware(RequestTimer, metrics=state.metrics)
    app.add_middleware(HeadAsGet)  # every other part sees the GET a HEAD stands for
    # The outermost: /mcp's calls skip the routing of every other route (its own checks: mcp_endpoint.py).
    app.add_middleware(McpFront, endpoint=app.state.mcp, names=served_names(state.settings.allowed_hosts),
                       metrics=state.metrics)
    return app


async def _toolcat_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ToolcatError)
    if isinstance(error, Unauthenticated) and wants_page(request):
        return signin_redirect(request)  # a browser without a sign-in; API clients get the 401 below
    return problem(error, request.url.path)


async def _invalid_request(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"][1:]) or str(item["loc"][0])
        if item["loc"][-1] == "actor" and item["type"] == "extra_forbidden":
            problems.append("actor: over HTTP the actor of a write is the token's name")
        else:
            problems.append(f"{where}: {item['msg']}")
    return problem(UsageError("invalid request: " + "; ".join(problems), errors=problems), request.url.path)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if error.status_code == 404:
        return problem(NotFound(f"no endpoint at {request.url.path}"), request.url.path)
    refused = UsageError(str(error.detail))
    refused.code = "not_allowed" if error.status_code == 405 else "usage"
    headers = {"Allow": allowed_methods(request, (error.headers or {}).get("Allow"))} \
        if error.status_code == 405 else None
    return problem(refused, request.url.path, status=error.status_code, headers=headers)


async def _unexpected(request: Request, error: Exception) -> Response:
    known = infrastructure_error(error)
    if known is None:
        log.exception("unexpected failure answering %s", request.url.path)
        known = ToolcatError(f"unexpected failure (a bug): {error!r}")
    return problem(known, request.url.path)
