"""What one command works with: settings, the catalog, the read model, the command's metadata.

Three ways to a read model: opened by this process (the embedded default), leased from a server that
runs the command in its own process (a `Backend`: `toolcat serve` answering HTTP), or, while a server owns
this home's read model, none at all: reads are sent to that server (`server`).
"""
from __future__ import annotations

import argparse
import contextlib
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from domain.errors import Conflict, UsageError
from infra.freshness import Freshness, existing_read_model, fresh_read_model
from infra.progress import reporting
from infra.replica import refuse_writes_to_replica
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model

if TYPE_CHECKING:  # a read answered from a current read model never builds the catalog (its domain)
    from domain.base import Meta
    from domain.catalog import Catalog
    from infra.remote import ServerClient


class HomeNotFound(UsageError):
    """A read named a home that holds no catalog (no event store, no read model)."""

    code = "home_not_found"


class Backend(Protocol):
    """What a long-running process lends each command it runs: its catalog, and its read model as fresh
    as the command asks (for the command's duration)."""

    catalog: Catalog

    def read_model(self, freshness: Freshness) -> contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]: ...


class Context:
    def __init__(self, settings: Settings, args: argparse.Namespace, backend: Backend | None = None) -> None:
        self.settings = settings
        self.args = args
        self.backend = backend
        self._catalog: Catalog | None = None
        self._con: duckdb.DuckDBPyConnection | None = None
        self._leases = contextlib.ExitStack()
        self._server: ServerClient | None | bool = False  # False: not looked for yet

    @property
    def as_json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    def check_home(self) -> None:
        """A read answers from a catalog that exists and never creates one: a mistyped --home is an error,
        not a new empty catalog. (With PostgreSQL the store is the catalog; the home only caches the read
        model.)"""
        settings = self.settings
        if self.backend is not None or getattr(self.args, "kind", None) != "read" or settings.event_store_url:
            return
        if not (settings.event_store_path.exists() or settings.read_model_path.exists()):
            raise HomeNotFound(f"there is no catalog at {settings.home} (neither {settings.event_store_path.name} "
                               f"nor {settings.read_model_path.name}); check --home or TOOLCAT_HOME, or start "
                               "one with 'toolcat init'", home=str(settings.home))

    @property
    def catalog(self) -> Catalog:
        if getattr(self.args, "kind", None) == "write":
            refuse_writes_to_replica(self.settings)
        if self.backend is not None:
            return self.backend.catalog
        if self._catalog is None:
            self.check_home()
            self._catalog = open_catalog(self.settings)
        return self._catalog

    @property
    def server(self) -> ServerClient | None:
        """The client of the server that owns this home's read model, when one runs (never inside it)."""
        if self._server is False:
            self._server = None
            if self.backend is None:
                from infra.http.address import live_address
                address = live_address(self.settings.home)
                if address is not None:
                    from infra.remote import ServerClient
                    self._server = ServerClient(address)
        return self._server or None

    def refuse_if_served(self, what: str) -> None:
        """Commands that write the read model themselves cannot run beside the server that owns it."""
        if self.server is not None:
            raise Conflict(f"a server ({self.server.url}) owns this home's read model; stop it to {what}",
                           server=self.server.url)

    def meta(self) -> Meta:
        from domain.base import Meta
        return Meta(actor=getattr(self.args, "actor", None) or self.settings.default_actor(),
                    reason=getattr(self.args, "reason", None),
                    idempotency_key=getattr(self.args, "idempotency_key", None))

    def freshness(self) -> Freshness:
        """What the command's --min-position and --timeout ask for (infra/freshness.py)."""
        return Freshness(min_position=getattr(self.args, "min_position", None),
                         timeout=float(getattr(self.args, "timeout", 10.0) or 10.0))

    def read_model(self) -> duckdb.DuckDBPyConnection:
        """The read model, as fresh as the command asks (by default: caught up with the store)."""
        if self._con is None:
            if self.backend is not None:
                self._con = self._leases.enter_context(self.backend.read_model(self.freshness()))
            else:
                self.check_home()
                with reporting("catching up the read model", self.as_json, self._store_head) as progress:
                    self._con = fresh_read_model(self.settings, lambda: self.catalog, self.freshness(), progress)
        return self._con

    def _store_head(self) -> int | None:
        return self.catalog.recorder.max_notification_id()

    def existing_read_model(self) -> duckdb.DuckDBPyConnection | None:
        """The read model as it stands, read-only and not caught up (None: there is none yet); the caller
        closes it. For checks that must not vouch for what they are checking (`audit verify`). A server
        lends its own read model, which it keeps following the store."""
        if self.backend is not None:
            return self.read_model()
        self.check_home()
        return existing_read_model(self.settings)

    def read_only_model(self, config: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Caught up like `read_model`, then reopened read-only (with `config`, e.g. the user-SQL sandbox):
        nothing a query does can change it."""
        if self.backend is not None:
            return self.read_model()
        self.read_model().close()
        self._con = open_read_model(self.settings, read_only=True, config=config)
        return self._con

    def events_of_key(self, key: str) -> list[dict[str, Any]]:
        """The events this command's actor's write recorded under an idempotency key (from the server when
        one runs)."""
        from projections.queries import events_of_key
        actor = self.meta().actor
        if self.server is not None:
            return self.server.events_of_key(key, actor)
        return events_of_key(self.read_model(), key, actor)

    def close(self) -> None:
        self._leases.close()
        if self._con is not None and self.backend is None:
            self._con.close()
        self._con = None
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
        if self._server:
            self._server.close()
            self._server = False
