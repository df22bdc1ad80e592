"""Naming policies: which tool IDs and alias IDs a catalog accepts, from which source.

A policy is plain data so that an operator can supply one as JSON instead of a preset;
the catalog records the chosen policy as an event, so it must stay serializable.
"""
from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, ValidationError, model_serializer, \
    model_validator

from domain.errors import InvalidId, InvalidPolicy, ReservedId, ReservedPrefix, RiskRequired, ShimId
from domain.grammar import check_id_text

SOURCES = ("builtin", "builtin_mcp", "mcp", "plugin", "connector", "image")
PLATFORM_SOURCES = ["builtin", "builtin_mcp"]

# Aliases cover legacy and shim shapes (arxiv_search, tool.fs.read, mcp.memory.seed), so any mix of
# lowercase segments with '_' or '-' is allowed; the canonical grammar is where strictness lives.
LENIENT_ALIAS = r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$"

_TYRUM_STANDALONE = ["read", "write", "edit", "apply_patch", "glob", "grep", "bash", "websearch", "webfetch", "codesearch"]
_FILESYSTEM_BUILTINS = ["read", "write", "edit", "apply_patch", "glob", "grep"]
# The fields added after policies were first recorded: omitted from a policy's recorded form when empty.
OPTIONAL_FIELDS = ("non_ascii_ids", "shim_ids", "namespace_patterns", "verbs", "write_verbs")
WRITE_RISKS = ("safe_create", "safe_update", "destructive_update", "destructive_delete")
# ADR-0030: the CRUD five, and the domain verbs its examples use (find_people_at_org, link_person_to_org,
# add_note_to_person, merge_people); a policy file may list others.
_CRUD_READS, _CRUD_WRITES = ["list", "get"], ["create", "update", "delete"]
_DOMAIN_READS, _DOMAIN_WRITES = ["find"], ["link", "add", "merge"]


class NamingPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    id_pattern: str
    single_segment_ids: list[str] = []
    source_patterns: dict[str, str] = {}
    reserved_prefixes: dict[str, list[str]] = {}
    reserved_ids: list[str] = []
    platform_sources: list[str] = list(PLATFORM_SOURCES)
    platform_namespaces: list[str] = []
    alias_pattern: str
    pattern_shims: dict[str, list[str]] = {}
    # IDs are ASCII unless the policy says otherwise (then letters, marks and digits of any script).
    non_ascii_ids: bool = False
    # Legacy parser inputs (ARCH-21's compatibility envelope): resolvable as shims, never canonical.
    shim_ids: dict[str, str] = {}  # legacy input -> the canonical ID it stands for
    # The shape of the tools in a platform namespace (Spring Voyage: sv.<area>.<verb>, three segments).
    namespace_patterns: dict[str, str] = {}
    # verb_noun policies (ADR-0030): a name starts with one of `verbs`; `write_verbs` need a risk tag.
    verbs: list[str] = []
    write_verbs: list[str] = []

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Written only when set, so every policy recorded before these fields existed keeps its exact form.
        data = handler(self)
        for field in OPTIONAL_FIELDS:
            if not data.get(field):
                data.pop(field, None)
        return data

    @model_validator(mode="after")
    def _check_consistency(self) -> NamingPolicy:
        # InvalidPolicy is not a ValueError, so pydantic lets it through unwrapped to the caller.
        patterns = {"id_pattern": self.id_pattern, "alias_pattern": self.alias_pattern}
        patterns |= {f"source_patterns[{s!r}]": p for s, p in self.source_patterns.items()}
        patterns |= {f"namespace_patterns[{n!r}]": p for n, p in self.namespace_patterns.items()}
        for field, pattern in patterns.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidPolicy(f"{field} is not a valid regular expression: {exc}", field=field, pattern=pattern) from exc
        # A misspelt source would silently reserve nothing, so refuse it up front.
        named = [*self.source_patterns, *self.platform_sources, *(s for a in self.reserved_prefixes.values() for s in a)]
        unknown = sorted(set(named) - set(SOURCES))
        if unknown:
            raise InvalidPolicy(f"unknown source(s) {unknown}; sources are {list(SOURCES)}", sources=unknown)
        bad = [p for p in self.reserved_prefixes if not p.endswith(".")]
        if bad:
            raise InvalidPolicy(f"reserved prefixes must end with '.': {bad}", prefixes=bad)
        stray = sorted(set(self.write_verbs) - set(self.verbs))
        if stray:
            raise InvalidPolicy(f"write verbs must also be verbs: {stray}", write_verbs=stray)
        return self

    def check_tool_id(self, tool_id: str, source: str) -> None:
        """Raise unless `tool_id` may be a canonical ID of a tool from `source`."""
        self._check_tool_shape(tool_id, source)
        # The policy's patterns first (their errors name the pattern), then what every ID obeys.
        check_id_text(tool_id, non_ascii=self.non_ascii_ids)

    def _check_tool_shape(self, tool_id: str, source: str) -> None:
        self._check_not_shim(tool_id)
        self._check_reserved(tool_id, source, kind="tools", alias=False)
        self._check_namespace_shape(tool_id)
        pattern = self.source_patterns.get(source)
        if pattern is not None:
            if not re.fullmatch(pattern, tool_id):
                raise InvalidId(
                    f"{source} tool ID {tool_id!r} does not match the {self.name} shape for {source} tools: {pattern}",
                    tool_id=tool_id, source=source, pattern=pattern,
                )
            return
        if tool_id in self.single_segment_ids or re.fullmatch(self.id_pattern, tool_id):
            return
        hint = f"; single-segment IDs allowed only for: {', '.join(self.single_segment_ids)}" if self.single_segment_ids else ""
        raise InvalidId(
            f"tool ID {tool_id!r} does not match the {self.name} naming policy: expected {self.id_pattern}{hint}",
            tool_id=tool_id, source=source, pattern=self.id_pattern,
        )

    def check_alias_id(self, alias: str, source: str) -> None:
        """Raise unless `alias` may be an alias, deprecated or shim ID of a tool from `source`."""
        if not re.fullmatch(self.alias_pattern, alias):
            raise InvalidId(
                f"alias {alias!r} does not match the {self.name} alias shape: expected {self.alias_pattern}",
                tool_id=alias, source=source, pattern=self.alias_pattern,
            )
        self._check_reserved(alias, source, kind="aliases", alias=True)
        check_id_text(alias, non_ascii=self.non_ascii_ids)

    def _check_not_shim(self, tool_id: str) -> None:
        if tool_id in self.shim_ids or tool_id in self.pattern_shims:
            target = self.shim_ids.get(tool_id)
            stands_for = f"an input for '{target}'" if target else "an allowlist pattern, expanded where read"
            raise ShimId(f"{tool_id!r} is a legacy shim of the {self.name} naming policy ({stands_for}), never a "
                         "canonical ID", tool_id=tool_id, shim_of=target)

    def _check_namespace_shape(self, tool_id: str) -> None:
        pattern = self.namespace_patterns.get(tool_id.split(".", 1)[0])
        if pattern is not None and not re.fullmatch(pattern, tool_id):
            raise InvalidId(f"tool ID {tool_id!r} does not match the {self.name} shape of its namespace: {pattern}",
                            tool_id=tool_id, pattern=pattern)

    def check_verb(self, tool_id: str, risk: str | None) -> None:
        """Under a verb-noun policy: the name starts with a verb of the vocabulary, and a write verb
        carries a risk tag other than read_only (ADR-0030)."""
        if not self.verbs:
            return
        verb = tool_id.split("_", 1)[0]
        if verb not in self.verbs:
            raise InvalidId(f"tool name {tool_id!r} must start with a verb of the {self.name} vocabulary "
                            f"({', '.join(self.verbs)}), e.g. get_{tool_id}", tool_id=tool_id, verbs=list(self.verbs))
        if verb in self.write_verbs and risk in (None, "read_only"):
            raise RiskRequired(f"{verb!r} is a write verb of the {self.name} policy: {tool_id!r} needs a write risk "
                               f"tag ({', '.join(WRITE_RISKS)})", tool_id=tool_id, verb=verb,
                               write_risks="|".join(WRITE_RISKS))

    def is_well_formed(self, tool_id: str) -> bool:
        """Whether `tool_id` has the shape of some tool ID or alias under this policy (any source)."""
        shapes = [self.id_pattern, self.alias_pattern, *self.source_patterns.values()]
        return tool_id in self.single_segment_ids or any(re.fullmatch(p, tool_id) for p in shapes)

    def expand_pattern_shim(self, pattern: str) -> list[str] | None:
        targets = self.pattern_shims.get(pattern)
        return list(targets) if targets is not None else None

    def is_platform_tool(self, tool_id: str) -> bool:
        return tool_id.split(".", 1)[0] in self.platform_namespaces

    def _check_reserved(self, tool_id: str, source: str, *, kind: str, alias: bool) -> None:
        platform = source in self.platform_sources
        if tool_id in self.reserved_ids and not platform:
            raise ReservedId(
                f"{source} {kind} may not claim the reserved platform ID {tool_id!r}; "
                f"only {' or '.join(self.platform_sources)} tools may; choose an ID in the {source}'s own namespace",
                tool_id=tool_id, source=source, reserved_id=tool_id,
            )
        for prefix, allowed in self.reserved_prefixes.items():
            if not tool_id.startswith(prefix) or source in allowed:
                continue
            # Platform tools that moved out of a reserved family keep their old IDs as aliases during the
            # deprecation window (ARCH-21: mcp.memory.seed -> memory.seed), so for aliases any reserved
            # prefix is open to platform sources; canonical IDs still obey the prefix's owners.
            if alias and platform:
                continue
            advice = "use the platform family without this prefix" if platform else f"choose an ID in the {source}'s own namespace"
            raise ReservedPrefix(
                f"{source} {kind} may not use the reserved prefix {prefix!r} (reserved for {', '.join(allowed)}); {advice}",
                tool_id=tool_id, source=source, prefix=prefix, allowed_sources=list(allowed),
            )


