"""Who owns a tool namespace (ARCH-21, Spring Voyage): the first plugin, connector or image to register
a tool in `acme.*` owns `acme`; nobody else may register there afterwards.

One aggregate per claimed namespace, keyed by the namespace, so two writers claiming one namespace
collide as two writers claiming one tool ID do. A claim is never released.
"""
from __future__ import annotations

import uuid

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id
from domain.errors import NamespaceOwned
from domain.values import ToolSpec


def namespace_key(namespace: str) -> uuid.UUID:
    return natural_id("namespace", namespace)


def namespace_of(tool_id: str) -> str | None:
    """The first dotted segment; a single-segment ID has no namespace."""
    head, dot, _ = tool_id.partition(".")
    return head if dot else None


def plugin_owner(spec: ToolSpec) -> str | None:
    """The owner a registered tool claims its namespace for: its plugin (connectors and images claim
    through their own commands); other sources claim nothing."""
    return f"plugin:{spec.plugin}" if spec.source == "plugin" else None


class NamespaceClaim(Aggregate):
    TOPIC = "Namespace"

    class Event(CatalogEvent):
        TOPIC = "Namespace.Event"

    class Claimed(Event, Aggregate.Created):
        TOPIC = "Namespace.Claimed"
        namespace: str
        owner: str  # plugin:<name>, connector:<slug> or image:<repository>

        def apply(self, aggregate: NamespaceClaim) -> None:
            aggregate.namespace = self.namespace
            aggregate.owner = self.owner

    def __init__(self) -> None:
        self.namespace: str
        self.owner: str

    @classmethod
    def claim(cls, namespace: str, owner: str, meta: Meta) -> NamespaceClaim:
        return create(cls, cls.Claimed, namespace_key(namespace), meta, namespace=namespace, owner=owner)

    def refuse_unless(self, owner: str | None, tool_id: str) -> None:
        if owner == self.owner:
            return
        who = owner or "a tool of another source"
        raise NamespaceOwned(
            f"namespace '{self.namespace}.' belongs to {self.owner}, which registered in it first; {who} may "
            f"not register {tool_id!r} there; choose an ID in its own namespace",
            tool_id=tool_id, namespace=self.namespace, owner=self.owner, requested_by=owner)
