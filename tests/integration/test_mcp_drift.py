"""Drift while serving: `toolcat serve` with TOOLCAT_MCP_SYNC_SECONDS checks each MCP server's tools/list
(the in-repo server of tests/mcp_servers/faulty.py, whose tool list the story changes while serve runs)
and shows what differs in `/v1/health`, `/metrics` and the web page, with the id of the proposal it
held; the check writes nothing else, and a server that cannot be reached is an error entry, never a
failure of the server."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.integration.test_mcp_sync import ECHO, NOTE, faulty, write_tools
from tests.serving import serving, tokens
from tests.support import ok

CHECK_SECONDS = "0.2"


def health_until(client: httpx.Client, wanted: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
    """`/v1/health`'s MCP servers by name, polled until `wanted` of them holds (bounded: fails after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        health = client.get("/v1/health").json()
        servers = {s["name"]: s for s in health.get("mcp", {}).get("servers", [])}
        if wanted(servers):
            return servers
        assert time.monotonic() < deadline, f"not seen within {timeout}s; last health: {health}"
        time.sleep(0.1)  # a poll's pace, not a wait for something to be done


def events(client: httpx.Client) -> int:
    return client.post("/v1/sql", json={"query": "SELECT count(*) AS n FROM events"}).json()[0]["n"]


def test_a_server_changed_while_serving_shows_as_drift_with_its_held_proposal(cli: Any, home: Path,
                                                                            tmp_path: Path) -> None:
    # Given the in-repo server `shop`, synced and applied, and a server that exits at once
    tools = write_tools(tmp_path / "tools.json", ECHO)
    faulty(cli, "shop", tools)
    ok(cli("mcp", "sync", "shop", "--apply"))
    faulty(cli, "gone", tools, "--fault", "exit")
    admin = tokens(home, admin="read,write")["admin"]
    # When toolcat serve checks them every 0.2 s
    with serving(home, env={"TOOLCAT_MCP_SYNC_SECONDS": CHECK_SECONDS}) as served, served.client(admin) as client:
        # Then the synced server is in sync, and the one that cannot start is an error, the server healthy
        servers = health_until(client, lambda s: {"shop", "gone"} <= s.keys())
        assert servers["shop"]["state"] == "in_sync" and servers["shop"]["proposal_id"] is None
        assert servers["gone"]["state"] == "error" and "exiting at once" in servers["gone"]["error"]
        assert client.get("/v1/health").json()["status"] == "ok"
        before = events(client)

        # When the server's tool list changes while serve runs
        write_tools(tools, ECHO, NOTE)
        # Then the drift shows with the id of a held proposal that adds the new tool
        servers = health_until(client, lambda s: s["shop"]["state"] == "drift")
        proposal_id = servers["shop"]["proposal_id"]
        assert proposal_id is not None
        proposal = client.get(f"/v1/proposals/{proposal_id}").json()
        assert proposal["state"] == "open"
        assert any("tool register mcp.shop.note" in c["command"] for c in proposal["commands"])
        # and later checks of the same drift hold no other proposal: the proposal is all that was written
        checked = servers["shop"]["checked_at"]
        servers = health_until(client, lambda s: s["shop"]["checked_at"] > checked)
        assert servers["shop"]["proposal_id"] == proposal_id
        assert events(client) == before + 1
        assert client.get("/v1/tools/mcp.shop.note").status_code == 404  # applying stays a human step
        # and the metric and the web page show it
        metrics = client.get("/metrics").text
        assert 'toolcat_mcp_drift{server="shop"} 1.0' in metrics
        assert 'toolcat_mcp_check_failed{server="gone"} 1.0' in metrics
        page = client.get("/").text
        assert f"toolcat apply {proposal_id}" in page and 'class="badge drift"' in page

        # When a human applies the proposal
        applied = client.post("/v1/proposal/apply", json={"id": proposal_id})
        assert applied.status_code == 200, applied.text
        # Then the next check finds the server in sync again
        servers = health_until(client, lambda s: s["shop"]["state"] == "in_sync")
        assert servers["shop"]["proposal_id"] is None
        assert 'toolcat_mcp_drift{server="shop"} 0.0' in client.get("/metrics").text


def test_the_check_is_off_by_default(cli: Any, home: Path, tmp_path: Path) -> None:
    # Given a registered MCP server
    faulty(cli, "shop", write_tools(tmp_path / "tools.json", ECHO))
    # When toolcat serve runs without TOOLCAT_MCP_SYNC_SECONDS
    with serving(home) as served, served.client() as client:
        # Then its health says nothing of MCP servers, as before the check existed
        assert set(client.get("/v1/health").json()) == {"status", "position", "store_head", "integrity"}


def test_a_server_that_says_its_tools_changed_is_checked_at_once(cli: Any, home: Path, tmp_path: Path) -> None:
    # Given the in-repo server `shop`, synced and applied, which tells its client when its tool list changes
    tools = write_tools(tmp_path / "tools.json", ECHO)
    faulty(cli, "shop", tools, "--notify-changes")
    ok(cli("mcp", "sync", "shop", "--apply"))
    # When toolcat serve checks it only every hour, and the tool list changes once it has checked
    with serving(home, env={"TOOLCAT_MCP_SYNC_SECONDS": "3600"}) as served, served.client() as client:
        checked = health_until(client, lambda s: "shop" in s)["shop"]
        assert checked["state"] == "in_sync"
        write_tools(tools, ECHO, NOTE)
        # Then the server's notifications/tools/list_changed has it checked again well before the hour
        servers = health_until(client, lambda s: s["shop"]["state"] == "drift")
        assert servers["shop"]["checked_at"] > checked["checked_at"] and servers["shop"]["proposal_id"]
