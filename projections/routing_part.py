"""The routing part of the read model: route rules, nodes and secret references, each change a version in
its history table (tool classes live with the tools, in catalog_part)."""
from __future__ import annotations

from typing import Any

import duckdb

from projections.catalog_part import Handler, when
from projections.envelope import Envelope
from projections.rows import BufferedPart, HistoryRows, select_rows

_RULE_LISTS = ("deny_any_class", "deny_all_classes", "after_any_class", "after_all_classes")
_RULE_NAMES = ("deny_tool", "deny_tool_key", "after_tool", "after_tool_key", "scope")


class RoutingPart(BufferedPart):
    def __init__(self) -> None:
        self.rules = HistoryRows("route_rule_history", ("rule_id",))
        self.nodes = HistoryRows("node_history", ("node_key",))
        self.secret_refs = HistoryRows("secret_ref_history", ("ref",))
        self.secret_aliases = HistoryRows("secret_alias_history", ("agent", "secret_alias"))
        self._node: dict[str, dict[str, Any]] = {}  # node key → its current state, as a row
        self.handlers: dict[str, Handler] = {
            "RouteRules.Started": lambda e, data: None,
            "RouteRules.RuleAdded": self.rule_added,
            "RouteRules.RuleRemoved": self.rule_removed,
            "RouteRules.RuleRewritten": self.rule_added,  # the same rule, its tool names now canonical
            "Node.Opened": self.node_opened,
            "Node.Paired": lambda e, data: self._node_change(e, paired=True),
            "Node.Unpaired": lambda e, data: self._node_change(e, paired=False, ready=False),
            "Node.Readied": lambda e, data: self._node_change(e, ready=True),
            "Node.Unreadied": lambda e, data: self._node_change(e, ready=False),
            "Node.CapabilitiesAdvertised": self.capabilities_advertised,
            "Node.CapabilitiesWithdrawn": self.capabilities_withdrawn,
            "Node.ToolDenied": self.tool_denied,
            "Node.Attached": lambda e, data: self._node_change(e, lane=data["lane"]),
            "SecretRef.Added": self.secret_ref_added,
            "SecretRef.ToolsRewritten": self.secret_ref_added,  # the same reference, its tool IDs canonical
            "SecretAliases.Opened": lambda e, data: None,
            "SecretAliases.AliasAdded": self.secret_alias_added,
        }

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        keys = sorted({e.originator_id for e in envelopes if e.type.startswith("Node.")})
        if keys:
            for row in select_rows(con, "SELECT * EXCLUDE (valid_from, valid_to, valid_from_time, valid_to_time) "
                                        "FROM node_history WHERE valid_to IS NULL AND node_key IN "
                                        "(SELECT unnest(?::VARCHAR[]))", [keys]):
                self._node[row["node_key"]] = row

    def _buffers(self) -> tuple[HistoryRows, ...]:
        return (self.rules, self.nodes, self.secret_refs, self.secret_aliases)

    def discard(self) -> None:
        super().discard()
        self._node = {}

    def rule_added(self, e: Envelope, data: dict[str, Any]) -> None:
        rule = data["rule"]
        row = {name: list(rule.get(name) or []) for name in _RULE_LISTS}
        row.update({name: rule.get(name) for name in _RULE_NAMES})
        self.rules.set((rule["rule_id"],), row, e.position, when(e))

    def rule_removed(self, e: Envelope, data: dict[str, Any]) -> None:
        self.rules.set((data["rule_id"],), None, e.position, when(e))

    def node_opened(self, e: Envelope, data: dict[str, Any]) -> None:
        self._node[e.originator_id] = {"node_key": e.originator_id, "name": data["name"], "paired": False,
                                       "ready": False, "capabilities": [], "denied_tools": [],
                                       "denied_tool_keys": [], "lane": None}
        self._node_change(e)

    def capabilities_advertised(self, e: Envelope, data: dict[str, Any]) -> None:
        self._node_change(e, capabilities=[*self._node[e.originator_id]["capabilities"], *data["capabilities"]])

    def capabilities_withdrawn(self, e: Envelope, data: dict[str, Any]) -> None:
        kept = [c for c in self._node[e.originator_id]["capabilities"] if c not in data["capabilities"]]
        self._node_change(e, capabilities=kept)

    def tool_denied(self, e: Envelope, data: dict[str, Any]) -> None:
        node = self._node[e.originator_id]
        self._node_change(e, denied_tools=[*node["denied_tools"], data["tool_id"]],
                          denied_tool_keys=[*node["denied_tool_keys"], data["tool_key"]])

    def _node_change(self, e: Envelope, **changes: Any) -> None:
        node = self._node[e.originator_id] = {**self._node[e.originator_id], **changes}
        version = {k: v for k, v in node.items() if k != "node_key"}
        self.nodes.set((e.originator_id,), version, e.position, when(e))

    def secret_ref_added(self, e: Envelope, data: dict[str, Any]) -> None:
        self.secret_refs.set((data["ref"],), {"allowed_tool_ids": list(data["allowed_tool_ids"]),
                                              "allowed_tool_keys": list(data["allowed_tool_keys"])},
                             e.position, when(e))

    def secret_alias_added(self, e: Envelope, data: dict[str, Any]) -> None:
        self.secret_aliases.set((data["agent"], data["secret_alias"]),
                                {"ref": data["ref"], "display_name": data["display_name"]}, e.position, when(e))
