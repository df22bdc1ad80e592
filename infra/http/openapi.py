"""The OpenAPI document of `toolcat serve`, telling what each route answers: FastAPI's document of the
routes, with every error answer stated as it is sent (RFC 9457 `application/problem+json`, never FastAPI's
default 422 `HTTPValidationError`), the headers sent, the security schemes and the scope each route needs.

Which errors a route can answer follows from what it is (so a route added later is described the same
way): every route may answer 414 (query string over the limit) and 421 (a Host or Origin this server does
not serve); one with parameters or a body 400 (a usage error: invalid input is 400 here) and 422 (a value
a catalog rule refuses, as an ID outside the naming policy); one with a body 413; one needing a scope
401, 403 and 503 (the store or read model unavailable, or not caught up in time); one with path
parameters 404; one that waits for a position (`min_position`) or streams 429 (too many waits of one
token); an audit read 500 (an integrity failure of the history). The routes state the rest themselves
(406, 409, 410, …).
"""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from infra.http.auth import SESSION_COOKIE
from infra.http.models import Problem
from infra.http.problems import PROBLEM_JSON
from infra.reply import REPLY_MEDIA_TYPE

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
TEXT = {"type": "string"}
REASONS = {400: "usage error (invalid parameters or body)", 401: "no token, or one this server does not know",
           403: "the token lacks the scope", 404: "unknown tool, subject, … (or no endpoint here)",
           406: "Accept names no media type answered here", 409: "conflict", 410: "retired ID",
           413: "request body over the limit", 414: "query string over the limit",
           421: "a Host or Origin this server does not serve", 422: "rejected by a catalog rule",
           429: "too many waits of this token at once (Retry-After)", 500: "integrity failure of the history",
           503: "unavailable, or not caught up in time (Retry-After)"}
# Headers some error answers always carry.
ERROR_HEADERS = {
    401: {"WWW-Authenticate": {"description": "the scheme to authenticate with", "required": True, "schema": TEXT}},
    429: {"Retry-After": {"description": "seconds to wait before trying again", "schema": TEXT}},
    503: {"Retry-After": {"description": "seconds to wait before trying again", "required": True, "schema": TEXT}},
}
SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer",
               "description": "a token made by `toolcat token create NAME --scope …`; the scope each operation "
                              "needs is the role named in its security requirement (and `x-toolcat-scope`). "
                              "A server without any token answers anonymous `read` and `audit` requests from "
                              "loopback clients."},
    "signInCookie": {"type": "apiKey", "in": "cookie", "name": SESSION_COOKIE,
                     "description": "the cookie a browser keeps after signing in at `/signin` (HttpOnly, "
                                    "SameSite=Strict); a credential for GET and HEAD only, never for a write"},
}
DESCRIPTION_EXTRA = """

Every answer below is as sent: errors are `application/problem+json` with the status each operation
states. `HEAD` is answered wherever `GET` is (the GET's headers, no body); a method an endpoint does not
answer gets 405 with `Allow`. Browsers sign in at `/signin` (see docs/security.md)."""


def _statuses(method: str, operation: dict[str, Any], secured: bool) -> set[int]:
    parameters = operation.get("parameters", [])
    statuses = {414, 421}
    if parameters or "requestBody" in operation:
        statuses |= {400, 422}  # 422: a value a catalog rule refuses (an ID outside the naming policy, …)
    if "requestBody" in operation:
        statuses.add(413)
    if secured:
        statuses |= {401, 403, 503}
    if any(parameter["in"] == "path" for parameter in parameters):
        statuses.add(404)
    waits = any(parameter["in"] == "query" and parameter["name"] == "min_position" for parameter in parameters)
    if waits or "text/event-stream" in operation["responses"].get("200", {}).get("content", {}):
        statuses.add(429)
    if "audit" in operation.get("tags", []) and method == "get":
        statuses.add(500)  # audit reads verify the hash chain first
    return statuses


def _problem_answer(status: int, given: dict[str, Any] | None) -> dict[str, Any]:
    """An error answer as sent: problem+json (unless the route states another document for it)."""
    given = dict(given or {})
    own = {kind: media for kind, media in (given.get("content") or {}).items()
           if kind != PROBLEM_JSON and media.get("schema") not in (None, PROBLEM_REF)}
    description = given.get("description")
    if not description or description == "Validation Error":
        description = REASONS.get(status, "error")
    answer = {"description": description, "content": own or {PROBLEM_JSON: {"schema": PROBLEM_REF}}}
    headers = {**ERROR_HEADERS.get(status, {}), **given.get("headers", {})}
    if headers:
        answer["headers"] = headers
    return answer


def _operation(method: str, operation: dict[str, Any]) -> None:
    # FastAPI's requirement of the bearer scheme, naming the scope of the route's require(scope)
    requirements = [requirement["HTTPBearer"] for requirement in operation.get("security", [])
                    if "HTTPBearer" in requirement]
    scopes = [scope for requirement in requirements for scope in requirement]
    answers = operation["responses"]
    if "422" in answers and "HTTPValidationError" in str(answers["422"]):
        del answers["422"]  # FastAPI's default: invalid input is a 400 problem here
    statuses = _statuses(method, operation, bool(requirements)) | {
        int(s) for s in answers if s.isdigit() and int(s) >= 400}
    for status in sorted(statuses):
        answers[str(status)] = _problem_answer(status, answers.get(str(status)))
    ok = answers.get("200", {}).get("content", {})
    if requirements and set(ok) == {"application/json"}:
        # the command line's own client asks for its whole reply (Accept: REPLY_MEDIA_TYPE)
        ok[REPLY_MEDIA_TYPE] = {"schema": {"type": "object"}}
    if not requirements:
        operation["security"] = []
    else:
        # the scope as the requirement's role (OpenAPI 3.1 allows roles for any scheme) and as an extension
        operation["security"] = [{"bearer": scopes}] + ([{"signInCookie": scopes}] if method in ("get", "head")
                                                        else [])
        if scopes:
            operation["x-toolcat-scope"] = scopes[0] if len(scopes) == 1 else scopes
    operation["responses"] = dict(sorted(answers.items()))


def truthful_openapi(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document (made once), each operation's answers, headers and scope as sent."""
    if app.openapi_schema:
        return app.openapi_schema
    document = get_openapi(title=app.title, version=app.version, description=(app.description or "")
                           + DESCRIPTION_EXTRA, routes=app.routes)
    for operations in document["paths"].values():
        for method, operation in operations.items():
            _operation(method, operation)
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas.setdefault("Problem", Problem.model_json_schema())
    components["securitySchemes"] = SECURITY_SCHEMES
    app.openapi_schema = document
    return document
