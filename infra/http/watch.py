"""`GET /v1/subjects/{subject}/watch`: a subject's effective-set changes as Server-Sent Events, `id` = the
position each change is as of.

A new stream starts with the whole set (every tool "added"; an empty set is one event with no changes),
then a `caught-up` event ({subject, position}): the client's copy is complete as of that position. A client
reconnecting with `Last-Event-ID: P` gets the difference between the set as of P and the current one as
one event (none when nothing changed), the `caught-up` event, then the changes as batches apply: nothing
missed, nothing twice. A `Last-Event-ID` beyond the read model's head was never sent by this server: 409,
with the head. The first event goes at once, so the response's headers do too (not with a first ping).

A stream ends within a second once its token is revoked, replaced or expired (infra/http/auth.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Header, Request
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from consumers.watch import diff
from domain.errors import Conflict, UnknownSubject, UsageError
from infra.reading import current_document
from infra.freshness import Freshness
from infra.http.answers import run_command, server_of
from infra.http.auth import Principal, TokenBook, require
from infra.http.reads import SELECTORS, Selectors

router = APIRouter(tags=["reads"])
# How often a waiting stream looks again even if no batch was announced: at least once a second, so that
# a revoked or expired token's stream ends within a second (a stat of the token file; no read).
_RECHECK_SECONDS = 1.0


def _set_at(request: Request, subject: str, position: int | None, caught_up: bool = False
            ) -> tuple[int, int, list[dict[str, Any]]]:
    """(the read model's position, the position of the subject's last change, the subject's set) now
    (None), or (`position`, `position`, its set as of it); empty where the subject did not exist yet.
    `caught_up`: first wait until the read model holds every write the store holds (a stream opened
    right after the write creating its subject must find it); later looks take what is applied."""
    freshness = Freshness() if caught_up else Freshness(min_position=0)
    try:
        if position is None:  # the current set: the command's document, without its argument parsing
            with server_of(request).read_model(freshness, one_statement=True) as con:
                document = current_document(con, subject)
        else:
            values = {"subject": subject, "at": position, "min_position": freshness.min_position}
            document = run_command(request, "effective", values).document
    except UnknownSubject:
        if position is None:
            raise
        return position, position, []
    if position is None:
        return document["read_model_position"], document["position"], document["tools"]
    return position, position, document["tools"]


def _event(subject: str, position: int, changes: list[dict[str, Any]]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps({"subject": subject, "position": position, "changes": changes}),
                           id=str(position), event="changes")


@router.get("/v1/subjects/{subject}/watch", response_class=EventSourceResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "events `changes`: {subject, position, changes: [{change, tool_id, "
                                            "row | fields}]}, then once `caught-up`: {subject, position}; "
                                            "id = position"},
                       409: {"description": "Last-Event-ID beyond the head"}})
async def watch(request: Request, subject: str, last_event_id: str | None = Header(None),
                principal: Principal = Depends(require("read")), _: Selectors = SELECTORS) -> EventSourceResponse:
    state, sets = server_of(request), request.app.state.current_sets
    book: TokenBook = request.app.state.tokens
    if last_event_id is not None and not last_event_id.isdigit():
        raise UsageError("Last-Event-ID must be a position this stream sent", last_event_id=last_event_id)
    resumed = int(last_event_id) if last_event_id is not None else None
    # Unknown subjects are refused before the stream starts.
    position, changed_at, current = await run_in_threadpool(_set_at, request, subject, None, True)
    if resumed is not None and resumed > max(position, state.position):
        raise Conflict(f"Last-Event-ID {resumed} is beyond the head of this server's history (position "
                       f"{max(position, state.position)}): it was not sent by this server; resume from the "
                       "head or start afresh", last_event_id=resumed, head=max(position, state.position))
    before: list[dict[str, Any]] = [] if resumed is None else (
        await run_in_threadpool(_set_at, request, subject, min(resumed, position)))[2]

    async def changes() -> AsyncIterator[ServerSentEvent]:
        # `at`: the read model's position the set was read at; `last`: the subject's last change then (the
        # events' position and id, as its ETag: CONTRACT v1.2)
        sent, tools, at, last = before, current, position, changed_at
        first = True
        while not state.stopping.is_set() and book.still_valid(principal):
            if (changed := diff(sent, tools)) or (first and resumed is None):  # a new stream: the set, even empty
                yield _event(subject, last, changed)
                sent = tools
            if first:
                first = False
                yield ServerSentEvent(data=json.dumps({"subject": subject, "position": at}), id=str(at),
                                      event="caught-up")
            waiter = state.batch_waiter()
            if state.position == at:
                await _wait(waiter)
            if await request.is_disconnected():
                return
            applied = state.position
            if applied != at and sets.unchanged_since(subject, at):
                at = applied  # the batches since changed other subjects: no read, no thread (the fan-out)
            elif applied != at:
                at, last, tools = await run_in_threadpool(_set_at, request, subject, None)

    return EventSourceResponse(changes(), ping=15)


async def _wait(waiter: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(waiter.wait(), _RECHECK_SECONDS)
