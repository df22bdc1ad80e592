"""The gateway's live updates over the server's read model, in process: the SDK's server and client over
memory streams, the sets of a real ServerState that follows the store (tests/serving.following_state).

A batch that names the subjects whose set it changed tells exactly their sessions; a batch that says "any
set may have changed" (what a Kafka-fed server says of each of its batches) tells only the sessions whose
set moved since they last listed it."""
from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from domain.base import Meta
from infra.freshness import Freshness
from infra.http.state import ServerState
from infra.mcp.gateway.decisions import DecisionLog
from infra.mcp.gateway.gateway import Caller, Gateway
from infra.mcp.gateway.read_model import ReadModelSets
from infra.settings import Settings
from tests.serving import following_state
from tests.support import run_in_process

META = Meta(actor="tester")
TOOL = ["tool", "register", "acme.lookup", "--source", "plugin", "--plugin", "acme", "--group", "extension",
        "--tier", "default", "--visibility", "public"]


@pytest.fixture
def state(sqlite_settings: Settings) -> Iterator[ServerState]:
    run_in_process(sqlite_settings.home, [TOOL, ["unit", "create", "u"], ["agent", "create", "a", "--unit", "u"],
                                          ["agent", "create", "b", "--unit", "u"],
                                          ["grant", "add", "agent:a", "acme.lookup"]])
    with following_state(sqlite_settings) as server:
        server.wait_for(server.store_head(), 30)
        yield server


def _gateway_of_agent_a(state: ServerState) -> tuple[ReadModelSets, Caller, Gateway]:
    """A gateway on the server's sets, told of each batch's changes, whose every session is agent:a's."""
    sets = ReadModelSets(lambda: state.read_model(Freshness(min_position=0)), lambda: state.position)
    state.on_changes.append(sets.changed)
    caller = Caller(subject="agent:a", token="a-bot", session_id="memory")
    return sets, caller, Gateway(sets, state.settings, DecisionLog(None), lambda ctx: caller)


@asynccontextmanager
async def _session(gateway: Gateway, caller: Caller, heard: list[str]) -> AsyncIterator[Any]:
    """The SDK's client session with `gateway` over memory streams, as `caller`, not initialized yet; the
    type of every message the server sends on its own goes to `heard`. The server stops at the end."""
    from mcp.client.session import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    async def handler(message: Any) -> None:
        heard.append(type(message).__name__)
    async with anyio.create_task_group() as group, create_client_server_memory_streams() as (client, server):
        await group.start(gateway.run)
        gateway.opened("memory", caller)
        group.start_soon(lambda: gateway.server.run(server[0], server[1], gateway.initialization_options()))
        async with ClientSession(client[0], client[1], message_handler=handler) as session:
            yield session
        group.cancel_scope.cancel()


def test_sessions_are_told_when_their_own_set_moved_and_only_then(state: ServerState) -> None:
    sets, caller, gateway = _gateway_of_agent_a(state)
    heard: list[str] = []

    async def story() -> None:
        async with _session(gateway, caller, heard) as session:
            await session.initialize()
            assert [t.name for t in (await session.list_tools()).tools] == ["acme.lookup"]
            # When a batch says any set may have changed, and agent:a's has not: nothing is said
            sets.changed(state.position, None)
            # When another agent's set changes: nothing is said to agent:a either
            written = state.catalog.add_grant("agent:b", "acme.lookup", META).position
            await anyio.to_thread.run_sync(state.wait_for, written, 30)
            # When agent:a's grant is revoked and reported as "any set may have changed"
            state.on_changes.remove(sets.changed)  # (as a Kafka-fed server reports its batches)
            written = state.catalog.revoke_grant("agent:a", "acme.lookup", META).position
            await anyio.to_thread.run_sync(state.wait_for, written, 30)
            sets.changed(written, None)
            # Then agent:a is told once, and its list is empty
            with anyio.fail_after(10):
                while "ToolListChangedNotification" not in heard:
                    await anyio.sleep(0.02)
            assert heard.count("ToolListChangedNotification") == 1  # notifications arrive in order
            assert (await session.list_tools()).tools == []
    anyio.run(story)


