"""MCP servers in the catalog, against real servers started by the official SDK's client: npm's
server-everything and the in-repo server of tests/mcp_servers/faulty.py, whose tool list a story changes.

Stories: a server's tools are imported, granted and kept in sync (a changed schema with its compatibility
verdict and who is affected, a dropped tool deprecated); each fault is a clear error and nothing written."""
from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.settings import Settings
from tests.support import PROJECT_ROOT, error_of, ok

SERVERS = PROJECT_ROOT / "tests" / "mcp_servers"
EVERYTHING = SERVERS / "node_modules" / ".bin" / "mcp-server-everything"
FAULTY = SERVERS / "faulty.py"
DRIFT_EXIT = 10

ECHO = {"name": "echo", "description": "Echoes the message", "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}
WIPE = {"name": "wipe", "description": "Deletes everything", "annotations": {"destructiveHint": True},
        "inputSchema": {"type": "object"}}
NOTE = {"name": "note", "description": "Adds a note", "inputSchema": {"type": "object"}}


@pytest.fixture
def everything() -> Path:
    """npm's server-everything as `make mcp-servers` installs it; skipped only where npm is missing."""
    if not EVERYTHING.exists():
        if shutil.which("npm") is None and not Settings().require_npm:
            pytest.skip("npm is not installed: server-everything cannot be installed (TOOLCAT_REQUIRE_NPM=1 fails)")
        pytest.fail(f"{EVERYTHING} is missing: run 'make mcp-servers' (npm ci in tests/mcp_servers)")
    return EVERYTHING


def faulty(cli: Any, name: str, tools: Path, *options: str) -> None:
    args = [f"--arg={a}" for a in (str(FAULTY), str(tools), "--page-size", "2", *options)]
    ok(cli("mcp", "server", "add", name, "--command", sys.executable, *args))


def write_tools(path: Path, *tools: dict[str, Any]) -> Path:
    path.write_text(json.dumps(list(tools)))
    return path


def events(cli: Any) -> int:
    return ok(cli("sql", "SELECT count(*) AS n FROM events"))[0]["n"]


def commands_of(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["risk"], c["command"].split(" --")[0]) for c in document["commands"]]


@pytest.mark.npm
def test_server_everything_is_imported_granted_and_its_evidence_kept(cli: Any, everything: Path) -> None:
    # Given server-everything in the catalog
    ok(cli("mcp", "server", "add", "everything", "--command", str(everything)))
    # When it is synced and applied
    synced = ok(cli("mcp", "sync", "everything", "--apply"))
    # Then its 13 tools are ARCH-21's raw MCP tools, risk from their annotations, and the sync is on record
    assert synced["applied"] is not None and synced["server"]["tool_count"] == 13
    echo = ok(cli("tool", "show", "mcp.everything.echo"))
    assert (echo["source"], echo["backing_server"], echo["family"], echo["group"], echo["tier"], echo["risk"]) == \
        ("mcp", "everything", "mcp", "extension", "advanced", "read_only")
    assert ok(cli("tool", "show", "mcp.everything.toggle-simulated-logging"))["risk"] == "safe_update"
    evidence = ok(cli("sql", "SELECT server_name, server_version, protocol_version, tool_count, proposal_id "
                             "FROM mcp_syncs WHERE server = 'everything'"))
    assert evidence == [{"server_name": "mcp-servers/everything", "server_version": "2.0.0",
                         "protocol_version": synced["server"]["protocol_version"], "tool_count": 13,
                         "proposal_id": synced["proposal_id"]}]
    # And when mcp.everything.echo is granted to a unit, the unit sees it
    ok(cli("unit", "create", "support"))
    ok(cli("grant", "add", "unit:support", "mcp.everything.echo"))
    assert [t["tool_id"] for t in ok(cli("effective", "unit:support"))["tools"]] == ["mcp.everything.echo"]
    # And a second sync finds nothing to change: --check exits 0
    assert cli("mcp", "sync", "everything", "--check").code == 0


