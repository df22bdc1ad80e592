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
from tests.browser import parse_dom
from tests.doc_text import code_blocks, section
from tests.serving import Served, posted, serving, tokens
from tests.support import PROJECT_ROOT, run_in_process, toolcat_environ, toolcat_in_process

FAULTY = PROJECT_ROOT / "tests" / "mcp_servers" / "faulty.py"
EVERYTHING = PROJECT_ROOT / "tests" / "mcp_servers" / "node_modules" / ".bin" / "mcp-server-everything"
TIME = Path(sys.executable).parent / "mcp-server-time"
SECRET = "gw-Planted-Secret-4242"
FAULTY_TOOLS = [{"name": name, "description": f"the faulty server's {name}", "inputSchema": {"type": "object"}}
                for name in ("echo", "crash", "slow", "garbage", "big", "has-secret", "denied")]


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
                ["grant", "add", "agent:other", "mcp.time.convert_time"],
                # a server that is down once synced: its command is gone
                ["mcp", "server", "add", "gone", "--command", sys.executable, "--arg", str(FAULTY), "--arg",
                 str(tools)], ["mcp", "sync", "gone", "--apply"],
                ["mcp", "server", "change", "gone", "--command", str(home.parent / "no-such-server")],
                ["grant", "add", "agent:triage", "mcp.gone.echo"],
                # a deprecated alias inside its window (its removal release planned), and a retired one
                ["release", "publish", "1.0.0"],
                ["alias", "add", "mcp.flaky.echo", "mcp.flaky.echo-v1"], ["alias", "deprecate", "mcp.flaky.echo-v1"],
                ["alias", "add", "mcp.flaky.echo", "mcp.flaky.echo-v0"], ["alias", "deprecate", "mcp.flaky.echo-v0"],
                ["release", "publish", "1.1.0"],
                *[["alias", "milestone", alias, milestone, "--release", "1.1.0"]
                  for alias in ("mcp.flaky.echo-v1", "mcp.flaky.echo-v0")
                  for milestone in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped")],
                ["alias", "milestone", "mcp.flaky.echo-v0", "alias_only_emission", "--release", "1.1.0"],
                ["release", "plan", "1.2.0", "--date", "2027-03-01"],
                ["alias", "step", "mcp.flaky.echo-v0", "1", "--evidence", "callers moved"],
                ["alias", "step", "mcp.flaky.echo-v0", "2", "--evidence", "docs moved"],
                ["release", "publish", "1.2.0"], ["alias", "retire", "mcp.flaky.echo-v0", "--release", "1.2.0"],
                # an internal tool granted (never listed), a tool no MCP server backs, a route rule
                ["tool", "register", "mcp.flaky.hidden", "--source", "mcp", "--group", "extension", "--tier",
                 "default", "--visibility", "internal", "--backing-server", "flaky"],
                ["tool", "register", "acme.lookup", "--source", "plugin", "--plugin", "acme", "--group", "extension",
                 "--tier", "default", "--visibility", "public", "--description", "a plugin's tool"],
                ["grant", "add", "agent:triage", "acme.lookup"],
                ["route", "rule", "add", "no-denied", "--deny-tool", "mcp.flaky.denied"]]
    if EVERYTHING.exists():
        commands += [["mcp", "server", "add", "everything", "--command", str(EVERYTHING)],
                     ["mcp", "sync", "everything", "--apply"], ["grant", "add", "agent:triage", "mcp.everything.echo"],
                     ["grant", "add", "agent:triage", "mcp.everything.get-structured-content"]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GW_TEST_SECRET", SECRET)
        run_in_process(home, commands)
    keys = tokens(home, admin="read,write,audit")
    # the agent's token made as docs/mcp.md shows
    [shown] = [line.split("#")[0].split()[1:] for line in code_blocks(
        section("docs/mcp.md", "## The gateway"), "sh")[0].splitlines() if line.startswith("toolcat token create")]
    with toolcat_environ("operator"):
        made = toolcat_in_process(home, "--json", *shown)
    assert made.code == 0, made.stderr
    keys["triage-bot"] = made.json["token"]
    keys["other-bot"] = create_token(home, "other-bot", ["call"], subject="agent:other")
    env = {"GW_TEST_SECRET": SECRET, "TOOLCAT_MCP_REQUEST_SECONDS": "5", "TOOLCAT_GATEWAY_PAGE_SIZE": "2",
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
            if EVERYTHING.exists():  # npm's reference server too, under its upstream name
                echoed = await triage.session.call_tool("mcp.everything.echo", {"message": "hi"})
                assert "hi" in echoed.content[0].text
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
    # And the README's question "did the agent call the tool after its grant was revoked?" answers with the
    # denial and its evidence: the revoke's position and who revoked it
    [question] = code_blocks(section("README.md", "## Connect an agent"), "sql")
    answered = gateway.sql(question)
    assert [(r["allowed"], r["reason"], r["revoked_at"], r["revoked_by"]) for r in answered] == [
        (False, "not_in_set", position, "admin")]
    # And explain names the revoke's position
    explained = gateway.admin.get("/v1/subjects/agent:triage/explain/mcp.time.get_current_time").json()
    assert explained["visible"] is False
    assert explained["left_at"]["position"] == position and explained["left_at"]["type"] == "Grants.Revoked"
    # And the console's denials page shows the refusal: who asked, for what, and why
    denials = parse_dom(gateway.admin.get("/gateway/denials").text).all("tr", class_="denial")
    shown = [row.text() for row in denials if "mcp.time.get_current_time" in row.text()]
    assert len(shown) == 1 and "agent:triage" in shown[0] and "not_in_set" in shown[0] and "triage-bot" in shown[0]
    # and its MCP servers page lists each server with its last sync
    servers = {row.attrs["data-server"]: row.text()
               for row in parse_dom(gateway.admin.get("/mcp-servers").text).all("tr", class_="mcp-server")}
    assert {"time", "flaky", "gone"} <= set(servers) and "never synced" not in servers["time"]


def _eventually(gateway: Gateway, count: int, query: str) -> list[dict[str, Any]]:
    """The decision log is written in batches: ask again (at most 10 s) until `count` rows are there."""
    import time
    deadline, rows = time.monotonic() + 10, gateway.sql(query)
    while len(rows) < count and time.monotonic() < deadline:
        time.sleep(0.1)
        rows = gateway.sql(query)
    return rows


def test_names_resolve_as_the_catalog_says_and_refusals_say_why(gateway: Gateway) -> None:
    async def story() -> None:
        async with agent(gateway.url, gateway.tokens["triage-bot"]) as triage:
            listed = await triage.names()
            first = await triage.session.list_tools()
            assert len(first.tools) == 2 and first.next_cursor is not None  # TOOLCAT_GATEWAY_PAGE_SIZE=2
            # internal tools never appear; aliases never appear, canonical IDs do
            assert "mcp.flaky.hidden" not in listed and "mcp.flaky.echo-v1" not in listed
            assert {"mcp.flaky.echo", "acme.lookup"} <= set(listed)
            # a deprecated alias inside its window is forwarded to the canonical tool; _meta says so; the
            # upstream's progress notifications reach the agent
            progress: list[tuple[float, float | None, str | None]] = []

            async def heard(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))
            answer = await triage.session.call_tool("mcp.flaky.echo-v1", {"message": "hello"},
                                                    progress_callback=heard)
            assert answer.content[0].text == "hello"
            assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
            assert answer.meta["toolcat"] == {"canonical_id": "mcp.flaky.echo", "asked": "mcp.flaky.echo-v1",
                                              "position": answer.meta["toolcat"]["position"], "deprecated": True,
                                              "sunset": "2027-03-01", "sunset_release": "1.2.0"}
            # a retired alias is refused, naming the canonical ID
            retired = await triage.refused("mcp.flaky.echo-v0", {"message": "hello"})
            assert retired.data["reason"] == "retired_alias" and retired.data["canonical_id"] == "mcp.flaky.echo"
            assert "use 'mcp.flaky.echo' instead" in retired.message
            # an internal tool, another agent's tool, an unknown name: outside the set
            assert (await triage.refused("mcp.flaky.hidden")).data["reason"] == "not_in_set"
            assert (await triage.refused("mcp.time.convert_time")).data["reason"] == "not_in_set"
            assert (await triage.refused("no.such.tool")).data["reason"] == "unknown_tool"
            # a tool of the set that no MCP server backs is not served here
            unserved = await triage.refused("acme.lookup")
            assert unserved.data["reason"] == "not_served_by_gateway"
            assert "not served by this gateway" in unserved.message
            # a route rule denies before anything is forwarded, with route check's evidence
            denied = await triage.refused("mcp.flaky.denied")
            assert denied.data["reason"] == "denied_by_tool_rule"
            assert denied.data["route"]["matched_route_rule_id"] == "no-denied"
    anyio.run(story)
    checked = gateway.admin.get("/v1/subjects/agent:triage/route-check", params={"call": "mcp.flaky.denied"}).json()
    rows = _eventually(gateway, 1, "SELECT reason, matched_rule, evidence FROM gateway_decisions "
                                   "WHERE asked = 'mcp.flaky.denied'")
    assert (rows[0]["reason"], rows[0]["matched_rule"]) == (checked["reason_code"], checked["matched_route_rule_id"])
    evidence = json.loads(rows[0]["evidence"]) if isinstance(rows[0]["evidence"], str) else rows[0]["evidence"]
    assert {k: evidence[k] for k in ("decision", "matched_tool_name", "matched_tool_classes")} == \
        {k: checked[k] for k in ("decision", "matched_tool_name", "matched_tool_classes")}


def test_one_agent_never_sees_nor_calls_another_agents_tools(gateway: Gateway) -> None:
    async def story() -> None:
        async with agent(gateway.url, gateway.tokens["other-bot"]) as other:
            assert await other.names() == ["mcp.time.convert_time"]
            assert (await other.refused("mcp.flaky.echo", {"message": "x"})).data["reason"] == "not_in_set"
    anyio.run(story)


def test_no_token_a_wrong_one_or_one_without_a_subject_opens_no_session(gateway: Gateway) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=gateway.served.url, timeout=30) as client:
        for headers, status, error in (({}, 401, ""), ({"Authorization": "Bearer tc_wrong"}, 401, "invalid_token"),
                                       ({"Authorization": f"Bearer {gateway.tokens['admin']}"}, 403,
                                        "insufficient_scope")):
            answer = client.post("/mcp", json=initialize, headers={**accept, **headers})
            assert answer.status_code == status, answer.text
            assert answer.headers["WWW-Authenticate"].startswith('Bearer realm="toolcat"')
            assert error in answer.headers["WWW-Authenticate"]
            assert "mcp-session-id" not in answer.headers


