"""The catalog's schema compatibility mode (Confluent Schema Registry's idea): how a tool's input schema may
change (`tool update --schema`), recorded in the history like the naming policy.

Until a mode is recorded the catalog uses `backward`, as the Schema Registry does: a call an agent could make
yesterday still validates today, which is what the callers of a published tool rely on."""
from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.schema_compat import Mode

COMPATIBILITY_KEY = natural_id("compatibility", "catalog")
DEFAULT_MODE: Mode = "backward"


class SchemaCompatibility(Aggregate):
    """One per catalog; started by the first `catalog compatibility` command."""

    TOPIC = "Compatibility"

    class Event(CatalogEvent):
        TOPIC = "Compatibility.Event"

    class ModeSet(Event):
        TOPIC = "Compatibility.ModeSet"
        mode: str

        def apply(self, aggregate: SchemaCompatibility) -> None:
            aggregate.mode = self.mode

    class Started(Event, Aggregate.Created):
        TOPIC = "Compatibility.Started"
        mode: str

        def apply(self, aggregate: SchemaCompatibility) -> None:
            aggregate.mode = self.mode

    def __init__(self) -> None:
        self.mode: str

    @classmethod
    def start(cls, mode: Mode, meta: Meta) -> SchemaCompatibility:
        return create(cls, cls.Started, COMPATIBILITY_KEY, meta, mode=mode)

    def set_mode(self, mode: Mode, meta: Meta) -> None:
        record(self, self.ModeSet, meta, mode=mode)
