"""The write endpoints: every write command is `POST /v1/<noun>/<verb>` (`/v1/init`), its JSON body the
command itself (domain/commands: fields named as the command line's options) and the write's `reason`.
The actor is the token's name; the `Idempotency-Key` header is `--idempotency-key`; what the command
line reads from a file (`schema`, `policy`, `manifest`) is given as its JSON content.

No `from __future__ import annotations` here: FastAPI reads each route's body type from the annotation,
which names a model made per command (a local of the route factory)."""

import argparse
import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Request, Response
from pydantic import Field, create_model

from domain.commands import WRITES, Command
from infra.context import Context
from infra.http import models
from infra.http.answers import respond, server_of
from infra.http.auth import Principal, require
from infra.reply import Reply
from infra.writing import perform

router = APIRouter(tags=["writes"])
KEY_HEADER = Header(None, description="a retry with the same key writes nothing and answers as the first did")


def write_path(command: str) -> str:
    return "/v1/" + command.replace(" ", "/")


def body_model(kind: type[Command]) -> type[Command]:
    """The JSON body of a write: the command (a subclass of it, so the body is the command) and why it
    is made. Named `<Command>Body` in the OpenAPI document."""
    name = "".join(word.capitalize() for word in kind.name.replace("-", " ").split()) + "Body"
    return create_model(name, __base__=kind, __doc__=kind.__doc__ or f"toolcat {kind.name}",
                        reason=(str | None, Field(None, description="why the change is made; stored with "
                                                                    "every event")))


async def write_reply(request: Request, command: Command, principal: Principal, reason: str | None,
                      idempotency_key: str | None) -> Reply:
    """`command` carried out by the server's writer (infra/http/writer.py), its reply once committed: the
    token's name is the actor, the body gives the reason, the header the idempotency key (checked as
    `Meta` when the command runs, so a bad one is its usage error). Awaited in the event loop: no worker
    thread waits for the writer (two thread hand-offs fewer a write, each a wait for the GIL on a busy
    server)."""
    state = server_of(request)
    given = argparse.Namespace(kind="write", json=True, actor=principal.name, reason=reason,
                               idempotency_key=idempotency_key)

    def call() -> Reply:
        ctx = Context(state.settings, given, backend=state)
        try:
            return perform(command, ctx)
        finally:
            ctx.close()
    return await asyncio.wrap_future(state.writer.submit(call))


def scope_of(command: str) -> str:
    """The scope a write needs: `audit` for /v1/audit/* (`audit seal` records the chain's head, no catalog
    change), `write` for the others."""
    return "audit" if command.startswith("audit ") else "write"


def _route(kind: type[Command]) -> Any:
    body_type = body_model(kind)

    async def write(request: Request, body: Annotated[body_type, Body()],  # type: ignore[valid-type]
                    principal: Principal = Depends(require(scope_of(kind.name), writes=True)),
                    idempotency_key: str | None = KEY_HEADER) -> Response:
        assert isinstance(body, kind)
        return respond(request, await write_reply(request, body, principal, getattr(body, "reason"),
                                                  idempotency_key))
    write.__name__ = "write_" + kind.name.replace(" ", "_").replace("-", "_")
    return write


# The writes whose answer is not the write document (the events it recorded): what they answer instead.
ANSWERS: dict[str, type[models.BaseModel]] = {"plan": models.PlanAnswer, "mcp sync": models.McpSyncAnswer}
for _name, _kind in WRITES.items():
    router.add_api_route(write_path(_name), _route(_kind), methods=["POST"], summary=f"toolcat {_name}",
                         responses=models.documented(ANSWERS.get(_name, models.WriteAnswer),
                                                     400, 401, 403, 404, 409, 410, 422))
