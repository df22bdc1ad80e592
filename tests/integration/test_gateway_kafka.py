"""`toolcat gateway --from kafka`: the gateway's sets fed by Kafka alone, with no DuckDB. The subjects' sets
come from the `toolcat.effective-tools` changelog, the descriptors, names and MCP server entries from the
events topic; both are read from their beginning, so every replica holds the same answers."""
from __future__ import annotations

import queue
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from domain.errors import Unavailable
from infra import kafka_clients
from infra.dev.bench_gateway import Endpoint, echo_upstream, listed as listed_over_mcp, mcp_client
from infra.mcp.gateway.kafka_sets import DirectoryFold, KafkaFeed, KafkaSets
from infra.mcp.gateway.source import listed, resolve
from infra.settings import Settings
from tests.integration.kafka_support import popen_toolcat, stop_process, toolcat, wait_for
from tests.support import ok

BOT, OTHER = "agent:bot", "agent:other"


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with echo_upstream(3) as url:
        yield url


def publish(settings: Settings) -> None:
    """What the catalog's pipeline does with Kafka on: its events to the events topic, and each changed
    subject's set to the changelog."""
    ok(toolcat("relay", home=settings.home, settings=settings))
    ok(toolcat("project", home=settings.home, settings=settings))


def given_a_catalog_with_an_echo_server(settings: Settings, url: str) -> None:
    for args in (["mcp", "server", "add", "echo", "--url", url], ["mcp", "sync", "echo", "--apply"],
                 ["unit", "create", "bots"], ["agent", "create", "bot", "--unit", "bots"],
                 ["agent", "create", "other", "--unit", "bots"], ["grant", "add", BOT, "mcp.echo.echo"],
                 ["grant", "add", OTHER, "mcp.echo.echo-00001"],
                 ["alias", "add", "mcp.echo.echo", "echo.old"], ["alias", "deprecate", "echo.old"]):
        ok(toolcat(*args, home=settings.home, settings=settings))
    publish(settings)


def fed(settings: Settings) -> tuple[KafkaSets, KafkaFeed]:
    sets = KafkaSets()
    feed = KafkaFeed(sets, kafka_clients.consumer(settings, None), kafka_clients.consumer(settings, None),
                     settings.kafka_events_topic, settings.kafka_effective_topic).start(60)
    return sets, feed


def test_a_kafka_fed_source_answers_each_subject_with_its_set_and_hears_a_revoke(
        kafka_settings: Settings, upstream: str) -> None:
    # given a catalog whose events and changelog are on Kafka
    given_a_catalog_with_an_echo_server(kafka_settings, upstream)
    # when a source reads both topics from their beginning
    sets, feed = fed(kafka_settings)
    heard: queue.Queue[tuple[int, Any]] = queue.Queue()
    sets.subscribe(lambda position, subjects: heard.put((position, subjects)))
    try:
        # then each subject gets exactly its enabled tools, with the catalog's descriptors
        directory = sets.directory()
        shown = listed(directory, sets.subject_set(BOT))
        assert [t.tool_id for t in shown] == ["mcp.echo.echo"]
        assert (shown[0].description, shown[0].backing_server, shown[0].upstream_name, shown[0].risk) == \
            ("answers its text argument back", "echo", "echo", "read_only")
        assert shown[0].input_schema == {"type": "object", "properties": {"text": {"type": "string"}},
                                         "required": ["text"]}
        assert [t.tool_id for t in listed(directory, sets.subject_set(OTHER))] == ["mcp.echo.echo-00001"]
        assert sets.scopes(BOT) == {BOT, "unit:bots"}
        # and a name resolves as it does in the server: forwarded under the upstream name, one subject
        # never reaching another's tool, a deprecated alias forwarded to its canonical tool
        assert resolve(directory, sets.subject_set(BOT), "mcp.echo.echo").outcome == "canonical"
        assert resolve(directory, sets.subject_set(BOT), "mcp.echo.echo-00001").outcome == "outside_set"
        assert resolve(directory, sets.subject_set(BOT), "echo.old").outcome == "deprecated"
        assert directory.servers["echo"].url == upstream

        # when the operator revokes the grant and the pipeline publishes it
        ok(toolcat("grant", "revoke", BOT, "mcp.echo.echo", home=kafka_settings.home, settings=kafka_settings))
        publish(kafka_settings)
        # then the source tells its listeners that agent:bot's set changed, and the tool is refused from then on
        told = _until_told(heard, BOT)
        assert sets.subject_set(BOT).position == told
        assert listed(sets.directory(), sets.subject_set(BOT)) == []
        refused = resolve(sets.directory(), sets.subject_set(BOT), "mcp.echo.echo")
        assert (refused.outcome, refused.reason) == ("outside_set", "not_in_set")
        assert [t.tool_id for t in listed(sets.directory(), sets.subject_set(OTHER))] == ["mcp.echo.echo-00001"]
    finally:
        feed.stop()


