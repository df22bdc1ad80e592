"""Nodes that back capability tools, and how a call picks one (ARCH-19).

A node-backed tool's ID mirrors the capability it routes to: `tyrum.desktop.screenshot` is served by
`tool.desktop.screenshot`. A node is eligible for a tool when it is paired, advertises the capability, is
ready and is not denied the tool. Selection never guesses: an explicit node, else the one node attached to
the lane, else the only eligible node — anything else is ambiguous."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import InvalidName
from domain.grammar import check_name, shown
from domain.route_errors import (AmbiguousNodeSelection, CapabilityMirror, NodeNotEligible, NodeState,
                                 NotModelFacing, NotNodeBacked, UnknownNode)

TOOL_PREFIX, CAPABILITY_PREFIX = "tool.", "tyrum."
# Removed from the model-facing surface by ARCH-19: generic execution helpers leak transport details.
NOT_MODEL_FACING = ("tool.node.inspect", "tool.node.dispatch")
# The discovery helper is a gateway tool, not routed to a capability.
NOT_ROUTED = ("tool.node.list",)
# ARCH-21's tool.* families the gateway serves itself: the environment families (saved places, automation
# schedules) and node discovery. Only the node-backed families mirror capabilities.
GATEWAY_FAMILIES = ("tool.location.place.", "tool.automation.schedule.", "tool.node.")
SECRET_CLIPBOARD_TOOL = "tool.secret.copy-to-node-clipboard"
# A composed gateway action, not a raw mirror: it needs a node that can take clipboard writes. ARCH-19
# names no descriptor for that capability; this is the one the catalog asks nodes to advertise.
CLIPBOARD_CAPABILITY = "tyrum.clipboard.write"
_CAPABILITY = re.compile(r"tyrum(?:\.[a-z][a-z0-9-]*){2,}")


def capability_of(tool_id: str) -> str | None:
    """The capability a node-backed tool routes to, or None when the tool is not routed to nodes."""
    if tool_id == SECRET_CLIPBOARD_TOOL:
        return CLIPBOARD_CAPABILITY
    if not tool_id.startswith(TOOL_PREFIX) or tool_id in NOT_ROUTED or tool_id in NOT_MODEL_FACING:
        return None
    if tool_id.startswith(GATEWAY_FAMILIES):
        return None
    return CAPABILITY_PREFIX + tool_id.removeprefix(TOOL_PREFIX)


def refuse_not_model_facing(tool_id: str) -> None:
    if tool_id in NOT_MODEL_FACING:
        raise NotModelFacing(f"'{tool_id}' was removed from the model-facing surface (ARCH-19); use the "
                             "dedicated node tool of the capability, such as tool.desktop.screenshot",
                             tool_id=tool_id)


def check_node_tool(tool_id: str, group: str, visibility: str, policy: str) -> None:
    """Registration rules of ARCH-19: no generic node helper may be model-facing, and under the tyrum
    policy a node tool's ID mirrors a capability ID."""
    if visibility != "runtime_only":
        refuse_not_model_facing(tool_id)
    if policy == "tyrum" and group == "node" and tool_id not in NOT_MODEL_FACING:
        capability = capability_of(tool_id)
        if tool_id.startswith(GATEWAY_FAMILIES) and not tool_id.startswith("tool.node."):
            raise CapabilityMirror(
                f"'{tool_id}' is in an environment family the gateway serves itself (tool.location.place, "
                "tool.automation.schedule), never routed to a node: register it with --group environment",
                tool_id=tool_id, group=group)
        if tool_id.startswith("tool.node."):
            return  # the node discovery helpers (tool.node.list, tool.node.capability.get) are gateway tools
        if capability is None or not _CAPABILITY.fullmatch(capability):
            raise CapabilityMirror(
                f"node tool '{tool_id}' must mirror a capability ID: tyrum.<area>.<action> is served by "
                "tool.<area>.<action>, e.g. tool.desktop.screenshot", tool_id=tool_id)


def check_capability(capability: str) -> str:
    if not isinstance(capability, str) or not _CAPABILITY.fullmatch(capability):
        raise InvalidName(f"capability {shown(capability)} is not a capability ID; expected "
                          "tyrum.<area>.<action> such as tyrum.desktop.screenshot", kind="capability",
                          name=shown(capability))
    return capability


def node_key(name: str) -> uuid.UUID:
    return natural_id("node", name)


