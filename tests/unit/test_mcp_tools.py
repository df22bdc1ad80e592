"""The rules that turn an MCP server's tools/list into catalog tools, and what a server entry may hold."""
from __future__ import annotations

import pytest

from domain.errors import ToolcatError
from domain.mcp_servers import Connection, check_server_name
from domain.mcp_tools import RISK_BY_ANNOTATION, Inventory, described, imported, mapped_name, risk_of


@pytest.mark.parametrize("name, mapped", [("Get Weather", "get-weather"), ("fetch.URL", "fetch-url"),
                                          ("3d", "t-3d"), ("__init__", "t-__init__"), ("ünï", "n"), ("!!!", "")])
def test_a_refused_name_is_mapped_by_one_rule(name: str, mapped: str) -> None:
    assert mapped_name(name) == mapped


@pytest.mark.parametrize("annotations, risk", [
    ({"readOnlyHint": True, "destructiveHint": True}, "read_only"),
    ({"destructiveHint": True}, "destructive_update"),
    ({"readOnlyHint": False, "destructiveHint": False}, "safe_update"),
    (None, "safe_update"),
])
def test_risk_follows_the_annotations_table(annotations: dict | None, risk: str) -> None:
    assert risk_of(annotations) == risk
    assert risk in {row[1] for row in RISK_BY_ANNOTATION}


def inventory(*names: str) -> Inventory:
    return Inventory("s", "1", "2025-11-25", [{"name": n, "inputSchema": {"type": "object"}} for n in names], "now")


def test_the_import_does_not_depend_on_the_order_of_the_pages() -> None:
    one = imported("srv", "advanced", inventory("A b", "a-b", "x", "x", "ok"))
    other = imported("srv", "advanced", inventory("ok", "x", "a-b", "x", "A b"))
    assert one.tools == other.tools and one.refused == other.refused
    assert sorted(one.tools) == ["mcp.srv.a-b", "mcp.srv.ok"]  # the exact name keeps its ID
    assert {r["name"] for r in one.refused} == {"A b", "x"}
    assert inventory("a", "b").tools_hash() == inventory("b", "a").tools_hash()


def test_a_server_entry_refuses_what_could_be_a_secret_without_repeating_it() -> None:
    with pytest.raises(ToolcatError) as refused:
        Connection.checked("srv", [], {"GITHUB_TOKEN": "ghp_value123"}, {}, None, {})
    assert "ghp_value123" not in refused.value.message
    with pytest.raises(ToolcatError) as refused:
        Connection.checked("srv", [], {}, {"K": "ghp_value123"}, None, {})
    assert "ghp_value123" not in refused.value.message
    with pytest.raises(ToolcatError):
        Connection.checked(None, [], {}, {}, "https://user:pw@example.com/mcp", {})
    with pytest.raises(ToolcatError):
        check_server_name("My_Server")
    assert Connection.checked("srv", ["--x"], {"LOG_LEVEL": "debug"}, {"API_TOKEN": "env:API_TOKEN"}, None,
                              {}).references() == ["env:API_TOKEN"]


def test_the_stored_form_of_a_server_entry_and_its_sync_is_pinned() -> None:
    """Pinned: a change to these fields needs a new class version and an upcaster (DESIGN.md section 2)."""
    from domain.mcp_servers import Evidence, McpServer, mcp_server_key
    from tests.unit.conftest import META, new_catalog
    catalog = new_catalog()
    catalog.add_mcp_server("srv", Connection.checked("srv-bin", [], {}, {"T": "env:T"}, None, {}), "advanced", META)
    evidence = Evidence(server_name="s", server_version="1", protocol_version="2025-11-25", tools_hash="0" * 64,
                        tool_count=1, listed_at="2026-11-28T00:00:00+00:00",
                        tools=[{"tool_id": "mcp.srv.a", "upstream_name": "A"}], gone=[])
    catalog.record_mcp_sync("srv", evidence, META)
    stored = {r.topic: r.state for r in catalog.history(after=0, limit=100) if r.topic.startswith("McpServer.")}
    meta_fields = {"actor", "reason", "idempotency_key"}
    assert set(stored["McpServer.Added"]) - meta_fields >= {"name", "connection", "tier"}
    assert stored["McpServer.Added"]["connection"]["env_refs"] == {"T": "env:T"}
    assert set(stored["McpServer.Synced"]) - meta_fields >= {
        "name", "server_name", "server_version", "protocol_version", "tools_hash", "tool_count", "listed_at",
        "tools", "gone", "release"}
    assert all(getattr(McpServer, e).class_version == 1 for e in ("Added", "Changed", "Removed"))
    # Synced is at version 2: each tool also says what agents see of it (None where the server said nothing)
    assert McpServer.Synced.class_version == 2
    assert stored["McpServer.Synced"]["tools"] == [{"tool_id": "mcp.srv.a", "upstream_name": "A", "title": None,
                                                    "output_schema": None, "annotations": None}]
    assert catalog.mcp_server("srv").last_sync == "0" * 64
    assert catalog.get_or_none(mcp_server_key("srv"), McpServer) is not None


