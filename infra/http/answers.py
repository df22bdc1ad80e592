"""How a route answers: a read command run on the server's backend by the `AnswerRead` the server was
started with (the command line's own, infra/cli/served.py: one implementation per answer), sent as its
`--json` document, or as the whole reply to the command line's client."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import Request, Response

from infra.context import Backend
from infra.http.state import ServerState
from infra.reply import REPLY_MEDIA_TYPE, Reply, reply_as_json
from infra.settings import Settings

# A read command ("tool show") with its option values (by dest), answered on a server's backend.
AnswerRead = Callable[[str, dict[str, Any], Settings, Backend], Reply]


def server_of(request: Request) -> ServerState:
    return request.app.state.server


def run_command(request: Request, command: str, values: dict[str, Any]) -> Reply:
    """`command` with these option values, run on the server's catalog and read model."""
    state = server_of(request)
    answer_read: AnswerRead = request.app.state.answer_read
    return answer_read(command, values, state.settings, state)


def encode(document: Any) -> bytes:
    """A JSON answer's body."""
    return json.dumps(document, default=str).encode()


def json_response(document: Any, status: int = 200, headers: dict[str, str] | None = None,
                  media_type: str = "application/json") -> Response:
    return Response(encode(document), status_code=status, headers=headers, media_type=media_type)


def respond(request: Request, reply: Reply, headers: dict[str, str] | None = None) -> Response:
    if REPLY_MEDIA_TYPE in request.headers.get("accept", ""):
        return json_response(reply_as_json(reply), headers=headers, media_type=REPLY_MEDIA_TYPE)
    return json_response(reply.document, headers=headers)
