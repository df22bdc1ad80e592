"""Seals: audit checkpoints. Each records the verified chain head in the store itself, so a later
alteration of any earlier event is detected even where no read model saw the original."""
from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record

# The natural key predates the module's name; it is the stored aggregate's id, fixed forever.
SEALS_KEY = natural_id("audit", "catalog")


class SealLog(Aggregate):
    """The catalog's seals, in the order they were recorded (published names stay `Audit.*`)."""

    TOPIC = "Audit"

    class Event(CatalogEvent):
        TOPIC = "Audit.Event"

    class Started(Event, Aggregate.Created):
        TOPIC = "Audit.Started"

        def apply(self, log: SealLog) -> None:
            log.seals = []

    class Sealed(Event):
        """The chain up to `position` has head `hash` and holds `events` events."""

        TOPIC = "Audit.Sealed"
        position: int
        hash: str
        events: int

        def apply(self, log: SealLog) -> None:
            log.seals.append(self.position)

    class AlteredHistoryAccepted(Event):
        """An operator rebuilt the read model from a history that disagrees with what vouched for it (the
        hashes the old read model recorded, the seals), and accepted it, with the meta's reason: `altered`
        names each position with its old and new hash, `seals` the positions of the seals it overrides."""

        TOPIC = "Audit.AlteredHistoryAccepted"
        altered: list[dict]
        seals: list[int]

        def apply(self, log: SealLog) -> None:
            pass

    def __init__(self) -> None:
        self.seals: list[int]

    @classmethod
    def start(cls, meta: Meta) -> SealLog:
        return create(cls, cls.Started, SEALS_KEY, meta)

    def seal(self, position: int, head: str, events: int, meta: Meta) -> None:
        record(self, self.Sealed, meta, position=position, hash=head, events=events)

    def accept_altered(self, altered: list[dict], seals: list[int], meta: Meta) -> None:
        record(self, self.AlteredHistoryAccepted, meta, altered=altered, seals=seals)
