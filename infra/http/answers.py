"""How a route answers: the command line's own command run on the server's backend (one implementation
per answer), sent as its `--json` document, or as the whole reply to the command line's client."""
from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response

from infra.cli import run
from infra.cli.output import Reply, reply_as_json
from infra.http.commands import argv_for
from infra.http.state import ServerState

# The command line's client asks for the readable form too, so it prints what it would have printed.
REPLY_MEDIA_TYPE = "application/vnd.toolcat.reply+json"


def server_of(request: Request) -> ServerState:
    return request.app.state.server


def run_command(request: Request, command: str, values: dict[str, Any]) -> Reply:
    """`command` with these option values, run on the server's catalog and read model."""
    state = server_of(request)
    # --json: the command reports no progress and prints no notices (the reply still has its human form).
    return run(["--json", *argv_for(command, values)], state.settings, backend=state)


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
