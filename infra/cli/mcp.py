"""`toolcat mcp server add|change|remove|show|list` and `toolcat mcp sync`: MCP servers in the catalog.

Thin handlers: the writes are command objects (domain/commands/mcp.py), `mcp sync` is carried out by
infra/mcp/sync.py; the SDK is imported by infra/mcp only when a server is connected, never when the
command line starts."""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from domain.mcp_tools import DRIFT_EXIT
from domain.taxonomy import TIERS
from infra.cli.output import Reply, Table, plain
from infra.cli.registry import Commands, read_text_file, write

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    commands.group("mcp", "MCP servers: their entries, and syncing their tools into the catalog")
    commands.subgroup("mcp server", "MCP server entries (how to reach one)")
    _connection_options(commands.add("mcp server add", cmd_add, "add an MCP server (stdio or streamable HTTP)",
                                     "write"))
    _connection_options(commands.add("mcp server change", cmd_change, "replace a server's connection or tier",
                                     "write"))
    commands.add("mcp server remove", cmd_remove, "remove a server entry (its tools stay)", "write") \
        .add_argument("name", metavar="NAME")
    commands.add("mcp server show", cmd_show, "show a server entry (references, never values)", "read") \
        .add_argument("name", metavar="NAME")
    commands.add("mcp server list", cmd_list, "list the server entries", "read")
    p = commands.add("mcp record", cmd_record, "record a sync's evidence (the last command of every proposal "
                                               "of mcp sync)", "write")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--evidence", required=True, metavar="FILE.json",
                   help="serverInfo, protocol version, tools/list hash, tool names, tools gone upstream")
    p = commands.add("mcp sync", cmd_sync, "read a server's tools/list and plan the catalog's changes as a "
                                           "proposal", "write")
    p.add_argument("name", metavar="NAME")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--apply", action="store_true",
                      help="apply the plan at once when it holds nothing destructive")
    mode.add_argument("--check", action="store_true",
                      help=f"change nothing; exit {DRIFT_EXIT} when the live inventory differs from the catalog")


def _connection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the <server> segment of mcp.<server>.<tool>")
    p.add_argument("--command", metavar="CMD", help="the program that runs the server on stdio")
    p.add_argument("--arg", dest="args", action="append", default=[], metavar="A",
                   help="an argument of the program (repeatable, in order)")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="a plain, non-secret environment variable (repeatable)")
    p.add_argument("--env-ref", action="append", default=[], metavar="K=REF",
                   help="an environment variable taken from a secret reference such as env:GITHUB_TOKEN")
    p.add_argument("--url", metavar="URL", help="the server's streamable HTTP endpoint")
    p.add_argument("--header-ref", action="append", default=[], metavar="NAME=REF",
                   help="an HTTP header taken from a secret reference (repeatable)")
    p.add_argument("--tier", choices=TIERS, help="the tier of the server's tools (default advanced)")


def cmd_add(ctx: Context) -> Reply:
    from domain.commands import mcp
    return write(ctx, mcp.McpServerAdd)


def cmd_change(ctx: Context) -> Reply:
    from domain.commands import mcp
    return write(ctx, mcp.McpServerChange)


def cmd_remove(ctx: Context) -> Reply:
    from domain.commands import mcp
    return write(ctx, mcp.McpServerRemove)


def _rows(ctx: Context, name: str | None = None) -> list[dict[str, Any]]:
    from projections.rows import select_rows
    rows = select_rows(ctx.read_model(), """
        SELECT s.name, s.transport, s.command, s.args, s.env, s.env_refs, s.url, s.header_refs, s.tier,
               s.valid_from AS position, y.server_name, y.server_version, y.protocol_version, y.tools_hash,
               y.tool_count, y.synced_at::VARCHAR AS synced_at
        FROM mcp_servers s
        LEFT JOIN (SELECT * FROM mcp_syncs QUALIFY row_number() OVER (PARTITION BY server ORDER BY position DESC) = 1)
             y ON y.server = s.name
        WHERE ? IS NULL OR s.name = ? ORDER BY s.name""", [name, name])
    for row in rows:
        for column in ("env", "env_refs", "header_refs"):
            row[column] = json.loads(row[column])
        sync = {k: row.pop(k) for k in ("server_name", "server_version", "protocol_version", "tools_hash",
                                        "tool_count", "synced_at")}
        row["last_sync"] = sync if sync["tools_hash"] is not None else None
    return rows


def _reach(row: dict[str, Any]) -> str:
    return row["url"] if row["transport"] == "http" else " ".join([row["command"], *row["args"]])


def cmd_show(ctx: Context) -> Reply:
    from domain.mcp_servers import UnknownMcpServer, check_server_name
    name = check_server_name(ctx.args.name)
    rows = _rows(ctx, name)
    if not rows:
        raise UnknownMcpServer(f"no MCP server '{name}' in the catalog; 'toolcat mcp server list' shows them",
                               server=name)
    row = rows[0]
    refs = [f"{k}={v}" for k, v in {**row["env_refs"], **row["header_refs"]}.items()]
    sync = row["last_sync"]
    lines = [f"MCP server {plain(name)} ({row['transport']}, tier {row['tier']}): {plain(_reach(row))}",
             f"secret references: {plain(', '.join(refs)) if refs else 'none'}",
             "never synced" if sync is None else
             f"last sync {sync['synced_at']}: {plain(str(sync['server_name']))} {plain(str(sync['server_version']))}, "
             f"protocol {sync['protocol_version']}, {sync['tool_count']} tools, tools/list {sync['tools_hash'][:16]}…"]
    return Reply(row, lines)


def cmd_list(ctx: Context) -> Reply:
    rows = _rows(ctx)
    return Reply({"servers": rows}, [Table(None, ["name", "transport", "tier", "reaches", "last sync"],
                                           [[r["name"], r["transport"], r["tier"], _reach(r),
                                             (r["last_sync"] or {}).get("synced_at") or "never"] for r in rows])])


def cmd_record(ctx: Context) -> Reply:
    path = ctx.args.evidence
    try:
        evidence = json.loads(read_text_file(path, "the evidence"))
    except ValueError as error:
        from domain.errors import UsageError
        raise UsageError(f"{path} is not JSON: {error}", path=path) from None
    from domain.commands import mcp
    return write(ctx, mcp.McpRecord, evidence=evidence)


def cmd_sync(ctx: Context) -> Reply:
    from domain.commands import mcp
    return write(ctx, mcp.McpSync)
