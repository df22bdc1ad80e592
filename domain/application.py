"""The typed base of the Catalog application: aggregates read by key, each command written as one
atomic batch (at most once per idempotency key), and the stored history read in order.

Every use-case class (tools, subjects, the catalog-wide ones) builds on `CatalogApplication`."""
from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import RecordConflictError
from pydantic import BaseModel

from domain.base import Meta
from domain.errors import Conflict, IdempotencyKeyReused
from domain.history import HistoryRecord, plain_sqlite_store, read_history
from domain.idempotency import IdempotencyKey, command_digest, idempotency_key_id
from domain.kept import KeptAggregates
from domain.name import NameClaim, name_key
from domain.namespace import NamespaceClaim, namespace_key, namespace_of
from domain.naming import NamingPolicy, preset
from domain.policy import POLICY_KEY, CatalogPolicy
from domain.release import RELEASES_KEY, ReleaseTrain
from domain.tool import Tool

DEFAULT_POLICY = "tyrum"

A = TypeVar("A", bound=Aggregate)

# Commands that record no default policy on a catalog's first write: `init` records its own, and a plan
# for an empty catalog must leave the choice to the manifest it holds.
POLICY_FREE_COMMANDS = ("init", "plan", "proposal.withdraw")


class EventRef(BaseModel):
    position: int
    type: str


class WriteResult(BaseModel):
    """What a write answers. `replayed_key` is set when an idempotency key was already used for
    this very command: nothing was written, and the caller answers with the first run's events."""

    position: int | None
    events: list[EventRef]
    replayed_key: str | None = None


def _written(recordings: list[Any]) -> WriteResult:
    events = [EventRef(position=r.notification.id, type=r.notification.topic) for r in recordings]
    return WriteResult(position=max((e.position for e in events), default=None), events=events)


class Batch:
    """The aggregates one command changes, saved together atomically."""

    def __init__(self, app: CatalogApplication, meta: Meta) -> None:
        self.app = app
        self.meta = meta
        self.aggregates: list[Aggregate] = []
        self._policy: NamingPolicy | None = None
        self.default_policy: CatalogPolicy | None = None

    def add(self, *aggregates: Aggregate) -> None:
        for aggregate in aggregates:
            if aggregate not in self.aggregates:
                self.aggregates.append(aggregate)

    @property
    def policy(self) -> NamingPolicy:
        """The policy in force; an uninitialised catalog records the default in this batch."""
        if self._policy is None:
            stored = self.app.get_or_none(POLICY_KEY, CatalogPolicy)
            if stored is None:
                stored = self.default_policy = CatalogPolicy.record(preset(DEFAULT_POLICY), self.meta)
                self.aggregates.insert(0, stored)
            self._policy = stored.policy
        return self._policy

    def releases(self) -> ReleaseTrain:
        """The release train; a catalog that never published gets a new one, saved only if added."""
        train = self.app.get_or_none(RELEASES_KEY, ReleaseTrain)
        return ReleaseTrain.start(self.meta) if train is None else train

    def changes_anything(self) -> bool:
        """Whether the command changed the catalog (a default policy recorded on the way does not count)."""
        return any(a.pending_events for a in self.aggregates if a is not self.default_policy)


class _Command:
    """The aggregates one command read (kept ones, not copies: see `CatalogApplication._command`)."""

    def __init__(self) -> None:
        self.reads: list[Aggregate] = []


