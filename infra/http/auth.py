"""Who may do what over HTTP: bearer tokens with scopes, stored in the home as SHA-256 digests only.

With no token file the server answers anonymous reads from loopback clients only and refuses writes.
The server's own command line reads with a token it makes at start (recorded in the address file).

A token may expire (`--expires-in`), be revoked (`token revoke`) or be replaced (`token create` of the
same name); from then on it is refused, and what it holds open (a watch stream, an MCP session) asks
`TokenBook.still_valid` at least once a second and ends. A token bound to a subject (`--subject
agent:A`) holds the `call` scope only: it lists and calls that subject's tools over MCP and reads
nothing else (the subject is the token's, never the request's). When a token was last used is kept
beside the token file (`tokens-used.json`), written at most once a minute, not on every request.
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import secrets
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from domain.errors import UsageError
from domain.grammar import check_name
from domain.subjects import parse_subject
from infra.http.problems import Forbidden, Unauthenticated

SCOPES = ("read", "write", "audit", "call")
TOKENS_FILE = "tokens.json"
USED_FILE = "tokens-used.json"
# How stale `last_used` may be: the server writes it down at most this often.
USED_EVERY_SECONDS = 60.0
bearer = HTTPBearer(auto_error=False, description="a token made by `toolcat token create NAME --scope …`")


class UnknownToken(UsageError):
    """`token revoke` of a name no token has."""

    code = "unknown_token"


class Principal(BaseModel):
    name: str
    scopes: frozenset[str]
    # The subject a `call` token acts as (`agent:A`, `unit:U`): taken from the token, never from a request.
    subject: str | None = None
    expires_at: datetime | None = None
    # Which token (its digest), so that a replaced or revoked one is told apart from its successor.
    key: str | None = Field(None, repr=False, exclude=True)

    def expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and (now or datetime.now(timezone.utc)) >= self.expires_at


ANONYMOUS = Principal(name="anonymous", scopes=frozenset({"read", "audit"}))


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_scopes(text: str) -> list[str]:
    scopes = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(scopes) - set(SCOPES))
    if not scopes or unknown:
        raise UsageError(f"--scope takes a comma-separated list of {', '.join(SCOPES)}", unknown=unknown)
    return [s for s in SCOPES if s in scopes]


_DURATION_PART = re.compile(r"(\d{1,7})([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# Longer than any sensible token, short of datetime's range.
_MAX_DURATION = timedelta(days=3660)


def parse_duration(text: str) -> timedelta:
    """`--expires-in`: whole numbers with units s, m, h, d, w, e.g. `90m`, `12h`, `30d`, `1d12h`."""
    parts = _DURATION_PART.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise UsageError(f"--expires-in {text!r} must be a duration such as 30m, 12h, 7d or 1d12h "
                         "(units s, m, h, d, w)", expires_in=text[:200])
    duration = timedelta(seconds=sum(int(n) * _UNIT_SECONDS[u] for n, u in parts))
    if not timedelta(0) < duration <= _MAX_DURATION:
        raise UsageError(f"--expires-in {text!r} must be more than 0 and at most {_MAX_DURATION.days} days",
                         expires_in=text)
    return duration


def check_binding(scopes: list[str], subject: str | None) -> str | None:
    """A `call` token acts as one subject and does nothing else; no other token has a subject. Kept that
    strict so that a token handed to an agent cannot read other subjects' sets or the history."""
    if subject is None:
        if "call" in scopes:
            raise UsageError("the call scope needs the subject the token acts as: --subject agent:A or unit:U",
                             scopes=scopes)
        return None
    kind, name = parse_subject(subject)
    check_name(name, kind)
    if scopes != ["call"]:
        raise UsageError("a token bound to a subject holds the call scope only (--scope call): it lists and "
                         "calls its subject's tools, and reads nothing else", scopes=scopes, subject=subject)
    return f"{kind}:{name}"


