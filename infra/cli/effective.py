"""`toolcat effective` and `toolcat explain`: a subject's effective tool set, now or as of a past moment,
and why the subject sees (or not) one tool."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from domain.errors import UnknownSubject, UsageError
from domain.subjects import as_of_instant, parse_effective_at, parse_subject
from infra.cli.output import Reply, Table, plain
from infra.cli.registry import Commands
from projections.schema import EFFECTIVE_FIELDS

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("effective", cmd_effective, "a subject's effective tool set", "read")
    p.add_argument("subject", metavar="SUBJECT")
    moment_options(p)
    p.add_argument("--with-classes", action="store_true",
                   help="add each tool's class labels (ADR-027) to its row, as they stood at the same position")
    selector_options(p)
    p = commands.add("explain", cmd_explain, "why a subject sees (or not) a tool", "read")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("tool", metavar="TOOL")
    moment_options(p)
    selector_options(p)


# domain/selectors.py's SELECTORS, as options (the names are repeated: registering imports no domain module)
_SELECTOR_OPTIONS = {"--execution-profile": "an exposure selector ARCH-21 reserves",
                     "--conversation-kind": "an exposure selector ARCH-21 reserves",
                     "--conversation-id": "a context-report selector, not an exposure selector",
                     "--turn-id": "a context-report selector, not an exposure selector"}


def selector_options(parser: argparse.ArgumentParser) -> None:
    """ARCH-21's selectors on an inventory read: taken so that none is ever ignored, and refused
    (exit 3, unsupported_selector) by refuse_selectors, as over HTTP."""
    for flag, what in _SELECTOR_OPTIONS.items():
        parser.add_argument(flag, metavar="VALUE", help=f"{what}: refused (unsupported_selector)")


def refuse_selectors(ctx: Context) -> None:
    from domain.selectors import refuse_selectors as refuse
    refuse(vars(ctx.args))


def moment_options(parser: argparse.ArgumentParser, effective_at: bool = True) -> None:
    parser.add_argument("--at", type=int, metavar="POSITION", help="as known at this event position")
    parser.add_argument("--as-of", metavar="ISO8601", help="as known at this time (a date alone: the end of "
                        "that day, UTC)")
    if effective_at:
        parser.add_argument("--effective-at", metavar="ISO8601",
                            help="the grants and bindings in effect at this time (with --at/--as-of: as known "
                                 "then)")


def moment(ctx: Context) -> int | None:
    """The position asked for by --at or --as-of, or None for now."""
    from projections.tracking import read_tracking
    from projections import queries
    a = ctx.args
    if a.at is not None and a.as_of is not None:
        raise UsageError("give --at or --as-of, not both")
    con = ctx.read_model()
    if a.at is not None:
        head = read_tracking(con).position
        if a.at < 0 or a.at > head:
            raise UsageError(f"--at {a.at} is outside the history (0 to {head})", head=head)
        return a.at
    return None if a.as_of is None else queries.position_at_time(con, as_of_instant(a.as_of))


def stamped(ctx: Context, document: dict[str, Any]) -> dict[str, Any]:
    """`document` with the instant a date-only --as-of was taken as (`as_of`); a full time is answered as
    given."""
    given = getattr(ctx.args, "as_of", None)
    if given is not None and given != as_of_instant(given):
        document["as_of"] = as_of_instant(given)
    return document


def _subject(ctx: Context, at: int | None) -> tuple[str, str]:
    from projections import queries
    kind, name = parse_subject(ctx.args.subject)
    if not queries.subject_exists(ctx.read_model(), kind, name, at):
        when = "" if at is None else f" at position {at}"
        near = queries.nearest_subject(ctx.read_model(), kind, name)
        raise UnknownSubject(f"no {kind} '{name}'{when}" + (f"; did you mean '{near}'?" if near else ""),
                             subject=ctx.args.subject, **({"did_you_mean": near} if near else {}))
    return kind, name


def cmd_effective(ctx: Context) -> Reply:
    from projections.tracking import read_tracking
    from projections.effective.reads import INFINITY, effective_rows
    from infra.reading import current_document
    refuse_selectors(ctx)
    at = moment(ctx)
    effective_at = parse_effective_at(ctx.args.effective_at)
    if at is None and effective_at is None:
        document = current_document(ctx.read_model(), ctx.args.subject)
        tools, position, head = document["tools"], document["position"], document["read_model_position"]
    else:
        kind, name = _subject(ctx, at)
        rows = effective_rows(ctx.read_model(), [(kind, name)], at if at is not None else INFINITY, effective_at)
        tools = [{k: r[k] for k in EFFECTIVE_FIELDS} for r in rows]
        # a past read answers as of `at`: nothing after it was consulted
        head = read_tracking(ctx.read_model()).position if at is None else at
        position = head
    con = ctx.read_model()
    if ctx.args.with_classes:
        from projections.routing import with_classes  # (it loads the routing rules' domain model)
        tools = with_classes(con, tools, head)
    document = {"subject": ctx.args.subject, "position": position, "read_model_position": head, "tools": tools}
    if effective_at is not None:
        document["effective_at"] = effective_at
    stamped(ctx, document)
    table = Table(f"{ctx.args.subject} at position {document['position']}",
                  ["tool_id", "provenance", "inherited_from", "exposure", "description"],
                  [[t["tool_id"], t["provenance"], t["inherited_from"], t["exposure"], t["description"]]
                   for t in tools])
    return Reply(document, [table])


def cmd_explain(ctx: Context) -> Reply:
    from projections.effective.reads import INFINITY, explanation
    from projections import queries
    refuse_selectors(ctx)
    at = moment(ctx)
    kind, name = _subject(ctx, at)
    con = ctx.read_model()
    document = explanation(con, (kind, name), queries.lookup(con, ctx.args.tool, at),
                           at if at is not None else INFINITY, parse_effective_at(ctx.args.effective_at))
    grants = [document["winner"], *document["shadowed"]] if document["winner"] else []
    lines = _explanation(document["subject"], document["tool_id"], grants)
    if not grants:
        # When it left the set (a revoke, an unbind): what the gateway's refusals of it point back to.
        from projections.effective.reads import left_at
        found = document["left_at"] = left_at(con, (kind, name), document.get("tool_key") or
                                              queries.lookup(con, ctx.args.tool)["tool_key"],
                                              at if at is not None else INFINITY)
        if found is not None:
            lines.append(f"  it left the set at position {found['position']} ({found['type']})")
    return Reply(document, lines)


def _explanation(subject: str, tool_id: str, grants: list[dict[str, Any]]) -> list[Any]:
    if not grants:
        return [f"{plain(subject)} does not see {plain(tool_id)}: no grant, binding, platform namespace or "
                "image covers it"]
    winner = grants[0]
    lines = [f"{plain(subject)} sees {plain(tool_id)} through {plain(winner['cause'])} "
             f"(position {winner['position']}); exposure: {winner['exposure'] or 'n/a (unit)'}"]
    return lines + [f"  shadows {plain(other['cause'])} (position {other['position']})" for other in grants[1:]]