def test_two_replicas_read_from_the_beginning_hold_the_same_answers(kafka_settings: Settings, upstream: str) -> None:
    # given a catalog on Kafka
    given_a_catalog_with_an_echo_server(kafka_settings, upstream)
    # when two replicas start, one after the other
    (first, a), (second, b) = fed(kafka_settings), fed(kafka_settings)
    try:
        # then they are interchangeable: the same sets and directory
        for subject in (BOT, OTHER):
            assert first.subject_set(subject) == second.subject_set(subject)
        assert first.directory() == second.directory() and first.position == second.position > 0
    finally:
        a.stop()
        b.stop()


def test_messages_the_feed_cannot_read_fail_closed_and_say_where_they_are(kafka_settings: Settings,
                                                                         upstream: str) -> None:
    from starlette.testclient import TestClient

    from infra.http.auth import TokenBook
    from infra.http.kafka_gateway import KafkaMcpEndpoint, create_gateway_app
    # given a replica fed by the catalog's topics, serving each agent its set
    given_a_catalog_with_an_echo_server(kafka_settings, upstream)
    sets, feed = fed(kafka_settings)
    health = TestClient(create_gateway_app(KafkaMcpEndpoint(sets, kafka_settings, TokenBook(kafka_settings.home, "k")),
                                           sets)).get
    producer = kafka_clients.producer(kafka_settings)
    try:
        assert sets.subject_set(BOT).tools == ("mcp.echo.echo",) and health("/v1/health").json()["status"] == "ok"
        # when another producer writes something that is not a set under agent:bot's key
        producer.publish(kafka_settings.kafka_effective_topic, [(BOT.encode(), b"{not json")])
        wait_for(lambda: BOT in sets.unreadable, 30, lambda: "the feed to meet the message")
        # then agent:bot's set is refused, saying why, while the other agent keeps its own
        with pytest.raises(Unavailable, match=f"latest message for {BOT} could not be read"):
            sets.subject_set(BOT)
        assert sets.subject_set(OTHER).tools == ("mcp.echo.echo-00001",)
        answer = health("/v1/health")
        assert answer.status_code == 200 and answer.json()["status"] == "degraded"
        assert list(answer.json()["unreadable"]) == [BOT]
        # when the catalog publishes agent:bot's set again, it is served again
        ok(toolcat("grant", "add", BOT, "mcp.echo.echo-00001", home=kafka_settings.home, settings=kafka_settings))
        publish(kafka_settings)
        wait_for(lambda: BOT not in sets.unreadable, 30, lambda: "agent:bot's next set")
        assert sets.subject_set(BOT).tools == ("mcp.echo.echo", "mcp.echo.echo-00001")

        # when something that is not an event lands on the events topic
        producer.publish(kafka_settings.kafka_events_topic, [(None, b"[1, 2]")])
        wait_for(lambda: sets.failure is not None, 30, lambda: "the feed to stop")
        # then the feed stops, naming the message; health takes the replica out, and no set is served
        assert f"a message of {kafka_settings.kafka_events_topic} partition 0" in sets.failure
        answer = health("/v1/health")
        assert answer.status_code == 503 and answer.json()["failure"] == sets.failure
        with pytest.raises(Unavailable, match="no longer follows the catalog"):
            sets.subject_set(OTHER)
    finally:
        feed.stop()
        producer.close()


