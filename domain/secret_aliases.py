"""Secret aliases and display names (ARCH-19's secret reference contract): an agent-scoped `secret_alias`,
an ergonomic shorthand for a secret reference, unique within the agent's scope; and an optional
`display_name`, an operator-safe label that may appear in model-visible metadata. Neither is ever a value:
an alias is a short lowercase name, and a refused one is not repeated (a mistyped command may carry a value).

One aggregate per agent holds its aliases, so uniqueness within the scope is the aggregate's own check."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import InvalidText
from domain.grammar import check_label
from domain.route_errors import DuplicateSecretAlias, SecretValueRefused

ALIAS_MAX, DISPLAY_NAME_MAX = 64, 128
_ALIAS = re.compile(r"[a-z][a-z0-9_-]*")


def secret_aliases_key(agent: str) -> uuid.UUID:
    return natural_id("secret_aliases", agent)


def check_alias(alias: str) -> str:
    if not isinstance(alias, str) or len(alias) > ALIAS_MAX or not _ALIAS.fullmatch(alias):
        raise SecretValueRefused(
            f"a secret alias is a short lowercase name such as github (letters, digits, '-' and '_', at most "
            f"{ALIAS_MAX} characters); what was given is not one and is not repeated here, as it may be a "
            "secret value")
    return alias


def check_display_name(display_name: str | None) -> str | None:
    """One line of operator-safe text (it may be shown to a model), at most DISPLAY_NAME_MAX characters."""
    if display_name is None:
        return None
    if not display_name.strip():
        raise InvalidText("--display-name is empty: leave it out, or say what the secret is for", what="display_name")
    return check_label(display_name, "display_name", DISPLAY_NAME_MAX)


@dataclass(frozen=True)
class SecretAlias:
    alias: str
    ref: str
    display_name: str | None

    def document(self) -> dict[str, Any]:
        return {"secret_alias": self.alias, "secret_ref_id": self.ref, "display_name": self.display_name}


class SecretAliases(Aggregate):
    """The secret aliases of one agent."""

    TOPIC = "SecretAliases"

    class Event(CatalogEvent):
        TOPIC = "SecretAliases.Event"

    class Opened(Event, Aggregate.Created):
        TOPIC = "SecretAliases.Opened"
        agent: str

        def apply(self, book: SecretAliases) -> None:
            book.agent = self.agent
            book.aliases = {}

    class AliasAdded(Event):
        TOPIC = "SecretAliases.AliasAdded"
        agent: str
        secret_alias: str
        ref: str
        display_name: str | None

        def apply(self, book: SecretAliases) -> None:
            book.aliases[self.secret_alias] = SecretAlias(self.secret_alias, self.ref, self.display_name)

    def __init__(self) -> None:
        self.agent: str
        self.aliases: dict[str, SecretAlias]

    @classmethod
    def open(cls, agent: str, meta: Meta) -> SecretAliases:
        return create(cls, cls.Opened, secret_aliases_key(agent), meta, agent=agent)

    def add(self, alias: str, ref: str, display_name: str | None, meta: Meta) -> None:
        if alias in self.aliases:
            raise DuplicateSecretAlias(
                f"agent '{self.agent}' already has secret alias '{alias}' (for '{self.aliases[alias].ref}'); "
                "an alias is unique within its agent's scope: choose another", agent=self.agent,
                secret_alias=alias, secret_ref_id=self.aliases[alias].ref)
        record(self, self.AliasAdded, meta, agent=self.agent, secret_alias=alias, ref=ref,
               display_name=display_name)
