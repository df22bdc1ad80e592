"""The write endpoints: every write command of the command line is `POST /v1/<noun>/<verb>` (`/v1/init`),
its options a JSON body named by their `dest`, mapped onto the same argparse command by one route factory.
The actor is the token's name; the `Idempotency-Key` header is `--idempotency-key`; a file option takes
the file's JSON content.

No `from __future__ import annotations` here: FastAPI reads each route's body type from the annotation,
which names a model made per command (a local of the route factory)."""

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Request, Response
from pydantic import BaseModel

from domain.errors import UsageError
from domain.naming import PRESETS
from infra.http import models
from infra.http.answers import respond, run_write
from infra.http.auth import Principal, require
from infra.http.commands import FILE_OPTIONS, body_model, commands_of

router = APIRouter(tags=["writes"])
# Set by the server, never by a body.
_FROM_REQUEST = frozenset({"actor", "idempotency_key"})


def write_path(command: str) -> str:
    return "/v1/" + command.replace(" ", "/")


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

    def write(request: Request, body: Annotated[body_type, Body()],  # type: ignore[valid-type]
              principal: Principal = Depends(require("write")),
              idempotency_key: str | None = Header(None, description="a retry with the same key writes "
                                                                      "nothing and answers as the first did")
              ) -> Response:
        assert isinstance(body, BaseModel)
        values = body.model_dump(exclude_none=True, by_alias=True)
        values |= {"actor": principal.name, "idempotency_key": idempotency_key}
        if FILE_OPTIONS & values.keys():
            with tempfile.TemporaryDirectory(prefix="toolcat-http-") as folder:
                reply = run_write(request, command, _inline_files(values, Path(folder)))
        else:  # no folder to make and remove: on a busy disk those cost more than the write itself
            reply = run_write(request, command, values)
        return respond(request, reply)
    write.__name__ = "write_" + command.replace(" ", "_").replace("-", "_")
    return write


for _command in commands_of("write"):
    router.add_api_route(write_path(_command), _route(_command), methods=["POST"], summary=f"toolcat {_command}",
                         responses=models.documented(models.WriteAnswer, 400, 401, 403, 404, 409, 410, 422))
