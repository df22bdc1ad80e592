"""Shared pieces of the Kafka suite: the bundled catalog story split at a command, read models built
from the store and from Kafka, reading a topic back, and running `toolcat` subprocesses with the test's
Kafka settings.

Every wait here is bounded and fails with a message that says what was awaited and what was seen.
Caught-up is decided by event positions, never by Kafka offsets (Tansu's `end_offsets` can be low).
"""
from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from consumers.kafka_io import partitions_of
from infra import kafka_clients
from infra.relay import Relay, RelayState
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.fingerprint import fingerprint
from projections.projector import Projector
from tests.support import SCRIPT, TOOLCAT, Run, call_toolcat, run_in_process, toolcat_env

ACTOR = "kafka-tests"

KAFKA_CLIENTS = ("kafka-python", "confluent")
# The Kafka suite runs on the default client; the tests with this mark run on confluent-kafka as well: a
# subset covering the relay, the streaming projector (a crash and a dead letter), the changelog, `watch`
# and a stopped broker, so the suite does not pay twice for what does not depend on the client library.
on_both_kafka_clients = pytest.mark.parametrize("kafka_client", KAFKA_CLIENTS, indirect=True)


def lines_before(first_words: tuple[str, ...]) -> tuple[list[list[str]], list[list[str]]]:
    """The story split before the first command that starts with `first_words` (e.g. ("unit", "create"))."""
    for index, args in enumerate(SCRIPT):
        if tuple(args[:len(first_words)]) == first_words:
            return SCRIPT[:index], SCRIPT[index:]
    raise AssertionError(f"the example story has no command starting with {' '.join(first_words)}")


def kafka_env(settings: Settings) -> dict[str, str]:
    """The environment that gives a `toolcat` subprocess the same Kafka settings."""
    return {"TOOLCAT_KAFKA_BOOTSTRAP": settings.kafka_bootstrap or "",
            "TOOLCAT_KAFKA_CLIENT": settings.kafka_client,
            "TOOLCAT_KAFKA_EVENTS_TOPIC": settings.kafka_events_topic,
            "TOOLCAT_KAFKA_EFFECTIVE_TOPIC": settings.kafka_effective_topic,
            "TOOLCAT_KAFKA_DLQ_TOPIC": settings.kafka_dlq_topic,
            "TOOLCAT_KAFKA_GROUP_ID": settings.kafka_group_id,
            "TOOLCAT_KAFKA_SESSION_TIMEOUT_MS": str(settings.kafka_session_timeout_ms),
            "TOOLCAT_KAFKA_RETRY_SECONDS": str(settings.kafka_retry_seconds),
            "TOOLCAT_KAFKA_ACK_SECONDS": str(settings.kafka_ack_seconds)}


def store_head(settings: Settings) -> int:
    catalog = open_catalog(settings)
    try:
        return catalog.recorder.max_notification_id() or 0
    finally:
        catalog.close()


def store_fingerprint(settings: Settings, path: Path) -> tuple[int, str]:
    """(head position, fingerprint) of a read model projected from the store into its own file."""
    catalog = open_catalog(settings)
    con = open_read_model(settings, path)
    try:
        tracking = catch_up(catalog, Projector(con))
        return tracking.position, fingerprint(con)
    finally:
        con.close()
        catalog.close()


def read_model_facts(home: Path) -> dict[str, Any]:
    """What a home's read model holds: tracking, event positions (with repeats), offsets, fingerprint.
    A home without a read model file holds nothing."""
    path = home / "catalog.duckdb"
    if not path.exists():
        return {"position": 0, "events": 0, "positions": [], "offsets": {}, "fingerprint": None}
    con = duckdb.connect(str(path), read_only=True)
    try:
        tracking = con.execute("SELECT position, events FROM tracking WHERE projection = 'catalog'").fetchall()
        positions = [row[0] for row in con.execute("SELECT position FROM events ORDER BY position").fetchall()]
        offsets = {(t, p): o for t, p, o in con.execute(
            "SELECT topic, partition, next_offset FROM kafka_offsets").fetchall()}
        return {"position": tracking[0][0] if tracking else 0, "events": tracking[0][1] if tracking else 0,
                "positions": positions, "offsets": offsets, "fingerprint": fingerprint(con)}
    finally:
        con.close()


def assert_each_position_once(facts: dict[str, Any], head: int) -> None:
    positions = facts["positions"]
    repeated = sorted({p for p in positions if positions.count(p) > 1})
    assert not repeated, f"the read model applied positions {repeated} more than once"
    missing = sorted(set(range(1, head + 1)) - set(positions))
    assert not missing, f"the read model lacks positions {missing[:20]} (head {head})"
    assert facts["position"] == head and facts["events"] == head, \
        f"tracking says position {facts['position']} with {facts['events']} events; the store's head is {head}"


def toolcat(*args: str, home: Path, settings: Settings | None = None, env: dict[str, str] | None = None,
            timeout: float = 120, json_output: bool = True) -> Run:
    """`toolcat ARGS --home HOME [--json]` in this process (`call_toolcat`), with the Kafka settings of
    `settings`; `popen_toolcat` runs the ones that follow until stopped."""
    del timeout  # pytest-timeout bounds a command answered in this process
    full_env = toolcat_env(ACTOR, kafka_env(settings) if settings is not None else None, env)
    return call_toolcat(*args, "--home", str(home), env=full_env, json_output=json_output)


