"""One aggregate per tool ID ever used: the lock that keeps IDs unique across writers.

A claim is never released: a retired alias stays reserved (a tombstone) for its tool.
"""
from __future__ import annotations

import uuid

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id


def name_key(tool_id: str) -> uuid.UUID:
    return natural_id("name", tool_id)


class NameClaim(Aggregate):
    TOPIC = "Name"

    class Event(CatalogEvent):
        TOPIC = "Name.Event"

    class Claimed(Event, Aggregate.Created):
        TOPIC = "Name.Claimed"
        name: str
        tool_key: str

        def apply(self, aggregate: NameClaim) -> None:
            aggregate.name = self.name
            aggregate.tool_key = uuid.UUID(self.tool_key)

    def __init__(self) -> None:
        self.name: str
        self.tool_key: uuid.UUID

    @classmethod
    def claim(cls, name: str, tool_key: uuid.UUID, meta: Meta) -> NameClaim:
        return create(cls, cls.Claimed, name_key(name), meta, name=name, tool_key=str(tool_key))
