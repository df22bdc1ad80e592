"""Route rules over tool classes and names (ADR-027): the rule book aggregate and the deterministic decision.

A rule denies a call by the called tool's name, by its classes, or both; optionally only after an earlier
call in the same session matched. Names are held as tool keys, so a rule written once holds for every name
the tool has ever had (aliases, renames, deprecated IDs) — the answer to tool-hopping."""
from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate
from pydantic import BaseModel, ConfigDict, Field, model_validator

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import UsageError
from domain.route_errors import DuplicateRouteRule, UnknownRouteRule

ROUTE_RULES_KEY = natural_id("route_rules", "catalog")

ALLOWED = "no_rule_matched"


class ToolFacts(BaseModel):
    """What a decision needs to know of one called tool, resolved to its canonical form."""

    model_config = ConfigDict(frozen=True)

    tool_key: str
    canonical_id: str
    classes: list[str] = Field(default_factory=list)


class RouteRule(BaseModel):
    """One rule. Every matcher given on a side must hold (they combine with AND); with no `after_*`
    matcher the rule denies unconditionally."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule_id: str
    deny_any_class: list[str] = Field(default_factory=list)
    deny_all_classes: list[str] = Field(default_factory=list)
    deny_tool: str | None = None  # the canonical ID when the rule was written (shown to people)
    deny_tool_key: str | None = None  # what is matched: it follows renames and aliases
    after_any_class: list[str] = Field(default_factory=list)
    after_all_classes: list[str] = Field(default_factory=list)  # all on one earlier call (not spread over several)
    after_tool: str | None = None
    after_tool_key: str | None = None
    scope: str | None = None  # unit:U (the unit, its sub-units and their agents) or agent:A; None: everyone

    @model_validator(mode="after")
    def _denies_something(self) -> RouteRule:
        if not (self.deny_tool_key or self.deny_any_class or self.deny_all_classes):
            raise UsageError("a route rule denies something: give --deny-any-class, --deny-all-classes or "
                             "--deny-tool", rule_id=self.rule_id)
        return self

    def denies(self, call: ToolFacts) -> bool:
        return _holds(call, self.deny_tool_key, self.deny_any_class, self.deny_all_classes)

    def triggered_by(self, earlier: list[ToolFacts]) -> ToolFacts | None | bool:
        """The earlier call that arms the rule; True when the rule needs none; None when none arms it.
        The "after" side matches one earlier call as the deny side matches the call (ADR-027's matchers are
        the same on both sides): `after_all_classes` wants every class on that one call."""
        if self.after_tool_key is None and not self.after_any_class and not self.after_all_classes:
            return True
        return next((prior for prior in earlier
                     if _holds(prior, self.after_tool_key, self.after_any_class, self.after_all_classes)), None)

    def reason_code(self) -> str:
        by_class = bool(self.deny_any_class or self.deny_all_classes)
        by_name = self.deny_tool_key is not None
        kind = "tool_and_class" if by_class and by_name else "class" if by_class else "tool"
        return f"denied_by_{kind}_rule"


def _holds(call: ToolFacts, tool_key: str | None, any_class: list[str], all_classes: list[str]) -> bool:
    """Whether one call matches one side's matchers: every matcher given must hold (AND); none given, no match."""
    checks = []
    if tool_key is not None:
        checks.append(call.tool_key == tool_key)
    if any_class:
        checks.append(bool(set(any_class) & set(call.classes)))
    if all_classes:
        checks.append(set(all_classes) <= set(call.classes))
    return bool(checks) and all(checks)


def decide(call: ToolFacts, earlier: list[ToolFacts], rules: list[RouteRule],
           scopes: set[str]) -> dict[str, Any]:
    """Allow or deny `call` after the `earlier` calls, under the rules in force for a subject whose scopes
    (`unit:U` for its unit chain, `agent:A`) are given. Rules are tried in rule-ID order: the first that
    denies is the evidence, so the same inputs always give the same answer."""
    for rule in sorted(rules, key=lambda r: r.rule_id):
        if rule.scope is not None and rule.scope not in scopes:
            continue
        trigger = rule.triggered_by(earlier) if rule.denies(call) else None
        if trigger is None:
            continue
        return {"decision": "deny", "matched_tool_name": call.canonical_id,
                "matched_tool_classes": list(call.classes), "matched_route_rule_id": rule.rule_id,
                "reason_code": rule.reason_code(),
                "after_tool_name": trigger.canonical_id if isinstance(trigger, ToolFacts) else None}
    return {"decision": "allow", "matched_tool_name": call.canonical_id,
            "matched_tool_classes": list(call.classes), "matched_route_rule_id": None,
            "reason_code": ALLOWED, "after_tool_name": None}


class RouteRules(Aggregate):
    """Every route rule of the catalog, one aggregate so rule IDs stay unique."""

    TOPIC = "RouteRules"

    class Event(CatalogEvent):
        TOPIC = "RouteRules.Event"

    class Started(Event, Aggregate.Created):
        TOPIC = "RouteRules.Started"

        def apply(self, book: RouteRules) -> None:
            book.rules = {}

    class RuleAdded(Event):
        """v2: a rule may carry `after_all_classes` (a v1 rule had none)."""

        TOPIC = "RouteRules.RuleAdded"
        class_version = 2
        rule: dict[str, Any]

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["rule"] = {**state["rule"], "after_all_classes": []}

        def apply(self, book: RouteRules) -> None:
            book.rules[self.rule["rule_id"]] = RouteRule.model_validate(self.rule)

    class RuleRemoved(Event):
        TOPIC = "RouteRules.RuleRemoved"
        rule_id: str

        def apply(self, book: RouteRules) -> None:
            book.rules.pop(self.rule_id, None)

    class RuleRewritten(Event):
        """The rule's tool names rewritten to the canonical IDs (`alias migrate`); its tool keys never change."""

        TOPIC = "RouteRules.RuleRewritten"
        rule: dict[str, Any]

        def apply(self, book: RouteRules) -> None:
            book.rules[self.rule["rule_id"]] = RouteRule.model_validate(self.rule)

    def __init__(self) -> None:
        self.rules: dict[str, RouteRule]

    @classmethod
    def start(cls, meta: Meta) -> RouteRules:
        return create(cls, cls.Started, ROUTE_RULES_KEY, meta)

    def add(self, rule: RouteRule, meta: Meta) -> None:
        if rule.rule_id in self.rules:
            raise DuplicateRouteRule(f"route rule '{rule.rule_id}' already exists; remove it first to change it",
                                     rule_id=rule.rule_id)
        record(self, self.RuleAdded, meta, rule=rule.model_dump(mode="json"))

    def remove(self, rule_id: str, meta: Meta) -> None:
        if rule_id not in self.rules:
            raise UnknownRouteRule(f"no route rule '{rule_id}'", rule_id=rule_id, known=sorted(self.rules))
        record(self, self.RuleRemoved, meta, rule_id=rule_id)

    def rewrite(self, rule: RouteRule, meta: Meta) -> None:
        record(self, self.RuleRewritten, meta, rule=rule.model_dump(mode="json"))