def test_mcp_gets_the_checks_of_every_request_though_it_skips_the_routing(gateway: Gateway) -> None:
    # Given the token of an agent and /mcp served ahead of the other routes (McpFront)
    from prometheus_client.parser import text_string_to_metric_families

    def timed() -> float:  # the requests counted under route /mcp, POST, 401
        text = gateway.admin.get("/metrics").text
        return sum(sample.value for family in text_string_to_metric_families(text)
                   for sample in family.samples if sample.name == "toolcat_http_request_duration_seconds_count"
                   and sample.labels == {"method": "POST", "route": "/mcp", "status": "401"})
    agent = {"Authorization": f"Bearer {gateway.tokens['triage-bot']}", "Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    before = timed()
    with httpx.Client(base_url=gateway.served.url, timeout=30) as client:
        # When a page of another site, or a name the server does not serve, reaches it
        for headers in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
            answer = client.post("/mcp", json=initialize, headers={**agent, **headers})
            # Then it is refused before any session opens
            assert answer.status_code == 421, answer.text
            assert "mcp-session-id" not in answer.headers
        # And a body over the limit is refused unread
        assert client.post("/mcp", content=b"x" * (1024 * 1024 + 1), headers=agent).status_code == 413
        # And the requests are timed under /mcp (two refused without a token)
        for _ in range(2):
            assert client.post("/mcp", json=initialize).status_code == 401
    assert timed() - before == 2
    # And a HEAD still goes the application's way (GET's answer without its body)
    assert httpx.head(gateway.url, headers=agent).status_code != 500


def test_bad_upstreams_give_an_error_naming_the_server_and_the_gateway_stays_up(gateway: Gateway) -> None:
    async def story() -> None:
        async with agent(gateway.url, gateway.tokens["triage-bot"]) as triage:
            failures = {}
            for name, arguments in (("mcp.flaky.crash", {}), ("mcp.flaky.echo", {"message": "again"}),
                                    ("mcp.flaky.slow", {}), ("mcp.flaky.garbage", {}),
                                    ("mcp.flaky.big", {"size": 200_000}), ("mcp.gone.echo", {"message": "x"})):
                if name == "mcp.flaky.echo":
                    # the gateway is still up: the crashed server is started again for the next call
                    assert (await triage.session.call_tool(name, arguments)).content[0].text == "again"
                    continue
                refused = await triage.refused(name, arguments)
                assert refused.data["reason"] == "upstream_failed", (name, refused.data)
                failures[name] = refused.message
            assert "MCP server 'flaky'" in failures["mcp.flaky.crash"]
            assert "MCP server 'flaky' did not answer tools/call slow" in failures["mcp.flaky.slow"]
            assert "MCP server 'flaky'" in failures["mcp.flaky.garbage"]
            assert "TOOLCAT_GATEWAY_MAX_ANSWER_BYTES" in failures["mcp.flaky.big"]
            assert "MCP server 'gone'" in failures["mcp.gone.echo"]
            # a call the agent cancels is cancelled (and recorded), and the session goes on
            with anyio.move_on_after(1):
                await triage.session.call_tool("mcp.flaky.slow", {})
            assert (await triage.session.call_tool("mcp.flaky.echo", {"message": "on"})).content[0].text == "on"
            # the upstream credential is resolved for the server and never comes back
            secret = await triage.session.call_tool("mcp.flaky.has-secret", {})
            assert secret.content[0].text == "set" and SECRET not in secret.model_dump_json()
    anyio.run(story)
    rows = _eventually(gateway, 5, "SELECT asked, allowed, reason, upstream_error FROM gateway_decisions "
                                   "WHERE reason = 'upstream_failed'")
    assert {r["asked"] for r in rows} >= {"mcp.flaky.crash", "mcp.flaky.slow", "mcp.flaky.garbage",
                                          "mcp.flaky.big", "mcp.gone.echo"}
    assert all(r["upstream_error"] for r in rows)
    cancelled = _eventually(gateway, 1, "SELECT asked FROM gateway_decisions WHERE reason = 'cancelled'")
    assert [r["asked"] for r in cancelled] == ["mcp.flaky.slow"]
    everything = gateway.sql("SELECT * FROM gateway_decisions")
    assert SECRET not in json.dumps(everything, default=str)
    assert gateway.admin.get("/v1/health").status_code == 200


def _scraped(gateway: Gateway) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The server's /metrics: (sample name, its labels) → value, for the gateway's samples."""
    from prometheus_client.parser import text_string_to_metric_families
    answer = gateway.admin.get("/metrics")
    assert answer.status_code == 200, answer.text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.text) if family.name.startswith("toolcat_gateway")
            for sample in family.samples}


def test_operators_scrape_the_gateways_calls_latency_sessions_and_upstream_errors(gateway: Gateway) -> None:
    # Given what the server's /metrics said before
    before = _scraped(gateway)

    async def story() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        async with agent(gateway.url, gateway.tokens["triage-bot"]) as triage:
            # When an agent makes a call that is forwarded, one outside its set, and one whose server is down
            assert (await triage.session.call_tool("mcp.flaky.echo", {"message": "counted"})).content[0].text == \
                "counted"
            assert (await triage.refused("mcp.time.convert_time")).data["reason"] == "not_in_set"
            assert (await triage.refused("mcp.gone.echo", {"message": "x"})).data["reason"] == "upstream_failed"
            return _scraped(gateway)  # while its session is open
    during = anyio.run(story)

    def added(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return during.get(key, 0.0) - before.get(key, 0.0)
    # Then each decision is counted under its decision and reason code (a failed upstream call was allowed)
    assert added("toolcat_gateway_calls_total", decision="allowed", reason="in_set") == 1
    assert added("toolcat_gateway_calls_total", decision="denied", reason="not_in_set") == 1
    assert added("toolcat_gateway_calls_total", decision="allowed", reason="upstream_failed") == 1
    # and timed, the failure counted against the server that failed
    assert added("toolcat_gateway_call_duration_seconds_count", decision="allowed") == 2
    assert added("toolcat_gateway_call_duration_seconds_count", decision="denied") == 1
    assert added("toolcat_gateway_upstream_errors_total", server="gone") == 1
    assert added("toolcat_gateway_upstream_errors_total", server="flaky") == 0
    # and the agent's session is among those open
    assert during[("toolcat_gateway_open_sessions", ())] >= 1


def test_a_revoked_tokens_session_ends(gateway: Gateway) -> None:
    from infra.http.auth import revoke_token
    home = gateway.served.home
    token = create_token(home, "short-bot", ["call"], subject="agent:other")
    accept = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    with httpx.Client(base_url=gateway.served.url, headers=accept, timeout=30) as client:
        opened = client.post("/mcp", headers={"Authorization": f"Bearer {token}"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        # When the token is revoked (and one of the same name and subject made again)
        revoke_token(home, "short-bot")
        again = create_token(home, "short-bot", ["call"], subject="agent:other")

        def ended() -> bool:
            try:
                asked = client.post("/mcp", headers={"Authorization": f"Bearer {again}", "mcp-session-id": session},
                                    json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            except httpx.RemoteProtocolError:  # asked while the session was being ended: its stream was cut
                return False  # ask again: the next request must find the session gone
            return asked.status_code == 404
        # Then the session the revoked token opened is gone (not merely refused to the old token)
        anyio.run(until, ended, "the revoked token's session ended")


def test_the_stdio_gateway_relays_to_the_server_with_the_same_policy(gateway: Gateway, tmp_path: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from tests.support import TOOLCAT, toolcat_env
    token_file = tmp_path / "token"
    # (a token of its own: other stories decide for other-bot, and the log is written in batches)
    token_file.write_text(create_token(gateway.served.home, "desk-bot", ["call"], subject="agent:other") + "\n")
    params = StdioServerParameters(command=TOOLCAT, args=["gateway", "--stdio", "--token-file", str(token_file)],
                                   env=toolcat_env("desktop", {"TOOLCAT_HOME": str(gateway.served.home)}))

    async def story() -> None:
        # Given a desktop client that starts the gateway as its process
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await _desktop(session)
    anyio.run(story)
    # And its decisions are the server's, on record with the token's name
    rows = _eventually(gateway, 2, "SELECT asked, allowed FROM gateway_decisions WHERE token = 'desk-bot' "
                                   "ORDER BY decided_at")
    assert [(r["asked"], r["allowed"]) for r in rows] == [("mcp.time.convert_time", True),
                                                          ("mcp.flaky.echo", False)]


async def _desktop(session: Any) -> None:
    """A desktop client's session through `toolcat gateway --stdio` as agent:other."""
    from mcp.shared.exceptions import MCPError
    await session.initialize()
    # Then it sees its subject's set, and calls are decided as over HTTP
    assert [tool.name for tool in (await session.list_tools()).tools] == ["mcp.time.convert_time"]
    answer = await session.call_tool("mcp.time.convert_time", {"source_timezone": "UTC", "time": "12:00",
                                                              "target_timezone": "Europe/Paris"})
    assert "Europe/Paris" in answer.content[0].text
    with pytest.raises(MCPError) as refused:
        await session.call_tool("mcp.flaky.echo", {"message": "x"})
    assert refused.value.data["reason"] == "not_in_set"


def test_the_stdio_gateway_without_a_server_says_so(tmp_path: Path) -> None:
    from tests.support import call_toolcat, toolcat_env
    token_file = tmp_path / "token"
    token_file.write_text("tc_anything")
    run = call_toolcat("gateway", "--stdio", "--token-file", str(token_file),
                       env=toolcat_env("desktop", {"TOOLCAT_HOME": str(tmp_path / "home")}))
    assert run.code == 6 and "no toolcat serve runs" in run.error["message"]
    # and a missing or empty token file is refused before anything starts
    token_file.write_text("")
    empty = call_toolcat("gateway", "--stdio", "--token-file", str(token_file),
                         env=toolcat_env("desktop", {"TOOLCAT_HOME": str(tmp_path / "home")}))
    assert empty.code == 2 and "is empty" in empty.error["message"]


async def _told_of_a_new_grant(gateway: Gateway, stream: Any) -> None:
    """Grant agent:other mcp.flaky.echo; its `subscriptions/listen` stream says its list changed."""
    gateway.write("/v1/grant/add", {"subject": "agent:other", "target": "mcp.flaky.echo"})
    with anyio.fail_after(10):
        event = await stream.__anext__()
    assert type(event).__name__ == "ToolsListChanged"


def _take_back_the_new_grant(gateway: Gateway) -> None:
    """Revoke that grant if it was made: the module's other stories know agent:other with its one tool."""
    granted = gateway.sql("SELECT count(*) AS n FROM grants WHERE subject_kind = 'agent' AND subject = 'other' "
                          "AND target = 'mcp.flaky.echo'")
    if granted[0]["n"]:
        gateway.write("/v1/grant/revoke", {"subject": "agent:other", "target": "mcp.flaky.echo"})


def test_a_2026_client_without_sessions_hears_list_changed_on_its_listen_stream(gateway: Gateway) -> None:
    """The 2026-07-28 protocol has no session to notify: the SDK client opens `subscriptions/listen` and the
    gateway sends its subject's changes there; a revoked token ends the stream."""
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.client.subscriptions import SubscriptionLost, listen
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    from infra.http.auth import revoke_token
    home = gateway.served.home
    ok_token = create_token(home, "modern-bot", ["call"], subject="agent:other")

    async def story() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {ok_token}"}, timeout=30) as client, \
                streamable_http_client(gateway.url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            # Given a client that discovers the newest protocol and lists its tools
            await session.discover()
            assert session.protocol_version == MODERN_PROTOCOL_VERSIONS[-1]
            assert [t.name for t in (await session.list_tools()).tools] == ["mcp.time.convert_time"]
            async with listen(session, tools_list_changed=True) as stream:
                # When its subject gains a tool, then its stream says so, and the tool is listed
                await _told_of_a_new_grant(gateway, stream)
                assert "mcp.flaky.echo" in [t.name for t in (await session.list_tools()).tools]
                # When its token is revoked, the stream ends, and so do its calls
                revoke_token(home, "modern-bot")
                with anyio.fail_after(10), pytest.raises((SubscriptionLost, MCPError, StopAsyncIteration)):
                    await stream.__anext__()
            with pytest.raises(MCPError):
                await session.list_tools()
    try:
        anyio.run(story)
    finally:
        _take_back_the_new_grant(gateway)


async def _upstream_tools(command: str, *args: str) -> dict[str, Any]:
    """What a server lists itself, asked straight with the SDK's client over stdio (upstream name → tool)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    params = StdioServerParameters(command=command, args=list(args))
    with open(Path("/dev/null"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {t.name: t for t in (await session.list_tools()).tools}


def test_tools_list_carries_each_tools_title_output_schema_and_annotations(gateway: Gateway) -> None:
    """What the agent's SDK client lists is what the catalog holds of each tool: the title, output schema
    and hints its server listed at the sync, the catalog's risk tag for read-only and destructive; and the
    client validates the forwarded answers against those output schemas."""
    async def listing(session: Any) -> dict[str, Any]:
        from mcp_types import PaginatedRequestParams
        listed, cursor = {}, None
        while True:
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            listed.update({t.name: t for t in page.tools})
            if (cursor := page.next_cursor) is None:
                return listed

    def hints(tool: Any) -> dict[str, Any]:
        return tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}

    async def story() -> None:
        # Given mcp-server-time's own listing (an output schema and hints, no title)
        upstream = (await _upstream_tools(str(TIME), "--local-timezone=UTC"))["convert_time"]
        assert upstream.output_schema and upstream.title is None and hints(upstream)
        async with agent(gateway.url, gateway.tokens["other-bot"]) as other:
            # When an agent lists it through the gateway: the same output schema and hints
            tool = (await listing(other.session))["mcp.time.convert_time"]
            assert tool.output_schema == upstream.output_schema
            assert tool.title is None and hints(tool) == hints(upstream)
            # And when it calls it, the SDK client validates the structured answer against that schema
            answer = await other.session.call_tool("mcp.time.convert_time", {
                "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
            assert answer.structured_content["target"]["timezone"] == "Asia/Tokyo", answer
        async with agent(gateway.url, gateway.tokens["triage-bot"]) as triage:
            listed = await listing(triage.session)
            # A tool no MCP server backs has what the catalog holds of it: a description, no title nor output
            plugin = listed["acme.lookup"]
            assert (plugin.description, plugin.title, plugin.output_schema) == ("a plugin's tool", None, None)
            # The faulty server lists no hints: the catalog's risk tag (safe_update, MCP's default) says them
            assert hints(listed["mcp.flaky.echo"]) == {"read_only_hint": False, "destructive_hint": False}
            if not EVERYTHING.exists():
                return
            # npm's reference server: titles, and a tool with an output schema, as it lists them
            everything = await _upstream_tools(str(EVERYTHING))
            for name in ("echo", "get-structured-content"):
                mine, theirs = listed[f"mcp.everything.{name}"], everything[name]
                assert mine.title == theirs.title and mine.title, name
                assert mine.output_schema == theirs.output_schema, name
                assert hints(mine) == hints(theirs), name
            assert listed["mcp.everything.get-structured-content"].output_schema
            weather = await triage.session.call_tool("mcp.everything.get-structured-content",
                                                     {"location": "Chicago"})
            assert weather.structured_content["conditions"], weather
    anyio.run(story)


def test_a_2026_client_through_the_stdio_gateway_lists_calls_and_hears_list_changed(gateway: Gateway,
                                                                                    tmp_path: Path) -> None:
    """`toolcat gateway --stdio` relays a 2026-07-28 client too: its requests reach /mcp with the headers
    that version routes by, and its listen stream hears its subject's change."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.subscriptions import listen
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from tests.support import TOOLCAT, toolcat_env
    token_file = tmp_path / "token"
    token_file.write_text(create_token(gateway.served.home, "desk-2026", ["call"], subject="agent:other") + "\n")
    params = StdioServerParameters(command=TOOLCAT, args=["gateway", "--stdio", "--token-file", str(token_file)],
                                   env=toolcat_env("desktop", {"TOOLCAT_HOME": str(gateway.served.home)}))

    async def story() -> None:
        with (tmp_path / "stderr").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=30) as session:
                # Given a desktop client that discovers the newest protocol through the relay
                await session.discover()
                assert session.protocol_version == MODERN_PROTOCOL_VERSIONS[-1]
                assert [t.name for t in (await session.list_tools()).tools] == ["mcp.time.convert_time"]
                answer = await session.call_tool("mcp.time.convert_time", {
                    "source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"})
                assert answer.structured_content["target"]["timezone"] == "Europe/Paris", answer
                async with listen(session, tools_list_changed=True) as stream:
                    # When its subject gains a tool, then its stream says so
                    await _told_of_a_new_grant(gateway, stream)
                assert "mcp.flaky.echo" in [t.name for t in (await session.list_tools()).tools]
    try:
        anyio.run(story)
    finally:
        _take_back_the_new_grant(gateway)