class Node(Aggregate):
    TOPIC = "Node"

    class Event(CatalogEvent):
        TOPIC = "Node.Event"

    class Opened(Event, Aggregate.Created):
        TOPIC = "Node.Opened"
        name: str

        def apply(self, node: Node) -> None:
            node.name, node.paired, node.ready, node.lane = self.name, False, False, None
            node.capabilities, node.denied = [], {}

    class Paired(Event):
        TOPIC = "Node.Paired"

        def apply(self, node: Node) -> None:
            node.paired = True

    class Unpaired(Event):
        """Unpairing also makes the node unready: it must be readied again after pairing."""

        TOPIC = "Node.Unpaired"

        def apply(self, node: Node) -> None:
            node.paired = node.ready = False

    class Readied(Event):
        TOPIC = "Node.Readied"

        def apply(self, node: Node) -> None:
            node.ready = True

    class Unreadied(Event):
        TOPIC = "Node.Unreadied"

        def apply(self, node: Node) -> None:
            node.ready = False

    class CapabilitiesAdvertised(Event):
        TOPIC = "Node.CapabilitiesAdvertised"
        capabilities: list[str]

        def apply(self, node: Node) -> None:
            node.capabilities.extend(self.capabilities)

    class CapabilitiesWithdrawn(Event):
        TOPIC = "Node.CapabilitiesWithdrawn"
        capabilities: list[str]

        def apply(self, node: Node) -> None:
            node.capabilities = [c for c in node.capabilities if c not in self.capabilities]

    class ToolDenied(Event):
        TOPIC = "Node.ToolDenied"
        tool_id: str
        tool_key: str

        def apply(self, node: Node) -> None:
            node.denied[self.tool_key] = self.tool_id

    class Attached(Event):
        TOPIC = "Node.Attached"
        lane: str

        def apply(self, node: Node) -> None:
            node.lane = self.lane

    def __init__(self) -> None:
        self.name: str
        self.paired: bool
        self.ready: bool
        self.lane: str | None
        self.capabilities: list[str]
        self.denied: dict[str, str]

    @classmethod
    def open(cls, name: str, meta: Meta) -> Node:
        check_name(name, "node")
        return create(cls, cls.Opened, node_key(name), meta, name=name)

    def pair(self, meta: Meta) -> None:
        self._require(not self.paired, "is already paired")
        record(self, self.Paired, meta)

    def unpair(self, meta: Meta) -> None:
        self._require(self.paired, "is not paired")
        record(self, self.Unpaired, meta)

    def set_ready(self, ready: bool, meta: Meta) -> None:
        if ready:
            self._require(self.paired, "is not paired; pair it before readying it")
        self._require(self.ready != ready, "is already ready" if ready else "is not ready")
        record(self, self.Readied if ready else self.Unreadied, meta)

    def advertise(self, capabilities: list[str], meta: Meta) -> None:
        new = [check_capability(c) for c in dict.fromkeys(capabilities) if c not in self.capabilities]
        self._require(bool(new), "already advertises every capability given")
        record(self, self.CapabilitiesAdvertised, meta, capabilities=new)

    def withdraw(self, capabilities: list[str], meta: Meta) -> None:
        missing = [c for c in capabilities if c not in self.capabilities]
        self._require(not missing, f"does not advertise {', '.join(map(repr, missing))}")
        record(self, self.CapabilitiesWithdrawn, meta, capabilities=list(dict.fromkeys(capabilities)))

    def deny(self, tool_id: str, tool_key: str, meta: Meta) -> None:
        self._require(tool_key not in self.denied, f"is already denied '{tool_id}'")
        record(self, self.ToolDenied, meta, tool_id=tool_id, tool_key=tool_key)

    def attach(self, lane: str, meta: Meta) -> None:
        check_name(lane, "lane")
        self._require(self.lane != lane, f"is already attached to lane '{lane}'")
        record(self, self.Attached, meta, lane=lane)

    def _require(self, holds: bool, why: str) -> None:
        if not holds:
            raise NodeState(f"node '{self.name}' {why}", node=self.name)


# -- selection (pure: the read side hands in what it knows of the nodes) -----------------------------
@dataclass(frozen=True)
class NodeFacts:
    name: str
    paired: bool
    ready: bool
    capabilities: list[str] = field(default_factory=list)
    denied_tool_keys: list[str] = field(default_factory=list)
    lane: str | None = None


def ineligibility(node: NodeFacts, capability: str, tool_key: str) -> str | None:
    """Why the node cannot take the call, in the order ARCH-19 lists the checks; None when it can."""
    if not node.paired:
        return "not_paired"
    if capability not in node.capabilities:
        return "capability_not_advertised"
    if not node.ready:
        return "not_ready"
    if tool_key in node.denied_tool_keys:
        return "denied_by_policy"
    return None


def select_node(tool_id: str, tool_key: str, nodes: list[NodeFacts], node: str | None = None,
                lane: str | None = None) -> dict[str, Any]:
    """The node a call of `tool_id` (canonical) goes to, and how it was chosen; refuses rather than guess."""
    refuse_not_model_facing(tool_id)
    capability = capability_of(tool_id)
    if capability is None:
        raise NotNodeBacked(f"'{tool_id}' is not a node-backed tool (the gateway serves it; no node is "
                            "selected); node tools mirror a capability, such as tool.desktop.screenshot",
                            tool_id=tool_id)
    answer = {"tool_id": tool_id, "capability": capability, "lane": lane}
    if node is not None:
        return {**_explicit(node, nodes, capability, tool_key), **answer}
    eligible = sorted(n.name for n in nodes if ineligibility(n, capability, tool_key) is None)
    strict = tool_id == SECRET_CLIPBOARD_TOOL  # secret delivery: no lane tie-break, ever
    attached = [n.name for n in nodes if lane is not None and n.lane == lane]
    if not strict and len(attached) == 1 and attached[0] in eligible:
        return {"node": attached[0], "reason": "attached_node", **answer}
    if len(eligible) == 1:
        return {"node": eligible[0], "reason": "sole_eligible_node", **answer}
    why = "no node is eligible" if not eligible else f"{len(eligible)} nodes are eligible"
    rule = "secret delivery never breaks ties by lane; " if strict and eligible else ""
    hint = (f"name one: toolcat route node {tool_id} --node {eligible[0]}" if eligible
            else "pair, ready and advertise a node for it first")
    raise AmbiguousNodeSelection(f"{why} for '{tool_id}' ({capability}); {rule}{hint}",
                                 tool_id=tool_id, capability=capability, candidates=eligible,
                                 attached=attached)


def _explicit(name: str, nodes: list[NodeFacts], capability: str, tool_key: str) -> dict[str, Any]:
    found = next((n for n in nodes if n.name == name), None)
    if found is None:
        raise UnknownNode(f"no node '{name}'", node=name)
    reason = ineligibility(found, capability, tool_key)
    if reason is not None:
        raise NodeNotEligible(f"node '{name}' cannot take the call: {reason.replace('_', ' ')}", node=name,
                              reason=reason, capability=capability)
    return {"node": name, "reason": "explicit"}
