"""Secret references (ARCH-19): the catalog records that a secret exists and which tools may receive it —
never a value. Nothing here may repeat what the operator typed when refusing it: a mistyped command may
carry a value."""
from __future__ import annotations

import re
import uuid

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id
from domain.route_errors import SecretRefNotAllowed, SecretValueRefused

REF_MAX = 128
# Opaque lowercase names such as `github-token` or `ops.deploy-key`: short, readable, never value-like.
_REF = re.compile(r"[a-z][a-z0-9-]*(?:[.][a-z][a-z0-9-]*)*")


def check_ref(ref: str) -> str:
    if not isinstance(ref, str) or len(ref) > REF_MAX or not _REF.fullmatch(ref):
        raise SecretValueRefused(
            "a secret reference is a lowercase name such as github-token (letters, digits, '-', '.'); what "
            "was given is not one and is not repeated here, as it may be a secret value")
    return ref


def secret_ref_key(ref: str) -> uuid.UUID:
    return natural_id("secret_ref", ref)


class SecretRef(Aggregate):
    TOPIC = "SecretRef"

    class Event(CatalogEvent):
        TOPIC = "SecretRef.Event"

    class Added(Event, Aggregate.Created):
        TOPIC = "SecretRef.Added"
        ref: str
        allowed_tool_ids: list[str]
        allowed_tool_keys: list[str]

        def apply(self, secret: SecretRef) -> None:
            secret.ref = self.ref
            secret.allowed = dict(zip(self.allowed_tool_keys, self.allowed_tool_ids))

    def __init__(self) -> None:
        self.ref: str
        self.allowed: dict[str, str]

    @classmethod
    def add(cls, ref: str, allowed: dict[str, str], meta: Meta) -> SecretRef:
        """`allowed`: tool key → canonical ID of every tool the reference may be given to."""
        return create(cls, cls.Added, secret_ref_key(check_ref(ref)), meta, ref=ref,
                      allowed_tool_ids=list(allowed.values()), allowed_tool_keys=list(allowed))


def check_allowed(ref: str, allowed_tool_keys: list[str], tool_id: str, tool_key: str) -> None:
    if tool_key not in allowed_tool_keys:
        raise SecretRefNotAllowed(f"secret reference '{ref}' may not be given to '{tool_id}'",
                                  secret_ref_id=ref, tool_id=tool_id)
