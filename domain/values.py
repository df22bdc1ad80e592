"""Value objects: the static taxonomy metadata of a tool (its words are in domain/taxonomy.py)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from domain.taxonomy import Group, Risk, Source, Tier, Visibility


def default_family(tool_id: str, source: str) -> str:
    """The family a tool belongs to when the operator names none: its ID without the action."""
    if source == "mcp":
        return "mcp"
    head, _, _ = tool_id.rpartition(".")
    return head or "standalone"


class ToolSpec(BaseModel):
    """Everything about a tool that does not depend on who is looking at it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Source
    group: Group
    tier: Tier
    visibility: Visibility
    family: str | None = None
    backing_server: str | None = None
    plugin: str | None = None
    description: str | None = None
    input_schema: Any = None  # any JSON; its validity as a JSON Schema is judged at registration
    schema_valid: bool = True
    classes: list[str] = Field(default_factory=list)
    risk: Risk | None = None
    requires_state: bool = False

    @model_validator(mode="after")
    def _provenance_is_consistent(self) -> ToolSpec:
        if self.source == "plugin" and not self.plugin:
            raise ValueError("a plugin tool names the plugin that owns it")
        if self.plugin and self.source != "plugin":
            raise ValueError(f"only a tool whose source is plugin names a plugin (this one's source is "
                             f"{self.source})")
        if len(set(self.classes)) != len(self.classes):
            raise ValueError("a class label is given twice")
        return self

    def with_family(self, tool_id: str) -> ToolSpec:
        if self.family:
            return self
        return self.model_copy(update={"family": default_family(tool_id, self.source)})
