"""What the MCP endpoint needs from its source of sets: the seam between the gateway and the read model
(`toolcat serve`, `read_model.py`) or Kafka (`toolcat gateway --from kafka`).

The endpoint never queries anything per call: a source answers from memory, refreshed when the sets change.
A source is built from four kinds of facts, each named here with where a Kafka-fed source finds it:

1. **A subject's set** (`SubjectSet`): the canonical IDs of its effective set whose exposure is `enabled`,
   each with the position of the set it was read from. Kafka: the `toolcat.effective-tools` changelog
   (compacted, key = subject, value = `{"subject", "position", "tools": [{"tool_id", "exposure", …}]}`);
   keep the rows with `exposure == "enabled"`; a tombstone (null value) means the subject is gone.
2. **Descriptors** (`Descriptor`, one per canonical tool ID): description, input schema, risk, classes,
   visibility, backing server and upstream name. Kafka: the `toolcat.events` topic's envelopes
   (`Tool.Registered`, `Tool.Renamed`, `Tool.DescriptionChanged`, schema and class events, and the MCP
   sync's records, which give `mcp_tools.upstream_name`); fold them in position order.
3. **Names** (`Name`): every alias and its lifecycle (`alias`, `deprecated`, `retired`, `shim`), the
   canonical ID it points at, and for a deprecated alias its sunset: the earliest release it may be
   retired in (ARCH-21's window) and that release's planned date (`toolcat release plan`), when known.
   Kafka: the `Tool.Alias*` events.
4. **Policy**: the route rules in force (`domain.routing.RouteRule`), each subject's rule scopes (the
   subject itself and its unit chain: `agent:A`, `unit:U`, the unit's ancestors) and the MCP server
   entries (`domain.mcp_servers.Connection`, references only). Kafka: `RouteRules.*`, `Unit.*`/`Agent.*`
   and `McpServer.*` events.

`Directory` holds 2–4 in memory; `resolve` and `route` below are the rules over it, the same for every
source. A source implements `SetSource`: it hands out `SubjectSet`s and the `Directory`, and calls the
listeners given to `subscribe` with `(position, subjects)` after a batch changed those subjects' sets
(None: any may have changed, e.g. after a catch-up or a directory change), *before* it answers anything at
that position: the endpoint then sends `notifications/tools/list_changed` to those subjects' sessions, and
the next call of a tool that left a set is refused. Listeners run on the source's thread and must not
block (the endpoint hands the news to its event loop).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from domain.mcp_servers import Connection
from domain.routing import RouteRule, ToolFacts, decide

# Listeners of set changes: (position reached, the subjects whose set changed or None for any).
Changed = Callable[[int, "list[str] | None"], None]


def subscription(listeners: list[Changed], lock: threading.Lock | threading.RLock, listener: Changed
                 ) -> Callable[[], None]:
    """`listener` added to a source's `listeners` (under its `lock`); the function that removes it again."""
    with lock:
        listeners.append(listener)

    def unsubscribe() -> None:
        with lock, contextlib.suppress(ValueError):
            listeners.remove(listener)
    return unsubscribe

# How a name asked by a subject resolved (`Resolution.outcome`), each with the reason code the decision
# log records. Forwarded: canonical, alias (a supported alias or a shim), deprecated (inside its window).
FORWARDED = ("canonical", "alias", "deprecated")
Outcome = Literal["canonical", "alias", "deprecated", "retired", "outside_set", "disabled", "unknown",
                  "not_served"]
REASONS: dict[str, str] = {
    "canonical": "in_set", "alias": "in_set_via_alias", "deprecated": "in_set_via_deprecated_alias",
    "retired": "retired_alias", "outside_set": "not_in_set", "disabled": "not_enabled", "unknown": "unknown_tool",
    "not_served": "not_served_by_gateway",
}


