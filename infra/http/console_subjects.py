"""The console's pages about subjects and the catalog's health, server-rendered (templates/*.html):

`/subjects/{subject}`              its effective set with provenance, exposure and the why of each tool, now
                                   or as known at a date (`?as_of=YYYY-MM-DD`, the end of that day, UTC) or a
                                   position (`?at=N`); with `?from=&to=` (dates or positions) the changes
                                   of its set between them, each with the event that made it
`/subjects/{subject}/tools/{tool}` why the subject sees (or not) the tool, at the same moments
`/deprecations`                    every alias in its window: what is due next, the steps done and missing,
                                   the catalog's own references that still name it
`/mcp`                             the MCP servers and their drift
`/gateway/denials`                 the gateway's latest refused calls

Every answer comes from the read-side functions the command line answers with (`effective --at/--as-of`,
`explain`, `audit report`, `mcp server list`); the pages add nothing the CLI could not say.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import duckdb
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from domain.errors import UnknownSubject, UsageError
from domain.grammar import shown
from domain.subjects import as_of_instant, parse_subject
from infra.http.web import Reader, render_page, segment
from infra.report_html import timeline_svg
from projections import queries
from projections.audit_report import MET, NOT_MET, audit_report
from projections.effective.reads import INFINITY, effective_rows, explanation, left_at
from projections.rows import plain_rows, run, select_rows
from projections.tracking import read_tracking

# How many of the gateway's latest refusals the denials page lists.
DENIALS_SHOWN = 200
# Rows of a subject's set (and of its changes) on one page: the 1,000-agent bench catalog's largest set
# (627 tools) on one page was 191 KB and took 3-4 times the 100 ms budget to render; 200 rows stay within.
ROWS_PER_PAGE = 200


# -- moments ---------------------------------------------------------------------------------------------------
def moment(con: duckdb.DuckDBPyConnection, at: str | None, as_of: str | None) -> int | None:
    """The position a page is asked about: `at` (a position), `as_of` (a time; a date alone is the end of that
    day, UTC), or None for now."""
    if at and as_of:
        raise UsageError("give at or as_of, not both")
    if as_of:
        return queries.position_at_time(con, as_of_instant(as_of.strip()))
    if at:
        return position(con, at, "at")
    return None


def position(con: duckdb.DuckDBPyConnection, text: str, name: str) -> int:
    """A position given as such, checked against the history."""
    head = read_tracking(con).position
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{name} {shown(text)} is not a position (a whole number from 0 to {head})") from None
    if not 0 <= value <= head:
        raise UsageError(f"{name} {value} is outside the history (0 to {head})", head=head)
    return value


def bound(con: duckdb.DuckDBPyConnection, text: str, name: str) -> int:
    """One end of a span of changes: a position, or a time (a date alone: the end of that day, UTC)."""
    text = text.strip()
    return position(con, text, name) if text.isdigit() else queries.position_at_time(con, as_of_instant(text))


def recorded_at(con: duckdb.DuckDBPyConnection, at: int) -> str | None:
    """When the event at `at` was recorded (UTC, to the second); None before the first event."""
    found = run(con, "SELECT recorded_at FROM events WHERE position = ?", [at])
    return _when(found[0][0]) if found else None


def _when(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


# -- a subject's page --------------------------------------------------------------------------------------------
def existing_subject(con: duckdb.DuckDBPyConnection, subject: str, at: int | None) -> tuple[str, str]:
    kind, name = parse_subject(subject)
    if not queries.subject_exists(con, kind, name, at):
        when = "" if at is None else f" at position {at}"
        near = queries.nearest_subject(con, kind, name)
        raise UnknownSubject(f"no {kind} '{name}'{when}" + (f"; did you mean '{near}'?" if near else ""),
                             subject=subject)
    return kind, name


def page_of(rows: list[dict[str, Any]], page: int) -> dict[str, Any]:
    """Rows `page` (from 1) of ROWS_PER_PAGE, with where they stand in the whole."""
    pages = max(1, -(-len(rows) // ROWS_PER_PAGE))
    if not 1 <= page <= pages:
        raise UsageError(f"page {page} is outside 1 to {pages}", pages=pages)
    first = (page - 1) * ROWS_PER_PAGE
    return {"rows": rows[first:first + ROWS_PER_PAGE], "page": page, "pages": pages, "first": first + 1,
            "last": min(first + ROWS_PER_PAGE, len(rows)), "total": len(rows)}


def subject_view(con: duckdb.DuckDBPyConnection, subject: str, at: str | None = None, as_of: str | None = None,
                 since: str | None = None, until: str | None = None, page: int = 1) -> dict[str, Any]:
    asked = moment(con, at, as_of)
    kind, name = existing_subject(con, subject, asked)
    current = queries.current_effective(con, f"{kind}:{name}")
    if asked is None:
        tools = current
    else:
        tools = effective_rows(con, [(kind, name)], asked)
        now = {t["tool_id"] for t in current}
        for tool in tools:  # what a past set held that the subject has lost since
            tool["gone_now"] = tool["tool_id"] not in now
    shown = page_of(tools, page)
    for tool in shown["rows"]:  # (built here: a filter per row in the template doubled the render's time)
        tool["why"] = f"/subjects/{segment(f'{kind}:{name}')}/tools/{segment(tool['tool_id'])}"
    asked_for = {"as_of": as_of, "at": at, "from": since, "to": until}
    shown["query"] = urlencode({k: v for k, v in asked_for.items() if v} | {"page": ""})  # (the page goes last)
    view = {"subject": f"{kind}:{name}", "tools": shown, "at": asked, "as_of": as_of or "",
            "at_given": at or "", "at_time": recorded_at(con, asked) if asked is not None else None,
            "since": since or "", "until": until or "", "changes": None}
    if since or until:
        view["changes"] = changes_view(con, (kind, name), since or "0", until or str(read_tracking(con).position))
        listed = view["changes"]["changes"]
        view["changes"] |= {"total": len(listed), "changes": listed[:ROWS_PER_PAGE]}
    return view


def changes_view(con: duckdb.DuckDBPyConnection, subject: tuple[str, str], since: str, until: str
                 ) -> dict[str, Any]:
    """The changes of the subject's set after `since` and up to `until`, by the event that made each: tools
    added, removed, or changed (provenance or exposure), from the versions of its set (migration 188)."""
    low, high = bound(con, since, "from"), bound(con, until, "to")
    if low > high:
        raise UsageError(f"from ({since}, position {low}) comes after to ({until}, position {high})")
    versions = plain_rows(con, """
        SELECT tool_key, tool_id, provenance, inherited_from, exposure, valid_from, valid_to
        FROM effective_history_for_subject($kind, $name)
        WHERE (valid_from > $low AND valid_from <= $high) OR (valid_to > $low AND valid_to <= $high)""",
                           {"kind": subject[0], "name": subject[1], "low": low, "high": high})
    by_event: dict[int, dict[str, dict[str, Any]]] = {}
    for version in versions:
        if low < version["valid_from"] <= high:
            by_event.setdefault(version["valid_from"], {}).setdefault(version["tool_key"], {})["after"] = version
        if version["valid_to"] is not None and low < version["valid_to"] <= high:
            by_event.setdefault(version["valid_to"], {}).setdefault(version["tool_key"], {})["before"] = version
    events = {row["position"]: row for row in select_rows(
        con, "SELECT position, recorded_at, type, actor, reason FROM events WHERE position IN "
             "(SELECT unnest($p::BIGINT[]))", {"p": sorted(by_event)})}
    changes = []
    for at in sorted(by_event):
        event = events[at]
        for pair in sorted(by_event[at].values(), key=lambda p: (p.get("after") or p["before"])["tool_id"]):
            before, after = pair.get("before"), pair.get("after")
            changes.append({"position": at, "recorded_at": _when(event["recorded_at"]), "type": event["type"],
                            "actor": event["actor"], "reason": event["reason"],
                            "change": "changed" if before and after else "added" if after else "removed",
                            "tool_id": (after or before)["tool_id"], "before": before, "after": after})
    return {"from": low, "to": high, "from_time": recorded_at(con, low), "to_time": recorded_at(con, high),
            "changes": changes}


def explain_view(con: duckdb.DuckDBPyConnection, subject: str, tool: str, at: str | None = None,
                 as_of: str | None = None) -> dict[str, Any]:
    asked = moment(con, at, as_of)
    kind, name = existing_subject(con, subject, asked)
    found = queries.lookup(con, tool, asked)
    document = explanation(con, (kind, name), found, asked if asked is not None else INFINITY)
    document["left"] = None if document["visible"] else left_at(
        con, (kind, name), found["tool_key"], asked if asked is not None else INFINITY)
    return document | {"at": asked, "at_time": recorded_at(con, asked) if asked is not None else None}


# -- deprecations ---------------------------------------------------------------------------------------------------
def deprecations_view(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Every deprecated or retired alias, as the audit report checks it: its rules split into done and to do,
    the next one due (a finding first), and the configuration that still names it."""
    aliases = []
    for entry in audit_report(con)["aliases"]:
        done = [r for r in entry["rules"] if r["result"] == MET]
        missing = [r for r in entry["rules"] if r["result"] != MET]
        due = next((r for r in missing if r["result"] == NOT_MET), missing[0] if missing else None)
        aliases.append({**entry, "done": done, "missing": missing, "due": due,
                        "timeline": Markup(timeline_svg(entry))})  # escaped by timeline_svg itself
    order = {"findings": 0, "window open": 1, "complete": 2}
    aliases.sort(key=lambda a: (order.get(a["status"], 3), a["alias"]))
    return {"aliases": aliases}


