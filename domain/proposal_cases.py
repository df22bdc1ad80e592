"""Use cases of proposals: hold a plan, withdraw it, and the pieces `apply` is made of (infra/proposals.py
runs the commands themselves, as the command line parses them)."""
from __future__ import annotations

from typing import Any

from domain.application import Batch, CatalogApplication, WriteResult
from domain.base import Meta
from domain.errors import IntegrityFailure, StaleProposal, UnknownProposal
from domain.grammar import check_proposal_id
from domain.history import HistoryRecord
from domain.proposal import Proposal, proposal_key

# Events that change nothing a plan reads: other proposals and the keys guarding retries.
_BOOKKEEPING = ("Proposal.", "IdempotencyKey.")


class ProposalUseCases(CatalogApplication):
    def proposal(self, proposal_id: str) -> Proposal:
        """The proposal by id, its digest checked: a proposal whose commands were altered is refused."""
        check_proposal_id(proposal_id)
        proposal = self.get_or_none(proposal_key(proposal_id), Proposal)
        if proposal is None:
            raise UnknownProposal(f"no proposal '{proposal_id}' in the catalog",
                                  proposal_id=proposal_id)
        if not proposal.intact():
            raise IntegrityFailure(f"proposal '{proposal_id}' no longer matches its digest",
                                   proposal_id=proposal_id)
        return proposal

    def make_proposal(self, proposal_id: str, base_position: int, commands: list[dict[str, Any]],
                      meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_proposal_id(proposal_id)
            batch.add(Proposal.make(proposal_id, base_position, commands, meta))
        return self.execute("plan", {"proposal_id": proposal_id}, meta, build)

    def withdraw_proposal(self, proposal_id: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            proposal = self.proposal(proposal_id)
            proposal.withdraw(meta)
            batch.add(proposal)
        return self.execute("proposal.withdraw", {"proposal_id": proposal_id}, meta, build)

    def require_unchanged_since(self, proposal: Proposal) -> None:
        """Conflict when anything a plan reads was recorded after the proposal's base position."""
        after = proposal.base_position
        while records := self.history(after=after, limit=1000):
            for record in records:
                if not record.topic.startswith(_BOOKKEEPING):
                    raise StaleProposal(
                        f"the catalog changed after proposal '{proposal.proposal_id}' was planned (position "
                        f"{record.position}, {record.topic}); plan the manifest again",
                        proposal_id=proposal.proposal_id, base_position=proposal.base_position,
                        changed_at=record.position)
            after = records[-1].position

    def pending_history(self, batch: Batch, after: int) -> list[HistoryRecord]:
        """The events a batch would record, as the store would hand them out after position `after`:
        a plan projects them into a scratch read model without saving anything."""
        records = []
        for aggregate in batch.aggregates:
            for event in aggregate.pending_events:
                stored = self.mapper.to_stored_event(event)
                after += 1
                records.append(HistoryRecord(after, str(stored.originator_id), stored.originator_version,
                                             stored.topic, self.mapper.transcoder.decode(stored.state)))
        return records
