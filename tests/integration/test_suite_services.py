"""Where the suite's Kafka broker and PostgreSQL server come from (tests/services.py), checked without a
Docker daemon: one that is not there, or does not answer, means the bundled broker and the local server;
TOOLCAT_TEST_KAFKA_BOOTSTRAP and TOOLCAT_TEST_POSTGRES_URL win over everything."""
from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from testcontainers.core.config import testcontainers_config

from infra.settings import Settings
from tests.services import choose, docker_problem, running_kafka, running_postgres
from tests.support import toolcat_environ

LOCAL = Settings.model_fields["test_postgres_url"].default


@pytest.fixture
def no_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No TOOLCAT_ setting, and no testcontainers host override (~/.testcontainers.properties) either:
    DOCKER_HOST alone says where the daemon is."""
    monkeypatch.setattr(testcontainers_config, "tc_properties", {})
    with toolcat_environ("tester"):
        yield


class Probe:
    """A Docker probe that says a daemon answers, and counts how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> str | None:
        self.calls += 1
        return None


def test_without_a_daemon_at_docker_host_the_suite_uses_the_bundled_broker_and_the_local_server(
        no_settings: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'docker.sock'}")
    assert docker_problem() is not None

    chosen = choose(Settings())

    assert (chosen.kafka.kind, chosen.kafka.header) == ("bundled", "kafka: bundled Tansu broker (no Docker daemon)")
    assert (chosen.postgres.kind, chosen.postgres.address) == ("local", LOCAL)
    assert chosen.postgres.header == f"postgres: local server at {LOCAL} (no Docker daemon)"


def test_a_docker_host_that_never_answers_is_given_up_on(no_settings: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{silent.getsockname()[1]}")

        problem = docker_problem(timeout=0.5)

        assert problem is not None and "timed out" in problem.lower(), problem
        assert choose(Settings(), lambda: problem).kafka.kind == "bundled"


def test_with_a_daemon_both_come_from_docker_and_docker_is_asked_once(no_settings: None) -> None:
    probe = Probe()

    chosen = choose(Settings(), probe)

    assert (chosen.kafka.kind, chosen.postgres.kind) == ("docker", "docker")
    assert chosen.kafka.header.startswith("kafka: Apache Kafka in Docker")
    assert chosen.postgres.header.startswith("postgres: PostgreSQL in Docker")
    assert probe.calls == 1


def test_the_environment_overrides_win_over_a_docker_daemon(no_settings: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCAT_TEST_KAFKA_BOOTSTRAP", "kafka.example:9092")
    monkeypatch.setenv("TOOLCAT_TEST_POSTGRES_URL", "postgresql://app:hunter2@pg.example:5432/test")
    probe = Probe()

    chosen = choose(Settings(), probe)

    assert (chosen.kafka.kind, chosen.kafka.address) == ("configured", "kafka.example:9092")
    assert chosen.kafka.header == "kafka: kafka.example:9092 (TOOLCAT_TEST_KAFKA_BOOTSTRAP)"
    assert (chosen.postgres.kind, chosen.postgres.address) == ("configured",
                                                               "postgresql://app:hunter2@pg.example:5432/test")
    # the report header never shows a password
    assert chosen.postgres.header == "postgres: postgresql://app:***@pg.example:5432/test (TOOLCAT_TEST_POSTGRES_URL)"
    assert probe.calls == 0


def test_the_kafka_override_alone_leaves_postgresql_to_docker(no_settings: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCAT_TEST_KAFKA_BOOTSTRAP", "kafka.example:9092")

    chosen = choose(Settings(), Probe())

    assert (chosen.kafka.kind, chosen.postgres.kind) == ("configured", "docker")


def test_a_configured_broker_and_the_local_server_are_used_as_they_are(no_settings: None, tmp_path: Path) -> None:
    chosen = choose(Settings(test_kafka_bootstrap="kafka.example:9092"), lambda: "no daemon")

    with running_kafka(chosen.kafka, tmp_path) as bootstrap, running_postgres(chosen.postgres) as url:
        assert (bootstrap, url) == ("kafka.example:9092", LOCAL)
    assert list(tmp_path.iterdir()) == []  # no broker was started, so no broker log was written
