"""What every catalog event carries, and how natural keys become aggregate ids."""
from __future__ import annotations

import uuid
from collections.abc import Callable
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate
from pydantic import BaseModel, ConfigDict, Field, model_validator

from domain.errors import InvalidName
from domain.grammar import check_actor, check_idempotency_key, check_text, shown

# Fixed forever: changing it would orphan every stored aggregate.
TOOLCAT_NAMESPACE = uuid.UUID("6f1d3c1e-6a41-5b8e-9d0e-2b7c0a7f4c11")


def natural_id(kind: str, key: str) -> uuid.UUID:
    """The aggregate id for a natural key, the same in every process (uniqueness across writers)."""
    try:
        return uuid.uuid5(TOOLCAT_NAMESPACE, f"{kind}:{key}")
    except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8 (argv) or a "\ud800" escape
        raise InvalidName(f"{kind} {shown(key)} is not text: it holds undecodable characters",
                          kind=kind, name=shown(key)) from None


class Meta(BaseModel):
    """Who asked for a change, why, and under which idempotency key."""

    model_config = ConfigDict(frozen=True)

    actor: str = Field(min_length=1)
    reason: str | None = None
    idempotency_key: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _within_grammar(cls, given: Any) -> Any:
        # Before pydantic's own checks, so undecodable bytes from argv answer invalid_text, not a crash;
        # a ToolcatError is not a ValueError, so pydantic lets it through as it is.
        if isinstance(given, dict):
            if isinstance(given.get("actor"), str):
                check_actor(given["actor"])
            if isinstance(given.get("reason"), str):
                check_text(given["reason"], "reason")
            if isinstance(given.get("idempotency_key"), str):
                check_idempotency_key(given["idempotency_key"])
        return given

    def fields(self) -> dict[str, Any]:
        return {"actor": self.actor, "reason": self.reason, "idempotency_key": self.idempotency_key}


# When an event is recorded: the wall clock, unless the code writing an example history supplies its own
# (`toolcat demo` spaces the bundled examples over months, so that questions by date mean something). Only
# in-process callers can set it; no command or setting does.
RECORDING_CLOCK: ContextVar[Callable[[], datetime] | None] = ContextVar("recording_clock", default=None)


class CatalogEvent(Aggregate.Event):
    """Base of every stored event: the metadata every change records."""

    actor: str
    reason: str | None
    idempotency_key: str | None

    @staticmethod
    def create_timestamp() -> datetime:
        clock = RECORDING_CLOCK.get()
        return clock() if clock is not None else Aggregate.Event.create_timestamp()


def record(aggregate: Aggregate, event_class: type[CatalogEvent], meta: Meta, **fields: Any) -> None:
    """Trigger an event on an aggregate with the command's metadata."""
    aggregate.trigger_event(event_class, **fields, **meta.fields())


def create(aggregate_class: type[Aggregate], event_class: type[CatalogEvent], key: uuid.UUID,
           meta: Meta, **fields: Any) -> Any:
    """Start a new aggregate at a natural-key id with the command's metadata."""
    return aggregate_class._create(event_class, id=key, **fields, **meta.fields())


class TakesEffect(CatalogEvent):
    """Changes that may take effect at another time than when recorded: `effective_at` (None: when recorded).

    Class version 2 of the events that carry it: version 1 had no `effective_at`."""

    class_version = 2
    effective_at: str | None

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        state["effective_at"] = None
