"""HTTP methods the routes do not spell out: `HEAD` wherever `GET` is answered (RFC 9110 9.3.2: the GET's
status and headers, no body), and the `Allow` header of a 405 answer (RFC 9110 15.5.6)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import compile_path


class HeadAsGet:
    """ASGI middleware answering HEAD as the GET of the same URL without its body. FastAPI's routes
    answer the methods they name only, so HEAD would be 405 everywhere. An endless answer (a watch
    stream) ends once its headers are sent: the server then tells the route the client has gone."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        finished = False

        async def headers_only(message: dict[str, Any]) -> None:
            nonlocal finished
            if message["type"] == "http.response.start":
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                finished = True
            elif message["type"] != "http.response.body" or not finished:
                await send(message)
        await self.app({**scope, "method": "GET"}, receive, headers_only)


def allowed_methods(request: Request, announced: str | None) -> str:
    """The `Allow` header of a 405: every method some route answers at the request's path. `announced` is
    the framework's (one route's methods only), completed from the OpenAPI document's paths, HEAD with GET."""
    methods = {method.strip() for method in (announced or "").split(",") if method.strip()}
    for path, operations in request.app.openapi()["paths"].items():
        if compile_path(path)[0].match(request.url.path):
            methods |= {method.upper() for method in operations}
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))