@dataclass(frozen=True)
class Descriptor:
    """One canonical tool as the catalog describes it (what tools/list shows, what a call needs)."""

    tool_id: str
    tool_key: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    risk: str | None = None
    classes: tuple[str, ...] = ()
    visibility: str = "public"
    source: str = "builtin"
    backing_server: str | None = None  # the MCP server entry that serves it, when it has one
    upstream_name: str | None = None  # the name tools/call sends upstream (mcp_tools.upstream_name)
    # As the backing server listed it at the last sync (mcp_tools; domain/mcp_tools.described):
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    hints: Mapping[str, Any] | None = None  # its MCP annotations (the catalog's risk tag overrides two of them)

    @property
    def listable(self) -> bool:
        """Whether an agent may ever see it: `internal` and `runtime_only` tools never appear over MCP."""
        return self.visibility == "public"

    def facts(self) -> ToolFacts:
        """The route rules' view of it, built once (a descriptor is never changed, only replaced): every
        call decides over the facts of the tools its session called before."""
        found = self.__dict__.get("_facts")
        if found is None:
            found = ToolFacts(tool_key=self.tool_key, canonical_id=self.tool_id, classes=list(self.classes))
            object.__setattr__(self, "_facts", found)
        return found

    def listed(self) -> dict[str, Any]:
        """The tool as tools/list shows it (an MCP `Tool` in wire form): the catalog's description, schemas,
        title and annotations. Built once, as `facts()`: while grants change a subject's set many times a
        second, each listing is then the set's tools, not 1,000 models built and dumped again (≈ 45 ms of
        CPU for a 1,000-tool set here, as much as the SDK server's own validation of the listing)."""
        found = self.__dict__.get("_listed")
        if found is None:
            import mcp_types as types
            hints = self.annotations()
            found = types.Tool(
                name=self.tool_id, title=self.title, description=self.description,
                input_schema=dict(self.input_schema) if self.input_schema else {"type": "object"},
                output_schema=dict(self.output_schema) if self.output_schema else None,
                annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
            ).model_dump(by_alias=True, mode="json", exclude_none=True)
            object.__setattr__(self, "_listed", found)
        return found

    def annotations(self) -> dict[str, Any]:
        """MCP annotations: the server's own (title, idempotent, open world), with the read-only and
        destructive hints from the catalog's risk tag (the reverse of domain/mcp_tools.RISK_BY_ANNOTATION):
        the operator's word, not the server's, says what a call may change."""
        return {**(self.hints or {}), **self._risk_hints()}

    def _risk_hints(self) -> dict[str, Any]:
        if self.risk == "read_only":
            return {"readOnlyHint": True}
        if self.risk in ("destructive_update", "destructive_delete"):
            return {"readOnlyHint": False, "destructiveHint": True}
        if self.risk in ("safe_create", "safe_update"):
            return {"readOnlyHint": False, "destructiveHint": False}
        return {}


@dataclass(frozen=True)
class Name:
    """An alias: the canonical ID it points at, its lifecycle and, when known, its sunset: the date planned
    for its earliest removal release (ISO date) and that release."""

    alias: str
    canonical_id: str
    lifecycle: Literal["alias", "deprecated", "retired", "shim"]
    sunset: str | None = None
    sunset_release: str | None = None


@dataclass(frozen=True)
class SubjectSet:
    """A subject's enabled tools (canonical IDs, in the set's order) and the position of the set."""

    subject: str
    position: int
    tools: tuple[str, ...]
    exposure: Mapping[str, str] = field(default_factory=dict)  # tool_id → exposure, for tools not enabled

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._enabled

    @property
    def _enabled(self) -> frozenset[str]:
        found = self.__dict__.get("_enabled_set")
        if found is None:
            found = frozenset(self.tools)
            object.__setattr__(self, "_enabled_set", found)
        return found


@dataclass
class Directory:
    """Descriptors, names and policy, all in memory: what `resolve` and `route` read. Replaced whole (never
    mutated in place) so a reader holding one sees one consistent state."""

    position: int = 0
    tools: dict[str, Descriptor] = field(default_factory=dict)  # canonical ID → descriptor
    names: dict[str, Name] = field(default_factory=dict)  # alias → name
    rules: list[RouteRule] = field(default_factory=list)
    servers: dict[str, Connection] = field(default_factory=dict)  # MCP server entry → how to reach it


