"""The read endpoints: each runs the command line's read command (READ_ROUTES says which path serves
which command), with the HTTP extras: deprecation headers, ETag and 304, the HTML report."""
from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from datetime import datetime, time, timezone
from email.utils import format_datetime
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from domain.catalog import WriteResult
from domain.errors import IntegrityFailure
from domain.selectors import refuse_selectors
from domain.taxonomy import GROUPS
from infra.reading import altered, report_document, report_text
from infra.reply import write_document
from infra.freshness import Freshness
from infra.http import models
from infra.http.answers import REPLY_MEDIA_TYPE, json_response, respond, run_command, server_of
from infra.http.auth import SESSION_COOKIE, Principal, digest, require
from infra.http.hosts import absolute
from infra.http.problems import TooManyWaits
from infra.read_routes import READ_ROUTES
from projections import queries

router = APIRouter(tags=["reads"])
Group = Literal[GROUPS]  # type: ignore[valid-type]
READ, AUDIT = Depends(require("read")), Depends(require("audit"))


def path(command: str) -> str:
    return READ_ROUTES[command][1]


class Fresh:
    """How fresh a read must be: by default caught up with the store; `min_position` waits (at most
    `timeout` seconds) for that position instead, then answers 503 with Retry-After."""

    def __init__(self, min_position: int | None = Query(None, ge=0),
                 timeout: float = Query(10.0, gt=0, le=60)) -> None:
        self.values = {"min_position": min_position, "timeout": timeout}
        self.freshness = Freshness(min_position, timeout)


_RESERVED = "reserved by ARCH-21 for later work: refused (422 unsupported_selector), never ignored"
_CONTEXT_REPORT = "a context-report selector, not an exposure selector: refused (422 unsupported_selector)"


class Moment:
    """As known at a past position (`at`) or time (`as_of`); grants in effect at `effective_at`."""

    def __init__(self, at: int | None = Query(None, ge=0), as_of: str | None = None,
                 effective_at: str | None = None) -> None:
        self.values = {"at": at, "as_of": as_of, "effective_at": effective_at}


class Selectors:
    """ARCH-21's exposure selectors (domain/selectors.py), taken by the inventory reads so that none is ever
    ignored as an unknown parameter would be: each is refused, 422 unsupported_selector."""

    def __init__(self, execution_profile: str | None = Query(None, description=_RESERVED),
                 conversation_kind: str | None = Query(None, description=_RESERVED),
                 conversation_id: str | None = Query(None, description=_CONTEXT_REPORT),
                 turn_id: str | None = Query(None, description=_CONTEXT_REPORT)) -> None:
        refuse_selectors({"execution_profile": execution_profile, "conversation_kind": conversation_kind,
                          "conversation_id": conversation_id, "turn_id": turn_id})


def in_event_loop(kind: type) -> Any:
    """A dependency building `kind` from the request's parameters in the event loop. FastAPI runs a class
    dependency in its thread pool, and each hop there and back costs more than building these values."""
    async def build(**values: Any) -> Any:
        return kind(**values)
    build.__signature__ = inspect.signature(kind, eval_str=True)  # type: ignore[attr-defined]
    return Depends(build)


async def fresh_enough(request: Request, min_position: int | None = Query(None, ge=0),
                       timeout: float = Query(10.0, gt=0, le=60)) -> Fresh:
    """`Fresh`, once the position asked for is applied: waited for here, in the event loop, so a waiting
    read holds no thread (and cannot starve /v1/health of one); at most TOOLCAT_MAX_WAITS_PER_CLIENT at once
    per client, 429 beyond."""
    fresh = Fresh(min_position, timeout)
    state = server_of(request)
    if min_position is not None and state.position < min_position:
        async with waiting(request, state.settings.max_waits_per_client):
            await state.wait_applied(min_position, timeout, request.is_disconnected)
    return fresh


