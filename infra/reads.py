"""Handlers of the read and pipeline commands."""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from domain.errors import UsageError
from infra.context import Context
from infra.render import print_json, print_table, print_text
from infra.wiring import open_read_model
from projections import queries
from projections.audit import verify
from projections.catchup import catch_up
from projections.projector import Projector, Tracking


def emit(ctx: Context, document: Any, human: str) -> int:
    print_json(document) if ctx.as_json else print_text(human)
    return 0


def cmd_resolve(ctx: Context) -> int:
    found = queries.resolve(ctx.read_model(), ctx.args.id)
    note = " (shim)" if found["shim"] else ""
    return emit(ctx, found, f"{found['input']} → {found['canonical_id']} [{found['lifecycle']}{note}]")


def _tool_lines(tool: dict[str, Any]) -> str:
    fields = ["canonical_id", "family", "group", "tier", "visibility", "lifecycle", "source", "backing_server",
              "plugin", "description", "risk", "schema_valid", "requires_state"]
    lines = [f"{name:>15}: {tool[name]}" for name in fields if tool.get(name) not in (None, "")]
    lines.append(f"{'classes':>15}: {', '.join(tool['classes']) or '-'}")
    aliases = ", ".join(f"{a['id']} ({a['lifecycle']}{', shim' if a['shim'] else ''})" for a in tool["aliases"])
    lines.append(f"{'aliases':>15}: {aliases or '-'}")
    return "\n".join(lines)


def cmd_tool_show(ctx: Context) -> int:
    tool = queries.tool_show(ctx.read_model(), ctx.args.id)
    return emit(ctx, tool, _tool_lines(tool))


def cmd_tool_list(ctx: Context) -> int:
    a = ctx.args
    page = queries.tool_list(ctx.read_model(), a.group, a.family, a.limit, a.cursor)
    if ctx.as_json:
        print_json(page)
        return 0
    print_table(None, ["canonical_id", "group", "tier", "visibility", "source", "aliases"],
                [[t["canonical_id"], t["group"], t["tier"], t["visibility"], t["source"],
                  ", ".join(x["id"] for x in t["aliases"])] for t in page["tools"]])
    if page["next_cursor"]:
        print_text(f"more: --cursor {page['next_cursor']}")
    return 0


def cmd_audit_verify(ctx: Context) -> int:
    # PostgreSQL sequences may skip numbers when a write is rolled back; SQLite positions never do.
    report = verify(ctx.catalog, ctx.read_model(), contiguous=not ctx.settings.event_store_url)
    return emit(ctx, report, f"ok: {report['events']} events, {report['seals']} seal(s) hold, "
                             f"chain head {report['head']}")


def cmd_audit_alias(ctx: Context) -> int:
    report = queries.audit_alias(ctx.read_model(), ctx.args.alias)
    if ctx.as_json:
        print_json(report)
        return 0
    window = report["window"]
    print_text(f"{report['alias']} → {report['canonical_id']} [{report['state']}]\n"
               f"window: opened {window['opened_release'] or '-'}, earliest removal "
               f"{window['earliest_removal_release'] or '-'}, {'closed' if window['closed'] else 'open'}")
    print_table("milestones", ["name", "release", "position", "evidence"],
                [[m["name"], m["release"], m["position"], m["evidence"]] for m in report["milestones"]])
    print_table("removal steps", ["step", "position", "recorded_at", "actor", "evidence"],
                [[s["step"], s["position"], s["recorded_at"], s["actor"], s["evidence"]] for s in report["steps"]])
    return 0


def cmd_audit_seal(ctx: Context) -> int:
    """Verify the chain, then record its head in the store itself."""
    from infra.commands import answer
    report = verify(ctx.catalog, ctx.read_model(), contiguous=not ctx.settings.event_store_url)
    position = ctx.catalog.recorder.max_notification_id() or 0
    return answer(ctx, ctx.catalog.seal(position, report["head"], report["events"], ctx.meta()))


def cmd_audit_replay(ctx: Context) -> int:
    from projections.replay import replay
    result = replay(ctx.catalog, ctx.read_model(), ctx.args.until, progress=progress_printer(ctx))
    verdict = "matches" if result["matches"] else "DOES NOT MATCH"
    emit(ctx, result, f"replayed to position {result['position']}: fingerprint {result['fingerprint']} "
                      f"{verdict} the live read model ({result['live_fingerprint']})")
    return 0 if result["matches"] else 5


def cmd_audit_fingerprint(ctx: Context) -> int:
    from projections.fingerprint import fingerprint
    con = ctx.read_model()
    head = Projector(con).tracking().position
    at = head if ctx.args.at is None else ctx.args.at
    if at < 0 or at > head:
        raise UsageError(f"--at {at} is outside the read model's history (0 to {head})", head=head)
    document = {"position": at, "fingerprint": fingerprint(con, at)}
    return emit(ctx, document, f"fingerprint at position {at}: {document['fingerprint']}")


def cmd_audit_report(ctx: Context) -> int:
    from pathlib import Path

    from infra.report_html import render
    report = queries.audit_report(ctx.read_model(), ctx.args.alias)
    if ctx.args.alias and not report["aliases"]:
        raise queries.UnknownTool(f"no alias '{ctx.args.alias}'", tool_id=ctx.args.alias)
    text = render(report) if ctx.args.format == "html" else json.dumps(report, indent=2, default=str)
    try:
        Path(ctx.args.output).write_text(text)
    except OSError as error:
        raise UsageError(f"cannot write {ctx.args.output}: {error.strerror or error}") from error
    findings = sum(len(a["findings"]) for a in report["aliases"])
    return emit(ctx, {"output": ctx.args.output, "aliases": len(report["aliases"]), "findings": findings},
                f"wrote {ctx.args.output}: {len(report['aliases'])} alias(es), {findings} finding(s)")


def progress_printer(ctx: Context, head: int | None = None) -> Any:
    """A progress bar on a terminal's stderr (towards the store's head when known); nothing for machines
    and pipes."""
    if ctx.as_json or not sys.stderr.isatty():
        return None

    def show(tracking: Tracking) -> None:
        if head:
            done = min(1.0, tracking.position / head)
            bar = "#" * int(done * 30)
            sys.stderr.write(f"\r[{bar:<30}] {done:4.0%}  position {tracking.position} of {head}")
        else:
            sys.stderr.write(f"\rprojected {tracking.events} events, position {tracking.position}")
        if head and tracking.position >= head:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return show


def cmd_rebuild(ctx: Context) -> int:
    """Build a fresh read model beside the live one, then swap it in with one atomic rename."""
    live = ctx.settings.read_model_path
    fresh = live.with_name(live.name + ".rebuild")
    fresh.unlink(missing_ok=True)
    con = open_read_model(ctx.settings, fresh)
    try:
        head = ctx.catalog.recorder.max_notification_id() or 0
        tracking = catch_up(ctx.catalog, Projector(con), progress=progress_printer(ctx, head))
    finally:
        con.close()
    # A stale write-ahead log of the old file must not be replayed onto the new one.
    live.with_name(live.name + ".wal").unlink(missing_ok=True)
    os.replace(fresh, live)
    document = {"position": tracking.position, "events": tracking.events}
    return emit(ctx, document, f"rebuilt the read model: {tracking.events} events, position {tracking.position}")
