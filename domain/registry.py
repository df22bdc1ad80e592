"""The published names of stored events, and upcasting of old stored forms to the current one."""
from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate

from domain.agent import Agent
from domain.compatibility import SchemaCompatibility
from domain.connector import Connector
from domain.grants import SubjectGrants
from domain.idempotency import IdempotencyKey
from domain.mcp_servers import McpServer
from domain.name import NameClaim
from domain.namespace import NamespaceClaim
from domain.nodes import Node
from domain.policy import CatalogPolicy
from domain.proposal import Proposal
from domain.release import ReleaseTrain
from domain.routing import RouteRules
from domain.seals import SealLog
from domain.secret_aliases import SecretAliases
from domain.secret_refs import SecretRef
from domain.tool import Tool
from domain.unit import Unit

AGGREGATES: tuple[type[Aggregate], ...] = (CatalogPolicy, ReleaseTrain, Tool, NameClaim, IdempotencyKey, Unit, Agent,
                                           Connector, SubjectGrants, SealLog, NamespaceClaim, RouteRules, Node,
                                           SecretRef, Proposal, SchemaCompatibility, McpServer, SecretAliases)


def _event_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for aggregate in AGGREGATES:
        for value in vars(aggregate).values():
            # Only classes that declare their own published name; base and generated classes do not.
            topic = vars(value).get("TOPIC") if isinstance(value, type) else None
            if topic and not topic.endswith(".Event"):
                found[topic] = value
    return found


EVENT_CLASSES = _event_classes()


def current_version(event_type: str) -> int:
    return getattr(EVENT_CLASSES[event_type], "class_version", 1)


def upcast(event_type: str, version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Bring an event's data from the version it was stored in to the current class version. Data already
    at it is answered as it is, not copied (most events: the catch-up's hot path); an upcast one is a copy."""
    cls = EVENT_CLASSES.get(event_type)
    if cls is None or version >= getattr(cls, "class_version", 1):
        return data
    state = dict(data)
    while version < getattr(cls, "class_version", 1):
        getattr(cls, f"upcast_v{version}_v{version + 1}")(state)
        version += 1
    return state