def test_a_changed_server_shows_drift_as_a_plan_and_a_dropped_tool_is_deprecated(cli: Any, tmp_path: Path
                                                                                  ) -> None:
    # Given the test server with three tools, synced, echo granted to a unit, and a release published
    tools = write_tools(tmp_path / "tools.json", ECHO, WIPE, NOTE)
    faulty(cli, "ours", tools)
    assert ok(cli("mcp", "sync", "ours", "--apply"))["applied"] is not None
    assert ok(cli("tool", "show", "mcp.ours.wipe"))["risk"] == "destructive_update"
    assert ok(cli("tool", "show", "mcp.ours.note"))["risk"] == "safe_update"
    ok(cli("unit", "create", "support"))
    ok(cli("grant", "add", "unit:support", "mcp.ours.echo"))
    ok(cli("grant", "add", "unit:support", "mcp.ours.wipe"))
    ok(cli("release", "publish", "1.2.0"))
    # When the server's echo gains a required property and wipe goes away
    required = {**ECHO, "inputSchema": {**ECHO["inputSchema"], "required": ["message"]}}
    write_tools(tools, required, NOTE)
    before = events(cli)
    # Then --check changes nothing and exits with the drift code
    check = cli("mcp", "sync", "ours", "--check")
    assert check.code == DRIFT_EXIT, check.stderr
    assert json.loads(check.stdout)["proposal_id"] is None and events(cli) == before
    # And the plan shows the schema change with its verdict, as a destructive item, and who is affected
    plan = ok(cli("mcp", "sync", "ours", "--apply"))
    assert plan["applied"] is None and plan["proposal_id"]
    assert plan["schema_changes"] == [{"tool_id": "mcp.ours.echo", "verdict": "incompatible", "mode": "backward",
                                       "changes": plan["schema_changes"][0]["changes"]}]
    assert "message" in plan["schema_changes"][0]["changes"][0]
    assert ("destructive_update", "toolcat tool update mcp.ours.echo") in commands_of(plan)
    assert ("destructive_update", "toolcat mcp record ours") in commands_of(plan)
    assert plan["gone"] == ["mcp.ours.wipe"]
    assert plan["affected"] == [
        {"tool_id": "mcp.ours.echo", "change": "schema incompatible", "subjects": ["unit:support"]},
        {"tool_id": "mcp.ours.wipe", "change": "gone upstream: deprecated", "subjects": ["unit:support"]}]
    # When the operator confirms it
    ok(cli("apply", plan["proposal_id"], "--confirm-destructive"))
    # Then the schema is the server's, and wipe is deprecated in 1.2.0, never deleted
    assert ok(cli("tool", "show", "mcp.ours.wipe"))["canonical_id"] == "mcp.ours.wipe"
    gone = ok(cli("sql", "SELECT tool_id, listed, deprecated_release, earliest_removal_release FROM mcp_tools "
                         "WHERE NOT listed"))
    assert gone == [{"tool_id": "mcp.ours.wipe", "listed": False, "deprecated_release": "1.2.0",
                     "earliest_removal_release": "1.3.0"}]
    assert cli("mcp", "sync", "ours", "--check").code == 0


def test_names_the_grammar_refuses_are_mapped_or_refused_never_skipped(cli: Any, tmp_path: Path) -> None:
    bad_schema = {"name": "bad-schema", "inputSchema": {"type": "object", "properties": {"a": {"type": 12}}}}
    tools = write_tools(tmp_path / "tools.json", {**NOTE, "name": "Get Weather"}, {**NOTE, "name": "get_weather"},
                        {**NOTE, "name": "dup"}, {**NOTE, "name": "dup"}, {**NOTE, "name": "!!!"}, bad_schema)
    faulty(cli, "odd", tools)
    plan = ok(cli("mcp", "sync", "odd"))
    assert plan["mapped"] == [{"name": "Get Weather", "tool_id": "mcp.odd.get-weather"}]
    assert sorted(r["name"] for r in plan["refused"]) == ["!!!", "dup"]
    registered = sorted(c for r, c in commands_of(plan) if c.startswith("toolcat tool register"))
    assert registered == ["toolcat tool register mcp.odd.bad-schema", "toolcat tool register mcp.odd.get-weather",
                          "toolcat tool register mcp.odd.get_weather"]
    # The upstream name is what a call sends: it is recorded beside the tool ID when applied
    ok(cli("apply", plan["proposal_id"]))
    names = ok(cli("sql", "SELECT tool_id, upstream_name FROM mcp_tools ORDER BY tool_id"))
    assert {"tool_id": "mcp.odd.get-weather", "upstream_name": "Get Weather"} in names
    assert ok(cli("tool", "show", "mcp.odd.bad-schema"))["schema_valid"] is False


