"""What one CLI invocation works with: settings, the catalog, the read model, the command's metadata."""
from __future__ import annotations

import argparse
import time
from typing import Any

import duckdb

from domain.base import Meta
from domain.catalog import Catalog, WriteResult
from domain.errors import Unavailable
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.projector import Projector, read_tracking
from projections.rows import select_rows


class Context:
    def __init__(self, settings: Settings, args: argparse.Namespace) -> None:
        self.settings = settings
        self.args = args
        self._catalog: Catalog | None = None
        self._con: duckdb.DuckDBPyConnection | None = None

    @property
    def as_json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = open_catalog(self.settings)
        return self._catalog

    def meta(self) -> Meta:
        return Meta(actor=getattr(self.args, "actor", None) or self.settings.default_actor(),
                    reason=getattr(self.args, "reason", None),
                    idempotency_key=getattr(self.args, "idempotency_key", None))

    def read_model(self) -> duckdb.DuckDBPyConnection:
        """The read model, caught up with the store (or, with --min-position, at least there).

        A read model that is already current is opened read-only, so concurrent readers never queue
        behind each other; only a read that finds it behind takes the write lock to catch up."""
        if self._con is None:
            wanted = getattr(self.args, "min_position", None)
            self._con = self._current_read_only(wanted)
            if self._con is None:
                self._con = open_read_model(self.settings)
                if wanted is None or read_tracking(self._con).position < wanted:
                    catch_up(self.catalog, Projector(self._con))
                if wanted is not None:
                    self._wait_for(wanted)
        return self._con

    def _current_read_only(self, wanted: int | None) -> duckdb.DuckDBPyConnection | None:
        if not self.settings.read_model_path.exists():
            return None
        try:
            con = open_read_model(self.settings, read_only=True)
        except Unavailable:
            return None
        try:
            reached = read_tracking(con).position
            target = wanted if wanted is not None else (self.catalog.recorder.max_notification_id() or 0)
        except duckdb.Error:  # not migrated yet
            reached, target = -1, 0
        if reached >= target:
            return con
        con.close()
        return None

    def read_only_model(self) -> duckdb.DuckDBPyConnection:
        """Caught up like `read_model`, then reopened read-only: nothing a query does can change it."""
        self.read_model()
        assert self._con is not None
        self._con.close()
        self._con = open_read_model(self.settings, read_only=True)
        return self._con

    def _wait_for(self, wanted: int) -> None:
        assert self._con is not None
        deadline = time.monotonic() + float(getattr(self.args, "timeout", 10.0) or 10.0)
        while (reached := read_tracking(self._con).position) < wanted:
            if time.monotonic() > deadline:
                raise Unavailable(f"the read model reached position {reached}, not {wanted}, before the "
                                  "timeout", reached=reached, wanted=wanted)
            time.sleep(0.1)
            catch_up(self.catalog, Projector(self._con))

    def write_answer(self, result: WriteResult) -> dict[str, Any]:
        """A write's answer; a replayed idempotency key answers with the first run's events."""
        if result.replayed_key is None:
            return {"position": result.position, "events": [e.model_dump() for e in result.events]}
        events = select_rows(self.read_model(), """
            SELECT position, type FROM events WHERE idempotency_key = ? ORDER BY position""", [result.replayed_key])
        return {"position": max((e["position"] for e in events), default=None), "events": events}

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
