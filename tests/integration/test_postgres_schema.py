"""The PostgreSQL schema named in TOOLCAT_EVENT_STORE_URL (`?schema=`): created when missing and the role
may; otherwise refused with the `CREATE SCHEMA …` statement an administrator runs, and nothing written."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import pytest

from tests.support import call_toolcat, ok, toolcat_env


def schema_exists(server: str, schema: str) -> bool:
    with psycopg.connect(server, autocommit=True) as con:
        return con.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchone() is not None


@pytest.fixture
def missing_schema(postgres_server: str) -> Iterator[str]:
    schema = f"toolcat_missing_{uuid.uuid4().hex[:8]}"
    yield schema
    with psycopg.connect(postgres_server, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture
def role_without_create(postgres_server: str) -> Iterator[str]:
    """A login role that may connect but not create schemas (PostgreSQL's default for a new role)."""
    role = f"toolcat_plain_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server, autocommit=True) as con:
        con.execute(f"CREATE ROLE {role} LOGIN")
    yield role
    with psycopg.connect(postgres_server, autocommit=True) as con:
        con.execute(f"DROP ROLE {role}")


def with_url(home: Path, url: str, *args: str) -> object:
    return call_toolcat(*args, env=toolcat_env("tester", {"TOOLCAT_HOME": str(home),
                                                          "TOOLCAT_EVENT_STORE_URL": url}))


def test_a_missing_schema_is_created_when_the_role_may(postgres_server: str, missing_schema: str,
                                                       home: Path) -> None:
    # given a URL naming a schema that does not exist yet
    assert not schema_exists(postgres_server, missing_schema)
    # when a first write is made, then the schema is created and the write stored in it
    written = ok(with_url(home, f"{postgres_server}?schema={missing_schema}", "unit", "create", "eng"))
    assert written["position"] >= 1
    assert schema_exists(postgres_server, missing_schema)


def test_a_role_that_may_not_create_it_is_told_the_statement_to_run(
        postgres_server: str, missing_schema: str, role_without_create: str, home: Path) -> None:
    parsed = urlparse(postgres_server)
    url = f"postgresql://{role_without_create}@{parsed.hostname}:{parsed.port or 5432}{parsed.path}" \
          f"?schema={missing_schema}"
    run = with_url(home, url, "unit", "create", "eng")
    assert run.code == 6, run.stderr  # type: ignore[attr-defined]
    error = run.error  # type: ignore[attr-defined]
    assert f'CREATE SCHEMA "{missing_schema}" AUTHORIZATION "{role_without_create}";' in error["message"]
    assert not schema_exists(postgres_server, missing_schema)
