"""The typed base of the Catalog application: aggregates read by key, each command written as one
atomic batch (at most once per idempotency key), and the stored history read in order.

How a command reads aggregates is a seam (`AggregateReads`): by default a copy from the store each time;
a long-running process gives one of its own (a server's cache: infra/aggregate_cache.py).

Every use-case class (tools, subjects, the catalog-wide ones) builds on `CatalogApplication`."""
from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol, TypeVar, cast

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import RecordConflictError
from pydantic import BaseModel

from domain.base import Meta
from domain.errors import Conflict, IdempotencyKeyReused
from domain.history import HistoryRecord, plain_sqlite_store, read_history
from domain.idempotency import IdempotencyKey, command_digest, idempotency_key_id, legacy_key_id
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


class AggregateReads(Protocol):
    """Where the application's commands read the aggregates they change."""

    def command(self) -> AbstractContextManager[None]:
        """The span of one command (re-entrant: a compound's commands run inside it)."""

    def get(self, key: uuid.UUID) -> Aggregate | None:
        """The aggregate at `key`, None when there is none."""

    def save_failed(self, aggregates: Sequence[Aggregate]) -> None:
        """Saving these failed (their pending events were taken): what was read must not be trusted."""

    def forget_all(self) -> None:
        """The store recorded none of what the commands since the last commit saved (a failed COMMIT)."""


class StoreReads:
    """Each aggregate read from the store, a fresh copy each time: nothing outlives a command."""

    def __init__(self, application: Application[uuid.UUID]) -> None:
        self._repository = application.repository

    def command(self) -> AbstractContextManager[None]:
        return nullcontext()

    def get(self, key: uuid.UUID) -> Aggregate | None:
        try:
            return cast(Aggregate, self._repository.get(key))
        except AggregateNotFoundError:
            return None

    def save_failed(self, aggregates: Sequence[Aggregate]) -> None:
        pass

    def forget_all(self) -> None:
        pass


class CatalogApplication(Application[uuid.UUID]):
    """The event store, the aggregates read from it, the one way of writing to it, and its history."""

    def __init__(self, env: Any = None,
                 reads: Callable[[Application[uuid.UUID]], AggregateReads] = StoreReads) -> None:
        """`reads`: how commands read aggregates, built on this application (its repository and recorder)."""
        super().__init__(env)
        self.reads = reads(self)
        self._compound = threading.local()  # .batch: the compound batch its thread is building

    # -- reading aggregates -------------------------------------------------------------------
    def get_or_none(self, key: uuid.UUID, kind: type[A]) -> A | None:
        """The aggregate at `key`; natural keys carry their kind, so it is a `kind` when it exists. Inside a
        compound write, the aggregates its earlier commands changed are read as they now stand."""
        compound = self.compound_batch()
        for aggregate in compound.aggregates if compound is not None else ():
            if aggregate.id == key:
                return cast(A, aggregate)
        return cast(A | None, self.reads.get(key))

    def _save(self, *aggregates: Aggregate) -> list[Any]:
        try:
            return self.save(*aggregates)
        except BaseException:
            self.reads.save_failed(aggregates)
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
        with self.reads.command():
            return self._execute(command, args, meta, build)

    def _execute(self, command: str, args: dict[str, Any], meta: Meta, build: Callable[[Batch], None]
                 ) -> WriteResult:
        key = meta.idempotency_key
        digest = command_digest(command, args)
        if key and self.already_done(key, meta.actor, digest):
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
            if key and self.already_done(key, meta.actor, digest):
                return WriteResult(position=None, events=[], replayed_key=key)
            raise Conflict("another writer changed the catalog at the same time; nothing was written, "
                           "run the command again", command=command) from error
        return _written(recordings)

    # -- several commands as one atomic write ---------------------------------------------------
    def compound_batch(self) -> Batch | None:
        """The compound batch this thread is building, if any."""
        return cast(Batch | None, getattr(self._compound, "batch", None))

    @contextmanager
    def compound(self, meta: Meta) -> Iterator[Batch]:
        """Every command run inside builds into one batch and sees what the earlier ones changed; nothing
        is saved here: the caller saves the batch (`save_compound`) or drops it (a dry run, a rejection).
        Per thread, so a server's other requests never join it."""
        if self.compound_batch() is not None:
            raise RuntimeError("compound writes do not nest")
        with self.reads.command():
            batch = self._compound.batch = Batch(self, meta)
            try:
                yield batch
            finally:
                self._compound.batch = None

    def save_compound(self, batch: Batch) -> WriteResult:
        """Save a compound batch in one atomic write; a concurrent writer makes it a conflict."""
        try:
            recordings = self._save(*batch.aggregates)
        except RecordConflictError as error:
            raise Conflict("another writer changed the catalog at the same time; nothing was written, "
                           "plan again") from error
        return _written(recordings)

    def already_done(self, key: str, actor: str, digest: str) -> bool:
        """Whether this very command already ran under `actor`'s `key`; the key used for another one is a
        conflict. Another actor's key is not this one's (a key stored before keys belonged to actors
        counts for the actor its events name)."""
        used = self.get_or_none(idempotency_key_id(key, actor), IdempotencyKey)
        if used is None:
            used = self.get_or_none(legacy_key_id(key), IdempotencyKey)
            if used is None or used.actor != actor:
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
