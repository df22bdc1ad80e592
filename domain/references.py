"""Where the catalog's own stored data still names a tool by a legacy ID, and its rewrite to the canonical ID
(ARCH-21's operator migration checklist, and removal step 2: "stored data migrated").

The catalog's own references are agent allowlists, route rules and secret references' allowed tools; each is
rewritten as an event of its aggregate (`alias migrate`). Grants, connector tool lists and image declarations
hold tools by key and follow renames; what they were written with stays as the operator wrote it."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from domain.agent import Agent
from domain.application import Batch, CatalogApplication
from domain.routing import ROUTE_RULES_KEY, RouteRules
from domain.secret_refs import SecretRef

_PAGE = 5000
# The events that may write a tool ID into an allowlist or a secret reference's allowed tools.
_ALLOWLIST_TOPICS, _SECRET_TOPICS = ("Agent.AllowlistSet",), ("SecretRef.Added", "SecretRef.ToolsRewritten")


@dataclass
class References:
    """What names `old_id`, and the aggregates that hold it (to be rewritten)."""

    old_id: str
    found: list[dict[str, Any]] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)
    rules: RouteRules | None = None
    secrets: list[SecretRef] = field(default_factory=list)


def _originators(app: CatalogApplication, topics: tuple[str, ...]) -> list[uuid.UUID]:
    """Every aggregate that ever recorded one of `topics` (the write side keeps no index of agents or
    secret references; this is an operator's migration, not a hot path)."""
    seen: dict[str, None] = {}
    after = 0
    while True:
        page = app.history(after, _PAGE, topics)
        for event in page:
            seen[event.originator_id] = None
        if len(page) < _PAGE:
            return [uuid.UUID(key) for key in seen]
        after = page[-1].position


def stored_references(app: CatalogApplication, old_id: str) -> References:
    refs = References(old_id)
    for key in _originators(app, _ALLOWLIST_TOPICS):
        agent = app.get_or_none(key, Agent)
        if agent is not None and agent.allowlist and old_id in agent.allowlist:
            refs.agents.append(agent)
            refs.found.append({"kind": "allowlist", "holder": f"agent:{agent.name}"})
    book = app.get_or_none(ROUTE_RULES_KEY, RouteRules)
    for rule_id, rule in sorted((book.rules if book else {}).items()):
        for side in ("deny", "after"):
            if getattr(rule, f"{side}_tool") == old_id:
                refs.rules = book
                refs.found.append({"kind": "route_rule", "holder": f"route_rule:{rule_id}", "side": side})
    for key in _originators(app, _SECRET_TOPICS):
        secret = app.get_or_none(key, SecretRef)
        if secret is not None and old_id in secret.allowed.values():
            refs.secrets.append(secret)
            refs.found.append({"kind": "secret_ref", "holder": f"secret_ref:{secret.ref}"})
    return refs


def rewrite(batch: Batch, refs: References, canonical_id: str) -> None:
    """Each reference to `refs.old_id` rewritten to `canonical_id`, one event per holder."""
    def renamed(name: str | None) -> str | None:
        return canonical_id if name == refs.old_id else name

    for agent in refs.agents:
        agent.set_allowlist(list(dict.fromkeys(renamed(p) or p for p in agent.allowlist or [])), batch.meta)
        batch.add(agent)
    if refs.rules is not None:
        for rule in sorted(refs.rules.rules.values(), key=lambda r: r.rule_id):
            if refs.old_id in (rule.deny_tool, rule.after_tool):
                refs.rules.rewrite(rule.model_copy(update={"deny_tool": renamed(rule.deny_tool),
                                                            "after_tool": renamed(rule.after_tool)}), batch.meta)
        batch.add(refs.rules)
    for secret in refs.secrets:
        secret.rewrite_tools({k: renamed(v) or v for k, v in secret.allowed.items()}, batch.meta)
        batch.add(secret)
