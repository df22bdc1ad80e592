"""`init`, `release …` and `catalog compatibility`: the catalog's naming policy, its release clock and
how tool input schemas may change."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from domain.commands.base import CatalogCommand
from domain.naming import policy_from_document, preset
from domain.schema_compat import Mode

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult


class Init(CatalogCommand):
    name: ClassVar[str] = "init"
    policy: str | dict[str, Any] = Field("tyrum", description="a preset (tyrum, spring-voyage, verb-noun) or "
                                                              "the naming policy itself")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        chosen = preset(self.policy) if isinstance(self.policy, str) else policy_from_document(self.policy)
        return catalog.init(chosen, meta)


class ReleasePublish(CatalogCommand):
    name: ClassVar[str] = "release publish"
    version: str

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.publish_release(self.version, meta)


class ReleasePlan(CatalogCommand):
    name: ClassVar[str] = "release plan"
    version: str
    date: str = Field(description="the release's planned date, YYYY-MM-DD (feeds the Sunset header)")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.plan_release(self.version, self.date, meta)


class CatalogCompatibility(CatalogCommand):
    name: ClassVar[str] = "catalog compatibility"
    mode: Mode = Field(description="backward, forward, full or none")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.set_compatibility(self.mode, meta)
