"""The Catalog application: every use case that changes the catalog."""
from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import RecordConflictError
from pydantic import BaseModel

from domain.audit import AUDIT_KEY, AuditLog
from domain.base import Meta
from domain.errors import AliasConflict, Conflict, DuplicateTool, IdempotencyKeyReused, IntegrityFailure, \
    NotAnAlias, PolicyAlreadySet, UnknownTool
from domain.idempotency import IdempotencyKey, command_digest, idempotency_key_id
from domain.name import NameClaim, name_key
from domain.naming import NamingPolicy, preset
from domain.policy import POLICY_KEY, CatalogPolicy
from domain.release import RELEASES_KEY, ReleaseTrain
from domain.schema_check import schema_problems
from domain.subject_cases import SubjectUseCases
from domain.tool import Tool
from domain.values import ToolSpec

DEFAULT_POLICY = "tyrum"


class EventRef(BaseModel):
    position: int
    type: str


class WriteResult(BaseModel):
    """What a write answers. `replayed_key` is set when an idempotency key was already used for
    this very command: nothing was written, and the caller answers with the first run's events."""

    position: int | None
    events: list[EventRef]
    replayed_key: str | None = None


class Batch:
    """The aggregates one command changes, saved together atomically."""

    def __init__(self, catalog: Catalog, meta: Meta) -> None:
        self.catalog = catalog
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
            stored = self.catalog.get_or_none(POLICY_KEY)
            if stored is None:
                stored = self.default_policy = CatalogPolicy.record(preset(DEFAULT_POLICY), self.meta)
                self.aggregates.insert(0, stored)
            self._policy = stored.policy
        return self._policy

    def releases(self) -> ReleaseTrain:
        """The release train; a catalog that never published gets a new one, saved only if added."""
        train = self.catalog.get_or_none(RELEASES_KEY)
        return ReleaseTrain.start(self.meta) if train is None else train


