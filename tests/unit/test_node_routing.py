"""Nodes, node-backed tools and secret references (ARCH-19) as stories on the in-memory store, and the pure
node selection: every eligibility failure, the lane rule, ambiguity, and the stricter secret-delivery rule."""
from __future__ import annotations

import pytest

from domain.catalog import Catalog
from domain.naming import preset
from domain.nodes import NodeFacts, select_node
from domain.route_errors import (AmbiguousNodeSelection, CapabilityMirror, DuplicateSecretRef, NodeNotEligible,
                                 NodeState, NotModelFacing, NotNodeBacked, SecretValueRefused, UnknownNode)
from domain.errors import InvalidName, UnknownTool
from tests.unit.conftest import META, new_catalog, rejected, spec, types

SHOT = "tyrum.desktop.screenshot"
READY = dict(paired=True, ready=True, capabilities=[SHOT])


@pytest.fixture
def catalog() -> Catalog:
    app = new_catalog()
    app.init(preset("tyrum"), META)
    app.register_tool("tool.desktop.screenshot", spec(group="node"), META)
    app.register_tool("tool.secret.copy-to-node-clipboard", spec(group="node"), META)
    return app


# --- registration under the tyrum policy -----------------------------------------------------------------


@pytest.mark.parametrize("tool_id", ["tool.desktop", "desktop.screenshot"])
def test_a_node_tool_must_mirror_a_capability_id(catalog: Catalog, tool_id: str) -> None:
    with rejected(catalog, CapabilityMirror, "capability_mirror"):
        catalog.register_tool(tool_id, spec(group="node"), META)


@pytest.mark.parametrize("tool_id", ["tool.node.inspect", "tool.node.dispatch"])
def test_the_generic_node_helpers_are_refused_as_model_facing_ids(catalog: Catalog, tool_id: str) -> None:
    with rejected(catalog, NotModelFacing, "not_model_facing"):
        catalog.register_tool(tool_id, spec(group="node"), META)
    with rejected(catalog, NotModelFacing, "not_model_facing"):
        catalog.add_alias("tool.desktop.screenshot", tool_id, False, META)


# --- node state as events ---------------------------------------------------------------------------------


def test_each_node_change_is_an_event(catalog: Catalog) -> None:
    assert types(catalog.pair_node("laptop", META)) == ["Node.Opened", "Node.Paired"]
    changes = [lambda n: n.advertise([SHOT], META), lambda n: n.set_ready(True, META),
               lambda n: n.attach("main", META), lambda n: n.set_ready(False, META), lambda n: n.unpair(META)]
    written = [types(catalog.change_node("node.x", "laptop", {"i": i}, META, c)) for i, c in enumerate(changes)]
    assert written == [["Node.CapabilitiesAdvertised"], ["Node.Readied"], ["Node.Attached"], ["Node.Unreadied"],
                       ["Node.Unpaired"]]
    assert types(catalog.deny_node_tool("laptop", "tool.desktop.screenshot", META)) == ["Node.ToolDenied"]


def test_node_state_rules_reject_and_write_nothing(catalog: Catalog) -> None:
    with rejected(catalog, UnknownNode, "unknown_node"):
        catalog.change_node("node.ready", "ghost", {}, META, lambda n: n.set_ready(True, META))
    catalog.pair_node("laptop", META)
    with rejected(catalog, NodeState, "node_state"):
        catalog.pair_node("laptop", META)
    with rejected(catalog, NodeState, "node_state"):
        catalog.change_node("node.capability", "laptop", {}, META, lambda n: n.withdraw([SHOT], META))
    with rejected(catalog, InvalidName, "invalid_name"):
        catalog.change_node("node.capability", "laptop", {}, META, lambda n: n.advertise(["desktop.shot"], META))


# --- secret references ------------------------------------------------------------------------------------


def test_a_secret_reference_records_its_tools_and_no_value(catalog: Catalog) -> None:
    result = catalog.add_secret_ref("github-token", ["tool.secret.copy-to-node-clipboard"], META)

    state = catalog.history(after=result.position - 1, limit=1)[0].state
    assert {k: state[k] for k in ("ref", "allowed_tool_ids")} == {
        "ref": "github-token", "allowed_tool_ids": ["tool.secret.copy-to-node-clipboard"]}
    with rejected(catalog, DuplicateSecretRef, "duplicate_secret_ref"):
        catalog.add_secret_ref("github-token", ["tool.secret.copy-to-node-clipboard"], META)


