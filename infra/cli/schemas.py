"""`toolcat tool update` and `toolcat catalog compatibility`: a tool's input schema versions, and the catalog's
compatibility mode that decides which new versions are accepted (domain/schema_compat.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from domain.schema_compat import MODES
from infra.cli.output import Reply
from infra.cli.registry import Commands, write
from infra.cli.tools import load_schema

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("tool update", cmd_tool_update,
                     "record a new version of a tool's input schema (checked under the compatibility mode)", "write")
    p.add_argument("id", metavar="ID")
    p.add_argument("--schema", required=True, metavar="FILE.json",
                   help="the new JSON Schema of the tool's input; refused when invalid or when the catalog's "
                        "compatibility mode forbids the change")
    p.add_argument("--accept-incompatible", action="store_true",
                   help="record the schema of an MCP server's tool even when the compatibility mode refuses it "
                        "(its server already changed; mcp sync plans this as a destructive update)")
    commands.group("catalog", "catalog-wide settings: the schema compatibility mode")
    p = commands.add("catalog compatibility", cmd_catalog_compatibility,
                     "set how tool input schemas may change (default backward)", "write")
    p.add_argument("mode", metavar="MODE", choices=MODES,
                   help="backward (calls valid before stay valid), forward (calls valid after were valid "
                        "before), full (both) or none (no check)")


def cmd_tool_update(ctx: Context) -> Reply:
    from domain.commands import tools
    return write(ctx, tools.ToolUpdate, schema=load_schema(ctx.args.schema))


def cmd_catalog_compatibility(ctx: Context) -> Reply:
    from domain.commands import catalog
    return write(ctx, catalog.CatalogCompatibility)