class Catalog(SubjectUseCases, Application[uuid.UUID]):
    name = "Catalog"

    # -- reading aggregates -------------------------------------------------------------------
    def get_or_none(self, key: uuid.UUID) -> Any:
        try:
            return self.repository.get(key)
        except AggregateNotFoundError:
            return None

    def owner_of(self, tool_id: str) -> Tool | None:
        """The tool that owns `tool_id` as canonical ID or alias (retired ones included)."""
        claim = self.get_or_none(name_key(tool_id))
        return None if claim is None else self.repository.get(claim.tool_key)

    def policy(self) -> NamingPolicy:
        stored = self.get_or_none(POLICY_KEY)
        return preset(DEFAULT_POLICY) if stored is None else stored.policy

    # -- writing --------------------------------------------------------------------------------
    def execute(self, command: str, args: dict[str, Any], meta: Meta,
                build: Callable[[Batch], None]) -> WriteResult:
        """Run one command: check the idempotency key, build the changes, save them atomically."""
        key = meta.idempotency_key
        digest = command_digest(command, args)
        if key and self._already_done(key, digest):
            return WriteResult(position=None, events=[], replayed_key=key)
        batch = Batch(self, meta)
        if command != "init":
            batch.policy  # noqa: B018 - a catalog's first write records the default policy, first
        build(batch)
        if not any(a.pending_events for a in batch.aggregates if a is not batch.default_policy):
            return WriteResult(position=self.recorder.max_notification_id() or 0, events=[])
        if key:
            batch.aggregates.insert(0, IdempotencyKey.use(key, command, digest, meta))
        try:
            recordings = self.save(*batch.aggregates)
        except RecordConflictError as error:
            if key and self._already_done(key, digest):
                return WriteResult(position=None, events=[], replayed_key=key)
            raise Conflict("another writer changed the catalog at the same time; nothing was written, "
                           "run the command again", command=command) from error
        events = [EventRef(position=r.notification.id, type=r.notification.topic) for r in recordings]
        return WriteResult(position=max((e.position for e in events), default=None), events=events)

    def _already_done(self, key: str, digest: str) -> bool:
        used = self.get_or_none(idempotency_key_id(key))
        if used is None:
            return False
        if used.digest != digest:
            raise IdempotencyKeyReused(
                f"idempotency key '{key}' was already used for another command ({used.command})",
                idempotency_key=key, first_command=used.command)
        return True

    # -- use cases --------------------------------------------------------------------------------
    def init(self, policy: NamingPolicy, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            stored = self.get_or_none(POLICY_KEY)
            if stored is not None and stored.policy != policy:
                raise PolicyAlreadySet(
                    f"this catalog already uses the naming policy '{stored.policy.name}'; a catalog's "
                    "naming policy cannot change", current=stored.policy.name, requested=policy.name)
            if stored is None:
                batch.add(CatalogPolicy.record(policy, meta))
        return self.execute("init", {"policy": policy.model_dump(mode="json")}, meta, build)

    def publish_release(self, version: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            train = batch.releases()
            train.publish(version, meta)
            batch.add(train)
        return self.execute("release.publish", {"version": version}, meta, build)

    def register_tool(self, tool_id: str, spec: ToolSpec, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            batch.policy.check_tool_id(tool_id, spec.source)
            self._require_free(tool_id, as_what="a tool")
            checked = spec.with_family(tool_id).model_copy(
                update={"schema_valid": spec.input_schema is None or not schema_problems(spec.input_schema)})
            tool = Tool.register(tool_id, checked, batch.releases().latest, meta)
            batch.add(tool, NameClaim.claim(tool_id, tool.id, meta))
        return self.execute("tool.register", {"tool_id": tool_id, "spec": spec.model_dump(mode="json")},
                            meta, build)

    def rename_tool(self, old_id: str, new_id: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.canonical_tool(old_id)
            if new_id == old_id:
                raise DuplicateTool(f"'{old_id}' is already the canonical ID of this tool", tool_id=old_id)
            batch.policy.check_tool_id(new_id, tool.spec.source)
            owner = self.owner_of(new_id)
            promoting_own_alias = (owner is not None and owner.id == tool.id
                                   and tool.aliases.get(new_id) is not None
                                   and tool.aliases[new_id].lifecycle != "retired")
            if not promoting_own_alias:
                self._require_free(new_id, as_what="the new canonical ID")
            tool.rename(new_id, batch.releases().latest, meta)
            batch.add(tool)
            if not promoting_own_alias:
                batch.add(NameClaim.claim(new_id, tool.id, meta))
        return self.execute("tool.rename", {"old": old_id, "new": new_id}, meta, build)

    def add_alias(self, canonical_id: str, alias: str, shim: bool, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.canonical_tool(canonical_id)
            batch.policy.check_alias_id(alias, tool.spec.source)
            self._require_free(alias, as_what="an alias")
            tool.add_alias(alias, shim, meta)
            batch.add(tool, NameClaim.claim(alias, tool.id, meta))
        return self.execute("alias.add", {"canonical": canonical_id, "alias": alias, "shim": shim}, meta,
                            build)

    def deprecate_alias(self, alias: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.alias_owner(alias)
            tool.deprecate_alias(alias, meta)
            batch.add(tool)
        return self.execute("alias.deprecate", {"alias": alias}, meta, build)

    def record_milestone(self, alias: str, milestone: str, release: str, evidence: str | None,
                         meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.alias_owner(alias)
            published = batch.releases().require(release)
            tool.record_milestone(alias, milestone, published, evidence, meta)
            batch.add(tool)
        args = {"alias": alias, "milestone": milestone, "release": release, "evidence": evidence}
        return self.execute("alias.milestone", args, meta, build)

    def record_step(self, alias: str, step: int, evidence: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.alias_owner(alias)
            tool.record_step(alias, step, evidence, meta)
            batch.add(tool)
        return self.execute("alias.step", {"alias": alias, "step": step, "evidence": evidence}, meta, build)

    def retire_alias(self, alias: str, release: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.alias_owner(alias)
            train = batch.releases()
            published = train.require(release)
            tool.retire_alias(alias, published, train.first_after(tool.canonical_since), meta)
            batch.add(tool)
        return self.execute("alias.retire", {"alias": alias, "release": release}, meta, build)

    def seal(self, position: int, head: str, events: int, meta: Meta) -> WriteResult:
        """Record the verified chain head (`audit seal`)."""
        def build(batch: Batch) -> None:
            log = self.get_or_none(AUDIT_KEY) or AuditLog.start(meta)
            log.seal(position, head, events, meta)
            batch.add(log)
        return self.execute("audit.seal", {"position": position, "hash": head}, meta, build)

    # -- lookups that reject ----------------------------------------------------------------------
    def canonical_tool(self, tool_id: str) -> Tool:
        tool = self.owner_of(tool_id)
        if tool is None:
            raise UnknownTool(f"no tool '{tool_id}' in the catalog", tool_id=tool_id)
        if tool.tool_id != tool_id:
            raise UnknownTool(f"'{tool_id}' is not a canonical ID; it is an alias of '{tool.tool_id}'",
                              tool_id=tool_id, canonical_id=tool.tool_id)
        return tool

    def alias_owner(self, alias: str) -> Tool:
        tool = self.owner_of(alias)
        if tool is None:
            raise UnknownTool(f"no alias '{alias}' in the catalog", tool_id=alias)
        if tool.tool_id == alias:
            raise NotAnAlias(f"'{alias}' is a canonical ID, not an alias", tool_id=alias)
        return tool

    def _require_free(self, tool_id: str, as_what: str) -> None:
        owner = self.owner_of(tool_id)
        if owner is None:
            return
        if owner.tool_id == tool_id:
            if as_what in ("a tool", "the new canonical ID"):
                raise DuplicateTool(f"tool '{tool_id}' is already registered", tool_id=tool_id)
            raise AliasConflict(f"'{tool_id}' is already the canonical ID of a tool and cannot be {as_what}",
                                tool_id=tool_id, canonical_id=tool_id)
        lifecycle = owner.aliases[tool_id].lifecycle
        raise AliasConflict(
            f"'{tool_id}' is already {'a retired (reserved)' if lifecycle == 'retired' else 'an'} alias of "
            f"'{owner.tool_id}' and cannot be {as_what}",
            tool_id=tool_id, canonical_id=owner.tool_id, lifecycle=lifecycle)


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """One stored event as the store holds it (its original class version, not upcast)."""

    position: int
    originator_id: str
    originator_version: int
    topic: str
    state: dict[str, Any]


def _read_history(catalog: Catalog, after: int, limit: int, topics: tuple[str, ...] = ()
                  ) -> list[HistoryRecord]:
    """Stored events after a position, in order; an event that no longer decodes is an integrity failure."""
    notifications = catalog.recorder.select_notifications(start=after + 1, limit=limit, topics=topics)
    decode = catalog.mapper.transcoder.decode
    records = []
    for n in notifications:
        try:
            state = decode(n.state)
        except Exception as error:  # any decoding failure means the stored bytes were altered
            raise IntegrityFailure(f"the stored event at position {n.id} no longer decodes: {error}",
                                   position=n.id) from error
        records.append(HistoryRecord(n.id, str(n.originator_id), n.originator_version, n.topic, state))
    return records


Catalog.history = _read_history  # type: ignore[attr-defined]
