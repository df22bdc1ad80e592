"""The naming policy in force, recorded in the history like any other change."""
from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id
from domain.naming import NamingPolicy

POLICY_KEY = natural_id("policy", "catalog")


class CatalogPolicy(Aggregate):
    """One per catalog; recorded once by `init`, or with the default on the first write."""

    TOPIC = "Policy"

    class Event(CatalogEvent):
        TOPIC = "Policy.Event"

    class Recorded(Event, Aggregate.Created):
        TOPIC = "Policy.Recorded"
        policy: dict[str, Any]

        def apply(self, aggregate: CatalogPolicy) -> None:
            aggregate.policy = NamingPolicy.model_validate(self.policy)

    def __init__(self) -> None:
        self.policy: NamingPolicy

    @classmethod
    def record(cls, policy: NamingPolicy, meta: Meta) -> CatalogPolicy:
        return create(cls, cls.Recorded, POLICY_KEY, meta, policy=policy.model_dump(mode="json"))
