"""Seals: the chain head recorded in the store itself, so a later alteration of any earlier event is
detected even where no read model saw the original."""
from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record

AUDIT_KEY = natural_id("audit", "catalog")


class AuditLog(Aggregate):
    TOPIC = "Audit"

    class Event(CatalogEvent):
        TOPIC = "Audit.Event"

    class Started(Event, Aggregate.Created):
        TOPIC = "Audit.Started"

        def apply(self, log: AuditLog) -> None:
            log.seals = []

    class Sealed(Event):
        """The chain up to `position` has head `hash` and holds `events` events."""

        TOPIC = "Audit.Sealed"
        position: int
        hash: str
        events: int

        def apply(self, log: AuditLog) -> None:
            log.seals.append(self.position)

    def __init__(self) -> None:
        self.seals: list[int]

    @classmethod
    def start(cls, meta: Meta) -> AuditLog:
        return create(cls, cls.Started, AUDIT_KEY, meta)

    def seal(self, position: int, head: str, events: int, meta: Meta) -> None:
        record(self, self.Sealed, meta, position=position, hash=head, events=events)
