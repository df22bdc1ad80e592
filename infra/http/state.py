"""The one owner of a home's read model while `toolcat serve` runs: the DuckDB connection, the follower
thread that applies batches to it (the store pass of `project --follow`, or its Kafka loop), and reader
cursors leased to requests, each in a transaction of its own (DuckDB's MVCC: a reader never waits for the
writer, and every statement of one answer sees the same snapshot).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from domain.catalog import Catalog
from domain.errors import Unavailable
from infra.freshness import Freshness, not_reached
from infra.http.metrics import ServerMetrics
from infra.http.writer import Writer
from infra.projecting import changelog_publisher, project_kafka, projector_of, store_pass, wait_for_events
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.tracking import Tracking
from projections.rows import run, scalar
from projections.user_sql import sandbox_config

if TYPE_CHECKING:
    from infra.http.integrity import IntegrityWatch
    from infra.http.mcp_drift import DriftWatch

log = logging.getLogger("toolcat.serve")


# Aggregates the server's catalog keeps in memory: a write reads a few (the subject, the tool, its name
# claim, the policy), and rebuilding one from its events costs as much as it has events (a unit with a
# thousand grants, a thousand). Enough for the 10k-tool benchmark catalog's tools and claims.
CACHED_AGGREGATES = 50_000

# DuckDB checkpoints by itself when a commit leaves the WAL past `checkpoint_threshold` (16 MB by
# default). The server turns that off (a threshold no WAL reaches) so that a snapshot's copy of the file
# can run beside the follower (snapshot.py: only a checkpoint rewrites blocks the copy reads); instead the
# follower checkpoints after a pass that left the WAL past WAL_LIMIT_BYTES, never while a copy runs, and
# only once it has caught up with the store (nothing waits for it) unless the WAL passed
# WAL_HARD_LIMIT_BYTES. A checkpoint holds the follower: ≈ 150–250 ms on the 1,000-agent benchmark
# catalog, most of it rewriting effective_documents (≈ 57 MB stored uncompressed, migration 020, in one
# row group, so one changed document rewrites all of it). At 200 writes/s the WAL grew ≈ 10 MB/s: a
# checkpoint every 16 MB put such a stall in front of the writes of every other second (command →
# visible p99 ≈ 260 ms with the writes made beside the server, ≈ 160–175 ms checkpointing only at rest).
NO_AUTOMATIC_CHECKPOINT = "1000TB"
WAL_LIMIT_BYTES = 16 * 1024 * 1024
WAL_HARD_LIMIT_BYTES = 128 * 1024 * 1024


class ServerState:
    def __init__(self, settings: Settings, source: str, metrics: ServerMetrics) -> None:
        self.settings, self.source, self.metrics = settings, source, metrics
        self.catalog: Catalog = open_catalog(settings, cached_aggregates=CACHED_AGGREGATES)
        # The owning connection; only the follower writes with it. Opened with the user-SQL sandbox: it
        # answers `POST /v1/sql`, and DuckDB takes a connection's config only when it opens the file.
        self.con = open_read_model(settings, config=sandbox_config(checkpoint_threshold=NO_AUTOMATIC_CHECKPOINT))
        self._wal = Path(f"{settings.read_model_path}.wal")
        self.checkpoints = threading.Lock()  # held while a checkpoint runs, or a copy that none may run in
        self._root = self.con.cursor()  # reader cursors are made from here, one at a time
        self._idle: queue.SimpleQueue[duckdb.DuckDBPyConnection] = queue.SimpleQueue()
        self._making = threading.Lock()
        # The follower's projector, kept from pass to pass: it remembers the tracking row it wrote.
        self.projector = projector_of(self.con, settings)
        self.position = self.projector.tracking().position
        self._applied = threading.Condition()
        self._wake = threading.Event()
        self.stopping = threading.Event()
        self.writes = threading.RLock()  # held by the follower while it applies a pass
        # Runs every write command the server answers (writes.write_reply), one at a time on its thread, and
        # commits those that queued together. Run together they refused each other as conflicts (409)
        # whenever they changed the same aggregate (grants to one subject), and the aggregate cache copied
        # one while another brought it up to date (a 500); the store takes one writer at a time anyway, and
        # the GIL one command's Python.
        self.writer = Writer(self.catalog, self._written)
        self.failure: str | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        # Runs one user query in a worker process (set by the app: infra/http/sql.py `run_user_sql`), for
        # the commands the server runs (`toolcat sql` through Accept: the reply type).
        self.user_sql: Callable[[str], Any] | None = None
        self.batch_event: asyncio.Event | None = None
        # Called by the follower with (position, the subjects whose set changed, None: any may have) after
        # a pass commits and before its position is announced.
        self.on_changes: list[Callable[[int, list[str] | None], None]] = []
        # Called once caught up at start, by the follower after its first pass (the catch-up; nothing to
        # apply when the read model already holds the store's head) and before it announces the position
        # that reads wait for. The server listens meanwhile: probes answer, reads are refused (`_starting`).
        self.on_caught_up: list[Callable[[], None]] = []
        self._caught_up = False
        self.caught_up = threading.Event()  # set once those have run
        self.mcp_drift: DriftWatch | None = None  # set by `serve`: the MCP drift check (mcp_drift.py)
        self.integrity: IntegrityWatch | None = None  # set by `serve`: the chain check (integrity.py)
        # Rows written to the read model beside the events (the gateway's decision log): a snapshot holding
        # the position is stale all the same once these moved (infra/http/snapshots.py).
        self.side_writes: Callable[[], int] = lambda: 0
        self._thread: threading.Thread | None = None
        metrics.watch_lag(self.lag)

    # -- the follower ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the writer and the follower and return at once: the catch-up runs in the follower."""
        self.writer.start()
        self._thread = threading.Thread(target=self._follow, name="toolcat-follower", daemon=True)
        self._thread.start()

    def stop_following(self) -> None:
        """Finish the current batch and stop following: once this returns, the caught-up hooks have run or
        never will."""
        self.stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        """Finish the current batch, then close everything."""
        self.writer.stop()
        self.stop_following()
        with self._making:
            self._root.close()
            self.con.close()
        self.catalog.close()

    def _follow(self) -> None:
        delay = 0.2
        while not self.stopping.is_set():
            try:
                self._follow_store() if self.source == "store" else self._follow_kafka()
            except Exception as error:  # keep serving what was applied; say why, and try again
                self.failure = f"{type(error).__name__}: {error}"
                log.error("the follower failed (retrying in %.1fs): %s", delay, self.failure)
                self.stopping.wait(delay)
                delay = min(delay * 2, 10.0)

    def _follow_store(self) -> None:
        publish_changes = changelog_publisher(self.settings)

        def publish(con: duckdb.DuckDBPyConnection) -> int:
            self._note_changes()
            return publish_changes(con)
        head: int | None = None
        while not self.stopping.is_set():
            started = time.perf_counter()
            with self.writes:
                tracking = store_pass(self.catalog, self.con, publish, projector=self.projector, head=head)
            self._run_caught_up()
            self._announce(tracking, started)
            self._bound_wal(lambda: self.store_head() <= tracking.position)
            head = wait_for_events(self.catalog, tracking.position, self.stopping.is_set, self._pause)

    def _follow_kafka(self) -> None:
        started = [time.perf_counter()]

        def batch_applied(tracking: Tracking) -> None:
            self._tell(tracking.position, None)  # its changelog is already published (and taken out)
            self._announce(tracking, started[0])
            self._bound_wal(lambda: True)  # (whether more waits in the topic is the consumer's to know)
            started[0] = time.perf_counter()
        self._run_caught_up()  # (a Kafka-fed server has no start-up catch-up: it serves what it applied)
        project_kafka(self.settings, True, 0.0, self.stopping.is_set, batch_applied, self.writer_cursor)

    def _run_caught_up(self) -> None:
        if not self._caught_up and not self.stopping.is_set():  # (stopped during the catch-up: nothing to start)
            self._caught_up = True  # (once: a hook that failed is not run again when the follower retries)
            try:
                for ready in self.on_caught_up:
                    ready()
            finally:
                self.caught_up.set()

    def _note_changes(self) -> None:
        """(After a store pass committed, before its changelog is published.) The subjects whose set the
        pass changed, as its projector remembers them (no statement after the commit)."""
        position = self.projector.tracking().position
        changed = self.projector.take_changes()
        if position > self.position:
            self._tell(position, changed)

    def _tell(self, position: int, subjects: list[str] | None) -> None:
        for listener in self.on_changes:
            listener(position, subjects)

    def _bound_wal(self, at_rest: Callable[[], bool]) -> None:
        """Checkpoint once the WAL passed WAL_LIMIT_BYTES (DuckDB's own checkpoints are off) and the pass
        just applied left nothing waiting (`at_rest()`, asked only then), or once it passed
        WAL_HARD_LIMIT_BYTES whatever waits; unless a snapshot's copy is in progress: then after a later
        pass, rather than hold batches until the copy ends. Looked at with stat: opening the file would
        drop DuckDB's lock."""
        wal_bytes = self._wal.stat().st_size if self._wal.exists() else 0
        if wal_bytes <= WAL_LIMIT_BYTES or (wal_bytes <= WAL_HARD_LIMIT_BYTES and not at_rest()):
            return
        if not self.checkpoints.acquire(blocking=False):
            return
        try:
            with self.writes:
                run(self.con, "CHECKPOINT")
        except duckdb.Error as error:  # the sets served are intact; the next pass tries again
            log.warning("checkpointing %s failed: %s", self.settings.read_model_path, error)
        finally:
            self.checkpoints.release()

    def _pause(self) -> None:
        """Between looks at the store: a poll interval, or less when a request needs a newer position."""
        if self._wake.wait(self.settings.follow_poll_seconds):
            self._wake.clear()

    def _announce(self, tracking: Tracking, started: float) -> None:
        applied = tracking.position - self.position
        recorded = self._recorded_at(tracking.position) if applied else None
        with self._applied:
            self.position = tracking.position
            self._applied.notify_all()
        self.failure = None
        self.metrics.batch(applied, time.perf_counter() - started, tracking.position, recorded)
        if applied and self.loop is not None:
            self.loop.call_soon_threadsafe(self._wake_watchers)

    def _recorded_at(self, position: int) -> float:
        """When the event at `position`, the last one applied, was recorded (epoch seconds): remembered by
        the store follower's projector, read back after a Kafka batch."""
        projector = self.projector
        if projector.last_recorded_at is not None and projector.tracking().position == position:
            return datetime.fromisoformat(projector.last_recorded_at).timestamp()
        return scalar(self.con, "SELECT epoch(recorded_at) FROM events WHERE position = ?", [position])

    def _wake_watchers(self) -> None:
        """In the event loop: wake every watch stream waiting for a batch."""
        event, self.batch_event = self.batch_event, asyncio.Event()
        if event is not None:
            event.set()

    def batch_waiter(self) -> asyncio.Event:
        """(In the event loop) an event set when the next batch is applied: take it before reading, so a
        batch applied meanwhile is not missed."""
        if self.batch_event is None:
            self.loop, self.batch_event = asyncio.get_running_loop(), asyncio.Event()
        return self.batch_event

    def nudge(self) -> None:
        """New events are in the store (a write just committed): look now, not at the next poll."""
        self._wake.set()

    def _written(self, commands: int) -> None:
        """The writer committed `commands` write commands together."""
        self.metrics.write_group.observe(commands)
        self.nudge()

    @contextlib.contextmanager
    def pause_writes(self) -> Iterator[None]:
        """No batch is applied inside this block (re-entrant in the follower thread itself)."""
        with self.writes:
            yield

    # -- readers --------------------------------------------------------------------------------------
    def store_head(self) -> int:
        return self.catalog.recorder.max_notification_id() or 0

    def lag(self) -> tuple[int, float]:
        """(stored events not yet applied, age in seconds of the oldest of them)."""
        position = self.position
        behind = self.store_head() - position
        if behind <= 0:
            return 0, 0.0
        oldest = self.catalog.history(after=position, limit=1)
        return behind, max(0.0, time.time() - oldest[0].state["timestamp"].timestamp()) if oldest else 0.0

    def catching_up(self) -> bool:
        """Whether the server is still in its first catch-up with the store (a Kafka-fed server never is)."""
        return self.source == "store" and not self.caught_up.is_set()

    def _starting(self, wanted: int) -> None:
        """Refuse at once (503 with Retry-After) a read that needs more than is applied while the first
        catch-up runs: it takes seconds on a long history, and a read held that long holds a thread and its
        client's connection. Probes say how far it has to go (/v1/ready)."""
        position = self.position
        if position < wanted and self.catching_up():
            head = self.store_head()
            raise Unavailable(f"the server is starting: its read model is catching up with the store "
                              f"({max(head - position, 0)} events to go); retry shortly",
                              catching_up=True, position=position, store_head=head, lag=max(head - position, 0))

    def wait_for(self, wanted: int, timeout: float) -> None:
        """Until the follower has applied `wanted`; Unavailable when the timeout passes first, or at once
        while the server is starting."""
        if self.position >= wanted:
            return
        self._starting(wanted)
        self.nudge()
        deadline = time.monotonic() + timeout
        with self._applied:
            while self.position < wanted:
                left = deadline - time.monotonic()
                if left <= 0 or self.stopping.is_set():
                    raise not_reached(self.position, wanted)
                self._applied.wait(left)

    async def wait_applied(self, wanted: int, timeout: float,
                           gone: Callable[[], Awaitable[bool]] | None = None) -> None:
        """(In the event loop) until the follower has applied `wanted`, holding no thread while it waits;
        Unavailable when the timeout passes first. `gone`: whether the client went away (checked every
        second: then the wait ends at once, as Unavailable). Refused at once while the server is starting."""
        self._starting(wanted)
        deadline = time.monotonic() + timeout
        while self.position < wanted:
            waiter = self.batch_waiter()  # taken before looking again: a batch applied meanwhile sets it
            left = deadline - time.monotonic()
            if self.position >= wanted:
                return
            if left <= 0 or self.stopping.is_set():
                raise not_reached(self.position, wanted)
            self.nudge()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), min(left, 1.0))
            if gone is not None and await gone():
                raise not_reached(self.position, wanted)

    def wait_until_fresh(self, freshness: Freshness) -> None:
        """Until the applied position is as fresh as asked (`wanted`)."""
        self.wait_for(self._wanted(freshness), freshness.timeout)

    def is_fresh(self, freshness: Freshness) -> bool:
        """Whether the applied position is already as fresh as asked (nothing to wait for)."""
        return self.position >= self._wanted(freshness)

    def _wanted(self, freshness: Freshness) -> int:
        """The position a read must see: by default the store's head when following the store, else what
        is applied."""
        if freshness.min_position is not None:
            return freshness.min_position
        return self.store_head() if self.source == "store" else self.position

    def writer_cursor(self) -> duckdb.DuckDBPyConnection:
        with self._making:
            return self.con.cursor()

    def new_cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of the server's database for a reader that keeps it (the caller closes it)."""
        with self._making:
            return self._root.cursor()

    @contextlib.contextmanager
    def read_model(self, freshness: Freshness, one_statement: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A reader cursor in a transaction of its own, once the read model is as fresh as asked
        (`wait_until_fresh`). A write command that reads it first commits what its group wrote.
        `one_statement`: the caller reads with one statement, which DuckDB runs in a transaction of its own, so
        none is begun and rolled back (two calls fewer, each a wait for the GIL on a busy server: ≈ 1.3 ms of
        a watch stream's read at 200 writes/s)."""
        self.writer.flush()
        self.wait_until_fresh(freshness)
        try:
            cursor = self._idle.get_nowait()
        except queue.Empty:
            cursor = self.new_cursor()
        if not one_statement:
            cursor.begin()
        try:
            yield cursor
        finally:
            try:
                if not one_statement:
                    cursor.rollback()
                self._idle.put(cursor)
            except duckdb.Error:  # a cursor left unusable is not reused
                cursor.close()
