"""Plan and apply (catalog as code): a manifest diffed against the catalog, the commands dry-run on the
catalog and their effect on every effective set predicted in a scratch read model, the plan held as a
proposal; later applied by id, re-validated at the head, in one atomic write tagged with the proposal id.

A planned command is stored as the command line that types it; it is read by the same parser and carried
out as the same command object as when typed, so a plan's rules and error codes are those of the commands."""
from __future__ import annotations

import json
import shlex
import uuid
from typing import Any

import duckdb

from domain.base import Meta
from domain.catalog import WriteResult
from domain.errors import ConfirmationRequired, ToolcatError
from domain.idempotency import IdempotencyKey, command_digest
from domain.manifest import Manifest
from domain.plan_diff import DESTRUCTIVE, Planned, plan_commands
from infra.context import Context
from projections.manifest_export import current_manifest
from projections.tracking import read_tracking
from projections.rows import scalar
from projections.scratch import predicted_effects


def shown_command(planned: Planned) -> str:
    """The command as typed; a file option shows the file it takes (the proposal holds its content)."""
    files = [a for option in planned.inputs for a in (option, f"{option.strip('-')}.json")]
    return "toolcat " + shlex.join(planned.argv + files)


def run_planned(ctx: Context, commands: list[Planned], meta: Meta, stop_at_first: bool) -> list[dict[str, Any]]:
    """Run the commands inside the catalog's open compound write; the rules they break, each with the
    command's own error code (the first is raised instead when `stop_at_first`)."""
    from infra.cli import planned_command  # proposals hold command lines: the command line's parser reads them
    violations = []
    for planned in commands:
        command = planned_command(planned.argv, planned.inputs)
        try:
            command.run(ctx.catalog, meta)
        except ToolcatError as error:
            if stop_at_first:
                raise
            violations.append({"code": error.code, "message": error.message, "command": shown_command(planned)})
    return violations


def plan(ctx: Context, manifest: Manifest, meta: Meta, *, extra: list[Planned] | None = None,
         hold: bool = True, upstream: bool = False) -> dict[str, Any]:
    """The plan's document; held as a proposal (`proposal_id`) only when it breaks no rule (and `hold`).
    `extra`: commands run after the manifest's (an MCP sync's evidence); `upstream`: see plan_diff.Diff."""
    con = ctx.read_model()
    base = read_tracking(con).position
    fresh = not scalar(con, "SELECT count(*) FROM naming_policy")
    diff = plan_commands(manifest, current_manifest(con), fresh, upstream)
    diff.commands += extra or []
    violations = [v.model_dump() for v in diff.violations]
    with ctx.catalog.compound(meta) as batch:  # a dry run: the batch is dropped, never saved
        violations += run_planned(ctx, diff.commands, meta, stop_at_first=False)
        planned_events = ctx.catalog.pending_history(batch, after=base)
    effects = predicted_effects(con, planned_events)
    proposal_id, position = None, None
    # A plan that breaks a rule is answered, never held (a rejection writes nothing); nor is an empty one.
    if diff.commands and not violations and hold:
        proposal_id = f"p-{uuid.uuid4().hex[:12]}"
        position = ctx.catalog.make_proposal(proposal_id, base, [c.model_dump() for c in diff.commands],
                                             meta).position
    return {"proposal_id": proposal_id, "base_position": base, "position": position,
            "commands": [{"command": shown_command(c), "risk": c.risk} for c in diff.commands],
            "violations": violations, "effects": effects}


def apply(ctx: Context, proposal_id: str, confirm_destructive: bool, meta: Meta) -> WriteResult:
    """Re-validate the proposal at the head and save all its commands at once, tagged with its id (the
    events' idempotency key, `proposal:<id>` unless the caller gave one)."""
    catalog = ctx.catalog
    proposal = catalog.proposal(proposal_id)
    tagged = meta.model_copy(update={"idempotency_key": meta.idempotency_key or f"proposal:{proposal_id}"})
    key, digest = tagged.idempotency_key, command_digest("apply", {"proposal_id": proposal_id})
    assert key is not None
    if catalog.already_done(key, tagged.actor, digest):
        return WriteResult(position=None, events=[], replayed_key=key)
    proposal.require_open()
    catalog.require_unchanged_since(proposal)
    commands = [Planned.model_validate(c) for c in proposal.commands]
    risky = sorted({c.risk for c in commands if c.risk in DESTRUCTIVE})
    if risky and not confirm_destructive:
        raise ConfirmationRequired(
            f"proposal '{proposal_id}' holds {' and '.join(risky)} commands; review them with 'toolcat proposal "
            f"show {proposal_id}', then run 'toolcat apply {proposal_id} --confirm-destructive'",
            proposal_id=proposal_id, risks=risky)
    with catalog.compound(tagged) as batch:
        run_planned(ctx, commands, tagged, stop_at_first=True)
        proposal.mark_applied(tagged)
        batch.add(proposal, IdempotencyKey.use(key, "apply", digest, tagged))
        return catalog.save_compound(batch)


def proposal_rows(con: duckdb.DuckDBPyConnection, proposal_id: str | None = None) -> list[dict[str, Any]]:
    from projections.rows import select_rows
    where = "WHERE p.proposal_id = ?" if proposal_id else ""
    rows = select_rows(con, f"""
        SELECT p.proposal_id, p.base_position, p.digest, p.commands, p.position, p.recorded_at::VARCHAR AS recorded_at,
               p.actor, coalesce(o.outcome, 'open') AS state, o.position AS closed_position
        FROM proposals p LEFT JOIN proposal_outcomes o USING (proposal_id) {where} ORDER BY p.position""",
                       [proposal_id] if proposal_id else None)
    for row in rows:
        commands = [Planned.model_validate(c) for c in json.loads(row.pop("commands"))]
        row["commands"] = [{"command": shown_command(c), "risk": c.risk} for c in commands]
    return rows
