"""Use cases of routing (ADR-027) and nodes and secret references (ARCH-19): tool classes, route rules,
node state and secret references, each change one event."""
from __future__ import annotations

from collections.abc import Callable

from domain.agent import Agent, agent_key
from domain.application import Batch, CatalogApplication, WriteResult
from domain.base import Meta
from domain.errors import RetiredAlias, UnknownSubject, UnknownTool, UsageError
from domain.grammar import check_class_label, check_name
from domain.nodes import Node, node_key, refuse_not_model_facing
from domain.route_errors import DuplicateSecretRef, UnknownNode, UnknownSecretRef
from domain.routing import ROUTE_RULES_KEY, RouteRule, RouteRules
from domain.secret_aliases import SecretAliases, check_alias, check_display_name, secret_aliases_key
from domain.secret_refs import SecretRef, check_ref, check_secret_tool, secret_ref_key
from domain.subjects import parse_subject
from domain.tool import Tool
from domain.unit import Unit, unit_key


def check_classes(classes: list[str]) -> list[str]:
    if not classes:
        raise UsageError("give at least one --class LABEL; a tool's class list is never empty")
    for label in classes:
        check_class_label(label)
    if len(set(classes)) != len(classes):
        raise UsageError("a class label is given twice", classes=classes)
    return list(classes)


