"""Nodes through the command line on real SQLite and DuckDB (ARCH-19): every change a version in
node_history, and `route node` answering from the read model — explicit, lane-attached, sole eligible,
refused with its reason, or ambiguous with the candidates."""
from __future__ import annotations

from typing import Any

import pytest

from tests.support import error_of, ok

SHOT = "tool.desktop.screenshot"


@pytest.fixture
def fleet(cli: Any) -> None:
    """Given a tyrum catalog with the screenshot tool, a ready laptop on lane main and a ready phone."""
    ok(cli("tool", "register", SHOT, "--source", "builtin", "--group", "node", "--tier", "advanced",
           "--visibility", "public"))
    for node in ("laptop", "phone"):
        ok(cli("node", "pair", node))
        ok(cli("node", "capability", node, "--advertise", "tyrum.desktop.screenshot"))
        ok(cli("node", "ready", node))
    ok(cli("node", "attach", "laptop", "--lane", "main"))


def test_every_node_change_is_a_version_in_node_history(fleet: None, cli: Any) -> None:
    ok(cli("node", "deny", "phone", "--tool", SHOT))
    ok(cli("node", "unpair", "phone"))

    versions = ok(cli("sql", "SELECT paired, ready, capabilities, denied_tools FROM node_history "
                             "WHERE name = 'phone' ORDER BY valid_from"))
    assert [(v["paired"], v["ready"], len(v["capabilities"]), v["denied_tools"]) for v in versions] == [
        (False, False, 0, []), (True, False, 0, []), (True, False, 1, []), (True, True, 1, []),
        (True, True, 1, [SHOT]), (False, False, 1, [SHOT])]
    assert ok(cli("sql", "SELECT name, lane FROM nodes ORDER BY name")) == [
        {"name": "laptop", "lane": "main"}, {"name": "phone", "lane": None}]


def test_route_node_picks_explicitly_by_lane_or_as_the_sole_eligible_node(fleet: None, cli: Any) -> None:
    assert ok(cli("route", "node", SHOT, "--node", "phone"))["reason"] == "explicit"
    assert ok(cli("route", "node", SHOT, "--lane", "main"))["node"] == "laptop"
    ok(cli("node", "unready", "laptop"))
    assert ok(cli("route", "node", SHOT, "--lane", "main")) | {"lane": None} == {
        "node": "phone", "reason": "sole_eligible_node", "tool_id": SHOT, "capability": "tyrum.desktop.screenshot",
        "lane": None, "requested_node": None, "secret_ref": None}


def test_route_node_refuses_rather_than_guess(fleet: None, cli: Any) -> None:
    ambiguous = cli("route", "node", SHOT)
    assert ambiguous.code == 3 and error_of(ambiguous)["code"] == "ambiguous_node_selection"
    assert error_of(ambiguous)["details"]["candidates"] == ["laptop", "phone"]
    ok(cli("node", "capability", "phone", "--withdraw", "tyrum.desktop.screenshot"))
    refused = cli("route", "node", SHOT, "--node", "phone")
    assert (refused.code, error_of(refused)["details"]["reason"]) == (3, "capability_not_advertised")
    for args, code in ((["node", "ready", "ghost"], "unknown_node"), (["node", "pair", "laptop"], "node_state"),
                       (["route", "node", "tool.node.inspect"], "not_model_facing")):
        assert error_of(cli(*args))["code"] == code, args
