"""`toolcat tool …` and `toolcat resolve`: registering, renaming, showing, listing and resolving tools."""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from domain.errors import InvalidSchema
from domain.taxonomy import GROUPS, RISKS, SOURCES, TIERS, VISIBILITIES
from infra.cli.effective import refuse_selectors, selector_options
from infra.cli.output import Reply, Table, plain
from infra.cli.registry import Commands, read_text_file, write

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    commands.group("tool", "register, rename, show and list tools")
    _tool_options(commands.add("tool register", cmd_tool_register, "register a tool under its canonical ID",
                               "write"))
    p = commands.add("tool rename", cmd_tool_rename, "make NEW canonical; OLD becomes a deprecated alias",
                     "write")
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--source", choices=SOURCES,
                   help="move the tool to another provenance (e.g. mcp -> builtin_mcp into the memory family)")
    commands.add("tool show", cmd_tool_show, "show a tool's descriptor", "read").add_argument("id", metavar="ID")
    p = commands.add("tool list", cmd_tool_list, "list tools, a page at a time", "read")
    p.add_argument("--group", choices=GROUPS, help="only tools of this group")
    p.add_argument("--family", help="only tools of this family")
    p.add_argument("--limit", type=int, default=100, help="at most this many tools per page (default 100)")
    p.add_argument("--cursor", help="continue from the next_cursor a previous page answered")
    p.add_argument("--visibility", choices=(*VISIBILITIES, "all"), default="public",
                   help="which inventory: public (default), internal, runtime_only or all")
    selector_options(p)
    commands.add("resolve", cmd_resolve, "resolve an ID or alias to its canonical ID", "read") \
        .add_argument("id", metavar="ID")


def _tool_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID")
    p.add_argument("--source", required=True, choices=SOURCES, help="where the tool comes from")
    p.add_argument("--group", required=True, choices=GROUPS, help="the tool's taxonomy group")
    p.add_argument("--tier", required=True, choices=TIERS, help="default or advanced")
    p.add_argument("--visibility", required=True, choices=VISIBILITIES, help="who may see the tool")
    p.add_argument("--family", help="the tool family (e.g. filesystem)")
    p.add_argument("--plugin", help="the plugin that provides the tool (source plugin)")
    p.add_argument("--backing-server", help="the server that backs the tool (e.g. the MCP server)")
    p.add_argument("--description", help="one line saying what the tool does")
    p.add_argument("--class", dest="classes", action="append", metavar="LABEL",
                   help="a class label such as source:sensitive or sink:network (repeat for several)")
    p.add_argument("--risk", choices=RISKS, help="what calling the tool may change")
    p.add_argument("--schema", metavar="FILE.json",
                   help="a JSON Schema file for the tool's input (an invalid one disables the tool)")
    p.add_argument("--requires-state", action="store_true",
                   help="the tool needs state: disabled for stateless agents")


def load_schema(path: str | None) -> Any:
    if path is None:
        return None
    text = read_text_file(path, "the schema file")
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidSchema(f"{path} is not JSON: {error}", path=path) from error


def cmd_tool_register(ctx: Context) -> Reply:
    from domain.commands import tools
    return write(ctx, tools.ToolRegister, schema=load_schema(ctx.args.schema))


def cmd_tool_rename(ctx: Context) -> Reply:
    from domain.commands import tools
    return write(ctx, tools.ToolRename)


def _tool_lines(tool: dict[str, Any]) -> str:
    fields = ["canonical_id", "family", "group", "tier", "visibility", "lifecycle", "source", "backing_server",
              "plugin", "description", "risk", "schema_valid", "schema_version", "requires_state"]
    lines = [f"{name:>15}: {plain(tool[name])}" for name in fields if tool.get(name) not in (None, "")]
    lines.append(f"{'classes':>15}: {plain(', '.join(tool['classes'])) or '-'}")
    aliases = ", ".join(f"{plain(a['id'])} ({a['lifecycle']}{', shim' if a['shim'] else ''})"
                        for a in tool["aliases"])
    lines.append(f"{'aliases':>15}: {aliases or '-'}")
    return "\n".join(lines)


def cmd_tool_show(ctx: Context) -> Reply:
    from projections import queries
    tool = queries.tool_show(ctx.read_model(), ctx.args.id)
    return Reply(tool, [_tool_lines(tool)])


def cmd_tool_list(ctx: Context) -> Reply:
    from projections import queries
    refuse_selectors(ctx)
    a = ctx.args
    page = queries.tool_list(ctx.read_model(), a.group, a.family, a.limit, a.cursor, a.visibility)
    human: list[Any] = [Table(None, ["canonical_id", "group", "tier", "visibility", "source", "aliases"],
                              [[t["canonical_id"], t["group"], t["tier"], t["visibility"], t["source"],
                                ", ".join(x["id"] for x in t["aliases"])] for t in page["tools"]])]
    if page["next_cursor"]:
        human.append(f"more: --cursor {page['next_cursor']}")
    return Reply(page, human)


def cmd_resolve(ctx: Context) -> Reply:
    from projections import queries
    found = queries.resolve(ctx.read_model(), ctx.args.id)
    note = " (shim)" if found["shim"] else ""
    return Reply(found, [f"{plain(found['input'])} → {plain(found['canonical_id'])} [{found['lifecycle']}{note}]"])
