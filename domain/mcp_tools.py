"""How an MCP server's tools/list becomes catalog tools (ARCH-21's raw MCP shape): pure rules, no I/O.

- Each upstream tool becomes `mcp.<server>.<name>`: source mcp, backing_server the server, family `mcp`,
  group extension, the server entry's tier (advanced unless it says otherwise), public.
- Risk comes from the tool's MCP annotations by `RISK_BY_ANNOTATION`, the one table of that mapping.
- A name our grammar refuses is mapped by `mapped_name` (one deterministic rule); calls keep the upstream
  name, which each applied sync records beside the tool ID. A name that cannot be mapped, or that two
  tools share, is refused with the reason: never silently skipped.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from domain.grammar import ID_MAX, TEXT_MAX, visible
from domain.schema_check import schema_problems

# `mcp sync --check`: the live inventory differs from the catalog (for CI and cron). 0 when it matches;
# other failures keep their usual codes (3 a rule, 6 a server that cannot be reached).
DRIFT_EXIT = 10

# The annotation → risk table (first row that holds wins). MCP's own default for a tool without hints is
# "may be destructive"; ARCH-21's catalog tags such a tool as a safe write, as the issue asked, and an
# operator who disagrees can change the server's tools by hand.
RISK_BY_ANNOTATION: tuple[tuple[str, str], ...] = (
    ("readOnlyHint is true", "read_only"),
    ("destructiveHint is true", "destructive_update"),
    ("otherwise (no hint, or both false)", "safe_update"),
)
# The upstream name as the tyrum policy's last segment of mcp.<server>.<tool> takes it.
_SEGMENT = re.compile(r"[a-z][a-z0-9_-]*")
_OUTSIDE = re.compile(r"[^a-z0-9_-]+")


def risk_of(annotations: dict[str, Any] | None) -> str:
    hints = annotations or {}
    if hints.get("readOnlyHint") is True:
        return RISK_BY_ANNOTATION[0][1]
    if hints.get("destructiveHint") is True:
        return RISK_BY_ANNOTATION[1][1]
    return RISK_BY_ANNOTATION[2][1]


def mapped_name(name: str) -> str:
    """The rule for an upstream name the grammar refuses: lower case; every run of other characters than
    a-z, 0-9, '_' and '-' becomes one '-'; '-' trimmed at both ends; `t-` in front when it does not start
    with a letter. `Get Weather` → `get-weather`, `fetch.URL` → `fetch-url`, `3d` → `t-3d`."""
    text = _OUTSIDE.sub("-", name.lower()).strip("-")
    return text if not text or text[0].isalpha() and text[0].isascii() else f"t-{text}"


def tool_id_of(server: str, name: str) -> str:
    return f"mcp.{server}.{name}"


@dataclass
class Inventory:
    """What a server said: its serverInfo, the protocol version and every tool of every page, as JSON."""

    server_name: str | None
    server_version: str | None
    protocol_version: str | None
    tools: list[dict[str, Any]]
    listed_at: str

    def tools_hash(self) -> str:
        """SHA-256 of the canonical JSON of the tools, in name order (a server's page order is not a change)."""
        ordered = sorted(self.tools, key=lambda t: str(t.get("name")))
        text = json.dumps(ordered, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Imported:
    """The tools of one inventory as the catalog would hold them, and what could not be imported."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool ID → manifest tool fields
    upstream: dict[str, str] = field(default_factory=dict)           # tool ID → upstream name (for calls)
    described: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool ID → DESCRIBED (what agents see)
    mapped: list[dict[str, str]] = field(default_factory=list)       # [{"name", "tool_id"}]
    refused: list[dict[str, str]] = field(default_factory=list)      # [{"name", "reason"}]


def _description(tool: dict[str, Any]) -> str | None:
    text = tool.get("description")
    if not isinstance(text, str) or not text:
        return None
    shown = visible(text, multiline=True)  # control and bidi characters written as escapes
    return shown if len(shown) <= TEXT_MAX else shown[:TEXT_MAX - 1] + "…"


# What the catalog keeps of a tool's own description beside the manifest's fields, from each applied sync,
# for the gateway's tools/list: its title, output schema and annotations (each None when the server gives
# none, or one that is not usable).
DESCRIBED = ("title", "output_schema", "annotations")
# MCP's tool annotations: the hints and their JSON types (anything else a server sends is not kept).
_HINTS = {"title": str, "readOnlyHint": bool, "destructiveHint": bool, "idempotentHint": bool, "openWorldHint": bool}


def _shown(text: Any) -> str | None:
    if not isinstance(text, str) or not text:
        return None
    shown = visible(text)  # one line: control and bidi characters written as escapes
    return shown if len(shown) <= TEXT_MAX else shown[:TEXT_MAX - 1] + "…"


def described(tool: dict[str, Any]) -> dict[str, Any]:
    """A listed tool's title (its own, else its annotations' title), output schema (kept only when it is an
    object schema that is a valid JSON Schema: a client validates answers against it) and annotations
    (MCP's hints of the right types), as the sync's evidence records them."""
    hints = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    annotations = {k: v for k, v in hints.items() if k in _HINTS and isinstance(v, _HINTS[k])}
    if "title" in annotations:
        annotations["title"] = _shown(annotations["title"])
    schema = tool.get("outputSchema")
    usable = isinstance(schema, dict) and schema.get("type") == "object" and not schema_problems(schema)
    return {"title": _shown(tool.get("title")) or annotations.get("title"),
            "output_schema": schema if usable else None, "annotations": annotations or None}


def imported(server: str, tier: str, inventory: Inventory) -> Imported:
    result = Imported()
    counts: dict[str, int] = {}
    for tool in inventory.tools:
        counts[str(tool.get("name"))] = counts.get(str(tool.get("name")), 0) + 1
    claimed: dict[str, str] = {}  # tool ID → the upstream name that claimed it
    # Exact names claim their IDs before mapped ones, each in name order: the same answer for any page order.
    ordered = sorted(inventory.tools, key=lambda t: (not _SEGMENT.fullmatch(str(t.get("name"))), str(t.get("name"))))
    for tool in ordered:
        name = str(tool.get("name"))
        if counts[name] > 1:
            if name not in {r["name"] for r in result.refused}:
                result.refused.append({"name": name, "reason": f"the server lists {counts[name]} tools with this "
                                                               "name; none is imported until it lists one"})
            continue
        segment = name if _SEGMENT.fullmatch(name) else mapped_name(name)
        tool_id = tool_id_of(server, segment)
        reason = None
        if not segment:
            reason = "no letter or digit is left of it to name a tool"
        elif len(tool_id) > ID_MAX:
            reason = f"mcp.{server}.<name> would be longer than {ID_MAX} characters"
        elif tool_id in claimed:
            reason = f"it maps to {tool_id}, which '{claimed[tool_id]}' already names"
        if reason is not None:
            result.refused.append({"name": name, "reason": reason})
            continue
        claimed[tool_id] = name
        if segment != name:
            result.mapped.append({"name": name, "tool_id": tool_id})
        result.upstream[tool_id] = name
        result.described[tool_id] = described(tool)
        result.tools[tool_id] = {
            "source": "mcp", "group": "extension", "tier": tier, "visibility": "public", "family": "mcp",
            "backing_server": server, "description": _description(tool),
            "risk": risk_of(tool.get("annotations")),
            "input_schema": tool.get("inputSchema")}
    return result