def test_an_agent_lists_and_calls_through_gateway_from_kafka_and_a_revoke_reaches_it(
        kafka_settings: Settings, upstream: str, tmp_path: Path) -> None:
    # given a catalog on Kafka, and `toolcat gateway --from kafka` in a home of its own holding nothing but
    # a token bound to agent:bot
    given_a_catalog_with_an_echo_server(kafka_settings, upstream)
    gateway_home = tmp_path / "gateway-home"
    token = ok(toolcat("token", "create", "bot", "--subject", BOT, "--scope", "call", home=gateway_home,
                       settings=kafka_settings))["token"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stderr = tmp_path / "gateway.stderr"
    gateway = popen_toolcat("gateway", "--from", "kafka", "--port", str(port), home=gateway_home,
                            settings=kafka_settings, stderr_path=stderr)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _healthy(base), 120, lambda: f"the gateway to answer; stderr: {stderr.read_text()[-2000:]}")
        seen = anyio.run(_agent_story, Endpoint(f"{base}/mcp", "mcp.echo.echo",
                                                {"Authorization": f"Bearer {token}"}), kafka_settings)
    finally:
        stop_process(gateway)
    # then the agent saw exactly its set, its call answered by the upstream
    assert seen["listed"] == ["mcp.echo.echo"]
    assert seen["answer"] == "hello" and seen["meta"]["canonical_id"] == "mcp.echo.echo"
    # and after the revoke: list_changed, an empty list, and the call refused naming the reason
    assert seen["after"] == [] and seen["refused"]["reason"] == "not_in_set"
    # and a request without a token is refused with a challenge
    assert seen["anonymous"] == (401, True)
    # and the gateway kept no read model and no store: its home holds the token file alone
    assert not list(gateway_home.glob("*.duckdb")) and not list(gateway_home.glob("*.sqlite")), \
        sorted(p.name for p in gateway_home.iterdir())


async def _agent_story(endpoint: Endpoint, settings: Settings) -> dict[str, Any]:
    changed = anyio.Event()
    seen: dict[str, Any] = {}
    async with mcp_client(endpoint, on_list_changed=changed.set) as session:
        seen["listed"] = [t.name for t in await listed_over_mcp(session)]
        answer = await session.call_tool("mcp.echo.echo", {"text": "hello"})
        seen["answer"], seen["meta"] = answer.content[0].text, (answer.meta or {}).get("toolcat", {})
        # when the operator revokes the grant and the pipeline publishes it
        ok(toolcat("grant", "revoke", BOT, "mcp.echo.echo", home=settings.home, settings=settings))
        publish(settings)
        with anyio.fail_after(60):
            await changed.wait()
        seen["after"] = [t.name for t in await listed_over_mcp(session)]
        with pytest.raises(MCPError) as refused:
            await session.call_tool("mcp.echo.echo", {"text": "again"})
        seen["refused"] = refused.value.error.data
    async with httpx.AsyncClient() as plain:
        answer = await plain.post(endpoint.url, json={})
        seen["anonymous"] = (answer.status_code, answer.headers.get("www-authenticate", "").startswith("Bearer"))
    return seen


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/v1/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _until_told(heard: queue.Queue[tuple[int, Any]], subject: str) -> int:
    while True:
        position, subjects = heard.get(timeout=60)
        if subjects is None or subject in subjects:
            return position


# -- the fold itself, without a broker --------------------------------------------------------------------

def envelope(position: int, type_: str, data: dict[str, Any], originator: str = "tool-1") -> dict[str, Any]:
    return {"position": position, "type": type_, "originator_id": originator, "data": data}


def test_the_fold_follows_a_rename_and_a_retirement_and_ignores_repeats() -> None:
    fold = DirectoryFold()
    # given a tool registered, renamed (its old name becomes a deprecated alias), then that alias retired
    fold.apply(envelope(1, "Tool.Registered", {"tool_id": "memory.find", "spec": {
        "description": "find", "visibility": "public", "source": "builtin"}}))
    fold.apply(envelope(2, "Tool.Renamed", {"old_id": "memory.find", "new_id": "memory.search"}))
    assert fold.directory().names["memory.find"].lifecycle == "deprecated"
    fold.apply(envelope(3, "Tool.AliasRetired", {"alias": "memory.find", "release": "1.3.0"}))
    # when an event at a position already folded comes again (at-least-once delivery)
    assert fold.apply(envelope(2, "Tool.Renamed", {"old_id": "memory.search", "new_id": "x"})) is False
    # then the directory holds the canonical tool and the retired alias naming it
    directory = fold.directory()
    assert set(directory.tools) == {"memory.search"}
    assert (directory.names["memory.find"].lifecycle, directory.names["memory.find"].canonical_id) == \
        ("retired", "memory.search")
    assert directory.position == 3