# -- MCP servers and the gateway -------------------------------------------------------------------------------------
def mcp_view(con: duckdb.DuckDBPyConnection, drift: dict[str, Any] | None) -> dict[str, Any]:
    """Every registered MCP server entry, with what the drift check last found for it."""
    found = {s["name"]: s for s in (drift or {}).get("servers", [])}
    servers = select_rows(con, """
        SELECT s.name, s.transport, s.tier, s.valid_from AS position, s.valid_from_time AS since,
               y.tool_count, y.synced_at, y.server_name, y.server_version, y.position AS synced_position
        FROM mcp_servers s
        LEFT JOIN (SELECT * FROM mcp_syncs QUALIFY row_number() OVER (PARTITION BY server ORDER BY position DESC) = 1) y
          ON y.server = s.name
        ORDER BY s.name""")
    for server in servers:
        server["since"], server["synced_at"] = _when(server["since"]), _when(server["synced_at"])
        server["check"] = found.get(server["name"])
    return {"servers": servers, "drift_on": drift is not None,
            "every_seconds": (drift or {}).get("every_seconds")}


def denials_view(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The gateway's latest refusals (its decision log, migration 140), newest first."""
    rows = select_rows(con, f"""
        SELECT decided_at, subject, token, asked, canonical_id, server, reason, matched_rule, set_position
        FROM gateway_decisions WHERE NOT allowed ORDER BY decided_at DESC LIMIT {DENIALS_SHOWN}""")
    for row in rows:
        row["decided_at"] = _when(row["decided_at"])
    total = run(con, "SELECT count(*) FILTER (WHERE NOT allowed), count(*) FROM gateway_decisions")[0]
    return {"denials": rows, "denied": total[0], "decided": total[1], "shown": DENIALS_SHOWN}


# -- the routes ---------------------------------------------------------------------------------------------------------
def console_subjects_router(reader: Reader, *dependencies: Any,
                            session: Callable[[Request], dict[str, str] | None] = lambda request: None,
                            integrity: Callable[[], dict[str, Any] | None] = lambda: None,
                            mcp_drift: Callable[[], dict[str, Any] | None] = lambda: None) -> APIRouter:
    """The pages above; `reader`, `dependencies`, `session` as web.py's `web_router` takes them; `integrity()`
    the last chain check (infra/http/integrity.py), `mcp_drift()` what the MCP drift check found."""
    router = APIRouter(include_in_schema=False, dependencies=list(dependencies))

    def page(request: Request, template: str, view: Callable[[duckdb.DuckDBPyConnection], dict[str, Any]]
             ) -> HTMLResponse:
        return render_page(reader, template, view, session(request), integrity())

    @router.get("/subjects/{subject}", response_class=HTMLResponse)
    def subject_page(request: Request, subject: str, at: str | None = None, as_of: str | None = None,
                     page_number: int = Query(1, alias="page")) -> HTMLResponse:
        since, until = request.query_params.get("from"), request.query_params.get("to")  # (Python keywords)
        return page(request, "subject.html",
                    lambda con: subject_view(con, subject, at, as_of, since, until, page_number))

    @router.get("/subjects/{subject}/tools/{tool}", response_class=HTMLResponse)
    def explain_page(request: Request, subject: str, tool: str, at: str | None = None,
                     as_of: str | None = None) -> HTMLResponse:
        return page(request, "explain.html", lambda con: explain_view(con, subject, tool, at, as_of))

    # The deprecations are a function of the history alone: kept for the position they were read at (the
    # audit's rules cost ≈ 60 ms an alias on the bench catalog; the page is asked for far more often than
    # the history changes).
    kept: dict[int, dict[str, Any]] = {}

    def deprecations_at(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
        at = read_tracking(con).position
        found = kept.get(at)
        if found is None:  # (two pages at once may both read it: the same answer)
            found = deprecations_view(con)
            kept.clear()
            kept[at] = found
        return found

    @router.get("/deprecations", response_class=HTMLResponse)
    def deprecations_page(request: Request) -> HTMLResponse:
        return page(request, "deprecations.html", deprecations_at)

    # (not /mcp: that is the MCP endpoint, whose GET is the stream of server notifications)
    @router.get("/mcp-servers", response_class=HTMLResponse)
    def mcp_page(request: Request) -> HTMLResponse:
        return page(request, "mcp.html", lambda con: mcp_view(con, mcp_drift()))

    @router.get("/gateway/denials", response_class=HTMLResponse)
    def denials_page(request: Request) -> HTMLResponse:
        return page(request, "denials.html", denials_view)

    return router
