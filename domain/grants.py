"""Explicit grants on one subject: a tool (by its tool key) or a namespace pattern `ns.*`."""
from __future__ import annotations

import uuid

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, TakesEffect, create, natural_id, record
from domain.errors import DuplicateGrant, UnknownGrant


def grants_key(subject: str) -> uuid.UUID:
    return natural_id("grants", subject)


def is_pattern(target: str) -> bool:
    return target.endswith("*")


class SubjectGrants(Aggregate):
    """One per subject that ever had a grant; keyed so concurrent grant changes conflict."""

    TOPIC = "Grants"

    class Event(CatalogEvent):
        TOPIC = "Grants.Event"

    class Opened(Event, Aggregate.Created):
        TOPIC = "Grants.Opened"
        subject: str

        def apply(self, grants: SubjectGrants) -> None:
            grants.subject, grants.targets = self.subject, {}

    class Added(Event, TakesEffect):
        """`target` is the canonical ID (or pattern) as granted; `tool_key` the tool it names."""

        TOPIC = "Grants.Added"
        subject: str
        target: str
        tool_key: str | None

        def apply(self, grants: SubjectGrants) -> None:
            grants.targets[self.grant_id] = self.target

        @property
        def grant_id(self) -> str:
            return self.tool_key or self.target

    class Revoked(Event, TakesEffect):
        TOPIC = "Grants.Revoked"
        subject: str
        target: str
        tool_key: str | None

        def apply(self, grants: SubjectGrants) -> None:
            grants.targets.pop(self.tool_key or self.target, None)

    def __init__(self) -> None:
        self.subject: str
        self.targets: dict[str, str]

    @classmethod
    def open(cls, subject: str, meta: Meta) -> SubjectGrants:
        return create(cls, cls.Opened, grants_key(subject), meta, subject=subject)

    def add(self, target: str, tool_key: uuid.UUID | None, meta: Meta, effective_at: str | None = None) -> None:
        grant_id = str(tool_key) if tool_key else target
        if grant_id in self.targets:
            raise DuplicateGrant(f"{self.subject} already has a grant of {target!r}", subject=self.subject,
                                 target=target)
        record(self, self.Added, meta, subject=self.subject, target=target,
               tool_key=str(tool_key) if tool_key else None, effective_at=effective_at)

    def revoke(self, target: str, tool_key: uuid.UUID | None, meta: Meta, effective_at: str | None = None) -> None:
        grant_id = str(tool_key) if tool_key else target
        if grant_id not in self.targets:
            raise UnknownGrant(f"{self.subject} has no explicit grant of {target!r}", subject=self.subject,
                               target=target, grants=sorted(self.targets.values()))
        record(self, self.Revoked, meta, subject=self.subject, target=self.targets[grant_id],
               tool_key=str(tool_key) if tool_key else None, effective_at=effective_at)
