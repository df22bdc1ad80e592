"""`plan`, `apply` and `proposal withdraw` (the catalog as code, ADR-0030), and `audit seal`. Plan, apply
and seal read the read model as well as the catalog: infra/writing.py carries them out."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from domain.commands.base import CatalogCommand, Command
from domain.manifest import Manifest

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult


class Plan(Command):
    name: ClassVar[str] = "plan"
    manifest: Manifest = Field(description="the manifest, as its YAML or TOML file would hold it")


class Apply(Command):
    name: ClassVar[str] = "apply"
    proposal_id: str
    confirm_destructive: bool = Field(False, description="required when the proposal revokes, unbinds, retires "
                                                         "or narrows anything")


class ProposalWithdraw(CatalogCommand):
    name: ClassVar[str] = "proposal withdraw"
    proposal_id: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.withdraw_proposal(self.proposal_id, meta)


class AuditSeal(Command):
    """Verify the hash chain and record its head in the store."""
    name: ClassVar[str] = "audit seal"
