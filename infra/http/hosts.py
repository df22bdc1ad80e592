"""Which sites the server answers: a request's `Host`, and its `Origin` when a browser sends one, must name
this server: a loopback name, the address it listens on, or a name the operator listed
(`toolcat serve --allowed-host`, TOOLCAT_ALLOWED_HOSTS). Anything else is refused with 421 before any part
of the application sees it. This is the defence against DNS rebinding: a page of another site that makes
its own name resolve to 127.0.0.1 reaches the server with that name in `Host`, and gets nothing.

Links the server writes never come from the request's `Host` either (`absolute`)."""
from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from infra.http.problems import Misdirected, problem

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def host_name(value: str) -> str:
    """The host of a `Host` header or an authority (`name:port`, `[::1]:8750`), lower case, no port."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def served_names(allowed: list[str]) -> frozenset[str]:
    """The names a request may use for this server: loopback ones and those allowed (the server adds the
    address it listens on)."""
    return frozenset(LOOPBACK_NAMES | {host_name(name) for name in allowed if host_name(name) not in WILDCARDS})


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostCheck:
    """ASGI middleware: 421 problem+json for a Host or Origin naming a site the server does not serve."""

    def __init__(self, app: Any, names: frozenset[str]) -> None:
        self.app, self.names = app, names

    def _serves(self, name: str) -> bool:
        return name in self.names or _is_loopback(name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            refused = self._refusal(dict(scope.get("headers", [])))
            if refused is not None:
                await problem(Misdirected(refused[0], **refused[1]), scope.get("path"))(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: dict[bytes, bytes]) -> tuple[str, dict[str, str]] | None:
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._serves(host_name(host)):
            return (f"this server does not serve the host {host!r}: a name it is reached by must be listed "
                    "with 'toolcat serve --allowed-host NAME' (TOOLCAT_ALLOWED_HOSTS)", {"host": host})
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and origin != "null" and not self._serves(host_name(urlsplit(origin).netloc)):
            return (f"requests from pages of {origin!r} are refused: that site is not this server "
                    "(list its name with 'toolcat serve --allowed-host NAME' if it is)", {"origin": origin})
        return None


def absolute(public_url: str | None, path: str) -> str:
    """A link to `path` on this server: under the configured public URL, else relative (never built from
    the request's Host, which a client chooses)."""
    return public_url.rstrip("/") + path if public_url else path
