"""The write endpoints: every write command of the command line is `POST /v1/<noun>/<verb>` (`/v1/init`),
its options a JSON body named by their `dest`, mapped onto the same argparse command by one route factory.
The actor is the token's name; the `Idempotency-Key` header is `--idempotency-key`; a file option takes
the file's JSON content.

No `from __future__ import annotations` here: FastAPI reads each route's body type from the annotation,
which names a model made per command (a local of the route factory)."""

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Request, Response
from pydantic import BaseModel

from domain.errors import UsageError
from domain.naming import PRESETS
from infra.http import models
from infra.cli.output import Reply
from infra.http.answers import respond, run_command, server_of
from infra.http.auth import Principal, require
from infra.http.commands import FILE_OPTIONS, body_model, commands_of

router = APIRouter(tags=["writes"])
# Set by the server, never by a body.
_FROM_REQUEST = frozenset({"actor", "idempotency_key"})


def write_path(command: str) -> str:
    return "/v1/" + command.replace(" ", "/")


async def write_reply(request: Request, command: str, values: dict[str, Any]) -> Reply:
    """A write command run by the server's writer (infra/http/writer.py), its reply once committed. Awaited
    in the event loop: no worker thread waits for the writer (two thread hand-offs fewer a write, each a
    wait for the GIL on a busy server). File options (JSON content over HTTP) become files of a folder made
    for the command, by the writer."""
    def call() -> Reply:
        if FILE_OPTIONS & values.keys():
            with tempfile.TemporaryDirectory(prefix="toolcat-http-") as folder:
                return run_command(request, command, _inline_files(values, Path(folder)))
        # no folder to make and remove: on a busy disk those cost more than the write itself
        return run_command(request, command, values)
    return await asyncio.wrap_future(server_of(request).writer.submit(call))


def _inline_files(values: dict[str, Any], folder: Path) -> dict[str, Any]:
    """File options over HTTP: JSON content is written to a file the command then reads; a name is
    accepted only where the command takes names besides files (a policy preset)."""
    inlined = dict(values)
    for dest in FILE_OPTIONS & values.keys():
        value = values[dest]
        if isinstance(value, (dict, list)):
            target = folder / f"{dest}.json"
            target.write_text(json.dumps(value))
            inlined[dest] = str(target)
        elif value is not None and not (dest == "policy" and value in PRESETS):
            raise UsageError(f"over HTTP, '{dest}' takes the file's JSON content, not a file name", option=dest)
    return inlined


def _route(command: str) -> Any:
    body_type = body_model(command, leave_out=_FROM_REQUEST)

    async def write(request: Request, body: Annotated[body_type, Body()],  # type: ignore[valid-type]
                    principal: Principal = Depends(require("write")),
                    idempotency_key: str | None = Header(None, description="a retry with the same key writes "
                                                                            "nothing and answers as the first did")
                    ) -> Response:
        assert isinstance(body, BaseModel)
        values = body.model_dump(exclude_none=True, by_alias=True)
        values |= {"actor": principal.name, "idempotency_key": idempotency_key}
        return respond(request, await write_reply(request, command, values))
    write.__name__ = "write_" + command.replace(" ", "_").replace("-", "_")
    return write


for _command in commands_of("write"):
    router.add_api_route(write_path(_command), _route(_command), methods=["POST"], summary=f"toolcat {_command}",
                         responses=models.documented(models.WriteAnswer, 400, 401, 403, 404, 409, 410, 422))
