"""The only reader of the environment. Every other module receives a `Settings`."""
from __future__ import annotations

import contextlib
import getpass
import os
from collections.abc import Collection
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote, urlsplit

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from domain.errors import UsageError


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOOLCAT_", extra="ignore")

    home: Path = Path(".toolcat")
    event_store_url: str | None = Field(None, description="postgresql://… puts the event store in PostgreSQL")
    kafka_bootstrap: str | None = None
    # Which Kafka client library talks to the broker: kafka-python (pure Python, always installed) or
    # confluent (librdkafka, the `fast-kafka` extra; about ten times the consumer throughput).
    kafka_client: Literal["kafka-python", "confluent"] = "kafka-python"
    kafka_events_topic: str = "toolcat.events"
    kafka_effective_topic: str = "toolcat.effective-tools"
    kafka_dlq_topic: str = "toolcat.events.dlq"
    # One partition keeps the total order of positions; more spread load but order only per key.
    kafka_partitions: int = 1
    # Proceed (with a warning) when a topic toolcat uses exists with other partitions or configs than it needs.
    kafka_accept_topics: bool = False
    kafka_replication_factor: int = 1
    kafka_group_id: str = "toolcat-projector"
    kafka_client_id: str = "toolcat"
    kafka_security_protocol: str = "PLAINTEXT"  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    kafka_sasl_mechanism: str | None = None  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    kafka_sasl_username: str | None = None
    kafka_sasl_password: str | None = None
    kafka_ssl_cafile: str | None = None
    kafka_ssl_certfile: str | None = None
    kafka_ssl_keyfile: str | None = None
    kafka_session_timeout_ms: int = 10_000
    # How long a one-shot relay or projector keeps retrying an unreachable broker before exit 6.
    kafka_retry_seconds: float = 20.0
    # How long the relay waits for the broker to acknowledge a page before it counts the broker as
    # unavailable, says so, and sends again from its saved position (the producer's own retries go on
    # meanwhile; the consumers apply a position once, so a page sent twice is harmless).
    kafka_ack_seconds: float = Field(30.0, gt=0)
    relay_page_size: int = 2000
    follow_poll_seconds: float = 0.2
    # `project --from kafka`: a batch stops gathering polls this long after its first one, or at its size,
    # whichever comes first (consumers/streaming.py): a burst's first events are visible within about
    # this long plus one batch's apply, and a topic far behind still gets large batches.
    follow_batch_seconds: float = Field(0.02, ge=0)
    # `toolcat serve`: publish snapshot.duckdb after batches, at most this often.
    snapshot_seconds: float = Field(30.0, gt=0)
    actor: str | None = None
    # How long a command waits for another process's DuckDB write lock before giving up (exit 6).
    duckdb_lock_wait_seconds: float = 15.0
    # DuckDB's memory_limit on every connection we open (its default is 80 % of the machine's memory): a
    # 1M-event rebuild or replay must stay under 1 GiB peak RSS, with the Python side beside it; beyond
    # the limit DuckDB spills to disk instead of growing.
    duckdb_memory_limit: str = "512MB"
    sqlite_lock_timeout_seconds: int = 10
    # User SQL (`toolcat sql`, `POST /v1/sql`): a query running longer is stopped (sql_timeout); an answer
    # holds at most this many rows (the rest are cut, and the answer says so).
    sql_timeout_seconds: float = Field(30.0, gt=0)
    sql_row_limit: int = Field(100_000, gt=0)
    # ... and at most about this many bytes (its Arrow size, before encoding): a query of a few huge values
    # cannot make an answer of gigabytes.
    sql_max_bytes: int = Field(64 * 1024 * 1024, gt=0)
    # User SQL runs in a worker process whose address space is capped at this (RLIMIT_AS): a query that
    # builds a huge value fails there (sql_refused) and can never grow the server (projections/sql_worker.py).
    sql_memory_bytes: int = Field(4 * 1024 * 1024 * 1024, ge=2 * 1024 * 1024 * 1024)  # below, DuckDB cannot start
    # MCP servers (infra/mcp/): how long starting a server and its `initialize` may take, and each request
    # after it (a page of tools/list); a server slower than that is an error, never a wait without end.
    mcp_connect_seconds: float = Field(10.0, gt=0)
    mcp_request_seconds: float = Field(30.0, gt=0)
    # A sync reads at most this many tools from one server (every page together), so that a server that
    # lists without end cannot exhaust memory (measured: reading 10,000 small tools added ≈ 10 MB of RSS;
    # planning them, the dry run of 10,000 commands, peaked at ≈ 460 MB).
    mcp_max_tools: int = Field(20_000, gt=0)
    # `toolcat serve` compares each server's inventory with the catalog this often; 0: never.
    mcp_sync_seconds: float = Field(0.0, ge=0)
    # `toolcat serve` checks the hash chain and the seals (shown on every page and in /v1/health) at start,
    # then this long after each check ends (at least 4 × the check's duration); 0: never.
    integrity_seconds: float = Field(60.0, ge=0)
    # The MCP gateway (infra/mcp/gateway/): tools/list pages of at most this many tools; the decision log
    # keeps each call's arguments and result only when asked (never secrets: those never reach a call);
    # a call's upstream answer bigger than this many bytes is refused, not passed on.
    gateway_page_size: int = Field(500, gt=0)
    gateway_record_arguments: bool = False
    gateway_max_answer_bytes: int = Field(4 * 1024 * 1024, gt=0)
    kafka_decisions_topic: str = "toolcat.decisions"
    # `toolcat serve` answers only requests whose Host (and Origin, when sent) is a loopback name or one of
    # these (DNS rebinding: a page of another site must not reach the server through its own name); the
    # server's own --host address counts too. Absolute links are built from `public_url`, else relative.
    allowed_hosts: list[str] = Field(default_factory=list)
    # How many reads one client (a token; an address when anonymous) may have waiting for a position
    # (`min_position`) at once; more are refused with 429. Waits hold no thread, but each holds memory.
    max_waits_per_client: int = Field(32, gt=0)
    public_url: str | None = None
    # The effective sets' Python fast paths that are on (projections/effective/maintenance.FastPaths), as
    # JSON: `[]` refreshes every batch with the rule's SQL alone (the same sets, more slowly).
    effective_fast_paths: list[Literal["grants", "ways", "kept"]] = ["grants", "ways", "kept"]
    # Tests only: where the PostgreSQL suite connects, and whether an unreachable server fails the run.
    test_postgres_url: str = "postgresql://postgres@127.0.0.1:5432/test"
    require_postgres: bool = False
    # Tests only: whether a machine without npm fails the tests of npm's MCP servers instead of skipping them.
    require_npm: bool = False
    test_kafka_bootstrap: str | None = None

    @property
    def event_store_path(self) -> Path:
        return self.home / "events.sqlite"

    @property
    def read_model_path(self) -> Path:
        return self.home / "catalog.duckdb"

    def secrets(self) -> set[str]:
        """The secret values among the settings: the event store's password, the Kafka SASL password."""
        found = url_passwords(self.event_store_url or "") | {self.kafka_sasl_password or ""}
        return found - {""}

    def scrub(self, text: str) -> str:
        """`text` with every secret value of the settings replaced by `***` (for messages and logs)."""
        return scrub(text, self.secrets())

    def default_actor(self) -> str:
        if self.actor:
            return self.actor
        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "unknown"