@pytest.mark.parametrize("fault, message", [
    ("exit", "failed while connecting"),
    ("die-mid-list", "failed during tools/list (page 2)"),
])
def test_a_faulty_server_is_a_clear_error_and_nothing_is_written(cli: Any, tmp_path: Path, fault: str,
                                                                 message: str) -> None:
    faulty(cli, "bad", write_tools(tmp_path / "tools.json", ECHO, NOTE, WIPE), "--fault", fault)
    before = events(cli)
    run = cli("mcp", "sync", "bad", "--apply")
    assert run.code == 6 and error_of(run)["code"] == "mcp_unavailable"
    assert message in error_of(run)["message"] and "faulty:" in error_of(run)["message"]  # its stderr
    assert events(cli) == before


def test_a_server_hanging_in_initialize_is_stopped_at_the_connect_bound(cli: Any, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    faulty(cli, "slow", write_tools(tmp_path / "tools.json", ECHO), "--fault", "hang-initialize")
    monkeypatch.setenv("TOOLCAT_MCP_CONNECT_SECONDS", "1")
    before = events(cli)
    run = cli("mcp", "sync", "slow")
    assert run.code == 6 and "did not start and initialize within 1 s" in error_of(run)["message"]
    assert events(cli) == before


def test_a_command_that_does_not_exist_is_a_clear_error(cli: Any, tmp_path: Path) -> None:
    ok(cli("mcp", "server", "add", "ghost", "--command", str(tmp_path / "no-such-server")))
    run = cli("mcp", "sync", "ghost")
    assert run.code == 6 and "No such file" in error_of(run)["message"]


def test_ten_thousand_tools_are_read_in_pages_with_progress_and_a_bound(cli: Any, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from domain.mcp_servers import Connection
    from infra.mcp.sync import read_inventory
    import io
    connection = Connection.checked(sys.executable, [str(FAULTY), str(tmp_path / "unused.json"), "--page-size",
                                                     "500", "--fault", "many:10000"], {}, {}, None, {})
    progress = io.StringIO()
    inventory = read_inventory("many", connection, Settings(), progress)
    assert len(inventory.tools) == 10_000 and len({t["name"] for t in inventory.tools}) == 10_000
    assert "10000 tools read (20 pages)" in progress.getvalue()
    # Beyond TOOLCAT_MCP_MAX_TOOLS the sync stops reading, refuses, and writes nothing
    ok(cli("mcp", "server", "add", "many", "--command", sys.executable,
           *[f"--arg={a}" for a in connection.args]))
    monkeypatch.setenv("TOOLCAT_MCP_MAX_TOOLS", "1000")
    before = events(cli)
    run = cli("mcp", "sync", "many")
    assert run.code == 3 and error_of(run)["code"] == "too_many_tools"
    assert events(cli) == before


SECRET = "s3cr3t-Planted-Value-77"


def test_secret_references_are_resolved_when_connecting_and_never_stored(cli: Any, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    tools = write_tools(tmp_path / "tools.json", ECHO)
    # A plain value for a variable named like a credential is refused, and not repeated
    refused = cli("mcp", "server", "add", "ours", "--command", sys.executable, "--env", f"API_TOKEN={SECRET}")
    assert refused.code == 3 and SECRET not in refused.stderr + refused.stdout
    ok(cli("mcp", "server", "add", "ours", "--command", sys.executable, f"--arg={FAULTY}", f"--arg={tools}",
           "--env", "LOG_LEVEL=debug", "--env-ref", "API_TOKEN=env:OURS_TOKEN"))
    # An unresolvable reference is named, not guessed at
    missing = cli("mcp", "sync", "ours")
    assert missing.code == 3 and "env:OURS_TOKEN" in error_of(missing)["message"]
    # Resolved from the environment when connecting: the sync works and the value is nowhere in the store
    monkeypatch.setenv("OURS_TOKEN", SECRET)
    assert ok(cli("mcp", "sync", "ours", "--apply"))["applied"] is not None
    shown = cli("mcp", "server", "show", "ours")
    stored = ok(cli("sql", "SELECT string_agg(data::VARCHAR, ' ') AS all FROM events"))[0]["all"]
    assert "env:OURS_TOKEN" in shown.stdout and SECRET not in shown.stdout + stored


def test_server_entries_change_and_go_but_their_tools_stay(cli: Any, tmp_path: Path) -> None:
    tools = write_tools(tmp_path / "tools.json", ECHO)
    faulty(cli, "ours", tools)
    ok(cli("mcp", "sync", "ours", "--apply"))
    ok(cli("mcp", "server", "change", "ours", "--tier", "default"))
    assert ok(cli("mcp", "server", "show", "ours"))["tier"] == "default"
    assert error_of(cli("mcp", "server", "add", "ours", "--url", "http://127.0.0.1:9/mcp"))["code"] == \
        "duplicate_mcp_server"
    ok(cli("mcp", "server", "remove", "ours"))
    assert ok(cli("mcp", "server", "list"))["servers"] == []
    assert ok(cli("tool", "show", "mcp.ours.echo"))["backing_server"] == "ours"
    assert error_of(cli("mcp", "server", "add", "Ours", "--command", "x"))["code"] == "invalid_name"




def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def everything_http(everything: Path) -> Iterator[str]:
    """server-everything on streamable HTTP, at a free port; its URL once it accepts connections."""
    port = free_port()
    process = subprocess.Popen([str(everything), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # it says when it listens: no sleeping
            if "listening on port" in line:
                break
        else:
            pytest.fail(f"server-everything did not start on HTTP (exit {process.wait()})")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.npm
def test_a_streamable_http_server_is_synced_with_its_header_reference(cli: Any, everything_http: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ok(cli("mcp", "server", "add", "web", "--url", everything_http, "--header-ref", "X-Api-Key=env:WEB_KEY"))
    monkeypatch.setenv("WEB_KEY", SECRET)
    synced = ok(cli("mcp", "sync", "web", "--apply"))
    assert synced["server"]["tool_count"] == 13 and synced["applied"] is not None
    assert ok(cli("tool", "show", "mcp.web.get-sum"))["backing_server"] == "web"


class _Answers(http.server.BaseHTTPRequestHandler):
    """An HTTP endpoint that is not an MCP server: 401 for /locked, an HTML page for anything else."""

    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        locked = self.path == "/locked"
        body = b"<html><body>Sign in</body></html>"
        self.send_response(401 if locked else 200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.mark.parametrize("path", ["/locked", "/page"])
def test_an_http_endpoint_answering_401_or_html_is_a_clear_error(cli: Any, path: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("TOOLCAT_MCP_CONNECT_SECONDS", "5")
        ok(cli("mcp", "server", "add", "web", "--url", f"http://127.0.0.1:{server.server_port}{path}"))
        before = events(cli)
        run = cli("mcp", "sync", "web")
        assert run.code == 6 and error_of(run)["code"] == "mcp_unavailable", run.stderr
        assert "failed while connecting" in error_of(run)["message"]
        assert events(cli) == before
    finally:
        server.shutdown()
        thread.join()
