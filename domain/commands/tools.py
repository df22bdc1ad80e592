"""`tool register|rename|update|classify`: a tool's descriptor, its canonical ID, its input schema and its
class labels."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, ValidationError

from domain.commands.base import CatalogCommand
from domain.errors import UsageError
from domain.taxonomy import Group, Risk, Source, Tier, Visibility
from domain.values import ToolSpec

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult



def _not_a_string(value: Any) -> Any:
    # A string here is most likely a file's name: only the command line reads files (it gives their content).
    if isinstance(value, str):
        raise ValueError("takes the JSON Schema itself (its JSON content), not a file name or other string")
    return value


# Any JSON but a string: an invalid JSON Schema is still recorded (it disables the tool).
SchemaDocument = Annotated[dict[str, Any] | list[Any] | bool | int | float, BeforeValidator(_not_a_string)]


class ToolRegister(CatalogCommand):
    name: ClassVar[str] = "tool register"
    id: str
    source: Source = Field(description="where the tool comes from")
    group: Group = Field(description="the tool's taxonomy group")
    tier: Tier = Field(description="default or advanced")
    visibility: Visibility = Field(description="who may see the tool")
    family: str | None = Field(None, description="the tool family (e.g. filesystem)")
    plugin: str | None = Field(None, description="the plugin that provides the tool (source plugin)")
    backing_server: str | None = Field(None, description="the server that backs the tool (e.g. the MCP server)")
    description: str | None = Field(None, description="one line saying what the tool does")
    classes: list[str] | None = Field(None, description="class labels such as source:sensitive or sink:network")
    risk: Risk | None = Field(None, description="what calling the tool may change")
    schema_: SchemaDocument | None = Field(None, alias="schema", description="the JSON Schema of the tool's "
                                           "input (an invalid one disables the tool)")
    requires_state: bool = Field(False, description="the tool needs state: disabled for stateless agents")

    def spec(self) -> ToolSpec:
        try:
            return ToolSpec(source=self.source, group=self.group, tier=self.tier, visibility=self.visibility,
                            family=self.family, plugin=self.plugin, backing_server=self.backing_server,
                            description=self.description, classes=self.classes or [], risk=self.risk,
                            input_schema=self.schema_, requires_state=self.requires_state)
        except ValidationError as error:
            problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())
            raise UsageError(f"invalid tool description: {problems}") from error

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.register_tool(self.id, self.spec(), meta)


class ToolRename(CatalogCommand):
    name: ClassVar[str] = "tool rename"
    old: str
    new: str
    source: Source | None = Field(None, description="move the tool to another provenance")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.rename_tool(self.old, self.new, meta, source=self.source)


class ToolUpdate(CatalogCommand):
    name: ClassVar[str] = "tool update"
    id: str
    schema_: SchemaDocument = Field(alias="schema", description="the new JSON Schema of the tool's input")
    accept_incompatible: bool = Field(False, description="record an MCP tool's schema even when the "
                                                         "compatibility mode refuses it (mcp sync plans this)")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.update_tool_schema(self.id, self.schema_, meta, self.accept_incompatible)


class ToolClassify(CatalogCommand):
    name: ClassVar[str] = "tool classify"
    id: str
    classes: list[str] = Field(description="class labels such as source:sensitive or sink:network, in order")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.classify_tool(self.id, self.classes, meta)
