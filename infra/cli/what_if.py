"""`toolcat audit what-if --policy FILE|NAME [--at P]`: which events another naming policy would have
refused, and how every subject's effective set would differ (projections/what_if.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from domain.errors import UsageError
from infra.cli.catalog import load_policy
from infra.cli.output import Block, Reply, Table
from infra.cli.registry import Commands

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("audit what-if", cmd_audit_what_if, "replay the history under another naming policy: what it "
                                                         "would have refused, how every effective set differs",
                     "read")
    p.add_argument("--policy", required=True, help="tyrum, spring-voyage, verb-noun, or a JSON policy file")
    p.add_argument("--at", type=int, metavar="POSITION", help="replay up to this position (default: the head)")


def cmd_audit_what_if(ctx: Context) -> Reply:
    from projections.tracking import read_tracking
    from projections.what_if import what_if
    policy = load_policy(ctx.args.policy)
    con = ctx.read_model()
    head = read_tracking(con).position
    at = head if ctx.args.at is None else ctx.args.at
    if at < 0 or at > head:
        raise UsageError(f"--at {at} is outside the read model's history (0 to {head})", head=head)
    document = what_if(ctx.catalog, con, policy, at)
    blocks: list[Block] = [f"Under the naming policy '{policy.name}', up to position {at}: "
                           f"{len(document['refused'])} event(s) would have been refused"]
    if document["refused"]:
        blocks.append(Table("refused", ["position", "type", "id", "code"],
                            [[r["position"], r["type"], r["id"], r["code"]] for r in document["refused"]]))
    rows = [[s, "+ " + t] for s, e in document["effects"].items() for t in e["gains"]]
    rows += [[s, "- " + t] for s, e in document["effects"].items() for t in e["loses"]]
    rows += [[s, f"~ {c['tool_id']} {c['field']}: {c['from']} → {c['to']}"]
             for s, e in document["effects"].items() for c in e["changes"]]
    blocks.append(Table("effective sets under that policy", ["subject", "tool"], sorted(rows)) if rows
                  else "No effective set would differ.")
    return Reply(document, blocks)
