"""Use cases of tool input schemas: the catalog's compatibility mode, and a new schema version of a tool
checked first by the JSON Schema metaschema, then against the schema in force under that mode."""
from __future__ import annotations

from typing import Any

from domain.application import Batch, CatalogApplication, WriteResult
from domain.base import Meta
from domain.compatibility import COMPATIBILITY_KEY, DEFAULT_MODE, SchemaCompatibility
from domain.errors import IncompatibleSchema, InvalidSchema, UsageError
from domain.schema_check import schema_problems
from domain.schema_compat import MODES, Mode, breaking_changes
from domain.tool_cases import ToolUseCases


class SchemaUseCases(CatalogApplication):
    def compatibility_mode(self) -> Mode:
        stored = self.get_or_none(COMPATIBILITY_KEY, SchemaCompatibility)
        return DEFAULT_MODE if stored is None else stored.mode  # type: ignore[return-value]

    def set_compatibility(self, mode: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            if mode not in MODES:
                raise UsageError(f"unknown compatibility mode {mode!r}; modes are {', '.join(MODES)}", mode=mode)
            stored = self.get_or_none(COMPATIBILITY_KEY, SchemaCompatibility)
            if stored is None:
                if mode != DEFAULT_MODE:  # the default needs no event: the catalog already uses it
                    batch.add(SchemaCompatibility.start(mode, meta))  # type: ignore[arg-type]
            elif stored.mode != mode:
                stored.set_mode(mode, meta)  # type: ignore[arg-type]
                batch.add(stored)
        return self.execute("catalog.compatibility", {"mode": mode}, meta, build)

    def update_tool_schema(self, tool_id: str, schema: Any, meta: Meta, accept_incompatible: bool = False
                           ) -> WriteResult:
        """`accept_incompatible`: an MCP tool's new schema is recorded even when the compatibility mode
        refuses it (its server already changed it; a sync's plan marks that change destructive)."""
        def build(batch: Batch) -> None:
            tool = ToolUseCases.canonical_tool(self, tool_id)  # type: ignore[arg-type]  # self is the Catalog
            problems = schema_problems(schema)
            if problems:
                raise InvalidSchema(f"the new input schema of '{tool_id}' is not a valid JSON Schema: "
                                    f"{'; '.join(problems)}", tool_id=tool_id, problems=problems)
            if schema == tool.spec.input_schema:
                return  # the schema in force already: nothing to record
            if accept_incompatible and tool.spec.source != "mcp":
                raise UsageError(f"--accept-incompatible is for tools an MCP server backs; '{tool_id}' is a "
                                 f"{tool.spec.source} tool", tool_id=tool_id)
            if not accept_incompatible:
                self._check_compatible(tool_id, tool.spec.input_schema, tool.spec.schema_valid, schema)
            tool.update_schema(schema, True, meta)
            batch.add(tool)
        args = {"tool_id": tool_id, "schema": schema} | ({"accept_incompatible": True} if accept_incompatible else {})
        return self.execute("tool.update", args, meta, build)

    def _check_compatible(self, tool_id: str, old: Any, old_valid: bool, new: Any) -> None:
        # An invalid schema in force disabled the tool: no call was valid, so none can break.
        mode = self.compatibility_mode()
        breaks = breaking_changes(old, new, mode) if old_valid else []
        if breaks:
            raise IncompatibleSchema(
                f"the new input schema of '{tool_id}' is refused (compatibility mode {mode}): {'; '.join(breaks)}",
                tool_id=tool_id, mode=mode, changes=breaks)
