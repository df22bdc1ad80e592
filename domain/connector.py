"""Connectors: a tool namespace and the tools it ships; binding one to a unit grants `<namespace>.*`."""
from __future__ import annotations

import uuid

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id


def connector_key(slug: str) -> uuid.UUID:
    return natural_id("connector", slug)


class Connector(Aggregate):
    TOPIC = "Connector"

    class Event(CatalogEvent):
        TOPIC = "Connector.Event"

    class Registered(Event, Aggregate.Created):
        TOPIC = "Connector.Registered"
        slug: str
        namespace: str
        tools: list[str]

        def apply(self, connector: Connector) -> None:
            connector.slug, connector.namespace, connector.tools = self.slug, self.namespace, list(self.tools)

    def __init__(self) -> None:
        self.slug: str
        self.namespace: str
        self.tools: list[str]

    @classmethod
    def register(cls, slug: str, namespace: str, tools: list[str], meta: Meta) -> Connector:
        return create(cls, cls.Registered, connector_key(slug), meta, slug=slug, namespace=namespace,
                      tools=tools)
