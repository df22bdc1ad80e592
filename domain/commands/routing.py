"""`route rule …`, `node …` and `secret ref add`: route rules over tool classes and names (ADR-027), nodes
and secret references (ARCH-19)."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from domain.commands.base import CatalogCommand
from domain.errors import UsageError

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult


class RouteRuleAdd(CatalogCommand):
    name: ClassVar[str] = "route rule add"
    rule_id: str
    deny_any_class: list[str] | None = Field(None, description="deny a call to a tool with any of these classes")
    deny_all_classes: list[str] | None = Field(None, description="deny a call to a tool with all of these "
                                                                 "classes")
    after_any_class: list[str] | None = Field(None, description="only after an earlier call to a tool with any "
                                                                "of these classes")
    after_all_classes: list[str] | None = Field(None, description="only after an earlier call to a tool with all "
                                                                  "of these classes (on that one call)")
    deny_tool: str | None = Field(None, description="deny calls to this tool, by any of its names")
    after_tool: str | None = Field(None, description="only after an earlier call to this tool")
    scope: str | None = Field(None, description="only for this unit (and below) or agent: unit:U or agent:A")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        if not (self.deny_any_class or self.deny_all_classes or self.deny_tool):
            raise UsageError("a route rule denies something: give --deny-any-class, --deny-all-classes or "
                             "--deny-tool")
        rule = {"rule_id": self.rule_id, "deny_any_class": self.deny_any_class or [],
                "deny_all_classes": self.deny_all_classes or [], "deny_tool": self.deny_tool,
                "after_any_class": self.after_any_class or [],
                "after_all_classes": self.after_all_classes or [], "after_tool": self.after_tool, "scope": self.scope}
        return catalog.add_route_rule(rule, meta)


class RouteRuleRemove(CatalogCommand):
    name: ClassVar[str] = "route rule remove"
    rule_id: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.remove_route_rule(self.rule_id, meta)


class NodePair(CatalogCommand):
    name: ClassVar[str] = "node pair"
    node: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.pair_node(self.node, meta)


class NodeUnpair(CatalogCommand):
    name: ClassVar[str] = "node unpair"
    node: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.change_node("node.unpair", self.node, {}, meta, lambda node: node.unpair(meta))


class NodeReady(CatalogCommand):
    name: ClassVar[str] = "node ready"
    node: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.change_node("node.ready", self.node, {}, meta, lambda node: node.set_ready(True, meta))


class NodeUnready(CatalogCommand):
    name: ClassVar[str] = "node unready"
    node: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.change_node("node.unready", self.node, {}, meta, lambda node: node.set_ready(False, meta))


class NodeCapability(CatalogCommand):
    name: ClassVar[str] = "node capability"
    node: str
    advertise: list[str] | None = Field(None, description="capabilities the node advertises")
    withdraw: list[str] | None = Field(None, description="capabilities the node withdraws")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        advertise, withdraw = self.advertise, self.withdraw
        if bool(advertise) == bool(withdraw):
            raise UsageError("give either --advertise CAP… or --withdraw CAP…")
        if advertise:
            return catalog.change_node("node.capability", self.node, {"advertise": advertise}, meta,
                                       lambda node: node.advertise(advertise, meta))
        assert withdraw is not None
        return catalog.change_node("node.capability", self.node, {"withdraw": withdraw}, meta,
                                   lambda node: node.withdraw(withdraw, meta))


class NodeAttach(CatalogCommand):
    name: ClassVar[str] = "node attach"
    node: str
    lane: str = Field(description="the lane the node is attached to")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.change_node("node.attach", self.node, {"lane": self.lane}, meta,
                                   lambda node: node.attach(self.lane, meta))


class NodeDeny(CatalogCommand):
    name: ClassVar[str] = "node deny"
    node: str
    tool: str = Field(description="the tool the node may not serve")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.deny_node_tool(self.node, self.tool, meta)


class SecretRefAdd(CatalogCommand):
    name: ClassVar[str] = "secret ref add"
    ref: str
    allow_tools: list[str] = Field(description="the tools that may receive the secret (never its value)")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.add_secret_ref(self.ref, self.allow_tools, meta)


class SecretAliasAdd(CatalogCommand):
    name: ClassVar[str] = "secret alias add"
    subject: str = Field(description="the agent whose scope the alias belongs to: agent:NAME")
    alias: str = Field(description="the agent-scoped shorthand (a short lowercase name, never a value)")
    ref: str = Field(description="the secret reference it stands for")
    display_name: str | None = Field(None, description="an operator-safe label that may appear in "
                                                       "model-visible metadata")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.add_secret_alias(self.subject, self.alias, self.ref, self.display_name, meta)
