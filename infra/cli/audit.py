"""`toolcat audit …`: the hash chain (verify, seal), replay and fingerprints, and the deprecation audit of
aliases (alias, report)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.errors import IntegrityFailure, UsageError
from domain.window import REMOVAL_STEPS
from infra.hints import command
from infra.cli.output import Reply, Table, plain
from infra.cli.registry import Commands, write
from infra.progress import reporting

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context

# `audit verify` found nothing wrong but had nothing to compare the chain with (no read model with
# recorded hashes, no seal, no --expect-head): not an ok, and not an integrity failure (exit 5) either.
UNVERIFIED_EXIT = 7
STEPS_HELP = "; ".join(f"{number}: {name}" for number, name in REMOVAL_STEPS.items())


def register(commands: Commands) -> None:
    commands.group("audit", "check the history")
    p = commands.add("audit verify", cmd_audit_verify, "recompute the hash chain from the store and compare it "
                     "with the read model's recorded hashes, the seals and a head kept outside the store "
                     f"(exit 5: altered; exit {UNVERIFIED_EXIT}: nothing to compare against)", "read")
    p.add_argument("--expect-head", metavar="HASH", help="a chain head kept outside the store, as 'audit seal' "
                   "printed it: exit 5 unless the history still holds it")
    commands.add("audit alias", cmd_audit_alias, "an alias's window, milestones and removal steps (the steps: "
                 f"{STEPS_HELP})", "read").add_argument("alias", metavar="ALIAS")
    commands.add("audit seal", cmd_audit_seal, "verify the chain, record its head in the store, and print the "
                 "head and position to keep outside the store", "write")
    p = commands.add("audit replay", cmd_audit_replay, "replay the store into a scratch read model and compare",
                     "read")
    p.add_argument("--until", type=int, metavar="POSITION", help="replay only up to this event position")
    p.add_argument("--deep", action="store_true", help=DEEP_HELP)
    p = commands.add("audit fingerprint", cmd_audit_fingerprint, "the read model's fingerprint (to compare copies)",
                     "read")
    p.add_argument("--at", type=int, metavar="POSITION",
                   help="the fingerprint as of this event position (default: the read model's)")
    p.add_argument("--deep", action="store_true", help=DEEP_HELP)
    p = commands.add("audit report", cmd_audit_report, "the deprecation audit report: every rule checked per "
                     "alias with its evidence, configuration still naming old IDs, and the integrity of the "
                     "history", "read")
    p.add_argument("--alias", metavar="ALIAS", help="report on this alias only")
    p.add_argument("--format", choices=("json", "html"),
                   help="html or json (default: json for an -o FILE ending in .json, else html)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write it; '-' for stdout")
    p.set_defaults(runs_here=True)  # even while a server runs: the file is written here


def describe_verification(report: dict[str, Any], home: str | None = None) -> list[str]:
    """The verdict, then one line per thing the chain was compared with."""
    from projections.verify import UNVERIFIED
    chain = f"{report['events']} events up to position {report['position']}, head {report['head']}"
    if report["verdict"] == UNVERIFIED:
        lines = [f"unverified: nothing to compare against. The chain ({chain}) agrees with itself, but no read "
                 f"model recorded its hashes and no seal or kept head vouches for it: run "
                 f"'{command('audit', 'seal', home=home)}' and keep the head it prints outside the store."]
    else:
        lines = [f"ok: the chain holds ({chain})"]
    model = report["compared"]["read_model"]
    if not model["present"]:
        lines.append("  read model: absent (none in this home)")
    else:
        lines.append(f"  read model: {model['events']} recorded hash(es) compared, through position "
                     f"{model['through'] or 0}")
    seals = report["compared"]["seals"]
    lines.append(f"  seals: {seals['count']} compared, the latest for position {seals['latest']}" if seals["count"]
                 else "  seals: none")
    expected = report["compared"]["expected_head"]
    if expected is not None:
        lines.append(f"  kept head: found at position {expected['position']}")
    return lines


def cmd_audit_verify(ctx: Context) -> Reply:
    from projections.verify import UNVERIFIED
    from infra.writing import home_given, verified  # (shared with `audit seal`)
    report = verified(ctx, ctx.args.expect_head)
    return Reply(report, ["\n".join(describe_verification(report, home_given(ctx)))],
                 exit_code=UNVERIFIED_EXIT if report["verdict"] == UNVERIFIED else 0)


def cmd_audit_alias(ctx: Context) -> Reply:
    from projections import queries
    report = queries.audit_alias(ctx.read_model(), ctx.args.alias)
    window = report["window"]
    recorded = {s["step"]: s for s in report["steps"]}
    steps = [[n, name, *(recorded[n][c] if n in recorded else None for c in
                         ("position", "recorded_at", "actor", "evidence"))] for n, name in REMOVAL_STEPS.items()]
    return Reply(report, [
        f"{plain(report['alias'])} → {plain(report['canonical_id'])} [{report['state']}]",
        f"window: opened {plain(window['opened_release'] or '-')}, earliest removal "
        f"{plain(window['earliest_removal_release'] or '-')}, {'closed' if window['closed'] else 'open'}",
        Table("milestones", ["name", "release", "position", "evidence"],
              [[m["name"], m["release"], m["position"], m["evidence"]] for m in report["milestones"]]),
        Table("removal steps" if len(recorded) == len(REMOVAL_STEPS) else
              "removal steps (no position: not recorded yet)",
              ["step", "name", "position", "recorded_at", "actor", "evidence"], steps),
        *([Table("flags (recorded late or back-dated: accepted, for a person to judge)",
                 ["kind", "position", "what"], [[f["kind"], f["position"], f["message"]] for f in report["flags"]])]
          if report["flags"] else []),
    ])


def cmd_audit_seal(ctx: Context) -> Reply:
    from domain.commands.proposals import AuditSeal
    return write(ctx, AuditSeal)


DEEP_HELP = ("recompute the effective sets from the history and compare the materialized ones row by row "
             "(slow at scale; the same fingerprint when they agree)")


def cmd_audit_replay(ctx: Context) -> Reply:
    from projections.replay import replay
    con = ctx.read_model()
    head = ctx.args.until or ctx.catalog.recorder.max_notification_id()
    with reporting("audit replay", ctx.as_json, lambda: head) as progress:
        result = replay(ctx.catalog, con, ctx.args.until, progress=progress,
                        memory_limit=ctx.settings.duckdb_memory_limit, deep=ctx.args.deep)
    from projections.verify import disagreement_message
    verdict = "matches" if result["matches"] else "DOES NOT MATCH"
    lines = [f"replayed to position {result['position']}: fingerprint {result['fingerprint']} "
             f"{verdict} the live read model ({result['live_fingerprint']})"]
    if result["altered"] or result["seals"]:
        lines.append(disagreement_message(result, "the replayed history disagrees with what vouched for it"))
    return Reply(result, lines, exit_code=0 if result["matches"] else 5)


def cmd_audit_fingerprint(ctx: Context) -> Reply:
    from projections.projector import Projector
    from projections.fingerprint import fingerprint
    con = ctx.read_model()
    head = Projector(con).tracking().position
    at = head if ctx.args.at is None else ctx.args.at
    if at < 0 or at > head:
        raise UsageError(f"--at {at} is outside the read model's history (0 to {head})", head=head)
    document = {"position": at, "fingerprint": fingerprint(con, at, deep=ctx.args.deep)}
    return Reply(document, [f"fingerprint at position {at}: {document['fingerprint']}"])


def integrity(ctx: Context) -> dict[str, Any]:
    """The report's integrity section: `audit verify`'s answer, or what it found altered."""
    from infra.reading import altered
    from infra.writing import verified
    try:
        return verified(ctx)
    except IntegrityFailure as failure:
        return altered(failure)


def report_reply(report: dict[str, Any], form: str, output: str) -> Reply:
    """Write the report to `output` ('-': stdout); the reply says where and how much it holds."""
    from infra.reading import report_text
    checked = report.get("integrity") or {}
    exit_code = 5 if checked.get("verdict") == "altered" else 0
    text = report_text(report, form)
    if output == "-":
        return Reply(None, [text], exit_code)
    try:
        Path(output).write_text(text)
    except OSError as error:
        raise UsageError(f"cannot write {output}: {error.strerror or error}") from error
    findings = sum(len(a["findings"]) for a in report["aliases"])
    flagged = sum(len(a["uses"]) for a in report["aliases"])
    document = {"output": output, "aliases": len(report["aliases"]), "findings": findings,
                "flagged": flagged, "integrity": checked.get("verdict")}
    return Reply(document, [f"wrote {output}: {len(report['aliases'])} alias(es), {findings} finding(s), "
                            f"{flagged} flagged use(s) of deprecated or retired IDs; history {checked.get('verdict')}"],
                 exit_code)


def cmd_audit_report(ctx: Context) -> Reply:
    """Written here, where the command runs; computed by the server that owns the read model, when one runs."""
    from infra.reading import report_document
    a = ctx.args
    # `-o report.json` means JSON: the file's name says what it holds
    form = a.format or ("json" if a.output.lower().endswith(".json") else "html")
    if ctx.server is not None:
        return report_reply(ctx.server.document("audit report", {"alias": a.alias, "format": "json"}), form,
                            a.output)
    checked = integrity(ctx)
    return report_reply(report_document(ctx.read_model(), a.alias, checked), form, a.output)