@pytest.mark.parametrize("ref", ["ghp_7Hq2ZxSECRETvalue", "sk-live 123", "a" * 200])
def test_a_value_shaped_reference_is_refused_without_being_repeated(catalog: Catalog, ref: str) -> None:
    with rejected(catalog, SecretValueRefused, "secret_value_refused") as info:
        catalog.add_secret_ref(ref, ["tool.secret.copy-to-node-clipboard"], META)
    assert ref not in info.value.message and ref not in str(info.value.details)


def test_an_unknown_allowed_tool_is_refused_without_being_repeated(catalog: Catalog) -> None:
    with rejected(catalog, UnknownTool, "unknown_tool") as info:
        catalog.add_secret_ref("github-token", ["hunter2-Secret"], META)
    assert "hunter2-Secret" not in info.value.message + str(info.value.details)


# --- selection ------------------------------------------------------------------------------------------


def pick(nodes: list[NodeFacts], node: str | None = None, lane: str | None = None,
         tool: str = "tool.desktop.screenshot") -> dict:
    return select_node(tool, "k-tool", nodes, node, lane)


@pytest.mark.parametrize(("facts", "reason"), [
    (NodeFacts("n", paired=False, ready=True, capabilities=[SHOT]), "not_paired"),
    (NodeFacts("n", paired=True, ready=True, capabilities=[]), "capability_not_advertised"),
    (NodeFacts("n", paired=True, ready=False, capabilities=[SHOT]), "not_ready"),
    (NodeFacts("n", **READY, denied_tool_keys=["k-tool"]), "denied_by_policy"),
])
def test_an_explicit_node_that_is_not_eligible_is_refused_with_the_reason(facts: NodeFacts, reason: str) -> None:
    with pytest.raises(NodeNotEligible) as info:
        pick([facts], node="n")
    assert info.value.details["reason"] == reason


def test_an_explicit_node_must_exist_and_an_eligible_one_is_taken() -> None:
    with pytest.raises(UnknownNode):
        pick([], node="n")
    assert pick([NodeFacts("n", **READY)], node="n")["reason"] == "explicit"


def test_the_lane_attached_node_is_taken_when_eligible_else_the_sole_eligible_node() -> None:
    a, b = NodeFacts("a", **READY, lane="main"), NodeFacts("b", **READY)
    assert pick([a, b], lane="main") == {"node": "a", "reason": "attached_node", "tool_id": "tool.desktop.screenshot",
                                         "capability": SHOT, "lane": "main"}
    unready = NodeFacts("a", paired=True, ready=False, capabilities=[SHOT], lane="main")
    assert pick([unready, b], lane="main")["reason"] == "sole_eligible_node"


def test_several_or_no_eligible_nodes_are_ambiguous_and_list_the_candidates() -> None:
    with pytest.raises(AmbiguousNodeSelection) as several:
        pick([NodeFacts("b", **READY), NodeFacts("a", **READY)])
    assert several.value.details["candidates"] == ["a", "b"]
    with pytest.raises(AmbiguousNodeSelection) as none:
        pick([NodeFacts("a", paired=True, ready=False, capabilities=[SHOT])])
    assert none.value.details["candidates"] == []
    two_on_lane = [NodeFacts("a", **READY, lane="main"), NodeFacts("b", **READY, lane="main")]
    with pytest.raises(AmbiguousNodeSelection):
        pick(two_on_lane, lane="main")


def test_secret_delivery_never_breaks_a_tie_by_lane() -> None:
    clip = dict(paired=True, ready=True, capabilities=["tyrum.clipboard.write"])
    nodes = [NodeFacts("a", **clip, lane="main"), NodeFacts("b", **clip)]
    with pytest.raises(AmbiguousNodeSelection) as info:
        pick(nodes, lane="main", tool="tool.secret.copy-to-node-clipboard")
    assert info.value.details["candidates"] == ["a", "b"]
    assert pick(nodes[:1], lane="main", tool="tool.secret.copy-to-node-clipboard")["reason"] == "sole_eligible_node"


@pytest.mark.parametrize(("tool", "error"), [("tool.node.dispatch", NotModelFacing), ("tool.node.list", NotNodeBacked),
                                             ("memory.seed", NotNodeBacked)])
def test_tools_that_no_node_serves_are_refused(tool: str, error: type) -> None:
    with pytest.raises(error):
        pick([NodeFacts("a", **READY)], tool=tool)
