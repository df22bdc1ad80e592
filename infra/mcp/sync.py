"""`toolcat mcp sync`: read every page of a server's tools/list and turn it into a plan, held as a proposal
exactly as `toolcat plan` holds one (infra/proposals.py).

The desired state is a manifest: the catalog's own (projections/manifest_export.py) with the server's
tools as it lists them now (domain/mcp_tools.py). The manifest's plan machinery does the rest: commands
with risk tags, every rule checked on a dry run, the effect on every subject's effective set. The
proposal's last command records the sync's evidence (`toolcat mcp record`): applied with the rest, by
`mcp sync --apply` or by `toolcat apply ID --confirm-destructive`, or not at all."""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TextIO

from domain.base import Meta
from domain.commands.mcp import McpSync
from domain.mcp_tools import DRIFT_EXIT
from domain.errors import CatalogRuleError
from domain.grammar import visible
from domain.manifest import Tool
from domain.mcp_servers import Connection, Evidence
from domain.mcp_tools import Imported, Inventory, imported
from domain.plan_diff import DESTRUCTIVE, Planned
from domain.schema_check import schema_problems
from domain.schema_compat import breaking_changes
from infra.context import Context
from infra.reply import Block, Reply, Table
from infra.settings import Settings

if TYPE_CHECKING:
    from infra.mcp.sessions import Opened

_PROGRESS_PAGES = 10  # a listing of more pages than this tells its progress on stderr


class TooManyTools(CatalogRuleError):
    code = "too_many_tools"


def read_inventory(server: str, connection: Connection, settings: Settings, progress: TextIO | None = None
                   ) -> Inventory:
    """Every page of the server's tools/list (at most TOOLCAT_MCP_MAX_TOOLS tools), with its serverInfo."""
    import anyio
    return anyio.run(read_inventory_async, server, connection, settings, progress or sys.stderr)


async def read_inventory_async(server: str, connection: Connection, settings: Settings, progress: TextIO
                               ) -> Inventory:
    from infra.mcp.sessions import open_session
    async with open_session(server, connection, settings) as opened:
        return await list_inventory(server, opened, settings, progress)


async def list_inventory(server: str, opened: Opened, settings: Settings, progress: TextIO) -> Inventory:
    """Every page of tools/list on an open session."""
    from mcp import types
    tools: list[dict[str, Any]] = []
    cursor, seen, page = None, set(), 0
    while True:
        page += 1
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        result = await opened.call(f"tools/list (page {page})", opened.session.list_tools(params=params))
        tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in result.tools]
        if len(tools) > settings.mcp_max_tools:
            raise TooManyTools(f"MCP server '{server}' lists more than {settings.mcp_max_tools} tools "
                               "(TOOLCAT_MCP_MAX_TOOLS); nothing was read into the catalog", server=server,
                               limit=settings.mcp_max_tools)
        if page % _PROGRESS_PAGES == 0:
            progress.write(f"mcp sync {server}: {len(tools)} tools read ({page} pages)\n")
        cursor = result.next_cursor
        if cursor is None:
            break
        if cursor in seen:
            raise opened.failure(f"answered tools/list page {page} with a cursor it gave before")
        seen.add(cursor)
    info, init = opened.initialized.server_info, opened.initialized
    return Inventory(server_name=info.name if info else None, server_version=info.version if info else None,
                     protocol_version=init.protocol_version, tools=tools,
                     listed_at=datetime.now(timezone.utc).isoformat())


def _server_rows(ctx: Context, name: str) -> tuple[str | None, set[str]]:
    """The tools hash of the server's last applied sync, and the tools already gone upstream."""
    from projections.rows import run
    con = ctx.read_model()
    last = run(con, "SELECT tools_hash FROM mcp_syncs WHERE server = ? ORDER BY position DESC LIMIT 1", [name])
    gone = run(con, "SELECT tool_id FROM mcp_tools WHERE server = ? AND NOT listed", [name])
    return (last[0][0] if last else None), {row[0] for row in gone}


