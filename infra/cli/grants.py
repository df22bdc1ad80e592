"""`toolcat grant add|revoke`: explicit grants of a tool or `ns.*` to a unit or an agent."""
from __future__ import annotations

from typing import TYPE_CHECKING

from infra.cli.output import Reply
from infra.cli.registry import Commands, answer, effective_at_option

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    commands.group("grant", "explicit grants to a unit or agent")
    for verb, handler in (("add", cmd_grant_add), ("revoke", cmd_grant_revoke)):
        p = commands.add(f"grant {verb}", handler, f"{verb} an explicit grant of a tool or ns.*", "write")
        p.add_argument("subject", metavar="SUBJECT", help="unit:NAME or agent:NAME")
        p.add_argument("target", metavar="TARGET", help="a tool ID or ns.*")
        effective_at_option(p)


def cmd_grant_add(ctx: Context) -> Reply:
    a = ctx.args
    return answer(ctx, ctx.catalog.add_grant(a.subject, a.target, ctx.meta(), a.effective_at))


def cmd_grant_revoke(ctx: Context) -> Reply:
    a = ctx.args
    return answer(ctx, ctx.catalog.revoke_grant(a.subject, a.target, ctx.meta(), a.effective_at))
