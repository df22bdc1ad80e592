"""Builds the application, the event store and the DuckDB connection from settings, when asked."""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, unquote, urlparse

import duckdb

from domain.errors import ToolcatError, Unavailable, UsageError
from infra.settings import Settings, scrub, url_passwords
from projections.connection import connect
from projections.migrate import migrate

if TYPE_CHECKING:  # the domain is imported by what opens the catalog, not by every read (store_head)
    from eventsourcing.application import Application

    from domain.application import AggregateReads
    from domain.catalog import Catalog

Opened = TypeVar("Opened")


def store_env(settings: Settings) -> dict[str, str]:
    """eventsourcing's configuration for the event store named by the settings."""
    if not settings.event_store_url:
        settings.home.mkdir(parents=True, exist_ok=True)
        return {"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": str(settings.event_store_path),
                "SQLITE_LOCK_TIMEOUT": str(settings.sqlite_lock_timeout_seconds),
                "CREATE_TABLE": "y"}
    return postgres_env(settings.event_store_url)


def postgres_env(url: str) -> dict[str, str]:
    parsed = urlparse(url)
    try:
        port = parsed.port or 5432
    except ValueError:  # a port that is not a number from 0 to 65535
        port = None
    if parsed.scheme not in ("postgresql", "postgres") or not parsed.path.strip("/") or port is None:
        shown = scrub(url, url_passwords(url))  # a malformed URL may still hold a password
        raise UsageError("TOOLCAT_EVENT_STORE_URL must look like postgresql://user:password@host:5432/dbname, "
                         f"got {shown!r}")
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres",
           "POSTGRES_DBNAME": parsed.path.strip("/"),
           "POSTGRES_HOST": parsed.hostname or "127.0.0.1",
           "POSTGRES_PORT": str(port),
           "POSTGRES_USER": unquote(parsed.username or "postgres"),
           "POSTGRES_PASSWORD": unquote(parsed.password or ""),
           "POSTGRES_CONNECT_TIMEOUT": "5",
           "CREATE_TABLE": "y"}
    schema = parse_qs(parsed.query).get("schema")
    if schema:
        env["POSTGRES_SCHEMA"] = schema[0]
    return env


_SCHEMAS_SEEN: set[tuple[str, ...]] = set()  # (host, port, db, schema) found or created by this process


def ensure_schema(env: dict[str, str]) -> None:
    """The PostgreSQL schema named in TOOLCAT_EVENT_STORE_URL (`?schema=`), created when missing and the role
    may; otherwise a clear error with the statement an administrator runs. eventsourcing creates its tables
    but not the schema they live in. A server that cannot be reached is left to the store's own opening
    (retried, then `unavailable`)."""
    schema = env.get("POSTGRES_SCHEMA")
    if not schema:
        return
    key = (env["POSTGRES_HOST"], env["POSTGRES_PORT"], env["POSTGRES_DBNAME"], schema)
    if key in _SCHEMAS_SEEN:
        return
    import psycopg
    from psycopg import sql
    try:
        con = psycopg.connect(host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"], dbname=env["POSTGRES_DBNAME"],
                              user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"] or None,
                              connect_timeout=int(env["POSTGRES_CONNECT_TIMEOUT"]), autocommit=True)
    except psycopg.Error:
        return
    try:
        if con.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchone() is None:
            con.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    except psycopg.errors.InsufficientPrivilege:
        statement = sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(
            sql.Identifier(schema), sql.Identifier(env["POSTGRES_USER"])).as_string(con)
        raise Unavailable(f"the PostgreSQL schema '{schema}' named in TOOLCAT_EVENT_STORE_URL does not exist, and "
                          f"role '{env['POSTGRES_USER']}' may not create it: have an administrator run "
                          f"{statement};", schema=schema, statement=statement) from None
    finally:
        con.close()
    _SCHEMAS_SEEN.add(key)


def open_catalog(settings: Settings, attempts: int = 6, cached_aggregates: int = 0) -> Catalog:
    """The Catalog application on the configured store. Processes starting at the same moment race to
    create the tables (PostgreSQL reports "tuple concurrently updated", SQLite "database is locked"):
    a few quick retries settle it. `cached_aggregates`: keep up to that many aggregates in memory
    (eventsourcing's aggregate cache) for a long-running process that writes many times, a server, whose
    SQLite store then takes a held transaction (its writer's group commit, infra/held_transaction.py)."""
    from domain.application import StoreReads
    from domain.catalog import Catalog
    from infra.aggregate_cache import AggregateCache
    from infra.held_transaction import GROUP_COMMIT_PERSISTENCE
    env = store_env(settings)
    ensure_schema(env)
    reads: Callable[[Application[uuid.UUID]], AggregateReads] = StoreReads
    if cached_aggregates:
        # Commands read the cached aggregates themselves, one command at a time, brought up to the store
        # as each command starts (infra/aggregate_cache.py); other reads get a copy brought up to the store.
        env["AGGREGATE_CACHE_MAXSIZE"] = str(cached_aggregates)
        reads = AggregateCache.of
        if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
            # A server's writer commits the commands that queued together in one transaction.
            env["PERSISTENCE_MODULE"] = GROUP_COMMIT_PERSISTENCE
    return _opened(settings, lambda: Catalog(env=env, reads=reads), attempts)


