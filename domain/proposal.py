"""Proposals (ADR-0030): a planned change held by the catalog and confirmed by its id, never by a re-sent
payload. The proposal records the position it was planned against, its commands and their digest; applying
it re-validates them at the head and saves them in one atomic write."""
from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import ProposalClosed


def proposal_key(proposal_id: str) -> uuid.UUID:
    return natural_id("proposal", proposal_id)


def commands_digest(base_position: int, commands: list[dict[str, Any]]) -> str:
    """What the proposal promises to do, from where: any change to either changes the digest."""
    text = json.dumps({"base_position": base_position, "commands": commands}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class Proposal(Aggregate):
    TOPIC = "Proposal"

    class Event(CatalogEvent):
        TOPIC = "Proposal.Event"

    class Made(Event, Aggregate.Created):
        """`commands`: each {"argv", "risk", "inputs"} as planned; `digest` covers them and the base."""

        TOPIC = "Proposal.Made"
        proposal_id: str
        base_position: int
        commands: list[dict[str, Any]]
        digest: str

        def apply(self, proposal: Proposal) -> None:
            proposal.proposal_id = self.proposal_id
            proposal.base_position = self.base_position
            proposal.commands = self.commands
            proposal.digest = self.digest
            proposal.state = "open"

    class Applied(Event):
        TOPIC = "Proposal.Applied"
        proposal_id: str

        def apply(self, proposal: Proposal) -> None:
            proposal.state = "applied"

    class Withdrawn(Event):
        TOPIC = "Proposal.Withdrawn"
        proposal_id: str

        def apply(self, proposal: Proposal) -> None:
            proposal.state = "withdrawn"

    def __init__(self) -> None:
        self.proposal_id: str
        self.base_position: int
        self.commands: list[dict[str, Any]]
        self.digest: str
        self.state: str

    @classmethod
    def make(cls, proposal_id: str, base_position: int, commands: list[dict[str, Any]], meta: Meta) -> Proposal:
        return create(cls, cls.Made, proposal_key(proposal_id), meta, proposal_id=proposal_id,
                      base_position=base_position, commands=commands,
                      digest=commands_digest(base_position, commands))

    def intact(self) -> bool:
        return self.digest == commands_digest(self.base_position, self.commands)

    def require_open(self) -> None:
        if self.state != "open":
            raise ProposalClosed(f"proposal '{self.proposal_id}' was already {self.state}; plan again",
                                 proposal_id=self.proposal_id, state=self.state)

    def mark_applied(self, meta: Meta) -> None:
        self.require_open()
        record(self, self.Applied, meta, proposal_id=self.proposal_id)

    def withdraw(self, meta: Meta) -> None:
        self.require_open()
        record(self, self.Withdrawn, meta, proposal_id=self.proposal_id)
