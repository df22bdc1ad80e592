"""An agent: a subject of one unit, with its state mode, its allowlist and its image's declared tools.

Its events' stored names are their TOPIC ("Agent.Created"), not their class path: moving the class from
domain/subjects.py changed nothing stored (tests/unit/test_stored_events.py loads the old rows)."""
from __future__ import annotations

import uuid
from typing import Literal

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record

StateMode = Literal["stateful", "stateless"]


def agent_key(name: str) -> uuid.UUID:
    return natural_id("agent", name)


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
