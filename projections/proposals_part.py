"""The proposals part of the read model: every plan held by the catalog and its outcome."""
from __future__ import annotations

import json
from typing import Any

import duckdb

from projections.catalog_part import Handler, when
from projections.envelope import Envelope
from projections.rows import AppendRows, BufferedPart


class ProposalsPart(BufferedPart):
    def __init__(self) -> None:
        self.proposals = AppendRows("proposals")
        self.outcomes = AppendRows("proposal_outcomes")
        self.handlers: dict[str, Handler] = {
            "Proposal.Made": self.made,
            "Proposal.Applied": self.outcome("applied"),
            "Proposal.Withdrawn": self.outcome("withdrawn"),
        }

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        """Nothing to read ahead: every row is new."""

    def _buffers(self) -> tuple[AppendRows, ...]:
        return (self.proposals, self.outcomes)

    def made(self, e: Envelope, data: dict[str, Any]) -> None:
        self.proposals.add(proposal_id=data["proposal_id"], base_position=data["base_position"],
                           digest=data["digest"], commands=json.dumps(data["commands"], sort_keys=True),
                           position=e.position, recorded_at=when(e), actor=e.actor)

    def outcome(self, outcome: str) -> Handler:
        def handle(e: Envelope, data: dict[str, Any]) -> None:
            self.outcomes.add(proposal_id=data["proposal_id"], outcome=outcome, position=e.position,
                              recorded_at=when(e), actor=e.actor)
        return handle