def test_mcp_answers_503_until_the_server_has_caught_up(sqlite_settings: Settings) -> None:
    import httpx

    from infra.http.auth import TokenBook, create_token
    from infra.http.mcp_endpoint import McpEndpoint
    from infra.http.metrics import ServerMetrics
    run_in_process(sqlite_settings.home, [["unit", "create", "u"], ["agent", "create", "a", "--unit", "u"]])
    token = create_token(sqlite_settings.home, "a-bot", ["call"], subject="agent:a")
    # Given a server's state made but not started (its first catch-up not done)
    state = ServerState(sqlite_settings, "store", ServerMetrics())
    endpoint = McpEndpoint(state, TokenBook(sqlite_settings.home, "local"))

    async def opening() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=endpoint), base_url="http://t") as client:
            return await client.post("/mcp", headers={"Authorization": f"Bearer {token}"}, json={
                "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    try:
        # Then a session cannot open yet: 503 with Retry-After, not an agent told its subject does not exist
        refused = anyio.run(opening)
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        assert refused.json()["code"] == "unavailable"
        # And once the state is caught up the endpoint takes sessions (the hooks the follower runs)
        for ready in state.on_caught_up:
            ready()
        assert endpoint.caught_up
    finally:
        state.catalog.close()
        state.con.close()


VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


async def _negotiated(session: Any, version: str) -> None:
    """The SDK client's session at `version`: the handshake's initialize asking for it, or (2026-07-28 and
    later, which have no handshake) the discover probe."""
    import mcp_types as types
    if version in MODERN_PROTOCOL_VERSIONS:
        await session.discover()
    else:
        result = await session.send_request(types.InitializeRequest(params=types.InitializeRequestParams(
            protocol_version=version, capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(name="story", version="1"))), types.InitializeResult)
        session.adopt(result)
        await session.send_notification(types.InitializedNotification())
    assert session.protocol_version == version


@pytest.mark.parametrize("version", VERSIONS)
def test_list_changed_reaches_a_client_at_every_protocol_version_the_sdk_speaks(state: ServerState,
                                                                              version: str) -> None:
    """Handshake versions hear it on their session; 2026-07-28 has no sessions and hears it on its
    `subscriptions/listen` stream, of its own subject's set alone."""
    from mcp.client.subscriptions import listen
    _, caller, gateway = _gateway_of_agent_a(state)
    heard: list[str] = []

    async def told(session: Any) -> None:
        """Another agent's set changes (nothing said), then agent:a's grant is revoked (it is told)."""
        written = state.catalog.add_grant("agent:b", "acme.lookup", META).position
        await anyio.to_thread.run_sync(state.wait_for, written, 30)
        written = state.catalog.revoke_grant("agent:a", "acme.lookup", META).position
        await anyio.to_thread.run_sync(state.wait_for, written, 30)

    async def story() -> None:
        async with _session(gateway, caller, heard) as session:
            # Given a client at `version` that lists its tools
            await _negotiated(session, version)
            assert [t.name for t in (await session.list_tools()).tools] == ["acme.lookup"]
            if version in MODERN_PROTOCOL_VERSIONS:
                async with listen(session, tools_list_changed=True) as stream:
                    assert stream.honored.tools_list_changed is True
                    # When its grant is revoked (after another agent's set changed)
                    await told(session)
                    # Then its stream says its list changed, once
                    with anyio.fail_after(10):
                        events = [await stream.__anext__()]
                    with anyio.move_on_after(0.5):
                        events.append(await stream.__anext__())
                    assert [type(e).__name__ for e in events] == ["ToolsListChanged"]
            else:
                await told(session)
                with anyio.fail_after(10):
                    while "ToolListChangedNotification" not in heard:
                        await anyio.sleep(0.02)
                await anyio.sleep(0.5)
                assert heard.count("ToolListChangedNotification") == 1
            # And its list is empty now
            assert (await session.list_tools()).tools == []
    anyio.run(story)


def test_the_directory_reads_again_only_what_a_batch_changed(state: ServerState) -> None:
    sets, _, _ = _gateway_of_agent_a(state)

    def after(written: int) -> Any:
        state.wait_for(written, 30)
        return sets.directory()
    # Given the directory as the gateway first read it
    first = sets.directory()
    lookup = first.tools["acme.lookup"]
    # When a grant is written: the catalog moved, no tool did, so the same descriptors are kept
    granted = after(state.catalog.add_grant("agent:b", "acme.lookup", META).position)
    assert granted.position > first.position and granted.tools["acme.lookup"] is lookup
    # When an alias is added: the names are read again, the descriptors still kept
    aliased = after(state.catalog.add_alias("acme.lookup", "acme.find", False, META).position)
    assert aliased.names["acme.find"].canonical_id == "acme.lookup" and aliased.tools["acme.lookup"] is lookup
    # When the tool is renamed: the descriptors are read again
    renamed = after(state.catalog.rename_tool("acme.lookup", "acme.search", META).position)
    assert "acme.lookup" not in renamed.tools and renamed.tools["acme.search"].tool_key == lookup.tool_key
