"""The one projector: envelopes in, DuckDB rows out, one transaction per batch.

The in-process catch-up and the Kafka consumer both hand envelopes here. Each batch checks the chain
(`prev_position`, `prev_hash`, `hash`), skips what it already applied, and commits its rows together
with the tracking row, so a crash between batches loses nothing and applies nothing twice.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, Protocol

import duckdb
import pyarrow as pa

from domain.errors import IntegrityFailure
from domain.registry import upcast
from projections.catalog_part import CatalogPart, Handler, ignore, when
from projections.envelope import Envelope
from projections.rows import FEW_ROWS, insert_columns, run
from projections.effective.dirty import BatchDirty, DirtyPart
from projections.effective.maintenance import FastPaths, Maintenance, is_settled
from projections.subjects_part import SubjectsPart
from projections.routing_part import RoutingPart
from projections.proposals_part import ProposalsPart
from projections.mcp_part import McpPart
from projections.tracking import PROJECTION, Tracking, read_state


class Part(Protocol):
    handlers: dict[str, Handler]

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None: ...

    def flush(self, con: duckdb.DuckDBPyConnection) -> None: ...

    def discard(self) -> None: ...


@dataclass(frozen=True)
class Page:
    """A page of envelopes chained from the store, with its `events` rows already built (`event_rows`) and
    its data upcast (by the catch-up's read-ahead thread, off the applying thread); `last`: no page
    follows it."""
    envelopes: list[Envelope]
    events: pa.Table | dict[str, list[Any]]
    data: list[dict[str, Any]]  # each envelope's data upcast to its current class version
    last: bool = True


def check_chain(envelopes: list[Envelope], tracking: Tracking, chained_here: bool = False) -> None:
    """Every envelope must follow the last applied one exactly; a hole or a broken link stops us.
    Envelopes whose own hash this process computed or already verified (`chained_here`: chained from the
    store, or parsed by projections.envelope_json) skip recomputing it."""
    position, head = tracking.position, tracking.hash
    for envelope in envelopes:
        if envelope.prev_position != position:
            raise IntegrityFailure(
                f"gap in the event stream: expected an event following position {position}, got position "
                f"{envelope.position} which follows {envelope.prev_position}",
                expected_prev_position=position, position=envelope.position,
                prev_position=envelope.prev_position)
        if envelope.prev_hash != head or (not chained_here and envelope.expected_hash() != envelope.hash):
            raise IntegrityFailure(f"hash chain broken at position {envelope.position}",
                                   position=envelope.position)
        position, head = envelope.position, envelope.hash


def default_parts(dirty: DirtyPart | None = None) -> list[Part]:
    return [CatalogPart(), SubjectsPart(), dirty or DirtyPart(), RoutingPart(), ProposalsPart(), McpPart()]


class Projector:
    def __init__(self, con: duckdb.DuckDBPyConnection, parts: list[Part] | None = None,
                 fast_paths: FastPaths = FastPaths()) -> None:
        """`parts` fixes the parts' instances (tests); by default each batch gets fresh ones, so a
        batch that failed leaves nothing buffered behind. `fast_paths`: the effective sets' speed-ups on
        (the setting effective_fast_paths).

        The projector is the only writer of the tracking row and the sets' validity marker on its
        connection: it remembers what it read or committed last (a statement of each follower's pass
        saved), and forgets it when a transaction fails."""
        self.con = con
        self.fixed_parts = parts
        self._state: tuple[Tracking, int] | None = None  # (tracking, the sets valid through)
        # What the transactions committed since the caller last took them changed (`take_changes`), and
        # when the last event applied was recorded: a server tells its watchers and its metrics from
        # these, with no statement after the commit.
        self._changed: set[str] = set()
        self.last_recorded_at: str | None = None
        self.effective = Maintenance(fast_paths)  # the effective sets, kept with each batch

    def tracking(self) -> Tracking:
        return self._known()[0]

    def take_changes(self) -> list[str]:
        """The subjects (`kind:name`) whose effective set a transaction committed since the last call
        changed, at most once each; forgotten once taken."""
        changed, self._changed = sorted(self._changed), set()
        return changed

    def _known(self) -> tuple[Tracking, int]:
        if self._state is None:
            self._state = read_state(self.con)
        return self._state

    def apply(self, envelopes: list[Envelope],
              also: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
              chained_here: bool = False, settle: bool = True) -> Tracking:
        """Apply one batch in one transaction; returns the new tracking position.

        `also` writes source bookkeeping (e.g. Kafka offsets) in the same transaction. With `settle` the
        effective sets are refreshed in it too; without, the batch only records its dirty subjects and
        the caller settles them later (a catch-up, once at its end)."""
        tracking = self.tracking()
        # At-least-once delivery: drop what was applied and repeats within the batch, then order.
        unique = {e.position: e for e in reversed(envelopes) if e.position > tracking.position}
        fresh = [unique[p] for p in sorted(unique)]
        if not fresh:
            return tracking
        return self._transaction(fresh, tracking, chained_here, settle, also)

    def apply_page(self, page: Page, settle: bool = True, tracking: Tracking | None = None) -> Tracking:
        """Apply a page chained from the store (projections/catchup.py) with its prebuilt `events` rows.
        A page that does not start right after the tracking position goes the general way instead.
        `tracking`: the current tracking when the caller knows it (it read or wrote it last)."""
        tracking = tracking or self.tracking()
        if not page.envelopes or page.envelopes[0].prev_position != tracking.position:
            return self.apply(page.envelopes, chained_here=True, settle=settle)
        return self._transaction(page.envelopes, tracking, True, settle, None, page)

    def _transaction(self, fresh: list[Envelope], tracking: Tracking, chained_here: bool, settle: bool,
                     also: Callable[[duckdb.DuckDBPyConnection], None] | None,
                     page: Page | None = None) -> Tracking:
        check_chain(fresh, tracking, chained_here)
        types = {e.type for e in fresh}
        parts = self.fixed_parts if self.fixed_parts is not None else default_parts(self.effective.part(types))
        handlers: dict[str, Handler] = {}
        for part in parts:
            handlers.update(part.handlers)
        unknown = sorted(types - set(handlers))
        if unknown:
            raise IntegrityFailure(f"event type {unknown[0]} is unknown to this version of toolcat; "
                                   "upgrade before projecting", types=unknown)
        # Sets valid through the batch's start: a batch that refreshes its own is all that is dirty.
        valid = self._known()[1]
        alone = settle and valid >= tracking.position
        run(self.con, "BEGIN TRANSACTION")
        try:
            new_tracking = self._apply_fresh(fresh, tracking, parts, handlers, page)
            dirty = next((part.dirty for part in parts if isinstance(part, DirtyPart)), BatchDirty())
            changed = self.effective.refresh(self.con, dirty, new_tracking.position, settle, alone)
            if also is not None:
                also(self.con)
            run(self.con, "COMMIT")
        except BaseException:
            self._state = None
            self.effective.forget()
            run(self.con, "ROLLBACK")
            for part in parts:
                part.discard()
            raise
        self._state = (new_tracking, new_tracking.position if settle else valid)
        self._changed.update(changed)
        self.effective.committed(dirty)
        self.last_recorded_at = fresh[-1].recorded_at
        return new_tracking

    def settle(self) -> None:
        """Refresh the dirty effective sets through the tracking position, in a transaction of their own
        (the end of a catch-up, or the repair of one that crashed); nothing to do when already settled."""
        tracking = self.tracking()
        if is_settled(self.con, tracking.position):
            return
        run(self.con, "BEGIN TRANSACTION")
        try:
            changed = self.effective.refresh_dirty(self.con, tracking.position)
            run(self.con, "COMMIT")
        except BaseException:
            self._state = None
            run(self.con, "ROLLBACK")
            raise
        self._state = (tracking, tracking.position)
        self._changed.update(changed)

    def _apply_fresh(self, fresh: list[Envelope], tracking: Tracking, parts: list[Part],
                     handlers: dict[str, Handler], page: Page | None) -> Tracking:
        """`page`: the same envelopes with their upcast data and `events` rows already built."""
        for part in parts:
            part.prefetch(self.con, fresh)
        for index, envelope in enumerate(fresh):
            handle = handlers[envelope.type]
            if handle is not ignore:  # most events of a catch-up: their rows are built in SQL at flush
                handle(envelope, page.data[index] if page else
                       upcast(envelope.type, envelope.type_version, envelope.data))
        # The batch's events first: the parts' SQL builds history tables from them (sql_history.py).
        insert_columns(self.con, "events", page.events if page else event_columns(fresh), EVENT_TYPES)
        for part in parts:
            part.flush(self.con)
        last = fresh[-1]
        new_tracking = Tracking(last.position, last.hash, tracking.events + len(fresh))
        values = [new_tracking.position, new_tracking.hash, new_tracking.events, PROJECTION]
        # One statement for every batch but the first (a follower's small pass saves one of ≈ 0.4 ms).
        if not run(self.con, "UPDATE tracking SET position = ?, hash = ?, events = ?, updated_at = now() "
                             "WHERE projection = ?", values)[0][0]:
            run(self.con, "INSERT INTO tracking VALUES (?, ?, ?, ?, now())", [PROJECTION, *values[:3]])
        return new_tracking


def upcast_all(envelopes: list[Envelope]) -> list[dict[str, Any]]:
    """Each envelope's data as its handler takes it: upcast to the event class's current version (handlers
    only read it, so data stored at that version is not copied)."""
    return [upcast(e.type, e.type_version, e.data) for e in envelopes]


# The DuckDB types of the `events` columns (migration 001), for a few rows given as list parameters.
EVENT_TYPES = {"position": "BIGINT", "prev_position": "BIGINT", "originator_id": "VARCHAR",
               "originator_version": "BIGINT", "type": "VARCHAR", "type_version": "INTEGER", "actor": "VARCHAR",
               "reason": "VARCHAR", "idempotency_key": "VARCHAR", "prev_hash": "VARCHAR", "hash": "VARCHAR",
               "recorded_at": "TIMESTAMPTZ", "data": "VARCHAR"}
# The columns copied from the envelope as they are (recorded_at and data are converted).
_EVENT_FIELDS = tuple(name for name in EVENT_TYPES if name not in ("recorded_at", "data"))


# json.dumps(value, sort_keys=True) builds an encoder on every call; one built once writes the same bytes.
# (Its encode() still builds json's C encoder each call: building that once with CPython's private
# json.encoder.c_make_encoder halved this piece's time, but a private interpreter API is not ours to call.)
_DATA_ENCODER = json.JSONEncoder(sort_keys=True)


def event_rows(envelopes: list[Envelope]) -> pa.Table | dict[str, list[Any]]:
    """The `events` rows of a page as insert_columns takes them with EVENT_TYPES, built where the page is
    read: a follower's few as columns (insert_columns gives them as list parameters; building an Arrow
    table for them imports a module that fails to import each time), many as the Arrow table insert_columns
    would build from them, but built here, by the catch-up's read-ahead thread, off the applying thread."""
    columns = event_columns(envelopes)
    return columns if len(envelopes) <= FEW_ROWS else pa.table(columns)


def event_columns(envelopes: list[Envelope]) -> dict[str, list[Any]]:
    """The `events` rows of a batch, column by column (Arrow builds each column in one pass)."""
    values = [e.__dict__ for e in envelopes]
    columns: dict[str, list[Any]] = {name: [v[name] for v in values] for name in _EVENT_FIELDS}
    columns["recorded_at"] = [when(e) for e in envelopes]
    columns["data"] = data_texts([e.data for e in envelopes])
    return columns


def data_texts(values: list[dict[str, Any]]) -> list[str]:
    """The stored form of `data`: json.dumps' default (", " and ": ", ASCII-escaped), keys sorted. The
    fingerprint covers it."""
    encode = _DATA_ENCODER.encode
    return [encode(value) for value in values]