class CatalogApplication(Application[uuid.UUID]):
    """The event store, the aggregates read from it, the one way of writing to it, and its history."""

    def __init__(self, env: Any = None) -> None:
        super().__init__(env)
        self._one_command = threading.RLock()
        self.kept = KeptAggregates(self.repository, self.recorder)

    # -- reading aggregates -------------------------------------------------------------------
    def get_or_none(self, key: uuid.UUID, kind: type[A]) -> A | None:
        """The aggregate at `key`; natural keys carry their kind, so it is a `kind` when it exists. Inside a
        compound write, the aggregates its earlier commands changed are read as they now stand."""
        compound = self.compound_batch()
        for aggregate in compound.aggregates if compound is not None else ():
            if aggregate.id == key:
                return cast(A, aggregate)
        command = self._current_command()
        if command is not None and self.kept.enabled:
            found = self.kept.get(key)
            if found is None:
                return None
        else:
            try:
                found = self.repository.get(key, deepcopy_from_cache=command is None)
            except AggregateNotFoundError:
                return None
        if command is not None:
            command.reads.append(found)
        return cast(A, found)

    # -- one command at a time, on the aggregates kept in memory ---------------------------------
    _running = threading.local()

    def _current_command(self) -> _Command | None:
        return cast(dict[int, _Command], getattr(self._running, "commands", {})).get(id(self))

    @contextmanager
    def _command(self) -> Iterator[None]:
        """One command at a time (re-entrant: a compound's commands run inside it), reading the aggregates
        kept in memory (a server's cache) themselves, not copies: copying each one read was ≈ 30 % of a
        write's CPU (a unit with a thousand grants copied whole for each grant). The kept aggregates are
        brought up to the store once as the command starts (domain/kept.py), not each time one is read.
        What a command changed and did not save, or whose save failed, is dropped from the cache, to be
        read again from the store: nothing a failed command did is kept."""
        with self._one_command:
            if self._current_command() is not None:
                yield
                return
            if not hasattr(self._running, "commands"):
                self._running.commands = {}
            self.kept.sync()
            command = self._running.commands[id(self)] = _Command()
            try:
                yield
            finally:
                del self._running.commands[id(self)]
                self.kept.forget([a for a in command.reads if a.pending_events])

    def _save(self, *aggregates: Aggregate) -> list[Any]:
        """Save; when it fails, the command's reads are dropped from the cache (saving took their pending
        events before failing, so they no longer show what changed)."""
        try:
            return self.save(*aggregates)
        except BaseException:
            command = self._current_command()
            self.kept.forget([*aggregates, *(command.reads if command is not None else ())])
            raise

    def owner_of(self, tool_id: str) -> Tool | None:
        """The tool that owns `tool_id` as canonical ID or alias (retired ones included)."""
        claim = self.get_or_none(name_key(tool_id), NameClaim)
        return None if claim is None else self.get_or_none(claim.tool_key, Tool)

    def enter_namespace(self, batch: Batch, tool_id: str, owner: str | None) -> None:
        """Refuse `tool_id` if its namespace belongs to another owner; else a plugin, connector or image
        (`owner`) claims the namespace in this batch. Namespaces the policy reserves are not claimed."""
        namespace = namespace_of(tool_id)
        policy = batch.policy
        if namespace is None or namespace in policy.platform_namespaces or \
                any(f"{namespace}.".startswith(p) for p in policy.reserved_prefixes):
            return
        pending = [a for a in batch.aggregates if isinstance(a, NamespaceClaim) and a.namespace == namespace]
        held = pending[0] if pending else self.get_or_none(namespace_key(namespace), NamespaceClaim)
        if held is not None:
            held.refuse_unless(owner, tool_id)
        elif owner is not None:
            batch.add(NamespaceClaim.claim(namespace, owner, batch.meta))

    def policy(self) -> NamingPolicy:
        stored = self.get_or_none(POLICY_KEY, CatalogPolicy)
        return preset(DEFAULT_POLICY) if stored is None else stored.policy

    # -- writing --------------------------------------------------------------------------------
    def execute(self, command: str, args: dict[str, Any], meta: Meta,
                build: Callable[[Batch], None]) -> WriteResult:
        """Run one command: check the idempotency key, build the changes, save them atomically."""
        compound = self.compound_batch()
        if compound is not None:  # one command of several saved together: compound() saves them
            build(compound)
            return WriteResult(position=None, events=[])
        with self._command():
            return self._execute(command, args, meta, build)

    def _execute(self, command: str, args: dict[str, Any], meta: Meta, build: Callable[[Batch], None]
                 ) -> WriteResult:
        key = meta.idempotency_key
        digest = command_digest(command, args)
        if key and self.already_done(key, digest):
            return WriteResult(position=None, events=[], replayed_key=key)
        batch = Batch(self, meta)
        if command not in POLICY_FREE_COMMANDS:
            batch.policy  # noqa: B018 - a catalog's first write records the default policy, first
        build(batch)
        if not batch.changes_anything():
            return WriteResult(position=self.recorder.max_notification_id() or 0, events=[])
        if key:
            batch.aggregates.insert(0, IdempotencyKey.use(key, command, digest, meta))
        try:
            recordings = self._save(*batch.aggregates)
        except RecordConflictError as error:
            if key and self.already_done(key, digest):
                return WriteResult(position=None, events=[], replayed_key=key)
            raise Conflict("another writer changed the catalog at the same time; nothing was written, "
                           "run the command again", command=command) from error
        return _written(recordings)

    # -- several commands as one atomic write ---------------------------------------------------
    _compound = threading.local()

    def compound_batch(self) -> Batch | None:
        return self._compounds().get(id(self))

    def _compounds(self) -> dict[int, Batch]:
        if not hasattr(self._compound, "batches"):
            self._compound.batches = {}
        return cast(dict[int, Batch], self._compound.batches)

    @contextmanager
    def compound(self, meta: Meta) -> Iterator[Batch]:
        """Every command run inside builds into one batch and sees what the earlier ones changed; nothing
        is saved here: the caller saves the batch (`save_compound`) or drops it (a dry run, a rejection).
        Per thread, so a server's other requests never join it."""
        if self.compound_batch() is not None:
            raise RuntimeError("compound writes do not nest")
        with self._command():
            batch = self._compounds()[id(self)] = Batch(self, meta)
            try:
                yield batch
            finally:
                del self._compounds()[id(self)]

    def save_compound(self, batch: Batch) -> WriteResult:
        """Save a compound batch in one atomic write; a concurrent writer makes it a conflict."""
        try:
            recordings = self._save(*batch.aggregates)
        except RecordConflictError as error:
            raise Conflict("another writer changed the catalog at the same time; nothing was written, "
                           "plan again") from error
        return _written(recordings)

    def already_done(self, key: str, digest: str) -> bool:
        """Whether this very command already ran under `key`; the key used for another one is a conflict."""
        used = self.get_or_none(idempotency_key_id(key), IdempotencyKey)
        if used is None:
            return False
        if used.digest != digest:
            raise IdempotencyKeyReused(
                f"idempotency key '{key}' was already used for another command ({used.command})",
                idempotency_key=key, first_command=used.command)
        return True

    # -- the history feed -------------------------------------------------------------------------
    def history(self, after: int, limit: int, topics: tuple[str, ...] = ()) -> list[HistoryRecord]:
        """Up to `limit` stored events after position `after`, in order (only `topics`, when given)."""
        return read_history(self.recorder, self.mapper.transcoder, after, limit, topics)

    def plain_sqlite_store(self) -> tuple[str, str] | None:
        """(file, table) when the stored rows may be read and decoded directly (see domain/history.py)."""
        return plain_sqlite_store(self.recorder, self.mapper.transcoder, self.mapper.cipher, self.mapper.compressor)

    def decode_state(self, state: bytes) -> dict[str, Any]:
        """A stored event's state decoded as the store's own mapper does."""
        return cast(dict[str, Any], self.mapper.transcoder.decode(state))