class RouteUseCases(CatalogApplication):
    def live_tool(self, tool_id: str) -> Tool:
        """The tool any live name (canonical, alias, deprecated) belongs to."""
        refuse_not_model_facing(tool_id)
        tool = self.owner_of(tool_id)
        if tool is None:
            raise UnknownTool(f"no tool or alias '{tool_id}' in the catalog", tool_id=tool_id)
        entry = tool.aliases.get(tool_id) if tool.tool_id != tool_id else None
        if entry is not None and entry.lifecycle == "retired":
            raise RetiredAlias(f"'{tool_id}' was retired; use '{tool.tool_id}' instead", tool_id=tool_id,
                               canonical_id=tool.tool_id)
        return tool

    # -- classes ----------------------------------------------------------------------------------
    def classify_tool(self, tool_id: str, classes: list[str], meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            wanted = check_classes(classes)
            tool = self.live_tool(tool_id)
            if tool.spec.classes != wanted:
                tool.classify(wanted, meta)
                batch.add(tool)
        return self.execute("tool.classify", {"tool_id": tool_id, "classes": classes}, meta, build)

    # -- route rules ------------------------------------------------------------------------------
    def add_route_rule(self, rule: dict, meta: Meta) -> WriteResult:
        """`rule`: the fields of a RouteRule, tools named by any live name (stored canonical, by key)."""
        def build(batch: Batch) -> None:
            check_name(rule["rule_id"], "route rule")
            fields = dict(rule)
            for side in ("deny", "after"):
                for label in fields.get(f"{side}_any_class", []) + fields.get(f"{side}_all_classes", []):
                    check_class_label(label)
                if fields.get(f"{side}_tool"):
                    tool = self.live_tool(fields[f"{side}_tool"])
                    fields[f"{side}_tool"], fields[f"{side}_tool_key"] = tool.tool_id, str(tool.id)
            self._check_scope(fields.get("scope"))
            book = self.get_or_none(ROUTE_RULES_KEY, RouteRules) or RouteRules.start(meta)
            book.add(RouteRule.model_validate(fields), meta)
            batch.add(book)
        return self.execute("route.rule.add", rule, meta, build)

    def remove_route_rule(self, rule_id: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            book = self.get_or_none(ROUTE_RULES_KEY, RouteRules) or RouteRules.start(meta)
            book.remove(rule_id, meta)
            batch.add(book)
        return self.execute("route.rule.remove", {"rule_id": rule_id}, meta, build)

    def _check_scope(self, scope: str | None) -> None:
        if scope is None:
            return
        kind, name = parse_subject(scope)
        key, aggregate = (unit_key(name), Unit) if kind == "unit" else (agent_key(name), Agent)
        if self.get_or_none(key, aggregate) is None:
            raise UnknownSubject(f"no {kind} '{name}' for the rule's scope", subject=scope)

    # -- nodes ------------------------------------------------------------------------------------
    def pair_node(self, name: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            node = self.get_or_none(node_key(check_name(name, "node")), Node) or Node.open(name, meta)
            node.pair(meta)
            batch.add(node)
        return self.execute("node.pair", {"node": name}, meta, build)

    def change_node(self, command: str, name: str, args: dict, meta: Meta,
                    change: Callable[[Node], None]) -> WriteResult:
        """Any change of a node that already exists (it exists once it was first paired)."""
        def build(batch: Batch) -> None:
            node = self.get_or_none(node_key(check_name(name, "node")), Node)
            if node is None:
                raise UnknownNode(f"no node '{name}'; pair it first: toolcat node pair {name}", node=name)
            change(node)
            batch.add(node)
        return self.execute(command, {"node": name, **args}, meta, build)

    def deny_node_tool(self, name: str, tool_id: str, meta: Meta) -> WriteResult:
        def deny(node: Node) -> None:
            tool = self.live_tool(tool_id)
            node.deny(tool.tool_id, str(tool.id), meta)
        return self.change_node("node.deny", name, {"tool": tool_id}, meta, deny)

    # -- secret references ------------------------------------------------------------------------
    def add_secret_ref(self, ref: str, allow_tools: list[str], meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_ref(ref)
            if not allow_tools:
                raise UsageError("give at least one --allow-tool ID: a reference no tool may receive is useless")
            allowed: dict[str, str] = {}
            for index, tool_id in enumerate(allow_tools, start=1):
                tool = self.owner_of(tool_id) if isinstance(tool_id, str) and len(tool_id) <= 200 else None
                if tool is None:  # the entry is not repeated: a mistyped command may carry a value here
                    raise UnknownTool(f"--allow-tool entry {index} names no tool in the catalog", entry=index)
                check_secret_tool(tool.tool_id, index)
                allowed[str(tool.id)] = tool.tool_id
            if self.get_or_none(secret_ref_key(ref), SecretRef) is not None:
                raise DuplicateSecretRef(f"secret reference '{ref}' already exists", secret_ref_id=ref)
            batch.add(SecretRef.add(ref, allowed, meta))
        # The idempotency digest sees the arguments only, never stored: there is no value among them.
        return self.execute("secret.ref.add", {"ref": ref, "allow_tools": allow_tools}, meta, build)

    def add_secret_alias(self, subject: str, alias: str, ref: str, display_name: str | None,
                         meta: Meta) -> WriteResult:
        """ARCH-19: an agent-scoped shorthand for a secret reference, unique in the agent's scope, with an
        optional operator-safe display name. Nothing is resolved here: only names are recorded."""
        def build(batch: Batch) -> None:
            kind, name = parse_subject(subject)
            if kind != "agent":
                raise UsageError(f"a secret alias is scoped to an agent (agent:NAME), not to the {kind} '{name}'",
                                 subject=subject)
            if self.get_or_none(agent_key(name), Agent) is None:
                raise UnknownSubject(f"no agent '{name}'", subject=subject)
            check_alias(alias)
            label = check_display_name(display_name)
            if self.get_or_none(secret_ref_key(check_ref(ref)), SecretRef) is None:
                raise UnknownSecretRef(f"no secret reference '{ref}'; add it first with toolcat secret ref add "
                                       f"{ref} --allow-tool ID", secret_ref_id=ref)
            book = self.get_or_none(secret_aliases_key(name), SecretAliases) or SecretAliases.open(name, meta)
            book.add(alias, ref, label, meta)
            batch.add(book)
        # Only checked names reach the digest; a refused alias (perhaps a value) was never stored.
        return self.execute("secret.alias.add", {"subject": subject, "alias": alias, "ref": ref,
                                                 "display_name": display_name}, meta, build)
