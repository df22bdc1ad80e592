"""The fixed documents of the HTTP answers, for the OpenAPI document (the answers themselves are the
command line's `--json` documents, sent as they are)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Document(BaseModel):
    model_config = ConfigDict(extra="allow")


class AliasRef(Document):
    id: str
    lifecycle: Literal["alias", "deprecated", "retired"]
    shim: bool


class ToolDescriptor(Document):
    canonical_id: str
    family: str | None
    group: str
    tier: str
    visibility: str
    lifecycle: str
    source: str
    backing_server: str | None
    plugin: str | None
    description: str | None
    classes: list[str]
    risk: str | None
    schema_valid: bool
    aliases: list[AliasRef]
    # `tool show` only (a page of `tool list` leaves them out): the input schema in force and its version.
    schema_version: int | None = None
    input_schema: Any = None


class ToolPage(Document):
    tools: list[ToolDescriptor]
    next_cursor: str | None


class Resolution(Document):
    input: str
    canonical_id: str
    lifecycle: Literal["canonical", "alias", "deprecated"]
    shim: bool


class EffectiveTool(Document):
    tool_id: str
    namespace: str
    description: str | None
    provenance: str
    inherited_from: str | None
    exposure: str | None


class EffectiveSet(Document):
    subject: str
    position: int  # now: the position of the subject's last change (the ETag); --at: that position
    read_model_position: int
    tools: list[EffectiveTool]


class Explanation(Document):
    subject: str
    tool_id: str
    visible: bool
    winner: dict[str, Any] | None
    shadowed: list[dict[str, Any]]
    positions: list[int]
    # For a tool not seen now that was seen before: the event that took it out ({"position", "type",
    # "recorded_at"}), what the gateway's refusals point back to.
    left_at: dict[str, Any] | None = None


class AuditVerify(Document):
    ok: bool
    events: int
    head: str


class Fingerprint(Document):
    position: int
    fingerprint: str


class Replay(Document):
    position: int
    fingerprint: str
    live_fingerprint: str
    matches: bool


class AuditAlias(Document):
    alias: str
    canonical_id: str
    state: str
    window: dict[str, Any]
    milestones: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    flags: list[dict[str, Any]]


class EventRef(Document):
    position: int
    type: str


class WriteAnswer(Document):
    position: int | None
    events: list[EventRef]


class PlanAnswer(BaseModel):
    """What `toolcat plan --json` answers."""
    proposal_id: str | None  # None: the plan breaks rules and is not held
    base_position: int
    position: int | None
    commands: list[dict[str, str]]
    violations: list[dict[str, str]]
    effects: dict[str, dict[str, list[Any]]]


class McpSyncAnswer(Document):
    """What `toolcat mcp sync --json` answers: the sync's plan, and what the server said."""
    server: Any
    refused: list[dict[str, Any]]
    mapped: list[dict[str, Any]]
    affected: list[dict[str, Any]]
    kept: list[Any]


class Health(Document):
    status: Literal["ok", "failing"]
    position: int
    store_head: int
    # While `toolcat serve` checks its MCP servers (TOOLCAT_MCP_SYNC_SECONDS > 0): {"every_seconds": N,
    # "servers": [{"name", "state": "in_sync"|"drift"|"error", "checked_at", "proposal_id", "error", …}]}
    mcp: dict[str, Any] | None = None
    # The last chain check and seal comparison (infra/http/integrity.py): {"verdict": "verified" |
    # "unverified" | "altered" | "pending" | "off", "checked_at", "every_seconds", "events", "seals",
    # "position" (when altered: the first altered position found, null while not located), "message"}
    integrity: dict[str, Any] | None = None


class Readiness(Document):
    ready: bool
    position: int
    store_head: int
    lag: int  # stored events not applied yet (store_head - position, never below 0)


class Problem(Document):
    """RFC 9457 problem details; `code` is the command line's stable error code."""
    type: str
    title: str
    status: int
    detail: str
    code: str
    details: dict[str, Any]


PROBLEMS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {"application/problem+json": {}}, "description": text}
    for status, text in ((400, "usage error"), (401, "no or unknown bearer token"),
                         (403, "the token lacks the scope"), (404, "unknown tool, subject, …"),
                         (409, "conflict"), (410, "retired ID"), (422, "rejected by a catalog rule"),
                         (503, "unavailable, or not fresh in time (Retry-After)"))}


_TEXT = {"type": "string"}
# The headers of a deprecated alias's answer (infra/http/reads.py deprecation_headers), and an ETag's.
DEPRECATION_HEADERS = {
    "Deprecation": {"description": "RFC 9745: when the alias was deprecated (`@` epoch seconds); only for a "
                                   "deprecated alias", "schema": _TEXT},
    "Link": {"description": 'the canonical tool: `<URL>; rel="successor-version"`; only for a deprecated alias',
             "schema": _TEXT},
    "Sunset": {"description": "RFC 8594: the planned date of the alias's removal, once its earliest removal "
                              "release has one", "schema": _TEXT},
}
ETAG_HEADER = {"ETag": {"description": "the position of the subject's last change, quoted; not sent with "
                                       "`effective_at`", "schema": _TEXT}}


def documented(model: type[BaseModel], *statuses: int, headers: dict[str, Any] | None = None
               ) -> dict[int | str, dict[str, Any]]:
    """`responses=` of a route answering `model` (with these headers), with the problems it may answer."""
    return {200: {"model": model, **({"headers": headers} if headers else {})}, **{s: PROBLEMS[s] for s in statuses}}
