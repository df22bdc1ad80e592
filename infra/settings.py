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
