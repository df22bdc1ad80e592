"""Size limits of what a client may send: the query string and the request body. Checked before the
application reads anything (a body announced too large is refused unread; one streamed past the limit is
cut off)."""
from __future__ import annotations

import json
from typing import Any

from infra.http.problems import PROBLEM_JSON

MAX_QUERY_BYTES = 8 * 1024
MAX_BODY_BYTES = 1024 * 1024


class _TooLarge(BaseException):  # past the framework's own `except Exception` around body parsing
    pass


async def _refuse(send: Any, status: int, what: str, limit: int) -> None:
    body = json.dumps({"type": "about:blank", "title": "Content Too Large" if status == 413 else "URI Too Long",
                       "status": status, "code": "too_large", "detail": f"the {what} is over {limit} bytes",
                       "details": {"limit": limit}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class SizeLimits:
    """ASGI middleware enforcing MAX_QUERY_BYTES (414) and MAX_BODY_BYTES (413)."""

    def __init__(self, app: Any, max_query: int = MAX_QUERY_BYTES, max_body: int = MAX_BODY_BYTES) -> None:
        self.app, self.max_query, self.max_body = app, max_query, max_body

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if len(scope.get("query_string", b"")) > self.max_query:
            await _refuse(send, 414, "query string", self.max_query)
            return
        announced = dict(scope.get("headers", [])).get(b"content-length")
        if announced is not None and announced.isdigit() and int(announced) > self.max_body:
            await _refuse(send, 413, "request body", self.max_body)
            return
        received, started = [0], [False]

        async def counted() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "http.request":
                received[0] += len(message.get("body", b""))
                if received[0] > self.max_body:
                    raise _TooLarge()
            return message

        async def sending(message: dict[str, Any]) -> None:
            started[0] = started[0] or message["type"] == "http.response.start"
            await send(message)
        try:
            await self.app(scope, counted, sending)
        except _TooLarge:
            if not started[0]:
                await _refuse(send, 413, "request body", self.max_body)
