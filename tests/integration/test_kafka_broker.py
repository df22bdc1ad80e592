"""The broker goes away: each test starts its own Tansu broker (memory storage) on a fixed free port,
stops it mid-relay and starts a new one on the same port, which has lost every topic. The relay never
advances past what the broker acknowledged, a one-shot relay gives up with exit 6, a following relay
waits and resumes by itself, and a consumer meeting the hole stops and says so; replaying from
position 1 rebuilds a topic that feeds an identical read model. Also `toolcat dev-broker` itself.
"""
from __future__ import annotations

import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.errors import Unavailable
from infra import kafka_clients
from infra.dev.broker import DevBroker, free_port
from infra.relay import Relay, RelayState
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.integration.kafka_support import (
    on_both_kafka_clients,
    assert_each_position_once,
    envelope_positions,
    events_on_topic,
    lines_before,
    popen_toolcat,
    port_open,
    read_model_facts,
    stop_process,
    store_fingerprint,
    store_head,
    toolcat,
    wait_for,
)
from tests.support import TOOLCAT, clean_environ, error_of, ok, run_in_process

BEFORE_SUBJECTS, SUBJECTS_ON = lines_before(("unit", "create"))


class Broker:
    """A dev broker on one fixed port that the test stops and starts again."""

    def __init__(self, log: Path) -> None:
        self.port, self.log = free_port(), log
        self.broker: DevBroker | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.broker = DevBroker(self.port, log=self.log).start()

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop(grace_seconds=0.5)  # a broker that goes away: no need to wait for its goodbye
            self.broker = None
        assert not port_open(self.port), f"the stopped broker still accepts connections on {self.port}"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    own = Broker(tmp_path / "tansu.log")
    own.start()
    try:
        yield own
    finally:
        own.stop()


@pytest.fixture
def settings(kafka_settings: Settings, broker: Broker) -> Settings:
    """The test's unique topics on the test's own broker, with a short retry budget."""
    # A stopped broker is noticed after 5 s without an acknowledgement instead of 30 (the stories wait for it)
    return kafka_settings.model_copy(update={"kafka_bootstrap": broker.bootstrap, "kafka_retry_seconds": 1.0,
                                             "kafka_ack_seconds": 5.0})


def state_file(settings: Settings) -> Path:
    return settings.home / f"relay-{settings.kafka_events_topic}.json"


# -- 2. the broker stops mid-relay and comes back empty ----------------------------------------------

@on_both_kafka_clients
def test_a_stopped_broker_stops_the_relay_and_a_lost_topic_is_detected_then_replayed(
        settings: Settings, broker: Broker, tmp_path: Path) -> None:
    home = settings.home
    run_in_process(home, BEFORE_SUBJECTS)
    acknowledged = store_head(settings)
    assert ok(toolcat("relay", home=home, settings=settings))["position"] == acknowledged
    events_on_topic(settings, range(1, acknowledged + 1))

    # Given the broker stops and the operator keeps writing
    broker.stop()
    run_in_process(home, SUBJECTS_ON)
    head = store_head(settings)
    assert head > acknowledged

    # When a one-shot relay runs, from the CLI and in-process, with a one-second retry budget
    cli = popen_toolcat("relay", "--json", home=home, settings=settings, stderr_path=tmp_path / "cli-relay.err")
    notes: list[str] = []
    catalog = open_catalog(settings)
    relayer = Relay(catalog, lambda: kafka_clients.producer(settings), settings.kafka_events_topic,
                    RelayState(state_file(settings)), notify=notes.append,
                    ack_seconds=settings.kafka_ack_seconds)
    try:
        # Then it gives up with Unavailable, having published nothing it could not confirm
        with pytest.raises(Unavailable) as raised:
            relayer.run(follow=False, retry_seconds=1.0)
    finally:
        relayer.close()
        catalog.close()
    assert raised.value.exit_code == 6
    assert f"position {acknowledged}" in raised.value.message
    assert any("unavailable" in note for note in notes), f"no retry was reported: {notes}"
    try:
        cli_code = cli.wait(timeout=150)
    except subprocess.TimeoutExpired:
        stop_process(cli)
        raise AssertionError("`toolcat relay` kept running for 150s against a stopped broker") from None
    cli_stderr = (tmp_path / "cli-relay.err").read_text()
    assert cli_code == 6, f"exit {cli_code}: {cli_stderr}"
    assert '"unavailable"' in cli_stderr
    assert RelayState(state_file(settings)).load()[0] == acknowledged, \
        "the relay position must not advance past what the broker acknowledged"

    # Given a new broker on the same port: the topic and everything on it is gone
    broker.start()
    store_built = store_fingerprint(settings, tmp_path / "store.duckdb")

    # When the relay resumes from its saved position
    resumed = ok(toolcat("relay", home=home, settings=settings))
    assert (resumed["position"], resumed["published"]) == (head, head - acknowledged)

    # Then a consumer building a fresh read model meets the hole and stops, naming the positions
    fresh = tmp_path / "fresh-a"
    for attempt in (1, 2):
        projected = toolcat("project", "--from", "kafka", "--idle-seconds", "2", home=fresh, settings=settings)
        assert projected.code == 5, f"attempt {attempt}: exit {projected.code}: {projected.stderr}"
        error = error_of(projected)
        assert error["code"] == "integrity"
        assert error["details"] == {"expected_prev_position": 0, "position": acknowledged + 1,
                                    "prev_position": acknowledged}
        assert str(acknowledged + 1) in error["message"] and str(acknowledged) in error["message"]
        facts = read_model_facts(fresh)
        assert facts["positions"] == [] and facts["position"] == 0, \
            f"attempt {attempt}: the consumer applied {facts['positions']} past a hole"

    # When the operator drops the damaged topic and replays the relay from position 1
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=[settings.kafka_bootstrap], request_timeout_ms=10_000)
    try:
        admin.delete_topics([settings.kafka_events_topic])
    finally:
        admin.close()
    replayed = ok(toolcat("relay", "--from-position", "1", home=home, settings=settings))
    assert (replayed["position"], replayed["published"]) == (head, head)

    # Then a fresh Kafka-fed read model equals the store-fed one
    rebuilt = tmp_path / "fresh-b"
    assert ok(toolcat("project", "--from", "kafka", "--idle-seconds", "2", home=rebuilt,
                      settings=settings))["position"] == head
    facts = read_model_facts(rebuilt)
    assert_each_position_once(facts, head)
    assert (head, facts["fingerprint"]) == store_built


