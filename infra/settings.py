"""The only reader of the environment. Every other module receives a `Settings`."""
from __future__ import annotations

import getpass
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOOLCAT_", extra="ignore")

    home: Path = Path(".toolcat")
    event_store_url: str | None = Field(None, description="postgresql://… puts the event store in PostgreSQL")
    kafka_bootstrap: str | None = None
    kafka_events_topic: str = "toolcat.events"
    kafka_effective_topic: str = "toolcat.effective-tools"
    kafka_dlq_topic: str = "toolcat.events.dlq"
    # One partition keeps the total order of positions; more spread load but order only per key.
    kafka_partitions: int = 1
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
    relay_page_size: int = 2000
    follow_poll_seconds: float = 0.2
    actor: str | None = None
    # How long a command waits for another process's DuckDB write lock before giving up (exit 6).
    duckdb_lock_wait_seconds: float = 15.0
    sqlite_lock_timeout_seconds: int = 10
    # Tests only: where the PostgreSQL suite connects, and whether an unreachable server fails the run.
    test_postgres_url: str = "postgresql://postgres@127.0.0.1:5432/test"
    require_postgres: bool = False
    test_kafka_bootstrap: str | None = None

    @property
    def event_store_path(self) -> Path:
        return self.home / "events.sqlite"

    @property
    def read_model_path(self) -> Path:
        return self.home / "catalog.duckdb"

    def default_actor(self) -> str:
        if self.actor:
            return self.actor
        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "unknown"
