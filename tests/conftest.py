"""Shared fixtures: real SQLite and DuckDB files in a temporary home, the local PostgreSQL server,
and the installed `toolcat` command."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domain.base import Meta
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model

TOOLCAT = str(Path(sys.executable).with_name("toolcat"))


@pytest.fixture
def meta() -> Meta:
    return Meta(actor="tester", reason="test")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def sqlite_settings(home: Path) -> Settings:
    return Settings(home=home, event_store_url=None)


def _postgres_reachable(url: str) -> str | None:
    import psycopg
    try:
        with psycopg.connect(url, connect_timeout=3):
            return None
    except Exception as error:  # any failure to connect means "not here"
        return str(error)


@pytest.fixture
def postgres_url() -> Any:
    """A fresh schema on the local PostgreSQL server, dropped afterwards."""
    import psycopg
    settings = Settings()
    problem = _postgres_reachable(settings.test_postgres_url)
    if problem:
        if settings.require_postgres:
            pytest.fail(f"PostgreSQL is required (TOOLCAT_REQUIRE_POSTGRES=1) but unreachable: {problem}")
        pytest.skip(f"PostgreSQL unreachable: {problem}")
    schema = f"toolcat_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(settings.test_postgres_url, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{settings.test_postgres_url}?schema={schema}"
    finally:
        with psycopg.connect(settings.test_postgres_url, autocommit=True) as con:
            con.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def postgres_settings(home: Path, postgres_url: str) -> Settings:
    return Settings(home=home, event_store_url=postgres_url)


@pytest.fixture(params=["sqlite", "postgres"])
def store_settings(request: pytest.FixtureRequest, home: Path) -> Settings:
    """Each test using it runs once on the SQLite file and once on PostgreSQL."""
    if request.param == "sqlite":
        return Settings(home=home, event_store_url=None)
    return Settings(home=home, event_store_url=request.getfixturevalue("postgres_url"))


@pytest.fixture
def catalog(store_settings: Settings) -> Any:
    app = open_catalog(store_settings)
    yield app
    app.close()


@pytest.fixture
def read_model(store_settings: Settings) -> Any:
    con = open_read_model(store_settings)
    yield con
    con.close()


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error(self) -> dict[str, Any]:
        return json.loads(self.stderr)["error"]


@pytest.fixture
def toolcat(home: Path) -> Any:
    """Run the installed `toolcat` as a user would, in a throw-away home; `--json` is added."""
    def run(*args: str, json_output: bool = True, env: dict[str, str] | None = None,
            timeout: float = 60) -> Run:
        import os
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCAT_")}
        full_env.update({"TOOLCAT_HOME": str(home), "TOOLCAT_ACTOR": "e2e"}, **(env or {}))
        command = [TOOLCAT, *args] + (["--json"] if json_output else [])
        done = subprocess.run(command, capture_output=True, text=True, env=full_env, timeout=timeout)
        return Run(done.returncode, done.stdout, done.stderr)
    return run


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A Kafka-protocol broker for the session: TOOLCAT_TEST_KAFKA_BOOTSTRAP if set, else the bundled
    Tansu broker on a free loopback port (memory storage)."""
    configured = Settings().test_kafka_bootstrap
    if configured:
        yield configured
        return
    from infra.broker import DevBroker
    broker = DevBroker(log=tmp_path_factory.mktemp("broker") / "tansu.log").start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


@pytest.fixture
def kafka_settings(home: Path, kafka_bootstrap: str) -> Settings:
    """Settings with the session broker and topic names unique to this test."""
    suffix = uuid.uuid4().hex[:10]
    return Settings(home=home, event_store_url=None, kafka_bootstrap=kafka_bootstrap,
                    kafka_events_topic=f"toolcat.events.{suffix}",
                    kafka_effective_topic=f"toolcat.effective-tools.{suffix}",
                    kafka_dlq_topic=f"toolcat.events.dlq.{suffix}",
                    kafka_group_id=f"toolcat-projector-{suffix}",
                    kafka_session_timeout_ms=6000, kafka_retry_seconds=5.0)


def kafka_env(settings: Settings) -> dict[str, str]:
    """The environment that gives a `toolcat` subprocess the same Kafka settings."""
    return {"TOOLCAT_KAFKA_BOOTSTRAP": settings.kafka_bootstrap or "",
            "TOOLCAT_KAFKA_EVENTS_TOPIC": settings.kafka_events_topic,
            "TOOLCAT_KAFKA_EFFECTIVE_TOPIC": settings.kafka_effective_topic,
            "TOOLCAT_KAFKA_DLQ_TOPIC": settings.kafka_dlq_topic,
            "TOOLCAT_KAFKA_GROUP_ID": settings.kafka_group_id,
            "TOOLCAT_KAFKA_SESSION_TIMEOUT_MS": str(settings.kafka_session_timeout_ms),
            "TOOLCAT_KAFKA_RETRY_SECONDS": str(settings.kafka_retry_seconds)}