def popen_toolcat(*args: str, home: Path, settings: Settings, stderr_path: Path,
                  env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start `toolcat ARGS --home HOME` in the background; its stderr goes to a file to read while it runs."""
    return subprocess.Popen([TOOLCAT, *args, "--home", str(home)], stdout=subprocess.PIPE,
                            stderr=open(stderr_path, "w"), text=True,  # noqa: SIM115
                            env=toolcat_env(ACTOR, kafka_env(settings), env))


def stop_process(process: subprocess.Popen[Any], timeout: float = 30) -> int:
    """SIGTERM, then a bounded wait; kills (and fails) if it does not stop."""
    if process.poll() is None:
        process.terminate()
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise AssertionError(f"process {process.args} ignored SIGTERM for {timeout}s") from None
    return process.returncode


def wait_for(condition: Callable[[], Any], timeout: float, what: Callable[[], str] | str,
             interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            described = what() if callable(what) else what
            raise AssertionError(f"waited {timeout:.0f}s for {described}")
        time.sleep(interval)


# -- Kafka ------------------------------------------------------------------------------------------

def relay(settings: Settings, state_path: Path, page_size: int = 2000,
          notes: list[str] | None = None) -> tuple[Relay, Any]:
    """An in-process relay of the settings' store to their events topic, with its own state file."""
    kafka_clients.ensure_topics(settings)
    catalog = open_catalog(settings)
    relay = Relay(catalog, lambda: kafka_clients.producer(settings), settings.kafka_events_topic,
                  RelayState(state_path), page_size=page_size,
                  notify=(notes.append if notes is not None else lambda _m: None),
                  ack_seconds=settings.kafka_ack_seconds)
    return relay, catalog


def relay_all(settings: Settings, state_path: Path) -> int:
    """Relay everything after the state's position; returns how many were published."""
    relayer, catalog = relay(settings, state_path)
    try:
        return relayer.run(follow=False, retry_seconds=settings.kafka_retry_seconds)
    finally:
        relayer.close()
        catalog.close()


def read_topic(settings: Settings, topic: str, done: Callable[[list[Any]], bool], timeout: float = 30,
               what: str = "") -> list[Any]:
    """Every message of `topic` from the beginning, read until `done(messages)` holds (bounded)."""
    consumer = kafka_clients.consumer(settings, None)
    try:
        deadline = time.monotonic() + timeout
        partitions = partitions_of(consumer, topic, timeout)
        if not partitions:
            raise AssertionError(f"topic {topic} has no partitions after {timeout:.0f}s")
        consumer.assign(topic, partitions, {})
        messages: list[Any] = []
        while not done(messages):
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:.0f}s on topic {topic} for {what or 'messages'}; "
                                     f"read {len(messages)}: {describe(messages)}")
            messages.extend(consumer.poll(300))
        return messages
    finally:
        consumer.close()


def envelope_positions(messages: list[Any]) -> list[int]:
    positions = []
    for message in messages:
        try:
            positions.append(json.loads(message.value)["position"])
        except (ValueError, KeyError, TypeError):
            continue
    return positions


def describe(messages: list[Any]) -> str:
    positions = envelope_positions(messages)
    if positions:
        return f"positions {positions[:10]}…{positions[-10:]}" if len(positions) > 20 else f"positions {positions}"
    return f"{[m.value[:60] for m in messages[:5]]}"


def events_on_topic(settings: Settings, positions: Iterable[int], timeout: float = 30) -> list[Any]:
    """The events topic read until it holds every one of `positions`."""
    wanted = set(positions)
    return read_topic(settings, settings.kafka_events_topic,
                      lambda messages: wanted <= set(envelope_positions(messages)), timeout,
                      f"positions {min(wanted)}..{max(wanted)}" if wanted else "nothing")


def produce_raw(settings: Settings, topic: str, value: bytes, key: bytes | None = None) -> None:
    producer = kafka_clients.producer(settings)
    try:
        assert producer.publish(topic, [(key, value)]) == 1
    finally:
        producer.close(timeout=5)


def a_bad_message_between_story_halves(settings: Settings, state_path: Path) -> tuple[int, int]:
    """The example story's lines before its first `unit create` relayed to the events topic, then a message
    that is not an envelope, then the rest relayed: (the last position before the bad message, the head)."""
    before, after = lines_before(("unit", "create"))
    run_in_process(settings.home, before)
    valid = store_head(settings)
    relay_all(settings, state_path)
    events_on_topic(settings, range(1, valid + 1))
    produce_raw(settings, settings.kafka_events_topic, b"not json", key=b"intruder")
    run_in_process(settings.home, after)
    head = store_head(settings)
    relay_all(settings, state_path)
    events_on_topic(settings, range(1, head + 1))
    return valid, head


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.3)
        return sock.connect_ex(("127.0.0.1", port)) == 0
