"""`unit|agent|connector|image …` and `grant …`: the subjects that see tools, and what grants them tools."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import AliasChoices, Field

from domain.commands.base import CatalogCommand
from domain.errors import UsageError
from domain.agent import StateMode

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult

EFFECTIVE_AT = "when the change takes effect (ISO 8601), if not when it is recorded"


class UnitCreate(CatalogCommand):
    name: ClassVar[str] = "unit create"
    unit: str
    parent: str | None = Field(None, description="the unit this one nests in (it inherits the parent's grants)")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.create_unit(self.unit, self.parent, meta)


class AgentCreate(CatalogCommand):
    name: ClassVar[str] = "agent create"
    agent: str
    unit: str = Field(description="the unit the agent belongs to (it inherits the unit's grants)")
    state_mode: StateMode = Field("stateful", description="stateless agents see tools that require state as "
                                                          "disabled")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.create_agent(self.agent, self.unit, self.state_mode, meta)


class AgentAllowlist(CatalogCommand):
    name: ClassVar[str] = "agent allowlist"
    agent: str
    patterns: list[str] | None = None
    clear: bool = Field(False, description="remove the allowlist: the agent may call every tool of its set")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        if self.clear == bool(self.patterns):
            raise UsageError("give either allowlist patterns or --clear")
        if self.clear:
            return catalog.clear_allowlist(self.agent, meta)
        return catalog.set_allowlist(self.agent, list(self.patterns or ()), meta)


class ConnectorRegister(CatalogCommand):
    name: ClassVar[str] = "connector register"
    slug: str
    namespace: str | None = Field(None, description="tool namespace (default: the slug)")
    tools: list[str] = Field(description="the tools the connector offers, in its namespace")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.register_connector(self.slug, self.namespace, self.tools, meta)


class ConnectorBind(CatalogCommand):
    name: ClassVar[str] = "connector bind"
    slug: str
    unit: str = Field(description="the unit to bind the connector to")
    effective_at: str | None = Field(None, description=EFFECTIVE_AT)

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.bind_connector(self.slug, self.unit, meta, self.effective_at)


class ConnectorUnbind(CatalogCommand):
    name: ClassVar[str] = "connector unbind"
    slug: str
    unit: str = Field(description="the unit to unbind the connector from")
    effective_at: str | None = Field(None, description=EFFECTIVE_AT)

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.unbind_connector(self.slug, self.unit, meta, self.effective_at)


class ImageDeclare(CatalogCommand):
    name: ClassVar[str] = "image declare"
    # `agent` was the field's name before units ran images: a body naming it is still taken.
    subject: str = Field(validation_alias=AliasChoices("subject", "agent"),
                         description="the subject running the image: unit:NAME, agent:NAME or an agent's name")
    image: str = Field(description="the image reference")
    tools: list[str] = Field(description="the tools the image declares")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.declare_image(self.subject, self.image, self.tools, meta)


class GrantAdd(CatalogCommand):
    name: ClassVar[str] = "grant add"
    subject: str = Field(description="unit:NAME or agent:NAME")
    target: str = Field(description="a tool ID or ns.*")
    effective_at: str | None = Field(None, description=EFFECTIVE_AT)

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.add_grant(self.subject, self.target, meta, self.effective_at)


class GrantRevoke(CatalogCommand):
    name: ClassVar[str] = "grant revoke"
    subject: str = Field(description="unit:NAME or agent:NAME")
    target: str = Field(description="a tool ID or ns.*")
    effective_at: str | None = Field(None, description=EFFECTIVE_AT)

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.revoke_grant(self.subject, self.target, meta, self.effective_at)
