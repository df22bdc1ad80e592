"""A manifest: the desired catalog, declared in a file (catalog as code). Parsing YAML or TOML is the
command line's job (infra/manifests.py); these models say what a manifest may hold.

Every collection is a mapping keyed by its natural key (tool ID, unit, agent, connector slug), so two
manifests compare key by key and a later section (route rules, classes) is one more field."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from domain.schema_compat import Mode
from domain.taxonomy import Group, Risk, Source, Tier, Visibility
from domain.values import default_family

MILESTONES = ("canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Release(Strict):
    version: str
    planned_date: str | None = None  # YYYY-MM-DD, for a release planned but not published
    published: bool = True


class Milestone(Strict):
    release: str
    evidence: str | None = None


class Alias(Strict):
    lifecycle: Literal["alias", "deprecated", "retired"] = "alias"
    shim: bool = False
    milestones: dict[str, Milestone] = Field(default_factory=dict)
    steps: dict[int, str] = Field(default_factory=dict)  # removal step (1, 2, 5) → its evidence
    retired_release: str | None = None


class Tool(Strict):
    source: Source
    group: Group
    tier: Tier
    visibility: Visibility
    family: str | None = None
    plugin: str | None = None
    backing_server: str | None = None
    description: str | None = None
    classes: list[str] = Field(default_factory=list)
    risk: Risk | None = None
    requires_state: bool = False
    input_schema: Any = None
    aliases: dict[str, Alias] = Field(default_factory=dict)

    def spec_fields(self, tool_id: str) -> dict[str, Any]:
        """The registration's fields, normalised (a family left out is the default one)."""
        fields = self.model_dump(exclude={"aliases"})
        fields["family"] = self.family or default_family(tool_id, self.source)
        fields["classes"] = sorted(self.classes)
        return fields


class Connector(Strict):
    namespace: str | None = None  # default: the slug
    tools: list[str]


class Image(Strict):
    ref: str
    tools: list[str]


class Unit(Strict):
    parent: str | None = None
    connectors: list[str] = Field(default_factory=list)  # bound connectors
    grants: list[str] = Field(default_factory=list)      # tool IDs or ns.*
    image: Image | None = None                           # the unit's own tools; its agents do not inherit them


class Agent(Strict):
    unit: str
    state_mode: Literal["stateful", "stateless"] = "stateful"
    image: Image | None = None
    allowlist: list[str] | None = None  # None: every tool allowed
    grants: list[str] = Field(default_factory=list)


class Manifest(Strict):
    """The whole desired catalog. `policy` is a preset name or a policy document (as `init --policy FILE`)."""

    policy: str | dict[str, Any] = "tyrum"
    # How a tool's input schema may change (domain/schema_compat.py); None: the catalog's mode stays.
    compatibility: Mode | None = None
    releases: list[Release] = Field(default_factory=list)
    tools: dict[str, Tool] = Field(default_factory=dict)
    connectors: dict[str, Connector] = Field(default_factory=dict)
    units: dict[str, Unit] = Field(default_factory=dict)
    agents: dict[str, Agent] = Field(default_factory=dict)

    def with_implied_tools(self) -> Manifest:
        """Connector and image tools the `tools` section leaves out, added as their commands register them
        (source connector or image, extension, advanced, public): a manifest may name them only once."""
        implied = {tool_id: "connector" for c in self.connectors.values() for tool_id in c.tools}
        runners = [*self.units.values(), *self.agents.values()]
        implied |= {tool_id: "image" for r in runners if r.image for tool_id in r.image.tools}
        missing = {tool_id: Tool(source=source, group="extension", tier="advanced", visibility="public")
                   for tool_id, source in implied.items() if tool_id not in self.tools}
        return self.model_copy(update={"tools": self.tools | missing}) if missing else self

    def normalised(self) -> Manifest:
        """The same catalog with the lists whose order means nothing (bindings, grants) sorted."""
        copy = self.model_copy(deep=True)
        for unit in copy.units.values():
            unit.connectors, unit.grants = sorted(unit.connectors), sorted(unit.grants)
        for agent in copy.agents.values():
            agent.grants = sorted(agent.grants)
        return copy

    def document(self) -> dict[str, Any]:
        """The manifest as written out: defaults left out, so an export reads like a hand-written file."""
        return self.model_dump(mode="json", exclude_defaults=True) | {"policy": self.policy}
