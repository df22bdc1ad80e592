"""`toolcat plan`, `toolcat apply` and `toolcat proposal list|show|withdraw`: the catalog as code."""
from __future__ import annotations

from typing import TYPE_CHECKING

from domain.errors import UnknownProposal
from domain.grammar import check_proposal_id
from infra.cli.output import Reply, Table, plain
from infra.cli.registry import Commands, write

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("plan", cmd_plan, "diff a manifest (YAML or TOML) against the catalog and hold the "
                                       "plan as a proposal", "write")
    p.add_argument("manifest", metavar="FILE", help="the manifest: .yaml, .yml, .json or .toml")
    p = commands.add("apply", cmd_apply, "apply a proposal by its id, re-validated at the head, in one write",
                     "write")
    p.add_argument("proposal_id", metavar="PROPOSAL_ID")
    p.add_argument("--confirm-destructive", action="store_true",
                   help="required when the proposal revokes, unbinds, retires or narrows anything")
    commands.group("proposal", "proposals held by the catalog (toolcat plan)")
    commands.add("proposal list", cmd_proposal_list, "list proposals and their state", "read")
    commands.add("proposal show", cmd_proposal_show, "show a proposal's commands", "read") \
        .add_argument("proposal_id", metavar="PROPOSAL_ID")
    commands.add("proposal withdraw", cmd_proposal_withdraw, "withdraw an open proposal", "write") \
        .add_argument("proposal_id", metavar="PROPOSAL_ID")


def cmd_plan(ctx: Context) -> Reply:
    from domain.commands import proposals as proposal_commands
    from infra.manifests import read_manifest  # PyYAML only when a manifest is read
    return write(ctx, proposal_commands.Plan, manifest=read_manifest(ctx.args.manifest))


def cmd_apply(ctx: Context) -> Reply:
    from domain.commands import proposals as proposal_commands
    return write(ctx, proposal_commands.Apply)


def cmd_proposal_list(ctx: Context) -> Reply:
    from infra import proposals
    rows = proposals.proposal_rows(ctx.read_model())
    listed = [{k: r[k] for k in ("proposal_id", "state", "base_position", "position", "recorded_at", "actor")}
              | {"commands": len(r["commands"])} for r in rows]
    return Reply({"proposals": listed},
                 [Table(None, ["proposal_id", "state", "base", "commands", "actor"],
                        [[r["proposal_id"], r["state"], r["base_position"], r["commands"], r["actor"]]
                         for r in listed])])


def cmd_proposal_show(ctx: Context) -> Reply:
    from infra import proposals
    proposal_id = check_proposal_id(ctx.args.proposal_id)
    rows = proposals.proposal_rows(ctx.read_model(), proposal_id)
    if not rows:
        raise UnknownProposal(f"no proposal '{proposal_id}'; 'toolcat proposal list' shows them",
                              proposal_id=proposal_id)
    row = rows[0]
    return Reply(row, [f"Proposal {plain(proposal_id)}: {row['state']}, planned against position "
                       f"{row['base_position']} by {plain(row['actor'])}",
                       Table(None, ["risk", "command"], [[c["risk"], c["command"]] for c in row["commands"]])])


def cmd_proposal_withdraw(ctx: Context) -> Reply:
    from domain.commands import proposals as proposal_commands
    return write(ctx, proposal_commands.ProposalWithdraw)
