"""Idempotency keys: a retried command with the same key writes nothing."""
from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id


def idempotency_key_id(key: str) -> uuid.UUID:
    return natural_id("idempotency", key)


def command_digest(command: str, args: dict[str, Any]) -> str:
    """What makes two commands 'the same' for a retry: the command and its arguments."""
    text = json.dumps({"command": command, "args": args}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class IdempotencyKey(Aggregate):
    """Saved in the same atomic batch as the command's events, so a key is used at most once."""

    TOPIC = "IdempotencyKey"

    class Event(CatalogEvent):
        TOPIC = "IdempotencyKey.Event"

    class Used(Event, Aggregate.Created):
        TOPIC = "IdempotencyKey.Used"
        command: str
        digest: str

        def apply(self, aggregate: IdempotencyKey) -> None:
            aggregate.command = self.command
            aggregate.digest = self.digest

    def __init__(self) -> None:
        self.command: str
        self.digest: str

    @classmethod
    def use(cls, key: str, command: str, digest: str, meta: Meta) -> IdempotencyKey:
        return create(cls, cls.Used, idempotency_key_id(key), meta, command=command, digest=digest)