def load_settings() -> Settings:
    """The settings the environment gives; a bad value is a usage error naming its variable and what it
    should be, never the value itself (it may hold a password)."""
    try:
        return Settings()
    except ValidationError as error:
        problems = {"TOOLCAT_" + "_".join(str(part) for part in e["loc"]).upper(): e["msg"] for e in error.errors()}
        raise UsageError("bad setting: " + "; ".join(f"{name}: {why}" for name, why in problems.items()),
                         settings=problems) from None


def environment_value(name: str) -> str | None:
    """One variable of this process's environment: the `env:NAME` secret references of MCP servers are
    resolved from it when a server is connected (infra/mcp/secrets.py), never stored."""
    return os.environ.get(name)


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment with TOOLCAT_ settings replaced (`snapshot_seconds="1"` sets
    TOOLCAT_SNAPSHOT_SECONDS), for a `toolcat` child process the development tools start."""
    return {**os.environ, **{"TOOLCAT_" + name.upper(): value for name, value in overrides.items()}}


def url_passwords(url: str) -> set[str]:
    """The password of a URL, as written, URL-decoded and encoded (a message may repeat any). A malformed URL
    (say, a password with an unescaped '/') parses badly, so the text between the scheme's `://`, the
    first ':' and the last '@' before the query counts too."""
    userinfo = url.partition("://")[2].partition("?")[0].rpartition("@")[0]
    found = {userinfo.partition(":")[2]}
    with contextlib.suppress(ValueError):  # ValueError: not a URL urllib can split
        found.add(urlsplit(url).password or "")
    forms = {form for password in found for form in (password, unquote(password))}
    return (forms | {quote(form, safe="") for form in forms}) - {""}


def scrub(text: str, secrets: Collection[str]) -> str:
    """`text` with every one of `secrets` replaced by `***`, longest first (one may contain another)."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
