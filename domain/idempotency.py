"""Idempotency keys: a retried command with the same key writes nothing. A key belongs to its actor (the
token over HTTP): the same key from two actors is two commands.

Keys were once one namespace for all actors (`natural_id("idempotency", key)`); those stored keys stay
where they are and still count for the actor that used them (`legacy_key_id`, read by the application)."""
from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id


def idempotency_key_id(key: str, actor: str) -> uuid.UUID:
    """The key's aggregate id, of its actor's keys (JSON, so no actor and key pair reads as another)."""
    return natural_id("idempotency-of-actor", json.dumps([actor, key]))


def legacy_key_id(key: str) -> uuid.UUID:
    """Where a key used before keys belonged to actors is stored."""
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
            aggregate.actor = self.actor

    def __init__(self) -> None:
        self.command: str
        self.digest: str
        self.actor: str

    @classmethod
    def use(cls, key: str, command: str, digest: str, meta: Meta) -> IdempotencyKey:
        return create(cls, cls.Used, idempotency_key_id(key, meta.actor), meta, command=command, digest=digest)
