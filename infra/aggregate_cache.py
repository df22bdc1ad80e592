"""How a long-running process's commands read aggregates (the application's `AggregateReads`, given by
infra/wiring.py to a server's catalog): from eventsourcing's aggregate cache, known current through a store
position, so that a command reads them without asking the store about each one.

eventsourcing's own way to keep a cached aggregate current is to read the events stored after it each time
it is read (fast-forward): a server's grant read five aggregates that way, five transactions of the store
per write besides its save, each giving up the GIL and waiting to get it back while the server is busy.
Instead, each command starts with one read of the store's notification log since the position the cached
aggregates are known current through: every aggregate an event after it changed is dropped (unless it is
cached at that very version, as a save by this process leaves it), and from then on the command reads
cached aggregates as they are. Writes by other processes are seen exactly as before: at the start of the
next command. An aggregate changed by another process between that read and the command's save is refused
by the save (the store's version check), as it always was.

Commands run one at a time (re-entrant: a compound's commands run inside it) and read the cached aggregates
themselves, not copies: copying each one read was ≈ 30 % of a write's CPU (a unit with a thousand grants
copied whole for each grant). What a command changed and did not save, or whose save failed, is dropped
from the cache, to be read again from the store: nothing a failed command did stays cached. Reads outside a
command (another thread's) get a copy brought up to the store, as eventsourcing gives them.

Keys read and found absent are remembered too (a grant's idempotency key, a subject's first grants), until
an event of theirs shows up in the log.
"""
from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application, LRUCache, Repository
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import ApplicationRecorder

# The notifications read at most at the start of a command: past that many (another process wrote a lot
# meanwhile), every cached aggregate is dropped rather than reconciled one by one.
SYNC_LIMIT = 500
# Absent keys remembered at most; past it they are forgotten all at once (each costs one read to learn again).
ABSENT_LIMIT = 100_000


class AggregateCache:
    """The application's `AggregateReads` over its repository's cache (AGGREGATE_CACHE_MAXSIZE set)."""

    def __init__(self, repository: Repository, recorder: ApplicationRecorder) -> None:
        assert repository.cache is not None, "the application was built without an aggregate cache"
        self.repository, self.recorder = repository, recorder
        self.through: int | None = None  # None: not known current through any position yet
        self._absent: set[uuid.UUID] = set()
        self._one_command = threading.RLock()
        self._runner: int | None = None  # the thread running a command
        self._depth = 0  # commands nested in the running one (a compound's)
        self._reads: list[Aggregate] = []  # the cached aggregates the running command read

    @classmethod
    def of(cls, application: Application[Any]) -> AggregateCache:
        return cls(application.repository, application.recorder)

    # -- AggregateReads ------------------------------------------------------------------------------
    @contextmanager
    def command(self) -> Iterator[None]:
        with self._one_command:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._sync()
            self._runner, self._depth, self._reads = threading.get_ident(), 1, []
            try:
                yield
            finally:
                reads, self._runner, self._depth, self._reads = self._reads, None, 0, []
                self._forget([a for a in reads if a.pending_events])

    def get(self, key: uuid.UUID) -> Aggregate | None:
        if self._runner != threading.get_ident():
            try:
                return self.repository.get(key)
            except AggregateNotFoundError:
                return None
        found = self._cached(key)
        if found is not None:
            self._reads.append(found)
        return found

    def save_failed(self, aggregates: Sequence[Aggregate]) -> None:
        """Saving took their pending events before failing, so they no longer show what changed: the
        running command's reads go too."""
        running = self._reads if self._runner == threading.get_ident() else []
        self._forget([*aggregates, *running])

    def forget_all(self) -> None:
        """What is cached may show changes the store never recorded (a commit that failed)."""
        self._drop_all(self.recorder.max_notification_id() or 0)

    # -- the cache -------------------------------------------------------------------------------------
    def _sync(self) -> None:
        """Bring what is cached up to the store's notification log (one read); as a command starts."""
        if self.through is None:
            self._drop_all(self.recorder.max_notification_id() or 0)
            return
        changed = self.recorder.select_notifications(start=self.through + 1, limit=SYNC_LIMIT)
        if len(changed) == SYNC_LIMIT:
            self._drop_all(self.recorder.max_notification_id() or 0)
            return
        cache = self.repository.cache
        for notification in changed:
            key = notification.originator_id
            self._absent.discard(key)
            try:
                cached = cache.get(key)
            except KeyError:
                continue
            if cached.version < notification.originator_version:
                cache.get(key, evict=True)
        if changed:
            self.through = changed[-1].id

    def _cached(self, key: uuid.UUID) -> Aggregate | None:
        """The cached aggregate at `key` as it is (read from the store and cached when not cached yet); None
        when there is none."""
        cache = self.repository.cache
        try:
            return cache.get(key)
        except KeyError:
            if key in self._absent:
                return None
        try:
            return self.repository.get(key, deepcopy_from_cache=False)
        except AggregateNotFoundError:
            if len(self._absent) >= ABSENT_LIMIT:
                self._absent = set()
            self._absent.add(key)
            return None

    def _forget(self, aggregates: Sequence[Aggregate]) -> None:
        """Drop these from the cache: to be read again from the store."""
        cache = self.repository.cache
        for aggregate in aggregates:
            try:
                cache.get(aggregate.id, evict=True)
            except KeyError:
                pass

    def _drop_all(self, through: int) -> None:
        """Cache nothing, known current through `through` (a fresh cache: LRUCache.clear keeps its entries)."""
        cache: Any = self.repository.cache
        self.repository.cache = LRUCache(maxsize=cache.maxsize)
        self._absent = set()
        self.through = through
