"""Use cases of tools and their aliases: register, rename, alias, deprecate, the window, retire."""
from __future__ import annotations

from domain.application import Batch, CatalogApplication, WriteResult
from domain.base import Meta
from domain.errors import AliasConflict, DuplicateTool, LegacyId, LegacyReferences, NotAnAlias, ReservedPrefix, \
    ShimId, ShimTarget, UnknownTool, UsageError
from domain.grammar import check_spec, check_text
from domain.name import NameClaim
from domain.namespace import namespace_of, plugin_owner
from domain.nodes import check_node_tool, refuse_not_model_facing
from domain.references import rewrite, stored_references
from domain.schema_check import schema_problems
from domain.tool import Tool
from domain.taxonomy import SOURCES
from domain.values import ToolSpec


class ToolUseCases(CatalogApplication):
    # -- lookups that reject ----------------------------------------------------------------------
    def canonical_tool(self, tool_id: str) -> Tool:
        tool = self.owner_of(tool_id)
        if tool is None:
            raise UnknownTool(f"no tool '{tool_id}' in the catalog", tool_id=tool_id)
        if tool.tool_id != tool_id:
            raise UnknownTool(f"'{tool_id}' is not a canonical ID; it is an alias of '{tool.tool_id}'",
                              tool_id=tool_id, canonical_id=tool.tool_id)
        return tool

    def alias_owner(self, alias: str) -> Tool:
        tool = self.owner_of(alias)
        if tool is None:
            raise UnknownTool(f"no alias '{alias}' in the catalog", tool_id=alias)
        if tool.tool_id == alias:
            raise NotAnAlias(f"'{alias}' is a canonical ID, not an alias", tool_id=alias)
        return tool

    def _require_free(self, tool_id: str, as_what: str) -> None:
        owner = self.owner_of(tool_id)
        if owner is None:
            return
        if owner.tool_id == tool_id:
            if as_what in ("a tool", "the new canonical ID"):
                raise DuplicateTool(f"tool '{tool_id}' is already registered", tool_id=tool_id)
            raise AliasConflict(f"'{tool_id}' is already the canonical ID of a tool and cannot be {as_what}",
                                tool_id=tool_id, canonical_id=tool_id)
        lifecycle = owner.aliases[tool_id].lifecycle
        if owner.aliases[tool_id].shim and as_what in ("a tool", "the new canonical ID"):
            raise ShimId(f"'{tool_id}' is a legacy shim of '{owner.tool_id}', never a canonical ID",
                         tool_id=tool_id, canonical_id=owner.tool_id)
        raise AliasConflict(
            f"'{tool_id}' is already {'a retired (reserved)' if lifecycle == 'retired' else 'an'} alias of "
            f"'{owner.tool_id}' and cannot be {as_what}",
            tool_id=tool_id, canonical_id=owner.tool_id, lifecycle=lifecycle)

    # -- tools ------------------------------------------------------------------------------------
    def register_tool(self, tool_id: str, spec: ToolSpec, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_spec(spec)
            batch.policy.check_tool_id(tool_id, spec.source)
            batch.policy.check_verb(tool_id, spec.risk)
            check_node_tool(tool_id, spec.group, spec.visibility, batch.policy.name)
            self._require_free(tool_id, as_what="a tool")
            checked = spec.with_family(tool_id).model_copy(
                update={"schema_valid": spec.input_schema is None or not schema_problems(spec.input_schema)})
            tool = Tool.register(tool_id, checked, batch.releases().latest, meta)
            batch.add(tool, NameClaim.claim(tool_id, tool.id, meta))
            self.enter_namespace(batch, tool_id, plugin_owner(spec))
        return self.execute("tool.register", {"tool_id": tool_id, "spec": spec.model_dump(mode="json")},
                            meta, build)

    def rename_tool(self, old_id: str, new_id: str, meta: Meta, source: str | None = None) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.canonical_tool(old_id)
            if new_id == old_id:
                raise DuplicateTool(f"'{old_id}' is already the canonical ID of this tool", tool_id=old_id)
            moved = self._moved_source(tool, source)
            owner = self.owner_of(new_id)
            promoting_own_alias = owner is not None and owner.id == tool.id and new_id in tool.aliases
            if promoting_own_alias:  # a legacy or shim ID is refused whatever its shape
                self._refuse_legacy(tool, new_id)
            self._check_rename_target(batch, tool, old_id, new_id, moved or tool.spec.source)
            check_node_tool(new_id, tool.spec.group, tool.spec.visibility, batch.policy.name)
            if not promoting_own_alias:
                self._require_free(new_id, as_what="the new canonical ID")
            if namespace_of(new_id) != namespace_of(old_id):
                self.enter_namespace(batch, new_id, plugin_owner(tool.spec))
            tool.rename(new_id, batch.releases().latest, moved, meta)
            batch.add(tool)
            if not promoting_own_alias:
                batch.add(NameClaim.claim(new_id, tool.id, meta))
        args = {"old": old_id, "new": new_id} | ({"source": source} if source is not None else {})
        return self.execute("tool.rename", args, meta, build)

    @staticmethod
    def _moved_source(tool: Tool, source: str | None) -> str | None:
        """The source a rename moves the tool to, or None when it keeps its own."""
        if source is None or source == tool.spec.source:
            return None
        if source not in SOURCES:
            raise UsageError(f"unknown source {source!r}; sources are {', '.join(SOURCES)}", source=source)
        if source == "plugin":
            raise UsageError("a tool becomes a plugin's by registering it in the plugin's namespace, not by a "
                             "rename", source=source)
        return source

    def _check_rename_target(self, batch: Batch, tool: Tool, old_id: str, new_id: str, source: str) -> None:
        try:
            batch.policy.check_tool_id(new_id, source)
        except ReservedPrefix as error:
            # Only a registration makes a plugin's tool; an MCP-backed tool stays MCP-backed where it may.
            movable = [s for s in error.details["allowed_sources"] if s != "plugin"]
            if not movable:
                raise
            move_to = "builtin_mcp" if source == "mcp" and "builtin_mcp" in movable else movable[0]
            details = error.details
            raise ReservedPrefix(f"{source} tools may not use the reserved prefix {details['prefix']!r} (reserved for "
                                 f"{', '.join(details['allowed_sources'])}); moving the tool into that family changes its "
                                 "source", **details, old_id=old_id,
                                 move_to=move_to) from None
        batch.policy.check_verb(new_id, tool.spec.risk)

    @staticmethod
    def _refuse_legacy(tool: Tool, new_id: str) -> None:
        if tool.aliases[new_id].shim:
            raise ShimId(f"'{new_id}' is a legacy shim of '{tool.tool_id}', never a canonical ID; keep "
                         f"'{tool.tool_id}' or rename to a new ID", tool_id=new_id, canonical_id=tool.tool_id)
        lifecycle = tool.aliases[new_id].lifecycle
        if lifecycle in ("deprecated", "retired"):
            raise LegacyId(f"'{new_id}' is a {lifecycle} legacy ID of '{tool.tool_id}'; a legacy ID never becomes "
                           f"canonical again: keep '{tool.tool_id}' or rename to a new ID",
                           tool_id=new_id, canonical_id=tool.tool_id, lifecycle=lifecycle)

    # -- aliases and their removal path -------------------------------------------------------------
    def add_alias(self, canonical_id: str, alias: str, shim: bool, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.canonical_tool(canonical_id)
            batch.policy.check_alias_id(alias, tool.spec.source)
            refuse_not_model_facing(alias)
            self._require_free(alias, as_what="an alias")
            self._check_shim_target(batch, tool, alias, shim)
            self._check_mcp_alias(batch, tool, alias)
            tool.add_alias(alias, shim, meta)
            batch.add(tool, NameClaim.claim(alias, tool.id, meta))
        return self.execute("alias.add", {"canonical": canonical_id, "alias": alias, "shim": shim}, meta,
                            build)

    @staticmethod
    def _check_shim_target(batch: Batch, tool: Tool, alias: str, shim: bool) -> None:
        """ARCH-21's compatibility envelope: a documented legacy input stands for one canonical ID, as a shim."""
        target = batch.policy.shim_ids.get(alias)
        if target is None:
            return
        if target != tool.tool_id:
            raise ShimTarget(f"{alias!r} is the {batch.policy.name} policy's legacy shim of '{target}', not of "
                             f"'{tool.tool_id}': record it with 'toolcat alias add {target} {alias} --shim'",
                             alias=alias, shim_of=target, canonical_id=tool.tool_id)
        if not shim:
            raise ShimTarget(f"{alias!r} is a documented legacy shim of '{target}', never a plain alias: record "
                             f"it with 'toolcat alias add {target} {alias} --shim'",
                             alias=alias, shim_of=target, canonical_id=tool.tool_id)

    @staticmethod
    def _check_mcp_alias(batch: Batch, tool: Tool, alias: str) -> None:
        """ARCH-21: `mcp.` is for raw MCP tools only. A platform tool (whatever source a facade was registered
        with) gets an `mcp.` alias only when it is the tool's own former raw ID (`mcp.memory.seed` for
        `memory.seed`, the family helpers' migration); a facade keeps its facade ID."""
        if not alias.startswith("mcp.") or tool.spec.source not in batch.policy.platform_sources:
            return
        if "." in tool.tool_id and alias == f"mcp.{tool.tool_id}":
            return
        kind = "built-in MCP facade" if tool.spec.source == "builtin_mcp" else "platform tool"
        raise ReservedPrefix(
            f"{kind} '{tool.tool_id}' keeps its own ID: it may not get the mcp.-prefixed alias {alias!r} (mcp. "
            "is for raw MCP tools only; register the raw tool itself with --source mcp)", tool_id=alias,
            canonical_id=tool.tool_id, source=tool.spec.source, prefix="mcp.", allowed_sources=["mcp"])

    def deprecate_alias(self, alias: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.alias_owner(alias)
            tool.deprecate_alias(alias, meta)
            batch.add(tool)
        return self.execute("alias.deprecate", {"alias": alias}, meta, build)

    def record_milestone(self, alias: str, milestone: str, release: str, evidence: str | None,
                         meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            if evidence is not None:
                check_text(evidence, "evidence")
            tool = self.alias_owner(alias)
            published = batch.releases().require(release)
            tool.record_milestone(alias, milestone, published, evidence, meta)
            batch.add(tool)
        args = {"alias": alias, "milestone": milestone, "release": release, "evidence": evidence}
        return self.execute("alias.milestone", args, meta, build)

    def record_step(self, alias: str, step: int, evidence: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_text(evidence, "evidence")
            tool = self.alias_owner(alias)
            if step == 2:
                self._refuse_legacy_references(tool, alias, "recording step 2")
            tool.record_step(alias, step, evidence, meta)
            batch.add(tool)
        return self.execute("alias.step", {"alias": alias, "step": step, "evidence": evidence}, meta, build)

    def _refuse_legacy_references(self, tool: Tool, alias: str, before: str) -> None:
        """Removal step 2 and the retirement need the catalog's own data migrated: a holder still naming
        `alias` would silently lose the tool once the alias no longer resolves."""
        found = stored_references(self, alias).found
        if found:
            holders = ", ".join(r["holder"] for r in found)
            raise LegacyReferences(
                f"stored data still names '{alias}' ({holders}): rewrite it to '{tool.tool_id}' with "
                f"'toolcat alias migrate {alias}' before {before}", alias=alias,
                canonical_id=tool.tool_id, references=found)

    def migrate_alias(self, alias: str, meta: Meta) -> WriteResult:
        """ARCH-21's operator migration: the catalog's own stored references to `alias` (allowlists, route
        rules, secret references' allowed tools) rewritten to the canonical ID, as events."""
        def build(batch: Batch) -> None:
            tool = self.alias_owner(alias)
            rewrite(batch, stored_references(self, alias), tool.tool_id)
        return self.execute("alias.migrate", {"alias": alias}, meta, build)

    def retire_alias(self, alias: str, release: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            tool = self.alias_owner(alias)
            train = batch.releases()
            published = train.require(release)
            if tool.aliases[alias].lifecycle == "deprecated":  # (else retire_alias says what it is)
                self._refuse_legacy_references(tool, alias, "retiring it")
            tool.retire_alias(alias, published, train.first_after(tool.canonical_since), meta)
            batch.add(tool)
        return self.execute("alias.retire", {"alias": alias, "release": release}, meta, build)