@dataclass(frozen=True)
class Resolution:
    """How `asked` resolved for a subject: forwarded (`outcome in FORWARDED`, `tool` set) or refused."""

    asked: str
    outcome: Outcome
    canonical_id: str | None
    tool: Descriptor | None
    position: int  # the position of the subject's set the answer used
    sunset: str | None = None  # a deprecated alias's sunset date, when planned
    sunset_release: str | None = None  # and its earliest removal release, when known
    exposure: str | None = None  # for `disabled`: the tool's effective exposure

    @property
    def forwarded(self) -> bool:
        return self.outcome in FORWARDED

    @property
    def reason(self) -> str:
        return REASONS[self.outcome]


def resolve(directory: Directory, subject_set: SubjectSet, asked: str) -> Resolution:
    """The rule every source shares: a canonical ID in the set, or an alias (supported, shim, or deprecated
    inside its window) of one, is forwarded to its backing server; a tool in the set with no backing server
    is `not_served`; a retired alias is refused naming its canonical ID; anything else is outside the set
    (`disabled` when in the set with another exposure, `unknown` when the catalog has no such name)."""
    position = subject_set.position
    name = directory.names.get(asked)
    canonical = name.canonical_id if name is not None else asked
    if name is not None and name.lifecycle == "retired":
        return Resolution(asked, "retired", canonical, None, position)
    tool = directory.tools.get(canonical)
    if tool is None:
        return Resolution(asked, "unknown", None if name is None else canonical, None, position)
    if not tool.listable:  # internal and runtime_only tools are never an agent's, whatever its set says
        return Resolution(asked, "outside_set", canonical, None, position)
    if canonical not in subject_set:
        exposure = subject_set.exposure.get(canonical)
        return Resolution(asked, "outside_set" if exposure is None else "disabled", canonical, None, position,
                          exposure=exposure)
    if tool.backing_server is None or tool.upstream_name is None or tool.backing_server not in directory.servers:
        return Resolution(asked, "not_served", canonical, tool, position)
    if name is None:
        return Resolution(asked, "canonical", canonical, tool, position)
    outcome: Outcome = "deprecated" if name.lifecycle == "deprecated" else "alias"
    return Resolution(asked, outcome, canonical, tool, position, sunset=name.sunset,
                      sunset_release=name.sunset_release)


def listed(directory: Directory, subject_set: SubjectSet) -> list[Descriptor]:
    """What tools/list shows the subject: its enabled tools that are public, in the set's order."""
    found = (directory.tools.get(tool_id) for tool_id in subject_set.tools)
    return [tool for tool in found if tool is not None and tool.listable]


def route(directory: Directory, scopes: set[str], tool: Descriptor, earlier: Iterable[Descriptor]) -> dict[str, Any]:
    """The route decision (ADR-027) with the evidence `toolcat route check` gives: `decision`,
    `reason_code`, `matched_route_rule_id`, `matched_tool_name`, `matched_tool_classes`, `after_tool_name`."""
    return decide(tool.facts(), [t.facts() for t in earlier], directory.rules, scopes)


class SetSource(Protocol):
    """Where the MCP endpoint gets a subject's set and the catalog's directory (see the module's text)."""

    def subject_set(self, subject: str) -> SubjectSet:
        """The subject's current set; raises domain.errors.UnknownSubject when there is no such subject."""
        ...

    def directory(self) -> Directory:
        """The descriptors, names and policy as of the latest batch applied."""
        ...

    def scopes(self, subject: str) -> set[str]:
        """The route-rule scopes that cover the subject (itself and its unit chain)."""
        ...

    def subscribe(self, listener: Changed) -> Callable[[], None]:
        """Call `listener(position, subjects)` after each batch that changed sets; returns the unsubscribe."""
        ...