def _verdict(tool_id: str, old: Any, new: Any, mode: str) -> dict[str, Any]:
    """The compatibility verdict of a schema change, under the catalog's mode and under backward."""
    if schema_problems(new):
        return {"tool_id": tool_id, "verdict": "invalid", "changes": schema_problems(new)}
    old_valid = old is None or not schema_problems(old)
    refused = breaking_changes(old, new, mode) if old_valid else []  # type: ignore[arg-type]
    breaking = breaking_changes(old, new, "backward") if old_valid else []
    verdict = "incompatible" if refused else "breaking" if breaking else "compatible"
    return {"tool_id": tool_id, "verdict": verdict, "mode": mode, "changes": refused or breaking}


def desired_state(ctx: Context, name: str, found: Imported, gone_before: set[str]) -> dict[str, Any]:
    """The catalog's manifest with the server's tools as listed now, and what the sync notes beside it."""
    from projections.manifest_export import current_manifest
    current = current_manifest(ctx.read_model())
    tools = dict(current.tools)
    mode = current.compatibility or "backward"
    refused, kept, verdicts, refused_ids = [], [], [], set()
    for tool_id, fields in found.tools.items():
        known = tools.get(tool_id)
        if known is None:
            tools[tool_id] = Tool(**fields)
            continue
        if known.source != "mcp" or known.backing_server != name:
            refused.append({"name": found.upstream[tool_id], "reason": f"{tool_id} is already a tool of "
                            f"{known.backing_server or known.source}, not of this server"})
            refused_ids.add(tool_id)
            continue
        # A registered tool's description, risk and tier do not change (plan_diff); the schema does.
        differs = [f for f in ("description", "risk", "tier") if getattr(known, f) != fields[f]]
        if differs:
            kept.append({"tool_id": tool_id, "fields": differs})
        if known.input_schema != fields["input_schema"]:
            verdicts.append(_verdict(tool_id, known.input_schema, fields["input_schema"], mode))
            tools[tool_id] = known.model_copy(update={"input_schema": fields["input_schema"]})
    listed = set(found.tools) - refused_ids
    gone = sorted(tool_id for tool_id, tool in current.tools.items()
                  if tool.source == "mcp" and tool.backing_server == name and tool_id not in found.tools
                  and tool_id not in gone_before)
    return {"manifest": current.model_copy(update={"tools": tools}), "refused": refused, "kept": kept,
            "schema_changes": verdicts, "gone": gone, "listed": listed}


def affected(ctx: Context, changes: dict[str, str]) -> list[dict[str, Any]]:
    """For each changed tool (tool ID → what changes), the subjects that see it now: who a schema change
    or a tool gone upstream reaches, beside the plan's effects on the sets themselves."""
    from projections.rows import run
    from projections.who_can import who_can
    con = ctx.read_model()
    found = []
    for tool_id, change in sorted(changes.items()):
        key = run(con, "SELECT tool_key FROM tools WHERE canonical_id = ?", [tool_id])
        subjects = [s["subject"] for s in who_can(con, key[0][0])] if key else []
        found.append({"tool_id": tool_id, "change": change, "subjects": subjects})
    return found


def sync(ctx: Context, name: str, mode: str, meta: Meta) -> dict[str, Any]:
    """mode: "plan" (hold the proposal), "apply" (and apply it when nothing in it is destructive) or "check"
    (hold nothing, write nothing; the document's `drift` says whether the live inventory differs)."""
    server = ctx.catalog.mcp_server(name)
    return planned(ctx, name, server.tier, read_inventory(name, server.connection, ctx.settings), mode, meta)


