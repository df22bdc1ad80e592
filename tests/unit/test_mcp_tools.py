"""The rules that turn an MCP server's tools/list into catalog tools, and what a server entry may hold."""
from __future__ import annotations

import pytest

from domain.errors import ToolcatError
from domain.mcp_servers import Connection, check_server_name
from domain.mcp_tools import RISK_BY_ANNOTATION, Inventory, imported, mapped_name, risk_of


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


def test_the_stored_form_of_a_server_entry_and_its_sync_is_version_one() -> None:
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
    assert all(getattr(McpServer, e).class_version == 1 for e in ("Added", "Changed", "Removed", "Synced"))
    assert catalog.mcp_server("srv").last_sync == "0" * 64
    assert catalog.get_or_none(mcp_server_key("srv"), McpServer) is not None
