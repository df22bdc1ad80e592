"""`toolcat grant add|revoke`: explicit grants of a tool or `ns.*` to a unit or an agent."""
from __future__ import annotations

from typing import TYPE_CHECKING

from infra.cli.output import Reply
from infra.cli.registry import Commands, effective_at_option, write

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
    from domain.commands import subjects
    return write(ctx, subjects.GrantAdd)


def cmd_grant_revoke(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.GrantRevoke)