@contextlib.asynccontextmanager
async def waiting(request: Request, limit: int) -> AsyncIterator[None]:
    """One more wait of the request's client (its token, else its address); TooManyWaits past `limit`."""
    credentials = request.headers.get("authorization") or request.cookies.get(SESSION_COOKIE)
    client = digest(credentials) if credentials else (request.client.host if request.client else "?")
    counts: dict[str, int] = request.app.state.waits
    if counts.get(client, 0) >= limit:
        raise TooManyWaits(f"this client already has {limit} reads waiting for a position "
                           "(TOOLCAT_MAX_WAITS_PER_CLIENT); retry when one has answered", limit=limit)
    counts[client] = counts.get(client, 0) + 1
    try:
        yield
    finally:
        counts[client] -= 1
        if not counts[client]:
            del counts[client]


FRESH, MOMENT, SELECTORS = Depends(fresh_enough), in_event_loop(Moment), in_event_loop(Selectors)
APPLIED = Freshness(min_position=0)  # what the server has applied, whatever the store holds


@router.get(path("tool list"), responses=models.documented(models.ToolPage, 400))
def tool_list(request: Request, group: Group | None = None, family: str | None = None,
              limit: int = Query(100, ge=1, le=10_000), cursor: str | None = None,
              visibility: Literal["public", "internal", "runtime_only", "all"] = "public", fresh: Fresh = FRESH,
              _: Any = READ, __: Selectors = SELECTORS) -> Response:
    values = {"group": group, "family": family, "limit": limit, "cursor": cursor, "visibility": visibility,
              **fresh.values}
    return respond(request, run_command(request, "tool list", values))


@router.get(path("tool show"), responses=models.documented(models.ToolDescriptor, 404, 410,
                                                          headers=models.DEPRECATION_HEADERS))
def tool_show(request: Request, id: str, fresh: Fresh = FRESH, _: Any = READ) -> Response:
    reply = run_command(request, "tool show", {"id": id, **fresh.values})
    return respond(request, reply, deprecation_headers(request, id))


@router.get(path("resolve"), responses=models.documented(models.Resolution, 404, 410,
                                                        headers=models.DEPRECATION_HEADERS))
def resolve(request: Request, id: str, fresh: Fresh = FRESH, _: Any = READ) -> Response:
    reply = run_command(request, "resolve", {"id": id, **fresh.values})
    return respond(request, reply, deprecation_headers(request, id))


def deprecation_headers(request: Request, tool_id: str) -> dict[str, str]:
    """For a deprecated alias: `Deprecation` (RFC 9745, when it was deprecated), `Link` to the canonical
    tool (rel successor-version) and, once its earliest removal release has a planned date, `Sunset`
    (RFC 8594)."""
    with server_of(request).read_model(Freshness(min_position=0)) as con:
        found = queries.deprecation(con, tool_id)
    if found is None:
        return {}
    successor = absolute(server_of(request).settings.public_url,
                         request.app.url_path_for("tool_show", id=found["canonical_id"]))
    headers = {"Deprecation": f"@{int(found['deprecated_at'].timestamp())}",
               "Link": f'<{successor}>; rel="successor-version"'}
    if found["removal_planned"] is not None:
        midnight = datetime.combine(found["removal_planned"], time(0), tzinfo=timezone.utc)
        headers["Sunset"] = format_datetime(midnight, usegmt=True)
    return headers


@router.get(path("effective"), responses={
    **models.documented(models.EffectiveSet, 400, 404, 503, headers=models.ETAG_HEADER),
    304: {"description": "unchanged since the ETag given (If-None-Match)",
          "headers": {"ETag": {**models.ETAG_HEADER["ETag"], "required": True}}}})
async def effective(request: Request, subject: str, moment: Moment = MOMENT, fresh: Fresh = FRESH,
                    with_classes: bool = False, _: Any = READ, __: Selectors = SELECTORS) -> Response:
    now = all(value is None for value in moment.values.values())
    if now and not with_classes and REPLY_MEDIA_TYPE not in request.headers.get("accept", ""):
        # The hot read: the same bytes as below, without the command line's round trip (current_sets.py);
        # a kept answer is sent from the event loop, anything that waits or reads from the thread pool.
        sets, fresh_now = request.app.state.current_sets, server_of(request).is_fresh(fresh.freshness)
        found = sets.kept(subject) if fresh_now else None
        # already fresh enough: the read need not look at the store's head again
        position, body = found or await run_in_threadpool(sets.answer, subject,
                                                          APPLIED if fresh_now else fresh.freshness)
        return _tagged(request, position, lambda headers: Response(body, headers=headers, media_type="application/json"))
    values = {"subject": subject, "with_classes": with_classes, **moment.values, **fresh.values}
    reply = await run_in_threadpool(run_command, request, "effective", values)
    if moment.values["effective_at"] is not None:  # the same position answers differently at other times
        return respond(request, reply)
    return _tagged(request, reply.document["position"], lambda headers: respond(request, reply, headers))


