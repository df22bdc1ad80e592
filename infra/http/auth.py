"""Who may do what over HTTP: bearer tokens with scopes, stored in the home as SHA-256 digests only.

With no token file the server answers anonymous reads from loopback clients only and refuses writes.
The server's own command line reads with a token it makes at start (recorded in the address file).
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from domain.errors import UsageError
from infra.http.problems import Forbidden, Unauthenticated

SCOPES = ("read", "write", "audit")
TOKENS_FILE = "tokens.json"
bearer = HTTPBearer(auto_error=False, description="a token made by `toolcat token create NAME --scope …`")
# The cookie a browser signs in with (infra/http/signin.py); it holds a token.
SESSION_COOKIE = "toolcat_session"


class Principal(BaseModel):
    name: str
    scopes: frozenset[str]


ANONYMOUS = Principal(name="anonymous", scopes=frozenset({"read", "audit"}))


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_scopes(text: str) -> list[str]:
    scopes = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(scopes) - set(SCOPES))
    if not scopes or unknown:
        raise UsageError(f"--scope takes a comma-separated list of {', '.join(SCOPES)}", unknown=unknown)
    return [s for s in SCOPES if s in scopes]


def create_token(home: Path, name: str, scopes: list[str]) -> str:
    """A new token for `name` (replacing any earlier one of that name); only its digest is kept."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UsageError(f"token name {name!r} must be letters, digits, '-', '_' or '.'", name=name)
    token = "tc_" + secrets.token_urlsafe(32)
    entries = [e for e in _load(home) if e["name"] != name]
    entries.append({"name": name, "sha256": digest(token), "scopes": scopes,
                    "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    home.mkdir(parents=True, exist_ok=True)
    staging = home / (TOKENS_FILE + ".tmp")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(entries, out, indent=2)
    os.replace(staging, home / TOKENS_FILE)
    return token


def _load(home: Path) -> list[dict[str, Any]]:
    try:
        return json.loads((home / TOKENS_FILE).read_text())
    except FileNotFoundError:
        return []


def tokens_configured(home: Path) -> bool:
    return bool(_load(home))


class TokenBook:
    """The server's view of the token file, read again whenever the file changes (tokens created while the
    server runs work at once)."""

    def __init__(self, home: Path, local_token: str) -> None:
        self.path = home / TOKENS_FILE
        self.local = (digest(local_token), Principal(name="toolcat-cli", scopes=frozenset({"read", "audit"})))
        self._stamp: float | None = None
        self._by_digest: dict[str, Principal] = {}

    def _refresh(self) -> None:
        try:
            stamp = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._by_digest = {e["sha256"]: Principal(name=e["name"], scopes=frozenset(e["scopes"]))
                               for e in _load(self.path.parent)}
            self._stamp = stamp

    def configured(self) -> bool:
        self._refresh()
        return bool(self._by_digest)

    def principal(self, token: str) -> Principal | None:
        self._refresh()
        found = digest(token)
        if secrets.compare_digest(found, self.local[0]):
            return self.local[1]
        return self._by_digest.get(found)


def is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def credential(request: Request, given: HTTPAuthorizationCredentials | None = Depends(bearer)
                     ) -> HTTPAuthorizationCredentials | None:
    """The request's token: its bearer token, else, for a read (GET or HEAD), the sign-in cookie's. Never
    the cookie for a write: a browser sends cookies with any site's forms, but no other site can make it
    send an Authorization header (the CSRF defence of every write)."""
    if given is None and request.method in ("GET", "HEAD") and (token := request.cookies.get(SESSION_COOKIE)):
        return HTTPAuthorizationCredentials(scheme="Cookie", credentials=token)
    return given


def require(scope: str) -> Any:
    """A dependency: the principal making the request, which must hold `scope`."""
    # In the event loop (async), not FastAPI's thread pool: a stat of the token file and a digest cost less
    # than the hop.
    async def authorize(request: Request,
                        credentials: HTTPAuthorizationCredentials | None = Security(credential, scopes=[scope])
                        ) -> Principal:  # Security(scopes): the OpenAPI document names each route's scope
        book: TokenBook = request.app.state.tokens
        if credentials is not None:
            principal = book.principal(credentials.credentials)
            if principal is None:
                raise Unauthenticated("the bearer token is not one this server knows")
        elif book.configured():
            raise Unauthenticated("a bearer token is required (Authorization: Bearer TOKEN)")
        elif scope in ANONYMOUS.scopes and is_loopback(request.client.host if request.client else None):
            principal = ANONYMOUS
        else:
            raise Unauthenticated(f"anonymous {scope} requests are refused: create a token with "
                                  f"'toolcat token create NAME --scope {scope}'", scope=scope)
        if scope not in principal.scopes:
            raise Forbidden(f"the token of '{principal.name}' lacks the '{scope}' scope", scope=scope,
                            token=principal.name)
        return principal
    return authorize
