"""The naming policy in force, recorded in the history like any other change."""
from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id
from domain.naming import OPTIONAL_FIELDS, PRESETS, NamingPolicy

POLICY_KEY = natural_id("policy", "catalog")


class CatalogPolicy(Aggregate):
    """One per catalog; recorded once by `init`, or with the default on the first write."""

    TOPIC = "Policy"

    class Event(CatalogEvent):
        TOPIC = "Policy.Event"

    class Recorded(Event, Aggregate.Created):
        """v2: the presets gained the seed rules' fields (shim IDs, namespace shapes, verbs); a preset
        recorded as v1 means the preset, so it reads with them."""

        TOPIC = "Policy.Recorded"
        class_version = 2
        policy: dict[str, Any]

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            stored = state["policy"]
            known = PRESETS.get(stored.get("name"))
            if known is None:
                return
            added = known.model_dump(mode="json", include=set(OPTIONAL_FIELDS) - {"non_ascii_ids"})
            state["policy"] = {**added, **stored}

        def apply(self, aggregate: CatalogPolicy) -> None:
            aggregate.policy = NamingPolicy.model_validate(self.policy)

    def __init__(self) -> None:
        self.policy: NamingPolicy

    @classmethod
    def record(cls, policy: NamingPolicy, meta: Meta) -> CatalogPolicy:
        return create(cls, cls.Recorded, POLICY_KEY, meta, policy=policy.model_dump(mode="json"))
