"""End to end: the Python watch client docs/services.md prints ("a client in 25 lines"), run as printed
against a real `toolcat serve`, keeps an agent's tool set equal to what the server answers for it while
tools are granted, disabled by an allowlist and revoked: every kind of change the stream sends; and
through a restart of the server, and of the client itself, which resumes from the position it saved."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.doc_text import code_blocks, section
from tests.serving import Served, serving, start_server, tokens
from tests.support import clean_environ, run_in_process

PLACEHOLDERS = ('"http://127.0.0.1:8750"', '"tc_…"')
# Runs the documented client in a thread of its own process; each expected set written to its stdin is
# answered with the client's set once it holds that one (or after a minute, as it then stands).
HOST = """
import json, sys, threading, time
namespace = {}
threading.Thread(target=exec, args=(sys.argv[1], namespace), daemon=True).start()
for line in sys.stdin:
    expected, deadline = json.loads(line), time.monotonic() + 60
    while namespace.get("tools") != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    print(json.dumps(namespace.get("tools")), flush=True)
"""


def documented_client(url: str, token: str) -> str:
    [client] = code_blocks(section("docs/services.md", "## Serving the catalog over HTTP"), "python")
    assert all(placeholder in client for placeholder in PLACEHOLDERS)
    return client.replace(PLACEHOLDERS[0], json.dumps(url)).replace(PLACEHOLDERS[1], json.dumps(token))


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """The tour's catalog: `read` granted to unit eng, where agent triage works."""
    home = tmp_path / "home"
    run_in_process(home, [["init", "--policy", "tyrum"],
                          ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier",
                           "default", "--visibility", "public"],
                          ["tool", "register", "grep", "--source", "builtin", "--group", "core", "--tier",
                           "default", "--visibility", "public"],
                          ["unit", "create", "eng"], ["agent", "create", "triage", "--unit", "eng"],
                          ["grant", "add", "unit:eng", "read"]])
    return home


@pytest.fixture
def served(catalog: Path) -> Iterator[tuple[Served, dict[str, str]]]:
    keys = tokens(catalog, admin="read,write", reader="read")
    with serving(catalog) as server:
        yield server, keys


class Client:
    """The documented client, running; `holds(expected)` answers the set it holds once it matches."""

    def __init__(self, code: str, workdir: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", HOST, code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=clean_environ(), cwd=workdir)

    def holds(self, expected: dict[str, Any]) -> Any:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(expected) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def effective(admin: httpx.Client) -> dict[str, Any]:
    answer = admin.get("/v1/subjects/agent:triage/effective")
    assert answer.status_code == 200, answer.text
    return {row["tool_id"]: row for row in answer.json()["tools"]}


def write(admin: httpx.Client, path: str, body: dict[str, Any]) -> int:
    answer = admin.post(path, json=body)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["position"])


def test_the_documented_watch_client_keeps_the_agents_set_as_the_server_answers_it(
        served: tuple[Served, dict[str, str]]) -> None:
    server, keys = served
    client = Client(documented_client(server.url, keys["reader"]), server.home.parent)
    try:
        with server.client(keys["admin"]) as admin:
            # Given the client connected: the first event holds the whole set
            assert client.holds(effective(admin)) == effective(admin) and list(effective(admin)) == ["read"]
            # When a tool is granted, then it is added
            write(admin, "/v1/grant/add", {"subject": "agent:triage", "target": "grep"})
            assert client.holds(effective(admin)) == effective(admin) and len(effective(admin)) == 2
            # When an allowlist disables it, then its row changes in place
            write(admin, "/v1/agent/allowlist", {"agent": "triage", "patterns": ["read"]})
            assert effective(admin)["grep"]["exposure"] == "disabled_by_agent_allowlist"
            assert client.holds(effective(admin)) == effective(admin)
            # When it is revoked, then it is removed
            write(admin, "/v1/grant/revoke", {"subject": "agent:triage", "target": "grep"})
            assert client.holds(effective(admin)) == effective(admin) and list(effective(admin)) == ["read"]
    finally:
        client.stop()


def test_the_documented_watch_client_survives_a_server_restart_and_resumes_from_its_saved_position(
        catalog: Path, tmp_path: Path) -> None:
    keys = tokens(catalog, admin="read,write", reader="read")
    server = start_server(catalog)
    port = server.url.rsplit(":", 1)[1]
    code = documented_client(server.url, keys["reader"])
    client = Client(code, tmp_path)
    try:
        with server.client(keys["admin"]) as admin:
            # Given the client holds the agent's set
            assert client.holds(effective(admin)) == effective(admin)
        # When the server restarts (on the same address) and a tool is granted meanwhile
        assert server.stop() == 0
        server = start_server(catalog, "--port", port)
        with server.client(keys["admin"]) as admin:
            write(admin, "/v1/grant/add", {"subject": "agent:triage", "target": "grep"})
            # Then the client reconnects and holds the new set
            assert client.holds(effective(admin)) == effective(admin) and len(effective(admin)) == 2
        saved = json.loads((tmp_path / "triage-tools.json").read_text())
        # When the client itself stops, a tool is revoked, and the client starts again
        client.stop()
        with server.client(keys["admin"]) as admin:
            revoked = write(admin, "/v1/grant/revoke", {"subject": "agent:triage", "target": "grep"})
            # Then it starts from the set and position it saved, and catches up from there
            assert saved["tools"] == effective(admin) | {"grep": saved["tools"]["grep"]}
            client = Client(code, tmp_path)
            assert client.holds(effective(admin)) == effective(admin) and list(effective(admin)) == ["read"]
        assert int(json.loads((tmp_path / "triage-tools.json").read_text())["last_id"]) >= revoked
    finally:
        client.stop()
        assert server.stop() == 0
