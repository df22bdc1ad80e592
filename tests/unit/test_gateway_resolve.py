"""How the gateway resolves a name a subject asks for (infra/mcp/gateway/source.py): the rule every source
of sets shares, the read model's and Kafka's."""
from __future__ import annotations

import pytest

from domain.mcp_servers import Connection
from domain.routing import RouteRule
from infra.mcp.gateway.source import Descriptor, Directory, Name, SubjectSet, listed, resolve, route

ECHO = Descriptor(tool_id="mcp.s.echo", tool_key="k-echo", risk="read_only", backing_server="s", upstream_name="Echo",
                  source="mcp")
SEND = Descriptor(tool_id="mcp.s.send", tool_key="k-send", classes=("sink:network",), backing_server="s",
                  upstream_name="send", source="mcp")
HIDDEN = Descriptor(tool_id="mcp.s.hidden", tool_key="k-hidden", visibility="runtime_only", backing_server="s",
                    upstream_name="hidden", source="mcp")
PLUGIN = Descriptor(tool_id="acme.lookup", tool_key="k-lookup", source="plugin")
DIRECTORY = Directory(
    position=9, tools={t.tool_id: t for t in (ECHO, SEND, HIDDEN, PLUGIN)},
    names={"mcp.s.echo-v1": Name("mcp.s.echo-v1", "mcp.s.echo", "deprecated", "2027-03-01", "1.2.0"),
           "mcp.s.echo-v0": Name("mcp.s.echo-v0", "mcp.s.echo", "retired"),
           "echo": Name("echo", "mcp.s.echo", "alias")},
    rules=[RouteRule(rule_id="no-send", deny_tool="mcp.s.send", deny_tool_key="k-send", after_tool="mcp.s.echo",
                     after_tool_key="k-echo")],
    servers={"s": Connection(transport="stdio", command="server")})
SET = SubjectSet("agent:a", 8, ("mcp.s.echo", "mcp.s.send", "mcp.s.hidden", "acme.lookup"),
                 {"mcp.s.other": "disabled_by_agent_allowlist"})


@pytest.mark.parametrize(("asked", "outcome", "reason", "canonical"), [
    ("mcp.s.echo", "canonical", "in_set", "mcp.s.echo"),
    ("echo", "alias", "in_set_via_alias", "mcp.s.echo"),
    ("mcp.s.echo-v1", "deprecated", "in_set_via_deprecated_alias", "mcp.s.echo"),
    ("mcp.s.echo-v0", "retired", "retired_alias", "mcp.s.echo"),
    ("mcp.s.hidden", "outside_set", "not_in_set", "mcp.s.hidden"),
    ("acme.lookup", "not_served", "not_served_by_gateway", "acme.lookup"),
    ("nothing.here", "unknown", "unknown_tool", None),
])
def test_a_name_resolves_to_what_the_catalog_and_the_set_say(asked: str, outcome: str, reason: str,
                                                             canonical: str | None) -> None:
    found = resolve(DIRECTORY, SET, asked)
    assert (found.outcome, found.reason, found.canonical_id, found.position) == (outcome, reason, canonical, 8)
    assert found.forwarded == (outcome in ("canonical", "alias", "deprecated"))


def test_a_deprecated_alias_carries_its_sunset_and_a_disabled_tool_its_exposure() -> None:
    deprecated = resolve(DIRECTORY, SET, "mcp.s.echo-v1")
    assert (deprecated.sunset, deprecated.sunset_release, deprecated.tool) == ("2027-03-01", "1.2.0", ECHO)
    other = Descriptor(tool_id="mcp.s.other", tool_key="k-other", backing_server="s", upstream_name="other")
    directory = Directory(tools={**DIRECTORY.tools, "mcp.s.other": other}, servers=DIRECTORY.servers)
    disabled = resolve(directory, SET, "mcp.s.other")
    assert (disabled.outcome, disabled.exposure) == ("disabled", "disabled_by_agent_allowlist")
    # a tool outside the set, known to the catalog
    assert resolve(directory, SubjectSet("agent:b", 3, ()), "mcp.s.echo").outcome == "outside_set"
    # a backing server whose entry is gone is not served
    assert resolve(Directory(tools=DIRECTORY.tools), SET, "mcp.s.echo").outcome == "not_served"


def test_the_listing_is_the_public_tools_of_the_set_in_order_with_annotations_from_risk() -> None:
    assert [t.tool_id for t in listed(DIRECTORY, SET)] == ["mcp.s.echo", "mcp.s.send", "acme.lookup"]
    assert ECHO.annotations() == {"readOnlyHint": True}
    assert SEND.annotations() == {}
    assert Descriptor("x", "k", risk="destructive_delete").annotations() == {"readOnlyHint": False,
                                                                              "destructiveHint": True}


def test_route_rules_see_the_calls_made_before_in_the_session() -> None:
    assert route(DIRECTORY, {"agent:a"}, SEND, [])["decision"] == "allow"
    denied = route(DIRECTORY, {"agent:a"}, SEND, [ECHO])
    assert (denied["decision"], denied["matched_route_rule_id"], denied["after_tool_name"]) == (
        "deny", "no-send", "mcp.s.echo")