def test_a_sync_stored_at_version_one_reads_with_nothing_described() -> None:
    """Given McpServer.Synced as version 1 stored it (a tool ID and its upstream name), when read, each tool's
    title, output schema and annotations are None: version 1 recorded none."""
    from domain import registry
    v1 = {"name": "srv", "server_name": "s", "server_version": "1", "protocol_version": "2025-06-18",
          "tools_hash": "0" * 64, "tool_count": 1, "listed_at": "2026-11-28T00:00:00+00:00",
          "tools": [{"tool_id": "mcp.srv.a", "upstream_name": "A"}], "gone": [], "release": None}
    read = registry.upcast("McpServer.Synced", 1, v1)
    assert read == {**v1, "tools": [{"tool_id": "mcp.srv.a", "upstream_name": "A", "title": None,
                                     "output_schema": None, "annotations": None}]}
    assert v1["tools"] == [{"tool_id": "mcp.srv.a", "upstream_name": "A"}]  # the stored data is left alone


OUTPUT = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}


@pytest.mark.parametrize(("listed", "kept"), [
    # the server's own title, output schema and hints, kept as listed
    ({"name": "a", "title": "Echo Tool", "outputSchema": OUTPUT, "annotations": {"readOnlyHint": True,
      "idempotentHint": True, "openWorldHint": False}},
     {"title": "Echo Tool", "output_schema": OUTPUT,
      "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}}),
    # no title of its own: the annotations' title (MCP's display-name order); nothing: None everywhere
    ({"name": "a", "annotations": {"title": "Sum"}}, {"title": "Sum", "output_schema": None,
                                                      "annotations": {"title": "Sum"}}),
    ({"name": "a"}, {"title": None, "output_schema": None, "annotations": None}),
    # an output schema a client could not validate against, or not of an object, is not kept
    ({"name": "a", "outputSchema": {"type": "object", "properties": 3}}, {"title": None, "output_schema": None,
                                                                         "annotations": None}),
    ({"name": "a", "outputSchema": {"type": "string"}}, {"title": None, "output_schema": None, "annotations": None}),
    # hints of another type, and keys MCP does not define, are not kept; hidden characters are shown escaped
    ({"name": "a", "title": "Bad\u202eTitle", "annotations": {"readOnlyHint": "yes", "x-vendor": 1,
                                                              "destructiveHint": False}},
     {"title": "Bad\\u202eTitle", "output_schema": None, "annotations": {"destructiveHint": False}}),
])
def test_what_agents_see_of_a_tool_is_kept_as_the_server_listed_it(listed: dict, kept: dict) -> None:
    assert described(listed) == kept


def test_the_import_keeps_what_agents_see_of_each_tool() -> None:
    inventory = Inventory("s", "1", "2025-11-25", [{"name": "Get Time", "title": "Clock", "outputSchema": OUTPUT,
                                                    "inputSchema": {"type": "object"}}], "2026-11-28T00:00:00+00:00")
    found = imported("srv", "advanced", inventory)
    assert found.described == {"mcp.srv.get-time": {"title": "Clock", "output_schema": OUTPUT, "annotations": None}}