def _tagged(request: Request, position: int, answer: Callable[[dict[str, str]], Response]) -> Response:
    """An effective set's answer with its ETag (the position), or 304 when the client holds that one."""
    etag = f'"{position}"'
    if etag in _tags(request.headers.get("if-none-match")):
        return Response(status_code=304, headers={"ETag": etag})
    return answer({"ETag": etag})


def _tags(header: str | None) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in (header or "").split(",") if tag.strip()}


@router.get(path("explain"), responses=models.documented(models.Explanation, 400, 404, 410))
def explain(request: Request, subject: str, tool: str, moment: Moment = MOMENT, fresh: Fresh = FRESH,
            _: Any = READ, __: Selectors = SELECTORS) -> Response:
    values = {"subject": subject, "tool": tool, **moment.values, **fresh.values}
    return respond(request, run_command(request, "explain", values))


@router.get(path("audit verify"), tags=["audit"], responses=models.documented(models.AuditVerify))
def audit_verify(request: Request, expect_head: str | None = Query(None, description="a chain head kept outside "
                                                                     "the store: an integrity failure unless the "
                                                                     "history holds it"),
                 fresh: Fresh = FRESH, _: Any = AUDIT) -> Response:
    return respond(request, run_command(request, "audit verify", {"expect_head": expect_head, **fresh.values}))


@router.get(path("audit fingerprint"), tags=["audit"], responses=models.documented(models.Fingerprint, 400))
def audit_fingerprint(request: Request, at: int | None = Query(None, ge=0), deep: bool = False,
                      fresh: Fresh = FRESH, _: Any = AUDIT) -> Response:
    return respond(request, run_command(request, "audit fingerprint", {"at": at, "deep": deep, **fresh.values}))


@router.get(path("audit alias"), tags=["audit"], responses=models.documented(models.AuditAlias, 404))
def audit_alias(request: Request, alias: str, fresh: Fresh = FRESH, _: Any = AUDIT) -> Response:
    return respond(request, run_command(request, "audit alias", {"alias": alias, **fresh.values}))


@router.get(path("audit replay"), tags=["audit"], responses=models.documented(models.Replay))
def audit_replay(request: Request, until: int | None = Query(None, ge=0), deep: bool = False,
                 fresh: Fresh = FRESH, _: Any = AUDIT) -> Response:
    return respond(request, run_command(request, "audit replay", {"until": until, "deep": deep, **fresh.values}))


@router.get(path("audit report"), tags=["audit"], response_class=HTMLResponse,
            responses={200: {"content": {"application/json": {}}}, 404: models.PROBLEMS[404]})
def audit_report(request: Request, alias: str | None = None, format: Literal["html", "json"] = "html",
                 fresh: Fresh = FRESH, _: Any = AUDIT) -> Response:
    """The deprecation audit report: one self-contained HTML page (or its JSON)."""
    state = server_of(request)
    try:
        checked = run_command(request, "audit verify", {}).document
    except IntegrityFailure as failure:
        checked = altered(failure)
    with state.read_model(fresh.freshness) as con:
        report = report_document(con, alias, checked)
    if format == "json":
        return json_response(report)
    return HTMLResponse(report_text(report, "html"))


@router.get("/v1/events", responses=models.documented(models.WriteAnswer))
def events(request: Request, idempotency_key: str, actor: str | None = None, fresh: Fresh = FRESH,
           principal: Principal = READ) -> Response:
    """What the write made under an idempotency key recorded (the answer it gave): `actor`'s key (by
    default the token's own, the actor of its writes)."""
    replayed = WriteResult(position=None, events=[], replayed_key=idempotency_key)
    of = actor or principal.name
    with server_of(request).read_model(fresh.freshness) as con:
        return json_response(write_document(replayed, lambda key: queries.events_of_key(con, key, of)))
