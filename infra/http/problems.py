"""Errors over HTTP: each error class's status (the one table), RFC 9457 problem documents carrying the
stable error `code`, and, for the command line's client, the error a problem document stands for."""
from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse

from domain.errors import (
    CatalogRuleError,
    Conflict,
    IntegrityFailure,
    RetiredAlias,
    SqlError,
    ToolcatError,
    Unavailable,
    UnknownConnector,
    UnknownGrant,
    UnknownProposal,
    UnknownRelease,
    UnknownSubject,
    UnknownTool,
    UsageError,
)

PROBLEM_JSON = "application/problem+json"


class Unauthenticated(ToolcatError):
    """No bearer token, or one the server does not know (HTTP 401)."""

    code = "unauthenticated"
    exit_code = 2


class Forbidden(ToolcatError):
    """The token lacks the scope the request needs (HTTP 403)."""

    code = "forbidden"
    exit_code = 2


class TooLarge(UsageError):
    """A request body or query string over the server's limits."""

    code = "too_large"


class NotAcceptable(UsageError):
    """`Accept` names no media type the endpoint answers with (HTTP 406)."""

    code = "not_acceptable"


class Misdirected(UsageError):
    """A request whose Host or Origin names a site this server does not serve (HTTP 421)."""

    code = "misdirected"


class TooManyWaits(UsageError):
    """More reads waiting for a position at once than one client may hold (HTTP 429)."""

    code = "too_many_waits"


class NotFound(UsageError):
    """No endpoint at this path (or not for this method)."""

    code = "not_found"


# First match wins: subclasses before their bases.
STATUSES: tuple[tuple[type[ToolcatError], int], ...] = (
    (Unauthenticated, 401), (Forbidden, 403), (TooLarge, 413), (Misdirected, 421), (TooManyWaits, 429), (NotFound, 404), (NotAcceptable, 406),
    (RetiredAlias, 410),
    (UnknownTool, 404), (UnknownSubject, 404), (UnknownRelease, 404), (UnknownConnector, 404), (UnknownGrant, 404),
    (UnknownProposal, 404),
    (UsageError, 400), (SqlError, 400),
    (CatalogRuleError, 422),
    (Conflict, 409),
    (IntegrityFailure, 500),
    (Unavailable, 503),
    (ToolcatError, 500),
)
RETRY_AFTER_SECONDS = 1


def status_of(error: ToolcatError) -> int:
    return next(status for cls, status in STATUSES if isinstance(error, cls))


def problem(error: ToolcatError, instance: str | None = None, headers: dict[str, str] | None = None,
            status: int | None = None) -> JSONResponse:
    """The RFC 9457 answer for an error: `code` and `details` are the CLI's error document's."""
    status = status or status_of(error)
    body: dict[str, Any] = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status,
                            "detail": error.message, "code": error.code, "details": error.details}
    if instance:
        body["instance"] = instance
    extra = dict(headers or {})
    if status in (429, 503):
        extra.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))
    if status == 401:
        extra.setdefault("WWW-Authenticate", 'Bearer realm="toolcat"')
    return JSONResponse(body, status_code=status, headers=extra, media_type=PROBLEM_JSON)


def _classes_by_code() -> dict[str, type[ToolcatError]]:
    """Every error class by its code, bases before subclasses (the first class of a code wins)."""
    found: dict[str, type[ToolcatError]] = {}
    pending: list[type[ToolcatError]] = [ToolcatError]
    while pending:
        cls = pending.pop(0)
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


def error_from_problem(status: int, body: Any) -> ToolcatError:
    """The error a server's problem document stands for (by its code; by its status when the code is new)."""
    body = body if isinstance(body, dict) else {}
    code = body.get("code")
    by_status = {wanted: cls for cls, wanted in reversed(STATUSES)}
    cls = _classes_by_code().get(code) or by_status.get(status, ToolcatError)
    error = cls.__new__(cls)
    ToolcatError.__init__(error, str(body.get("detail") or HTTPStatus(status).phrase), **(body.get("details") or {}))
    if code and code != error.code:
        error.code = code
    return error
