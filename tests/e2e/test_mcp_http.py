"""End to end: MCP servers over HTTP on a real `toolcat serve`, against the in-repo test server
(tests/mcp_servers/faulty.py, started by the SDK's client). The bodies are the commands themselves:
`POST /v1/mcp/server/add` takes the command line's options by their names (`env` a JSON object),
`POST /v1/mcp/sync` plans or applies, and a held sync's proposal, applied by id, records its evidence."""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.serving import admin_client, posted
from tests.support import PROJECT_ROOT

FAULTY = PROJECT_ROOT / "tests" / "mcp_servers" / "faulty.py"
ECHO = {"name": "echo", "description": "Echoes the message", "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}
NOTE = {"name": "note", "description": "Adds a note", "inputSchema": {"type": "object"}}
SECRET = "s3cr3t-Planted-Value-78"


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    with admin_client(tmp_path_factory.mktemp("mcp") / "home") as client:
        yield client


def added(client: httpx.Client, name: str, tools: Path) -> None:
    posted(client, "/v1/mcp/server/add", {"name": name, "command": sys.executable,
                                          "args": [str(FAULTY), str(tools)], "env": {"LOG_LEVEL": "debug"}})


def test_a_server_added_and_synced_over_http_has_its_tools_in_the_catalog(admin: httpx.Client,
                                                                         tmp_path: Path) -> None:
    # Given the test server added with the command line's options as the body
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([ECHO]))
    added(admin, "applied", tools)
    shown = admin.get("/v1/mcp/servers/applied").json()
    assert (shown["command"], shown["env"]) == (sys.executable, {"LOG_LEVEL": "debug"})
    # When it is synced with apply
    synced = posted(admin, "/v1/mcp/sync", {"name": "applied", "apply": True})
    # Then its tool is in the catalog and the sync's evidence on record
    assert synced["applied"] is not None and synced["server"]["tool_count"] == 1
    assert admin.get("/v1/mcp/servers/applied").json()["last_sync"]["tool_count"] == 1
    # And a check finds no drift until the server lists another tool
    assert posted(admin, "/v1/mcp/sync", {"name": "applied", "check": True})["drift"] is False
    tools.write_text(json.dumps([ECHO, NOTE]))
    checked = posted(admin, "/v1/mcp/sync", {"name": "applied", "check": True})
    assert checked["drift"] is True and checked["proposal_id"] is None


def test_a_held_sync_is_applied_by_id_with_the_evidence_its_proposal_holds(admin: httpx.Client,
                                                                          tmp_path: Path) -> None:
    # Given a sync planned, not applied: its proposal's last command records the evidence
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([ECHO, NOTE]))
    added(admin, "held", tools)
    planned = posted(admin, "/v1/mcp/sync", {"name": "held"})
    assert planned["proposal_id"] and planned["applied"] is None
    assert planned["commands"][-1]["command"].startswith("toolcat mcp record held --evidence")
    # When the server can no longer list its tools and the proposal is applied by its id (nothing connects)
    tools.unlink()
    posted(admin, "/v1/proposal/apply", {"id": planned["proposal_id"]})
    # Then the evidence is the one the proposal held
    assert admin.get("/v1/mcp/servers/held").json()["last_sync"]["tools_hash"] == planned["server"]["tools_hash"]


def test_mcp_writes_over_http_refuse_bad_bodies_and_write_nothing(admin: httpx.Client) -> None:
    # A plain value for a variable named like a credential is refused, and never repeated
    refused = admin.post("/v1/mcp/server/add", json={"name": "leaky", "command": "x", "env": {"API_TOKEN": SECRET}})
    assert refused.status_code == 422 and refused.json()["code"] == "secret_value_refused"
    assert SECRET not in refused.text
    # KEY=VALUE entries are checked as on the command line
    malformed = admin.post("/v1/mcp/server/add", json={"name": "leaky", "command": "x", "env": [SECRET]})
    assert malformed.status_code == 400 and "entry 1 is not KEY=VALUE" in malformed.text
    assert SECRET not in malformed.text
    # Evidence is the JSON object itself, never a file's name; apply and check exclude each other
    named = admin.post("/v1/mcp/record", json={"name": "leaky", "evidence": "/tmp/evidence.json"})
    both = admin.post("/v1/mcp/sync", json={"name": "leaky", "apply": True, "check": True})
    assert (named.status_code, both.status_code) == (400, 400), named.text + both.text
    assert "leaky" not in [s["name"] for s in admin.get("/v1/mcp/servers").json()["servers"]]
