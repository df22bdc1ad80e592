"""The Tool aggregate: one canonical ID, its static metadata, and its aliases' whole lifecycle."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import AliasState, RetiredAlias
from domain.values import ToolSpec, default_family
from domain.window import check_milestone, check_milestone_release, check_retirement, check_step


def new_tool_key(tool_id: str) -> uuid.UUID:
    """A tool's aggregate id comes from the ID it was first registered under; renames keep it."""
    return natural_id("tool", tool_id)


@dataclass
class AliasRecord:
    lifecycle: str  # alias | deprecated | retired
    shim: bool = False
    milestones: dict[str, str] = field(default_factory=dict)
    steps: dict[int, str] = field(default_factory=dict)


def moved_spec(spec: ToolSpec, source: str, family: str | None) -> ToolSpec:
    """A tool's description after a move to another source: only a plugin tool names a plugin."""
    return spec.model_copy(update={"source": source, "family": family or spec.family,
                                   "plugin": spec.plugin if source == "plugin" else None})


class Tool(Aggregate):
    TOPIC = "Tool"

    class Event(CatalogEvent):
        TOPIC = "Tool.Event"

    class Registered(Event, Aggregate.Created):
        """v2 added `latest_release` (the release in force when the tool was registered)."""

        TOPIC = "Tool.Registered"
        class_version = 2
        tool_id: str
        spec: dict[str, Any]
        latest_release: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["latest_release"] = None

        def apply(self, tool: Tool) -> None:
            tool.tool_id = self.tool_id
            tool.spec = ToolSpec.model_validate(self.spec)
            tool.aliases = {}
            tool.canonical_since = self.latest_release
            tool.schema_version = 0 if tool.spec.input_schema is None else 1

    class Renamed(Event):
        """v2 added `source` and `family`: the tool's provenance and family after a move into another
        family (`tool rename --source`); None when the rename kept them."""

        TOPIC = "Tool.Renamed"
        class_version = 2
        old_id: str
        new_id: str
        latest_release: str | None
        source: str | None
        family: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["source"] = state["family"] = None

        def apply(self, tool: Tool) -> None:
            tool.aliases.pop(self.new_id, None)
            tool.aliases[self.old_id] = AliasRecord(lifecycle="deprecated")
            tool.tool_id = self.new_id
            tool.canonical_since = self.latest_release
            if self.source is not None:
                tool.spec = moved_spec(tool.spec, self.source, self.family)

    class AliasAdded(Event):
        TOPIC = "Tool.AliasAdded"
        alias: str
        shim: bool

        def apply(self, tool: Tool) -> None:
            tool.aliases[self.alias] = AliasRecord(lifecycle="alias", shim=self.shim)

    class AliasDeprecated(Event):
        TOPIC = "Tool.AliasDeprecated"
        alias: str

        def apply(self, tool: Tool) -> None:
            tool.aliases[self.alias].lifecycle = "deprecated"

    class MilestoneRecorded(Event):
        TOPIC = "Tool.MilestoneRecorded"
        alias: str
        milestone: str
        release: str
        evidence: str | None

        def apply(self, tool: Tool) -> None:
            tool.aliases[self.alias].milestones[self.milestone] = self.release

    class StepRecorded(Event):
        TOPIC = "Tool.StepRecorded"
        alias: str
        step: int
        evidence: str

        def apply(self, tool: Tool) -> None:
            tool.aliases[self.alias].steps[self.step] = self.evidence

    class AliasRetired(Event):
        """Performs removal steps 3 and 4: the alias leaves normalization and resolving it is rejected."""

        TOPIC = "Tool.AliasRetired"
        alias: str
        release: str

        def apply(self, tool: Tool) -> None:
            entry = tool.aliases[self.alias]
            entry.lifecycle = "retired"
            entry.steps[3] = entry.steps[4] = f"retired in {self.release}"

    class Classified(Event):
        """The tool's ordered class labels (ADR-027), replacing the ones it had; aliases carry them too."""

        TOPIC = "Tool.Classified"
        classes: list[str]

        def apply(self, tool: Tool) -> None:
            tool.spec = tool.spec.model_copy(update={"classes": list(self.classes)})

    class SchemaUpdated(Event):
        """A new version of the tool's input schema (`tool update --schema`): the registration's schema is
        version 1 (0 when it gave none), each update the next. `schema_valid` as judged when recorded."""

        TOPIC = "Tool.SchemaUpdated"
        input_schema: Any
        schema_valid: bool
        version: int

        def apply(self, tool: Tool) -> None:
            tool.spec = tool.spec.model_copy(update={"input_schema": self.input_schema,
                                                     "schema_valid": self.schema_valid})
            tool.schema_version = self.version

    def __init__(self) -> None:
        self.tool_id: str
        self.spec: ToolSpec
        self.aliases: dict[str, AliasRecord]
        self.canonical_since: str | None
        self.schema_version: int

    @classmethod
    def register(cls, tool_id: str, spec: ToolSpec, latest_release: str | None, meta: Meta) -> Tool:
        return create(cls, cls.Registered, new_tool_key(tool_id), meta, tool_id=tool_id,
                      spec=spec.model_dump(mode="json"), latest_release=latest_release)

    def rename(self, new_id: str, latest_release: str | None, source: str | None, meta: Meta) -> None:
        family = None
        if source is not None:
            # A family the operator chose stays; the one derived from the old ID follows the new ID.
            derived = default_family(self.tool_id, self.spec.source)
            family = default_family(new_id, source) if self.spec.family == derived else self.spec.family
        record(self, self.Renamed, meta, old_id=self.tool_id, new_id=new_id, latest_release=latest_release,
               source=source, family=family)

    def update_schema(self, schema: Any, schema_valid: bool, meta: Meta) -> None:
        record(self, self.SchemaUpdated, meta, input_schema=schema, schema_valid=schema_valid,
               version=self.schema_version + 1)

    def classify(self, classes: list[str], meta: Meta) -> None:
        record(self, self.Classified, meta, classes=classes)

    def add_alias(self, alias: str, shim: bool, meta: Meta) -> None:
        record(self, self.AliasAdded, meta, alias=alias, shim=shim)

    def deprecate_alias(self, alias: str, meta: Meta) -> None:
        self._require_lifecycle(alias, "alias", "it is already deprecated")
        record(self, self.AliasDeprecated, meta, alias=alias)

    def record_milestone(self, alias: str, milestone: str, release: str, evidence: str | None,
                         meta: Meta) -> None:
        self._require_lifecycle(alias, "deprecated", "milestones belong to deprecated aliases")
        check_milestone(milestone, self.aliases[alias].milestones)
        check_milestone_release(release, self.canonical_since)
        record(self, self.MilestoneRecorded, meta, alias=alias, milestone=milestone, release=release,
               evidence=evidence)

    def record_step(self, alias: str, step: int, evidence: str, meta: Meta) -> None:
        entry = self._alias(alias)
        if entry.lifecycle == "alias":
            raise AliasState(f"'{alias}' is not deprecated; removal steps apply to deprecated aliases",
                             alias=alias, lifecycle=entry.lifecycle)
        check_step(step, entry.steps, retired=entry.lifecycle == "retired")
        record(self, self.StepRecorded, meta, alias=alias, step=step, evidence=evidence)

    def retire_alias(self, alias: str, release: str, introduced_release: str | None, meta: Meta) -> None:
        self._require_lifecycle(alias, "deprecated", "only a deprecated alias can be retired")
        entry = self.aliases[alias]
        check_retirement(release, entry.milestones, introduced_release, entry.steps)
        record(self, self.AliasRetired, meta, alias=alias, release=release)

    def _alias(self, alias: str) -> AliasRecord:
        return self.aliases[alias]

    def _require_lifecycle(self, alias: str, wanted: str, why: str) -> None:
        entry = self._alias(alias)
        if entry.lifecycle == "retired":
            raise RetiredAlias(f"'{alias}' was retired; use '{self.tool_id}'",
                               alias=alias, canonical_id=self.tool_id)
        if entry.lifecycle != wanted:
            raise AliasState(f"'{alias}' is {entry.lifecycle}: {why}", alias=alias,
                             lifecycle=entry.lifecycle, canonical_id=self.tool_id)
