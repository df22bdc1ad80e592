"""`toolcat who-can TOOL`: every subject that could call a tool, now or as of a past moment, and why (its
provenance) and how (its exposure)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from infra.cli.effective import moment, moment_options, refuse_selectors, selector_options, stamped
from infra.cli.output import Reply, Table
from infra.cli.registry import Commands

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("who-can", cmd_who_can, "every subject that could call a tool, with its provenance and "
                     "exposure", "read")
    p.add_argument("tool", metavar="TOOL", help="a canonical ID or an alias of it")
    moment_options(p, effective_at=False)
    selector_options(p)


def cmd_who_can(ctx: Context) -> Reply:
    from projections import queries
    from projections.tracking import read_tracking
    from projections.who_can import who_can
    refuse_selectors(ctx)
    at = moment(ctx)
    con = ctx.read_model()
    tool = queries.lookup(con, ctx.args.tool, at)  # an alias as it was then
    subjects = who_can(con, tool["tool_key"], at)
    position = read_tracking(con).position if at is None else at
    document = stamped(ctx, {"tool_id": tool["canonical_id"], "position": position, "subjects": subjects})
    enabled = sum(1 for s in subjects if s["exposure"] == "enabled")
    return Reply(document, [
        Table(f"who can call {tool['canonical_id']} at position {position}",
              ["subject", "provenance", "inherited_from", "exposure"],
              [[s["subject"], s["provenance"], s["inherited_from"], s["exposure"]] for s in subjects]),
        f"{len(subjects)} subject(s) see it; {enabled} agent(s) may call it (exposure enabled); units have no "
        "exposure"])
