"""How a write command is carried out, whichever entry point made it (the command line from its
arguments, the server from a request's body): the one dispatch of the application's writes, and the
answer each gives. Most commands are the catalog's alone (`CatalogCommand.run`); `plan`, `apply`,
`audit seal` and `mcp sync` read the read model as well."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from domain.commands import CatalogCommand, Command
from domain.commands.mcp import McpSync
from domain.commands.proposals import Apply, AuditSeal, Plan
from domain.errors import UsageError
from infra import proposals
from infra.context import Context
from infra.hints import command as command_line
from infra.reply import Block, Reply, Table, write_reply
from projections.verify import UNVERIFIED, checked_head, verify

C = TypeVar("C", bound=Command)


def command_from(kind: type[C], values: dict[str, Any]) -> C:
    """The command `kind` with these arguments (by the names the command line's options have); what does
    not validate is a usage error (exit 2, 400 over HTTP)."""
    try:
        return kind.model_validate(values)
    except ValidationError as error:
        problems = [f"{'.'.join(str(part) for part in e['loc']) or kind.name}: "
                    f"{e['msg'].removeprefix('Value error, ')}" for e in error.errors()]
        raise UsageError(f"invalid arguments for '{kind.name}': {'; '.join(problems)}", errors=problems) from None


def perform(command: Command, ctx: Context) -> Reply:
    """Carry out `command` with `ctx`'s catalog, read model and meta (who, why, which idempotency key)."""
    for kind, carry_out in _WITH_READ_MODEL.items():
        if isinstance(command, kind):
            return carry_out(command, ctx)
    assert isinstance(command, CatalogCommand), command
    return write_reply(command.run(ctx.catalog, ctx.meta()), ctx.events_of_key)


# -- plan and apply --------------------------------------------------------------------------------------
def _plan(command: Command, ctx: Context) -> Reply:
    assert isinstance(command, Plan)
    if ctx.backend is None:  # a plan reads the read model: beside a server that owns it, the server plans
        ctx.refuse_if_served("plan here, or send the manifest to its POST /v1/proposal/make")
    document = proposals.plan(ctx, command.manifest, ctx.meta())
    return Reply(document, plan_blocks(document), exit_code=3 if document["violations"] else 0)


def plan_blocks(document: dict[str, Any]) -> list[Block]:
    if not document["commands"] and not document["violations"]:
        return [f"Nothing to change at position {document['base_position']}: the catalog already matches the "
                "manifest."]
    held = f"Proposal {document['proposal_id']}" if document["proposal_id"] else \
        "A plan (not held: it breaks rules)" if document["violations"] else "A plan (not held)"
    blocks: list[Block] = [f"{held} (planned against position {document['base_position']}): "
                           f"{len(document['commands'])} command(s)"]
    if document["commands"]:
        blocks.append(Table("commands", ["risk", "command"],
                            [[c["risk"], c["command"]] for c in document["commands"]]))
    if document["violations"]:
        blocks.append(Table("rules the plan breaks", ["code", "message"],
                            [[v["code"], v["message"]] for v in document["violations"]]))
    rows = [[subject, "+ " + tool, ""] for subject, e in document["effects"].items() for tool in e["gains"]]
    rows += [[subject, "- " + tool, ""] for subject, e in document["effects"].items() for tool in e["loses"]]
    rows += [[subject, "~ " + c["tool_id"], f"{c['field']}: {c['from']} → {c['to']}"]
             for subject, e in document["effects"].items() for c in e["changes"]]
    if rows:
        blocks.append(Table("effective sets", ["subject", "tool", "change"], sorted(rows)))
    if not document["violations"] and document["proposal_id"]:
        blocks.append(f"apply it with: toolcat apply {document['proposal_id']}"
                      + (" --confirm-destructive" if any(c["risk"].startswith("destructive")
                                                        for c in document["commands"]) else ""))
    return blocks


def _apply(command: Command, ctx: Context) -> Reply:
    assert isinstance(command, Apply)
    result = proposals.apply(ctx, command.proposal_id, command.confirm_destructive, ctx.meta())
    return write_reply(result, ctx.events_of_key)


# -- audit seal ------------------------------------------------------------------------------------------
def verified(ctx: Context, given: str | None = None) -> dict[str, Any]:
    """`audit verify`'s answer (against the head kept outside the store, when `given`). The read model is
    compared as it stands: catching it up first would make it vouch for the very events being checked
    (`--min-position N` still brings it to N first)."""
    if ctx.server is not None:  # the server that owns the read model verifies against it
        return ctx.server.document("audit verify", {"expect_head": given})  # type: ignore[no-any-return]
    expect = checked_head(given) if given else None
    # PostgreSQL sequences may skip numbers when a write is rolled back; SQLite positions never do.
    contiguous = not ctx.settings.event_store_url
    if ctx.freshness().min_position is not None:
        return verify(ctx.catalog, ctx.read_model(), contiguous, expect)
    con = ctx.existing_read_model()
    try:
        return verify(ctx.catalog, con, contiguous, expect)
    finally:
        if con is not None and ctx.backend is None:  # a server's lent read model goes back with the lease
            con.close()


def home_given(ctx: Context) -> str | None:
    """The --home the command was given, for the hints it prints."""
    return getattr(ctx.args, "home", None)


def _seal(command: Command, ctx: Context) -> Reply:
    """Verify the chain, record its head in the store itself, and give the head to keep elsewhere."""
    report = verified(ctx)
    result = ctx.catalog.seal(report["position"], report["head"], report["events"], ctx.meta())
    reply = write_reply(result, ctx.events_of_key)
    if not result.events:  # a replayed idempotency key: the first run printed the seal
        return reply
    reply.document["seal"] = {"position": report["position"], "head": report["head"], "events": report["events"],
                              "verdict": report["verdict"]}
    before = ("" if report["verdict"] != UNVERIFIED else
              "\nNothing vouched for the chain before this seal: it trusts the history as it stands now.")
    check = command_line("audit", "verify", "--expect-head", report["head"], home=home_given(ctx))
    reply.human = [f"Sealed position {report['position']}: head {report['head']} ({report['events']} events).\n"
                   "Keep this position and head outside the store (a ticket, a signed log, another machine): "
                   "whoever can rewrite the store can rewrite a seal in it too. Check the history against your "
                   f"copy with: {check}{before}", *(reply.human or [])]
    return reply


# -- mcp sync --------------------------------------------------------------------------------------------
def _mcp_sync(command: Command, ctx: Context) -> Reply:
    assert isinstance(command, McpSync)
    from infra.mcp.sync import sync_reply  # the MCP stack only when a server is synced
    return sync_reply(command, ctx)


_WITH_READ_MODEL: dict[type[Command], Callable[[Command, Context], Reply]] = {
    Plan: _plan, Apply: _apply, AuditSeal: _seal, McpSync: _mcp_sync}
