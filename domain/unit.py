"""A unit: a subject that nests (a parent unit), to which connectors are bound; its agents inherit
everything granted to it and its ancestors — except the tools of an image the unit runs, which are the
unit's alone (Spring Voyage: image tools belong to the subject that runs the image).

Its events' stored names are their TOPIC ("Unit.Created"), not their class path: moving the class from
domain/subjects.py changed nothing stored (tests/unit/test_stored_events.py loads the old rows)."""
from __future__ import annotations

import uuid

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, TakesEffect, create, natural_id, record
from domain.errors import AlreadyBound, NotBound


def unit_key(name: str) -> uuid.UUID:
    return natural_id("unit", name)


class Unit(Aggregate):
    TOPIC = "Unit"

    class Event(CatalogEvent):
        TOPIC = "Unit.Event"

    class Created(Event, Aggregate.Created):
        TOPIC = "Unit.Created"
        name: str
        parent: str | None

        def apply(self, unit: Unit) -> None:
            unit.name, unit.parent, unit.bindings = self.name, self.parent, set()
            unit.image, unit.image_tools = None, []

    class ConnectorBound(Event, TakesEffect):
        TOPIC = "Unit.ConnectorBound"
        unit: str
        slug: str

        def apply(self, unit: Unit) -> None:
            unit.bindings.add(self.slug)

    class ConnectorUnbound(Event, TakesEffect):
        TOPIC = "Unit.ConnectorUnbound"
        unit: str
        slug: str

        def apply(self, unit: Unit) -> None:
            unit.bindings.discard(self.slug)

    class ImageDeclared(Event):
        """The image the unit runs and the tools it declares; a later one replaces it (image rotation)."""

        TOPIC = "Unit.ImageDeclared"
        unit: str
        image: str
        tools: list[str]
        tool_keys: list[str]

        def apply(self, unit: Unit) -> None:
            unit.image, unit.image_tools = self.image, list(self.tools)

    def __init__(self) -> None:
        self.name: str
        self.parent: str | None
        self.bindings: set[str]
        self.image: str | None
        self.image_tools: list[str]

    @classmethod
    def create(cls, name: str, parent: str | None, meta: Meta) -> Unit:
        return create(cls, cls.Created, unit_key(name), meta, name=name, parent=parent)

    def bind(self, slug: str, meta: Meta, effective_at: str | None = None) -> None:
        if slug in self.bindings:
            raise AlreadyBound(f"connector '{slug}' is already bound to unit '{self.name}'",
                               connector=slug, unit=self.name)
        record(self, self.ConnectorBound, meta, unit=self.name, slug=slug, effective_at=effective_at)

    def unbind(self, slug: str, meta: Meta, effective_at: str | None = None) -> None:
        if slug not in self.bindings:
            raise NotBound(f"connector '{slug}' is not bound to unit '{self.name}'", connector=slug,
                           unit=self.name)
        record(self, self.ConnectorUnbound, meta, unit=self.name, slug=slug, effective_at=effective_at)

    def declare_image(self, image: str, tools: list[str], tool_keys: list[str], meta: Meta) -> None:
        record(self, self.ImageDeclared, meta, unit=self.name, image=image, tools=tools, tool_keys=tool_keys)
