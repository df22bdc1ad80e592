"""Units and agents: the subjects that see an effective tool set."""
from __future__ import annotations

from typing import Literal

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, TakesEffect, create, natural_id, record
from domain.errors import AlreadyBound, NotBound
from domain.grammar import SubjectKind, parse_effective_at, parse_subject  # noqa: F401 (importers)

StateMode = Literal["stateful", "stateless"]


def unit_key(name: str):  # noqa: ANN201 - a UUID
    return natural_id("unit", name)


def agent_key(name: str):  # noqa: ANN201 - a UUID
    return natural_id("agent", name)


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

    def __init__(self) -> None:
        self.name: str
        self.parent: str | None
        self.bindings: set[str]

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


class Agent(Aggregate):
    TOPIC = "Agent"

    class Event(CatalogEvent):
        TOPIC = "Agent.Event"

    class Created(Event, Aggregate.Created):
        TOPIC = "Agent.Created"
        name: str
        unit: str
        state_mode: str

        def apply(self, agent: Agent) -> None:
            agent.name, agent.unit, agent.state_mode = self.name, self.unit, self.state_mode
            agent.allowlist, agent.image, agent.image_tools = None, None, []

    class AllowlistSet(Event):
        TOPIC = "Agent.AllowlistSet"
        agent: str
        patterns: list[str]

        def apply(self, agent: Agent) -> None:
            agent.allowlist = list(self.patterns)

    class AllowlistCleared(Event):
        TOPIC = "Agent.AllowlistCleared"
        agent: str

        def apply(self, agent: Agent) -> None:
            agent.allowlist = None

    class ImageDeclared(Event):
        """The image's declared tools replace the previous declaration (image rotation)."""

        TOPIC = "Agent.ImageDeclared"
        agent: str
        image: str
        tools: list[str]
        tool_keys: list[str]

        def apply(self, agent: Agent) -> None:
            agent.image, agent.image_tools = self.image, list(self.tools)

    def __init__(self) -> None:
        self.name: str
        self.unit: str
        self.state_mode: str
        self.allowlist: list[str] | None
        self.image: str | None
        self.image_tools: list[str]

    @classmethod
    def create(cls, name: str, unit: str, state_mode: StateMode, meta: Meta) -> Agent:
        return create(cls, cls.Created, agent_key(name), meta, name=name, unit=unit, state_mode=state_mode)

    def set_allowlist(self, patterns: list[str], meta: Meta) -> None:
        record(self, self.AllowlistSet, meta, agent=self.name, patterns=patterns)

    def clear_allowlist(self, meta: Meta) -> None:
        record(self, self.AllowlistCleared, meta, agent=self.name)

    def declare_image(self, image: str, tools: list[str], tool_keys: list[str], meta: Meta) -> None:
        record(self, self.ImageDeclared, meta, agent=self.name, image=image, tools=tools, tool_keys=tool_keys)
