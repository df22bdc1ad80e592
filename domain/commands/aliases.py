"""`alias …`: aliases and shims, deprecation windows and the removal path."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from domain.commands.base import CatalogCommand
from domain.errors import UsageError

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult

# domain/window.py's MILESTONES and RECORDABLE_STEPS (a story checks they agree)
Milestone = Literal["canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission"]
RecordableStep = Literal[1, 2, 5]


class AliasAdd(CatalogCommand):
    name: ClassVar[str] = "alias add"
    canonical: str
    alias: str
    shim: bool = Field(False, description="a legacy input: resolvable, never emitted")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.add_alias(self.canonical, self.alias, self.shim, meta)


class AliasDeprecate(CatalogCommand):
    name: ClassVar[str] = "alias deprecate"
    alias: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.deprecate_alias(self.alias, meta)


class AliasMilestone(CatalogCommand):
    name: ClassVar[str] = "alias milestone"
    alias: str
    milestone: Milestone
    release: str = Field(description="the release the milestone shipped in")
    evidence: str | None = Field(None, description="what shows the milestone was met")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.record_milestone(self.alias, self.milestone, self.release, self.evidence, meta)


class AliasStep(CatalogCommand):
    name: ClassVar[str] = "alias step"
    alias: str
    step: RecordableStep
    evidence: str = Field(description="what confirms the step (a PR, a release note, a migration)")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        if not self.evidence.strip():
            raise UsageError("--evidence must say what confirms the step")
        return catalog.record_step(self.alias, self.step, self.evidence, meta)


class AliasMigrate(CatalogCommand):
    name: ClassVar[str] = "alias migrate"
    alias: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.migrate_alias(self.alias, meta)


class AliasRetire(CatalogCommand):
    name: ClassVar[str] = "alias retire"
    alias: str
    release: str = Field(description="the release that retires the alias (removal steps 3 and 4)")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.retire_alias(self.alias, self.release, meta)
