"""Shared fixtures: real SQLite and DuckDB files in a temporary home, a PostgreSQL server and a Kafka
broker (which ones: tests/services.py, said in the report header), and the installed `toolcat` command."""
from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.base import Meta
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from tests.browser import chromium
from tests.services import Choice, choose, postgres_problem, running_kafka, running_postgres
from tests.support import Run, call_toolcat, run_toolcat, toolcat_env


@functools.cache
def services() -> Choice:
    """The session's Kafka and PostgreSQL sources, chosen once (Docker is pinged at most once)."""
    return choose(Settings())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regenerate-expected", action="store_true",
                     help="rewrite the expected renderings under tests/e2e/expected/ instead of comparing")


def pytest_report_header(config: pytest.Config) -> list[str]:
    chosen = services()
    return [chosen.kafka.header, chosen.postgres.header]


@pytest.fixture
def browser() -> str:
    """Chromium, checked before any story is built: skipped only outside CI when it is missing."""
    return chromium()


@pytest.fixture
def meta() -> Meta:
    return Meta(actor="tester", reason="test")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def sqlite_settings(home: Path) -> Settings:
    return Settings(home=home, event_store_url=None)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of the session's PostgreSQL server; its tests skip when it is unreachable (fail with
    TOOLCAT_REQUIRE_POSTGRES=1)."""
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(running_postgres(services().postgres))
            problem = postgres_problem(url)
        except Exception as error:  # a container that would not start: the server is unreachable
            url, problem = "", f"{type(error).__name__}: {error}"
        if problem:
            if Settings().require_postgres:
                pytest.fail(f"PostgreSQL is required (TOOLCAT_REQUIRE_POSTGRES=1) but unreachable: {problem}")
            pytest.skip(f"PostgreSQL unreachable: {problem}")
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh schema on the session's PostgreSQL server, dropped afterwards."""
    import psycopg
    schema = f"toolcat_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{postgres_server}?schema={schema}"
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as con:
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
def opened() -> Iterator[Callable[[Callable[[Settings], Any], Settings], Any]]:
    """`opened(open_catalog, settings)`: what the opener opens for these settings, closed after the test."""
    with contextlib.ExitStack() as stack:
        yield lambda open_, settings: stack.enter_context(contextlib.closing(open_(settings)))


@pytest.fixture
def catalog(store_settings: Settings, opened: Callable[..., Any]) -> Any:
    return opened(open_catalog, store_settings)


@pytest.fixture
def read_model(store_settings: Settings, opened: Callable[..., Any]) -> Any:
    return opened(open_read_model, store_settings)


@pytest.fixture
def sqlite_catalog(sqlite_settings: Settings, opened: Callable[..., Any]) -> Any:
    return opened(open_catalog, sqlite_settings)


@pytest.fixture
def sqlite_read_model(sqlite_settings: Settings, opened: Callable[..., Any]) -> Any:
    return opened(open_read_model, sqlite_settings)


@pytest.fixture
def toolcat(home: Path) -> Any:
    """Run `toolcat` in this process, in a throw-away home, with the environment the installed command
    would get (`call_toolcat`); `--json` is added. `installed_toolcat` runs the console script itself."""
    def run(*args: str, json_output: bool = True, env: dict[str, str] | None = None,
            timeout: float = 60) -> Run:
        del timeout  # pytest-timeout bounds a command answered in this process
        full_env = toolcat_env("e2e", {"TOOLCAT_HOME": str(home)}, env)
        return call_toolcat(*args, env=full_env, json_output=json_output)
    return run


@pytest.fixture
def installed_toolcat(home: Path) -> Any:
    """Run the installed `toolcat` as a user would, in a subprocess and a throw-away home; `--json` is
    added. For the stories of the console script itself and of long-running commands."""
    def run(*args: str, json_output: bool = True, env: dict[str, str] | None = None,
            timeout: float = 60) -> Run:
        full_env = toolcat_env("e2e", {"TOOLCAT_HOME": str(home)}, env)
        return run_toolcat(*args, env=full_env, timeout=timeout, json_output=json_output)
    return run


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The session's Kafka-protocol broker (TOOLCAT_TEST_KAFKA_BOOTSTRAP, Kafka in Docker, or the bundled
    Tansu broker on a free loopback port with memory storage)."""
    with running_kafka(services().kafka, tmp_path_factory.mktemp("broker")) as bootstrap:
        yield bootstrap


@pytest.fixture
def kafka_client(request: pytest.FixtureRequest) -> str:
    """The Kafka client library of the test: kafka-python unless the test is parametrized with both
    (`on_both_kafka_clients`); confluent-kafka only where it is installed."""
    client = str(getattr(request, "param", "kafka-python"))
    if client == "confluent":
        pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed (the fast-kafka extra)")
    return client


@pytest.fixture
def kafka_settings(home: Path, kafka_bootstrap: str, kafka_client: str) -> Settings:
    """Settings with the session broker, the test's client library, and topic names unique to this test."""
    suffix = uuid.uuid4().hex[:10]
    return Settings(home=home, event_store_url=None, kafka_bootstrap=kafka_bootstrap, kafka_client=kafka_client,
                    kafka_events_topic=f"toolcat.events.{suffix}",
                    kafka_effective_topic=f"toolcat.effective-tools.{suffix}",
                    kafka_dlq_topic=f"toolcat.events.dlq.{suffix}",
                    kafka_group_id=f"toolcat-projector-{suffix}",
                    kafka_session_timeout_ms=6000, kafka_retry_seconds=5.0)