def test_a_set_ahead_of_the_directory_waits_for_it() -> None:
    # given a source whose directory has reached position 1 only
    import json
    sets = KafkaSets()
    told: list[Any] = []
    sets.subscribe(lambda position, subjects: told.append((position, subjects)))
    sets.feed_events([json.dumps(envelope(1, "Agent.Created", {"name": "bot", "unit": "bots",
                                                               "state_mode": "stateful"}, "agent-1")).encode()])
    told.clear()
    # when the changelog brings agent:bot's set at position 2, before the tool registered at 2 arrived
    document = {"schema": "toolcat.effective/v1", "subject": BOT, "position": 2,
                "tools": [{"tool_id": "t", "exposure": "enabled"}]}
    sets.feed_changelog([(BOT.encode(), json.dumps(document).encode())])
    # then the set is held back (the subject still has its old, empty set) and nobody is told yet
    assert sets.subject_set(BOT).tools == () and told == []
    # when the events reach position 2, the set is released and its subject's sessions are told
    sets.feed_events([json.dumps(envelope(2, "Tool.Registered", {"tool_id": "t", "spec": {}})).encode()])
    assert sets.subject_set(BOT).tools == ("t",)
    assert told and told[-1][0] == 2


def test_a_set_that_only_takes_tools_away_is_applied_without_waiting_for_the_directory() -> None:
    # given agent:bot served tools t and u, the directory at position 3
    import json
    sets = KafkaSets()
    sets.feed_events([json.dumps(event).encode() for event in (
        envelope(1, "Agent.Created", {"name": "bot", "unit": "bots", "state_mode": "stateful"}, "agent-1"),
        envelope(2, "Tool.Registered", {"tool_id": "t", "spec": {}}, "tool-1"),
        envelope(3, "Tool.Registered", {"tool_id": "u", "spec": {}}, "tool-2"))])

    def snapshot(position: int, tools: list[str]) -> None:
        document = {"schema": "toolcat.effective/v1", "subject": BOT, "position": position,
                    "tools": [{"tool_id": tool, "exposure": "enabled"} for tool in tools]}
        sets.feed_changelog([(BOT.encode(), json.dumps(document).encode())])
    snapshot(3, ["t", "u"])
    told: list[Any] = []
    sets.subscribe(lambda position, subjects: told.append(subjects))
    # when the changelog brings a revoke of u at position 9, before the relay brought its event
    snapshot(9, ["t"])
    # then it applies at once, and the subject's sessions are told
    assert sets.subject_set(BOT).tools == ("t",) and told == [[BOT]]
    # but a set that adds a tool still waits for the directory to reach its position
    snapshot(10, ["t", "u"])
    assert sets.subject_set(BOT).tools == ("t",) and told == [[BOT]]


def test_the_fold_gives_each_synced_tool_what_its_server_listed() -> None:
    """The descriptors from Kafka carry a synced tool's title, output schema and hints as the read model's
    do (McpServer.Synced version 2), and none for a sync of version 1, which recorded none."""
    fold = DirectoryFold()
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    for position, tool_id in ((1, "mcp.echo.echo"), (2, "mcp.echo.old")):
        fold.apply(envelope(position, "Tool.Registered", {"tool_id": tool_id, "spec": {
            "visibility": "public", "source": "mcp", "risk": "read_only"}}, f"tool-{position}"))
    fold.apply(envelope(3, "McpServer.Synced", {"name": "echo", "gone": [], "tools": [
        {"tool_id": "mcp.echo.echo", "upstream_name": "echo", "title": "Echo", "output_schema": schema,
         "annotations": {"idempotentHint": True, "readOnlyHint": False}},
        {"tool_id": "mcp.echo.old", "upstream_name": "old"}]}, "server-1"))  # as version 1 stored it
    tools = fold.directory().tools
    echo, old = tools["mcp.echo.echo"], tools["mcp.echo.old"]
    assert (echo.title, echo.output_schema) == ("Echo", schema)
    # the catalog's risk tag (read_only) says the read-only hint; the server's other hints stay
    assert echo.annotations() == {"idempotentHint": True, "readOnlyHint": True}
    assert (old.title, old.output_schema, old.hints, old.annotations()) == (None, None, None, {"readOnlyHint": True})