@on_both_kafka_clients
def test_a_following_relay_waits_for_the_broker_and_resumes_by_itself(
        settings: Settings, broker: Broker, tmp_path: Path) -> None:
    home = settings.home
    run_in_process(home, BEFORE_SUBJECTS)
    acknowledged = store_head(settings)
    stderr_path = tmp_path / "relay.err"
    relay = popen_toolcat("relay", "--follow", home=home, settings=settings, stderr_path=stderr_path)
    try:
        events_on_topic(settings, range(1, acknowledged + 1))

        # Given the broker stops while the relay follows, and the operator keeps writing
        broker.stop()
        run_in_process(home, SUBJECTS_ON)
        head = store_head(settings)

        # Then the relay says the broker is unavailable on stderr, and keeps running
        wait_for(lambda: "the broker is unavailable" in stderr_path.read_text(), 120,
                 lambda: f"the following relay to report the stopped broker; stderr: {stderr_path.read_text()}")
        assert relay.poll() is None, f"the following relay exited ({relay.returncode}): {stderr_path.read_text()}"
        assert RelayState(state_file(settings)).load()[0] == acknowledged

        # When the broker comes back (empty), the relay resumes by itself
        broker.start()
        wait_for(lambda: "relaying resumed" in stderr_path.read_text(), 120,
                 lambda: f"the relay to resume; stderr: {stderr_path.read_text()}")
        messages = events_on_topic(settings, range(acknowledged + 1, head + 1), timeout=60)
        assert relay.poll() is None
        wait_for(lambda: RelayState(state_file(settings)).load()[0] == head, 30,
                 lambda: f"the relay to save position {head}, it is at {RelayState(state_file(settings)).load()}")
    finally:
        code = stop_process(relay)
    assert code == 0, f"a following relay stopped by SIGTERM exits 0: {stderr_path.read_text()}"
    assert sorted(envelope_positions(messages)) == list(range(acknowledged + 1, head + 1))
    # and it publishes as toolcat.events promises: one partition, so the total order holds
    partitions = {message.partition for message in messages}
    assert partitions == {0}, (
        f"after the broker came back the relay published into partitions {sorted(partitions)} of a topic "
        f"it did not create (the broker's auto-created default), so the total order of positions is lost")


# -- 8. `toolcat dev-broker` -------------------------------------------------------------------------

def _lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
    threading.Thread(target=pump, daemon=True).start()
    return lines


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_dev_broker_prints_its_address_and_stops_cleanly(stop_signal: Any, kafka_settings: Settings) -> None:
    port = free_port()
    env = clean_environ()
    process = subprocess.Popen([TOOLCAT, "dev-broker", "--port", str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = _lines(process)
        try:
            first = lines.get(timeout=30)
        except queue.Empty:
            raise AssertionError("`toolcat dev-broker` printed nothing within 30s") from None
        assert f"127.0.0.1:{port}" in first
        assert port_open(port)
        # it is a usable broker: a topic can be created and used on it
        usable = kafka_settings.model_copy(update={"kafka_bootstrap": f"127.0.0.1:{port}"})
        kafka_clients.ensure_topics(usable)

        process.send_signal(stop_signal)
        try:
            code = process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"`toolcat dev-broker` did not stop within 15s of {stop_signal.name}") from None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 0, f"exit {code}: {process.stderr.read() if process.stderr else ''}"
    wait_for(lambda: not port_open(port), 10, f"port {port} to close after the dev broker stopped")
