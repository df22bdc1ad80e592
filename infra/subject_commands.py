"""Handlers of the subject, connector, image and grant commands, and of effective/explain/sql."""
from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from typing import Any

from domain.errors import UnknownSubject, UsageError
from domain.subjects import effective_time, parse_subject
from infra.commands import answer
from infra.context import Context
from infra.render import print_json, print_table, print_text
from projections import queries
from projections.effective import INFINITY, effective_rows, explain_rows
from projections.queries import EFFECTIVE_FIELDS
from projections.projector import read_tracking


def cmd_unit_create(ctx: Context) -> int:
    return answer(ctx, ctx.catalog.create_unit(ctx.args.unit, ctx.args.parent, ctx.meta()))


def cmd_agent_create(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.create_agent(a.agent, a.unit, a.state_mode, ctx.meta()))


def cmd_agent_allowlist(ctx: Context) -> int:
    a = ctx.args
    if a.clear == bool(a.patterns):
        raise UsageError("give either allowlist patterns or --clear")
    if a.clear:
        return answer(ctx, ctx.catalog.clear_allowlist(a.agent, ctx.meta()))
    return answer(ctx, ctx.catalog.set_allowlist(a.agent, a.patterns, ctx.meta()))


def cmd_connector_register(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.register_connector(a.slug, a.namespace, a.tools, ctx.meta()))


def cmd_connector_bind(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.bind_connector(a.slug, a.unit, ctx.meta(), a.effective_at))


def cmd_connector_unbind(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.unbind_connector(a.slug, a.unit, ctx.meta(), a.effective_at))


def cmd_image_declare(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.declare_image(a.agent, a.image, a.tools, ctx.meta()))


def cmd_grant_add(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.add_grant(a.subject, a.target, ctx.meta(), a.effective_at))


def cmd_grant_revoke(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.revoke_grant(a.subject, a.target, ctx.meta(), a.effective_at))


def _moment(ctx: Context) -> int | None:
    """The position asked for by --at or --as-of, or None for now."""
    a = ctx.args
    if a.at is not None and a.as_of is not None:
        raise UsageError("give --at or --as-of, not both")
    con = ctx.read_model()
    head = read_tracking(con).position
    if a.at is not None:
        if a.at < 0 or a.at > head:
            raise UsageError(f"--at {a.at} is outside the history (0 to {head})", head=head)
        return a.at
    return None if a.as_of is None else queries.position_at_time(con, a.as_of)


def _subject(ctx: Context, at: int | None) -> tuple[str, str]:
    kind, name = parse_subject(ctx.args.subject)
    if not queries.subject_exists(ctx.read_model(), kind, name, at):
        when = "" if at is None else f" at position {at}"
        raise UnknownSubject(f"no {kind} '{name}'{when}", subject=ctx.args.subject)
    return kind, name


def cmd_effective(ctx: Context) -> int:
    at = _moment(ctx)
    effective = effective_time(ctx.args.effective_at)
    kind, name = _subject(ctx, at)
    con = ctx.read_model()
    if at is None and effective is None:
        tools = queries.current_effective(con, f"{kind}:{name}")
    else:
        rows = effective_rows(con, [(kind, name)], at if at is not None else INFINITY, effective)
        tools = [{k: r[k] for k in EFFECTIVE_FIELDS} for r in rows]
    document = {"subject": ctx.args.subject, "position": read_tracking(con).position if at is None else at,
                "tools": tools}
    if effective is not None:
        document["effective_at"] = effective
    if ctx.as_json:
        print_json(document)
    else:
        print_table(f"{ctx.args.subject} at position {document['position']}",
                    ["tool_id", "provenance", "inherited_from", "exposure", "description"],
                    [[t["tool_id"], t["provenance"], t["inherited_from"], t["exposure"], t["description"]]
                     for t in tools])
    return 0


def cmd_explain(ctx: Context) -> int:
    at = _moment(ctx)
    kind, name = _subject(ctx, at)
    con = ctx.read_model()
    tool = queries.lookup(con, ctx.args.tool)
    ways = explain_rows(con, (kind, name), tool["tool_key"], at if at is not None else INFINITY,
                        effective_time(ctx.args.effective_at))
    fields = ("provenance", "inherited_from", "exposure", "position", "cause")
    grants = [{k: w[k] for k in fields} for w in ways]
    document = {"subject": ctx.args.subject, "tool_id": tool["canonical_id"], "visible": bool(grants),
                "winner": grants[0] if grants else None, "shadowed": grants[1:],
                "positions": sorted({g["position"] for g in grants})}
    if ctx.as_json:
        print_json(document)
        return 0
    if not grants:
        print_text(f"{ctx.args.subject} does not see {tool['canonical_id']}: no grant, binding, platform "
                   "namespace or image covers it")
        return 0
    winner = grants[0]
    print_text(f"{ctx.args.subject} sees {tool['canonical_id']} through {winner['cause']} "
               f"(position {winner['position']}); exposure: {winner['exposure'] or 'n/a (unit)'}")
    for other in grants[1:]:
        print_text(f"  shadows {other['cause']} (position {other['position']})")
    return 0


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def cmd_sql(ctx: Context) -> int:
    import duckdb
    con = ctx.read_only_model()
    try:
        relation = con.sql(ctx.args.query)
        table = relation.to_arrow_table() if relation is not None else None
        columns = table.column_names if table is not None else []
        rows = [_plain(row) for row in table.to_pylist()] if table is not None else []
    except duckdb.Error as error:
        raise UsageError(f"the query failed: {error}", query=ctx.args.query) from error
    fmt = "json" if ctx.as_json else ctx.args.format
    if fmt == "json":
        print_json(rows)
    elif fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows({k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows)
        print_text(out.getvalue())
    else:
        print_table(None, columns, [[r[c] for c in columns] for r in rows])
    return 0