# The table eventsourcing's SQLite application recorder keeps the events in (its default name, which the
# catalog keeps); its rowid is the position. eventsourcing is pinned for what reads it directly
# (projections/stored_rows.py); tests/integration/test_store_head.py checks this name against the recorder.
SQLITE_EVENTS_TABLE = "stored_events"


def store_head(settings: Settings, attempts: int = 6) -> int:
    """The store's last position (0: none yet), read through eventsourcing's recorder alone: a read that
    finds its read model current answers without building the Catalog application (its domain model and
    aggregates), as `open_catalog(settings).recorder.max_notification_id()` would. A SQLite store is read
    with sqlite3 alone when it can be (`sqlite_head`)."""
    if not settings.event_store_url:
        head = sqlite_head(settings.event_store_path, settings.sqlite_lock_timeout_seconds)
        if head is not None:
            return head
    from eventsourcing.persistence import InfrastructureFactory
    env = store_env(settings)
    ensure_schema(env)
    factory = _opened(settings, lambda: InfrastructureFactory.construct(env), attempts)
    try:
        return _opened(settings, factory.application_recorder, attempts).max_notification_id() or 0
    finally:
        factory.close()


def sqlite_head(path: Path, timeout: float) -> int | None:
    """The SQLite store's last position as the recorder reads it (`SELECT MAX(rowid)` of its table), read
    with sqlite3 and nothing written: importing eventsourcing's persistence module alone costs a command
    line read about 40 ms. None when the file or its table is not there yet or cannot be read: the
    recorder's way then creates it (an empty store) or reports why it cannot, as before."""
    if not path.is_file():
        return None
    import sqlite3
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout)
    except sqlite3.Error:
        return None
    try:
        return con.execute(f"SELECT MAX(rowid) FROM {SQLITE_EVENTS_TABLE}").fetchone()[0] or 0
    except sqlite3.Error:
        return None
    finally:
        con.close()


def _opened(settings: Settings, open_it: Callable[[], Opened], attempts: int) -> Opened:
    """What `open_it` opens, retried a few times (see `open_catalog`); Unavailable when it never opens."""
    for attempt in range(attempts):
        try:
            return open_it()
        except Exception as error:  # the driver's own errors differ per store; all mean "cannot open it"
            if attempt == attempts - 1:
                # The driver's message may repeat the URL: scrubbed, and the original not chained.
                raise Unavailable(settings.scrub(f"cannot open the event store: {error}"),
                                  store=describe_store(settings)) from None
            time.sleep(0.05 * 2 ** attempt)
    raise AssertionError("unreachable")


def describe_store(settings: Settings) -> str:
    if settings.event_store_url:
        parsed = urlparse(settings.event_store_url)
        return f"postgresql://{parsed.hostname}:{parsed.port or 5432}{parsed.path}"
    return str(settings.event_store_path)


def _is_lock_conflict(error: duckdb.Error) -> bool:
    return "lock" in str(error).lower()


def open_read_model(settings: Settings, path: Path | None = None, read_only: bool = False,
                    config: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection, opened with `config` (e.g. the user-SQL sandbox); read-write ones get the
    schema migrated first.

    DuckDB allows one writing process at a time; another command holding the file makes us wait and
    retry (bounded), rather than fail at once.
    """
    target = path or settings.read_model_path
    target.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + settings.duckdb_lock_wait_seconds
    delay = 0.02
    while True:
        try:
            con = connect(str(target), read_only=read_only,
                          config={"memory_limit": settings.duckdb_memory_limit} | (config or {}))
            break
        except duckdb.IOException as error:
            if not _is_lock_conflict(error) or time.monotonic() > deadline:
                raise Unavailable(f"the read model {target} is locked by another process: {error}",
                                  path=str(target)) from error
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
    if not read_only:
        migrate(con)
    return con


def infrastructure_error(error: Exception) -> ToolcatError | None:
    """Driver errors that mean a database could not be reached or used: exit 6, not a bug."""
    from eventsourcing.persistence import InterfaceError, OperationalError
    if isinstance(error, (OperationalError, InterfaceError)):
        return Unavailable(f"the event store is unavailable: {error}")
    return None