def planned(ctx: Context, name: str, tier: str, inventory: Inventory, mode: str, meta: Meta) -> dict[str, Any]:
    """`sync`'s document for an inventory already read (serve's drift check reads it off the writer)."""
    from infra import proposals
    found = imported(name, tier, inventory)
    last_hash, gone_before = _server_rows(ctx, name)
    state = desired_state(ctx, name, found, gone_before)
    tools_hash = inventory.tools_hash()
    evidence = Evidence(server_name=inventory.server_name, server_version=inventory.server_version,
                        protocol_version=inventory.protocol_version, tools_hash=tools_hash,
                        tool_count=len(inventory.tools), listed_at=inventory.listed_at,
                        tools=[{"tool_id": t, "upstream_name": found.upstream[t], **found.described[t]}
                               for t in sorted(state["listed"])],
                        gone=state["gone"])
    record = Planned(argv=["mcp", "record", name], risk="destructive_update" if state["gone"] else "safe_update",
                     inputs={"--evidence": evidence.model_dump()})
    document = proposals.plan(ctx, state["manifest"], meta, extra=[record] if last_hash != tools_hash else [],
                              hold=mode != "check", upstream=True)
    document.update({
        "server": {"name": inventory.server_name, "version": inventory.server_version,
                   "protocol_version": inventory.protocol_version, "tool_count": len(inventory.tools),
                   "tools_hash": tools_hash},
        "mapped": found.mapped, "refused": found.refused + state["refused"], "gone": state["gone"],
        "schema_changes": state["schema_changes"], "kept": state["kept"],
        "affected": affected(ctx, {**{c["tool_id"]: f"schema {c['verdict']}" for c in state["schema_changes"]},
                                   **{tool_id: "gone upstream: deprecated" for tool_id in state["gone"]}}),
        "drift": bool(document["commands"]), "applied": None})
    risky = any(c["risk"] in DESTRUCTIVE for c in document["commands"])
    if mode == "apply" and document["proposal_id"] and not risky:
        result = proposals.apply(ctx, document["proposal_id"], False, meta)
        document["applied"] = {"position": result.position, "events": len(result.events)}
    return document


def sync_reply(command: McpSync, ctx: Context) -> Reply:
    """`mcp sync`'s answer: the sync's plan document, what the server said, and the plan as `plan` shows it
    (exit 3 when it breaks a rule; DRIFT_EXIT for --check when the live inventory differs)."""
    from infra.writing import plan_blocks
    if ctx.backend is None:  # a sync plans on the read model: beside a server that owns it, plan there
        ctx.refuse_if_served("sync here, or send the sync to its POST /v1/mcp/sync")
    document = sync(ctx, command.server, command.mode, ctx.meta())
    server = document["server"]
    blocks: list[Block] = [f"MCP server {visible(command.server)}: {visible(str(server['name']))} "
                           f"{visible(str(server['version']))}, protocol {server['protocol_version']}, "
                           f"{server['tool_count']} tools"]
    if document["refused"]:
        blocks.append(Table("upstream tools not imported", ["upstream name", "why"],
                            [[r["name"], r["reason"]] for r in document["refused"]]))
    if document["mapped"]:
        blocks.append(Table("upstream names mapped", ["upstream name", "tool ID"],
                            [[m["name"], m["tool_id"]] for m in document["mapped"]]))
    if document["affected"]:
        blocks.append(Table("changed upstream", ["tool", "change", "who sees it now"],
                            [[a["tool_id"], a["change"], ", ".join(a["subjects"]) or "nobody"]
                             for a in document["affected"]]))
    if document["kept"]:
        blocks.append(Table("changed upstream, kept as registered", ["tool", "fields"],
                            [[k["tool_id"], ", ".join(k["fields"])] for k in document["kept"]]))
    blocks += plan_blocks(document)
    if document.get("applied"):  # instead of the plan's advice to apply it
        blocks[-1] = f"applied at position {document['applied']['position']}"
    code = 3 if document["violations"] else DRIFT_EXIT if command.check and document["drift"] else 0
    return Reply(document, blocks, exit_code=code)