def create_token(home: Path, name: str, scopes: list[str], subject: str | None = None,
                 expires_in: timedelta | None = None) -> dict[str, Any]:
    """A new token for `name` (replacing any earlier one of that name, which stops working at once): the
    token itself (shown once) and what is recorded of it; only its digest is kept."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UsageError(f"token name {name!r} must be letters, digits, '-', '_' or '.'", name=name)
    subject = check_binding(scopes, subject)
    token = "tc_" + secrets.token_urlsafe(32)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    entry = {"name": name, "sha256": digest(token), "scopes": scopes, "created_at": now.isoformat(),
             "subject": subject, "expires_at": None if expires_in is None else (now + expires_in).isoformat()}
    _save(home, [e for e in _load(home) if e["name"] != name] + [entry])
    return {"token": token, **listed(entry, None)}


def revoke_token(home: Path, name: str) -> dict[str, Any]:
    """Forget the token of `name`: the server refuses it from its next request and ends its streams."""
    entries = _load(home)
    kept = [e for e in entries if e["name"] != name]
    if len(kept) == len(entries):
        known = sorted(e["name"] for e in entries)
        raise UnknownToken(f"no token is named {name!r}" + (f" (tokens: {', '.join(known)})" if known else
                                                                 " (this home has no tokens)"), name=name)
    revoked = next(e for e in entries if e["name"] == name)
    _save(home, kept)
    return listed(revoked, None)


def list_tokens(home: Path) -> list[dict[str, Any]]:
    """What is known of each token, by name: never the token nor its digest."""
    used = _load_used(home)
    return [listed(e, used.get(e["sha256"])) for e in sorted(_load(home), key=lambda e: e["name"])]


def listed(entry: dict[str, Any], last_used: str | None) -> dict[str, Any]:
    return {"name": entry["name"], "scopes": entry["scopes"], "subject": entry.get("subject"),
            "created": entry["created_at"], "expires": entry.get("expires_at"), "last_used": last_used}


def _save(home: Path, entries: list[dict[str, Any]]) -> None:
    _write_private(home / TOKENS_FILE, json.dumps(entries, indent=2))


def _write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with a file only its owner may read (whatever the umask)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = path.with_name(path.name + ".tmp")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
    os.replace(staging, path)


def _load(home: Path) -> list[dict[str, Any]]:
    try:
        return json.loads((home / TOKENS_FILE).read_text())
    except FileNotFoundError:
        return []


def _load_used(home: Path) -> dict[str, str]:
    try:
        return json.loads((home / USED_FILE).read_text())
    except (FileNotFoundError, ValueError):  # a torn or missing record only loses "last used"
        return {}


def _principal(entry: dict[str, Any]) -> Principal:
    expires = entry.get("expires_at")
    return Principal(name=entry["name"], scopes=frozenset(entry["scopes"]), subject=entry.get("subject"),
                     expires_at=None if expires is None else datetime.fromisoformat(expires), key=entry["sha256"])


def tokens_configured(home: Path) -> bool:
    return bool(_load(home))


class TokenBook:
    """The server's view of the token file, read again whenever the file changes (tokens created while the
    server runs work at once)."""

    def __init__(self, home: Path, local_token: str) -> None:
        self.path = home / TOKENS_FILE
        self.local = (digest(local_token), Principal(name="toolcat-cli", scopes=frozenset({"read", "audit"})))
        self._stamp: tuple[int, int, int] | None = None
        self._by_digest: dict[str, Principal] = {}
        self._used: dict[str, str] = {}
        self._used_written = time.monotonic()

    def _refresh(self) -> None:
        try:
            found = self.path.stat()
            # The inode too: a replaced file (os.replace) within the clock's resolution is still seen.
            stamp: tuple[int, int, int] | None = (found.st_mtime_ns, found.st_ino, found.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._by_digest = {e["sha256"]: _principal(e) for e in _load(self.path.parent)}
            self._stamp = stamp

    def still_valid(self, principal: Principal) -> bool:
        """Whether `principal`'s token still counts: False once it was revoked, replaced by a new token of
        the same name, or expired. Cheap (a stat of the token file): streams ask every second."""
        if principal.key is None:  # anonymous, or the server's own command line
            return True
        self._refresh()
        return principal.key in self._by_digest and not principal.expired()

    def used(self, principal: Principal) -> None:
        """Note that `principal` made a request now; written down at most once a minute (and at stop)."""
        if principal.key is None:
            return
        self._used[principal.key] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if time.monotonic() - self._used_written >= USED_EVERY_SECONDS:
            self.write_used()

    def write_used(self) -> None:
        """Merge the uses noted since the last write into `tokens-used.json` (only tokens that exist)."""
        self._used_written = time.monotonic()
        if not self._used:
            return
        self._refresh()
        home = self.path.parent
        merged = {**_load_used(home), **self._used}
        self._used = {}
        _write_private(home / USED_FILE, json.dumps({k: v for k, v in merged.items() if k in self._by_digest}))

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


def require(scope: str) -> Any:
    """A dependency: the principal making the request, which must hold `scope`."""
    # In the event loop (async), not FastAPI's thread pool: a stat of the token file and a digest cost less
    # than the hop.
    async def authorize(request: Request,
                        credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Principal:
        book: TokenBook = request.app.state.tokens
        if credentials is not None:
            principal = book.principal(credentials.credentials)
            if principal is None:
                raise Unauthenticated("the bearer token is not one this server knows")
            if principal.expired():
                raise Unauthenticated(f"the token of '{principal.name}' expired at {principal.expires_at}; "
                                      f"create a new one with 'toolcat token create {principal.name} …'",
                                      token=principal.name, expired=True)
            book.used(principal)
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
