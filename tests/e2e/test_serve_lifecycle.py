"""End to end: a `toolcat serve` process's life — who it serves without tokens, what it refuses to start
on, its address file, and SIGTERM in the middle of a batch (exit 0, nothing lost)."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx

from domain.base import Meta

from infra.http.address import ServerAddress, read_address, record_address
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.serving import serving, start_server, tokens
from tests.support import error_of, ok, run_in_process, run_toolcat, toolcat_env

STORY = [["init", "--policy", "tyrum"], ["unit", "create", "eng"], ["agent", "create", "triage", "--unit", "eng"],
         ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
          "--visibility", "public"]]


def test_without_tokens_loopback_reads_are_anonymous_and_writes_refused(home: Path) -> None:
    run_in_process(home, STORY)
    with serving(home) as served, served.client() as anonymous:
        assert anonymous.get("/v1/resolve/read").json()["canonical_id"] == "read"
        assert anonymous.get("/v1/audit/verify").json()["ok"] is True
        refused = anonymous.post("/v1/grant/add", json={"subject": "agent:triage", "target": "read"})
        assert refused.status_code == 401 and refused.json()["code"] == "unauthenticated"
        assert "token create" in refused.json()["detail"]
        again = run_toolcat("serve", "--port", "0", env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}), timeout=60)
        assert again.code == 4 and error_of(again)["code"] == "conflict"
        # A token created while the server runs counts at once, and then anonymous requests no longer do.
        token = ok(run_toolcat("token", "create", "ops", "--scope", "read,write",
                               env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}), timeout=60))
        assert token["name"] == "ops" and token["scopes"] == ["read", "write"] and token["token"] not in \
            (home / "tokens.json").read_text()
        with served.client(token["token"]) as ops:
            assert ops.post("/v1/grant/add", json={"subject": "agent:triage", "target": "read"}).status_code == 200
        assert anonymous.get("/v1/resolve/read").status_code == 401


def test_it_refuses_a_non_loopback_address_without_tokens(home: Path) -> None:
    refused = run_toolcat("serve", "--host", "0.0.0.0", "--port", "0",
                          env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}), timeout=60)
    assert refused.code == 2 and error_of(refused)["code"] == "usage"
    assert read_address(home) is None


def test_a_stale_address_file_is_ignored(home: Path) -> None:
    run_in_process(home, STORY)
    record_address(home, ServerAddress(pid=2**22 + 7, host="127.0.0.1", port=1, token="gone"))
    answer = ok(run_toolcat("resolve", "read", env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}), timeout=60))
    assert answer["canonical_id"] == "read"


def test_sigterm_in_the_middle_of_batches_exits_0_and_loses_nothing(home: Path) -> None:
    run_in_process(home, STORY)
    keys = tokens(home, admin="read,write")
    served = start_server(home)
    answered: list[int] = []
    stop = threading.Event()

    def write_over_http() -> None:
        with served.client(keys["admin"]) as client:
            for index in range(100_000):
                try:
                    response = client.post("/v1/unit/create", json={"unit": f"http{index}"})
                except httpx.HTTPError:
                    return  # the server stopped listening
                if response.status_code == 200:
                    answered.append(response.json()["position"])

    def write_to_the_store() -> None:
        """Writes beside the server, so that the follower has batches to apply when it is asked to stop."""
        catalog = open_catalog(Settings(home=home))
        try:
            for index in range(100_000):
                if stop.is_set():
                    return
                catalog.create_unit(f"store{index}", None, Meta(actor="beside"))
        finally:
            catalog.close()
    writers = [threading.Thread(target=write_over_http), threading.Thread(target=write_to_the_store)]
    for writer in writers:
        writer.start()
    while len(answered) < 20:
        stop.wait(0.1)
    try:
        code = served.stop()
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert code == 0, served.log.read_text()
    assert read_address(home) is None
    # The read model holds whole batches only, and caught up it holds every write that was answered.
    env = toolcat_env("t", {"TOOLCAT_HOME": str(home)})
    assert ok(run_toolcat("audit", "verify", env=env, timeout=120))["ok"] is True
    positions = {row["position"] for row in ok(run_toolcat("sql", "SELECT position FROM events", env=env,
                                                           timeout=120))}
    assert set(answered) <= positions
    assert ok(run_toolcat("audit", "replay", env=env, timeout=300))["matches"] is True


def test_the_server_follows_writes_made_beside_it(home: Path) -> None:
    """Writes by the command line go to the store; the server's follower applies them, and a read through
    the server sees them."""
    run_in_process(home, STORY)
    with serving(home) as served, served.client() as client:
        env: dict[str, Any] = toolcat_env("t", {"TOOLCAT_HOME": str(home)})
        written = ok(run_toolcat("grant", "add", "agent:triage", "read", env=env, timeout=60))
        seen = client.get("/v1/subjects/agent:triage/effective").json()
        assert seen["position"] >= written["position"] and [t["tool_id"] for t in seen["tools"]] == ["read"]
