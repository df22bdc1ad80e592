"""End to end: the MCP gateway at `/mcp` of a real `toolcat serve`, with the official SDK's client over
streamable HTTP and real upstream servers (PyPI's mcp-server-time, npm's server-everything, and the in-repo
test server tests/mcp_servers/faulty.py playing the bad ones).

The story of the issue: an agent lists its tools and calls one; the operator revokes the grant; the agent
receives tools/list_changed; its next call is refused; the decision log holds both, and `explain` names the
revoke's position."""
from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from infra.http.auth import create_token
from tests.serving import Served, posted, serving, tokens
from tests.support import PROJECT_ROOT, run_in_process

FAULTY = PROJECT_ROOT / "tests" / "mcp_servers" / "faulty.py"
EVERYTHING = PROJECT_ROOT / "tests" / "mcp_servers" / "node_modules" / ".bin" / "mcp-server-everything"
TIME = Path(sys.executable).parent / "mcp-server-time"
SECRET = "gw-Planted-Secret-4242"
FAULTY_TOOLS = [{"name": name, "description": f"the faulty server's {name}", "inputSchema": {"type": "object"}}
                for name in ("echo", "crash", "slow", "garbage", "big", "has-secret")]


@dataclass
class Gateway:
    served: Served
    admin: httpx.Client
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.served.url + "/mcp"

    def write(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return posted(self.admin, path, body)

    def sql(self, query: str) -> list[dict[str, Any]]:
        answer = self.admin.post("/v1/sql", json={"query": query})
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A home with three MCP servers synced, two agents with their grants and call tokens, and a server."""
    home = tmp_path_factory.mktemp("gateway") / "home"
    home.mkdir()
    tools = home.parent / "faulty-tools.json"
    tools.write_text(json.dumps(FAULTY_TOOLS))
    commands = [["mcp", "server", "add", "time", "--command", str(TIME), "--arg=--local-timezone=UTC"],
                ["mcp", "server", "add", "flaky", "--command", sys.executable, "--arg", str(FAULTY), "--arg",
                 str(tools), "--env-ref", "FAULTY_API_TOKEN=env:GW_TEST_SECRET"],
                ["mcp", "sync", "time", "--apply"], ["mcp", "sync", "flaky", "--apply"],
                ["unit", "create", "support"], ["agent", "create", "triage", "--unit", "support"],
                ["agent", "create", "other", "--unit", "support"],
                ["grant", "add", "agent:triage", "mcp.time.get_current_time"],
                ["grant", "add", "agent:triage", "mcp.flaky.*"],
                ["grant", "add", "agent:other", "mcp.time.convert_time"]]
    if EVERYTHING.exists():
        commands += [["mcp", "server", "add", "everything", "--command", str(EVERYTHING)],
                     ["mcp", "sync", "everything", "--apply"], ["grant", "add", "agent:triage", "mcp.everything.echo"]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GW_TEST_SECRET", SECRET)
        run_in_process(home, commands)
    keys = tokens(home, admin="read,write,audit")
    for name, subject in (("triage-bot", "agent:triage"), ("other-bot", "agent:other")):
        keys[name] = create_token(home, name, ["call"], subject=subject)["token"]
    env = {"GW_TEST_SECRET": SECRET, "TOOLCAT_MCP_REQUEST_SECONDS": "3", "TOOLCAT_GATEWAY_PAGE_SIZE": "2",
           "TOOLCAT_GATEWAY_MAX_ANSWER_BYTES": "100000"}
    with serving(home, env=env) as served, served.client(keys["admin"]) as admin:
        yield Gateway(served, admin, keys)


@dataclass
class Agent:
    session: Any
    heard: list[str]

    async def names(self) -> list[str]:
        """Every page of tools/list."""
        names, cursor = [], None
        while True:
            from mcp_types import PaginatedRequestParams
            page = await self.session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            names += [tool.name for tool in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                return names

    async def refused(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        from mcp.shared.exceptions import MCPError
        with pytest.raises(MCPError) as refused:
            await self.session.call_tool(name, arguments or {})
        return refused.value


@contextlib.asynccontextmanager
async def agent(url: str, token: str) -> AsyncIterator[Agent]:
    """The SDK's client over streamable HTTP with the agent's bearer token, initialized."""
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    heard: list[str] = []

    async def handler(message: Any) -> None:
        heard.append(type(message).__name__)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client, \
            streamable_http_client(url, http_client=client) as (read, write), \
            ClientSession(read, write, message_handler=handler) as session:
        await session.initialize()
        yield Agent(session, heard)


async def until(check: Any, what: str) -> None:
    """Wait (at most 10 s) until `check()` holds: a bound on waiting, never an assertion on time."""
    with anyio.fail_after(10):
        while not check():
            await anyio.sleep(0.05)
    assert check(), what


def test_an_agent_lists_calls_loses_its_grant_is_told_and_refused_and_all_is_on_record(gateway: Gateway) -> None:
    async def story() -> None:
        async with agent(gateway.url, gateway.tokens["triage-bot"]) as triage:
            # Given the agent's tools: exactly its subject's enabled set, in pages of two
            listed = await triage.names()
            assert "mcp.time.get_current_time" in listed and "mcp.flaky.echo" in listed
            assert "mcp.time.convert_time" not in listed  # the other agent's
            # When it calls one: forwarded upstream under its upstream name, the answer's _meta says what ran
            answer = await triage.session.call_tool("mcp.time.get_current_time", {"timezone": "UTC"})
            assert json.loads(answer.content[0].text)["timezone"] == "UTC"
            assert answer.meta["toolcat"]["canonical_id"] == "mcp.time.get_current_time"
            # When the operator revokes the grant
            revoked = gateway.write("/v1/grant/revoke", {"subject": "agent:triage",
                                                        "target": "mcp.time.get_current_time"})
            # Then the agent is told its list changed, the tool has left it, and its next call is refused
            await until(lambda: "ToolListChangedNotification" in triage.heard, "tools/list_changed received")
            assert "mcp.time.get_current_time" not in await triage.names()
            refused = await triage.refused("mcp.time.get_current_time", {"timezone": "UTC"})
            assert refused.data["reason"] == "not_in_set"
            return revoked
    revoked = anyio.run(story)
    # And the decision log holds both decisions, the refusal at a set position after the revoke
    rows = _eventually(gateway, 2, "SELECT allowed, reason, set_position, token FROM gateway_decisions WHERE "
                       "subject = 'agent:triage' AND asked = 'mcp.time.get_current_time' ORDER BY decided_at")
    assert [(r["allowed"], r["reason"], r["token"]) for r in rows] == [(True, "in_set", "triage-bot"),
                                                                     (False, "not_in_set", "triage-bot")]
    position = revoked["position"]
    assert rows[1]["set_position"] >= position > rows[0]["set_position"]
    # And explain names the revoke's position
    explained = gateway.admin.get("/v1/subjects/agent:triage/explain/mcp.time.get_current_time").json()
    assert explained["visible"] is False
    assert explained["left_at"]["position"] == position and explained["left_at"]["type"] == "Grants.Revoked"


def _eventually(gateway: Gateway, count: int, query: str) -> list[dict[str, Any]]:
    """The decision log is written in batches: ask again (at most 10 s) until `count` rows are there."""
    import time
    deadline, rows = time.monotonic() + 10, gateway.sql(query)
    while len(rows) < count and time.monotonic() < deadline:
        time.sleep(0.1)
        rows = gateway.sql(query)
    return rows
