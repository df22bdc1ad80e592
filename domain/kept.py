"""The aggregates a long-running process keeps in memory (eventsourcing's aggregate cache), known current
through a store position, so that a command reads them without asking the store about each one.

eventsourcing's own way to keep a cached aggregate current is to read the events stored after it each time
it is read (fast-forward): a server's grant read five aggregates that way, five transactions of the store
per write besides its save, each giving up the GIL and waiting to get it back while the server is busy.
Instead, each command starts with one read of the store's notification log since the position the kept
aggregates are known current through: every aggregate an event after it changed is dropped (unless it is
kept at that very version, as a save by this process leaves it), and from then on the command reads kept
aggregates as they are. Writes by other processes are seen exactly as before: at the start of the next
command. An aggregate changed by another process between that read and the command's save is refused by
the save (the store's version check), as it always was.

Keys read and found absent are remembered too (a grant's idempotency key, a subject's first grants), until
an event of theirs shows up in the log.
"""
from __future__ import annotations

import uuid
from typing import Any

from eventsourcing.application import AggregateNotFoundError, LRUCache, Repository
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import ApplicationRecorder

# The notifications read at most at the start of a command: past that many (another process wrote a lot
# meanwhile), every kept aggregate is dropped rather than reconciled one by one.
SYNC_LIMIT = 500
# Absent keys remembered at most; past it they are forgotten all at once (each costs one read to learn again).
ABSENT_LIMIT = 100_000


class KeptAggregates:
    def __init__(self, repository: Repository, recorder: ApplicationRecorder) -> None:
        self.repository, self.recorder = repository, recorder
        self.through: int | None = None  # None: not known current through any position yet
        self._absent: set[uuid.UUID] = set()

    @property
    def enabled(self) -> bool:
        return self.repository.cache is not None

    def sync(self) -> None:
        """Bring what is kept up to the store's notification log (one read); called as a command starts.
        Nothing to do where nothing is kept (the command line's catalog)."""
        if not self.enabled:
            return
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
                kept = cache.get(key)
            except KeyError:
                continue
            if kept.version < notification.originator_version:
                cache.get(key, evict=True)
        if changed:
            self.through = changed[-1].id

    def get(self, key: uuid.UUID) -> Aggregate | None:
        """The kept aggregate at `key` as it is (read from the store and kept when not kept yet); None when
        there is none."""
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

    def forget(self, aggregates: list[Aggregate]) -> None:
        """Drop these from what is kept: to be read again from the store."""
        cache = self.repository.cache
        for aggregate in aggregates if cache is not None else ():
            try:
                cache.get(aggregate.id, evict=True)
            except KeyError:
                pass

    def drop_all(self) -> None:
        """Keep nothing: what is kept may show changes the store never recorded (a commit that failed)."""
        if self.enabled:
            self._drop_all(self.recorder.max_notification_id() or 0)

    def _drop_all(self, through: int) -> None:
        """Keep nothing, known current through `through` (a fresh cache: LRUCache.clear keeps its entries)."""
        cache: Any = self.repository.cache
        self.repository.cache = LRUCache(maxsize=cache.maxsize)
        self._absent = set()
        self.through = through