PRESETS: dict[str, NamingPolicy] = {
    "tyrum": NamingPolicy(
        name="tyrum",
        id_pattern=r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$",
        single_segment_ids=_TYRUM_STANDALONE,
        # Raw MCP IDs keep the backing tool's own name, which may use underscores, as the last segment.
        source_patterns={"mcp": r"^mcp\.[a-z][a-z0-9-]*\.[a-z][a-z0-9_-]*$"},
        reserved_prefixes={"mcp.": ["mcp"]} | {p: list(PLATFORM_SOURCES) for p in ("tool.", "memory.", "sandbox.", "subagent.", "workboard.")},
        reserved_ids=[*_TYRUM_STANDALONE, "artifact.describe"],
        alias_pattern=LENIENT_ALIAS,
        pattern_shims={"tool.*": ["*"], "tool.fs.*": _FILESYSTEM_BUILTINS},
        shim_ids={"tool.fs.read": "read", "tool.fs.write": "write", "tool.exec": "bash", "tool.http.fetch": "webfetch"},
    ),
    "spring-voyage": NamingPolicy(
        name="spring-voyage",
        id_pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$",
        reserved_prefixes={"sv.": list(PLATFORM_SOURCES)},
        platform_namespaces=["sv"],
        alias_pattern=LENIENT_ALIAS,
        namespace_patterns={"sv": r"^sv\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$"},
    ),
    "verb-noun": NamingPolicy(
        name="verb-noun",
        id_pattern=r"^[a-z][a-z0-9]*(_[a-z][a-z0-9]*)+$",
        alias_pattern=LENIENT_ALIAS,
        verbs=[*_CRUD_READS, *_CRUD_WRITES, *_DOMAIN_READS, *_DOMAIN_WRITES],
        write_verbs=[*_CRUD_WRITES, *_DOMAIN_WRITES],
    ),
}


def preset(name: str) -> NamingPolicy:
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidPolicy(f"unknown naming preset {name!r}; presets are: {', '.join(PRESETS)}", name=name) from None


def policy_from_json(text: str) -> NamingPolicy:
    try:
        return NamingPolicy.model_validate_json(text)
    except ValidationError as exc:
        raise _invalid_policy(exc) from None


def policy_from_document(document: dict[str, Any]) -> NamingPolicy:
    """A naming policy given as its JSON document (already decoded)."""
    try:
        return NamingPolicy.model_validate(document)
    except ValidationError as exc:
        raise _invalid_policy(exc) from None


def _invalid_policy(exc: ValidationError) -> InvalidPolicy:
    reason = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<document>'}: {e['msg']}" for e in exc.errors())
    return InvalidPolicy(f"invalid naming policy: {reason}", reason=reason)
