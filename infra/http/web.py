"""The web page `toolcat serve` shows at `/`: server-rendered HTML, no build step.

`/` the catalog a page at a time (`?page=N`), by family in natural order (tool_2 before tool_10) with
lifecycle badges, how many aliases are in a deprecation window, and the subjects. The search and a tool's
page are console_tools.py's; the pages of a subject, the deprecations, the MCP servers and
the gateway's denials are console_subjects.py's; every page's header shows the last chain check.

The data comes from the read-side functions the CLI answers with (projections/queries.py, projections/effective/reads.py).
The templates (templates/*.html) autoescape everything: every value from the history is data, never
markup, its control and bidi characters shown as escapes; the only markup put in as is, the timeline, is
drawn by infra/report_html.py, which escapes its text itself.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import groupby
from typing import Any
from urllib.parse import quote

import duckdb
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from domain.errors import ToolcatError
from domain.grammar import visible
from infra.http.problems import status_of
from infra.report_html import STYLE
from projections import console
from projections.console import ConsoleIndex
from projections.effective.reads import subjects_at
from projections.rows import scalar
from projections.tracking import read_tracking

Reader = Callable[[], duckdb.DuckDBPyConnection]

_STYLE = Markup(STYLE + """
nav{margin-bottom:1rem}nav a{color:#2f6fdf}footer{margin-top:2rem;color:#5b6475;font-size:.85rem}
h2 small{font-weight:400;color:#5b6475}.badge{display:inline-block;font-size:.75rem;font-weight:600;
padding:.05rem .4rem;border-radius:.6rem;margin:0 .15rem;background:#e6e9ef}
.canonical,.enabled{background:#dcf2e3}.alias{background:#e3ecfb}.deprecated{background:#fff3cd}
.retired,.invalid,.drift,.error{background:#fde2e1}.in_sync{background:#dcf2e3}.shim{background:#ece3fb}
.disabled_invalid_schema,.disabled_by_state_mode,.disabled_by_agent_allowlist{background:#fde2e1}
span.alias-id{white-space:nowrap;margin-right:.4rem}
.integrity{padding:.4rem .7rem;border-radius:.3rem;margin:0 0 .6rem;font-size:.9rem}
.integrity.verified{background:#dcf2e3}.integrity.altered{background:#c62828;color:#fff}
.integrity.altered code{color:#fff}.integrity.unverified,.integrity.pending,.integrity.off{background:#fff3cd}
.added{background:#dcf2e3}.removed{background:#fde2e1}.changed{background:#fff3cd}
""")


_PLAIN = re.compile(r"[A-Za-z0-9._~-]+")


def _segment(value: str) -> str:
    """A value as one URL path segment (`agent:triage` → `agent%3Atriage`); a plain one as it is (quote's
    character by character walk was a fifth of rendering a 200-tool page)."""
    text = str(value)
    return text if _PLAIN.fullmatch(text) else quote(text, safe="")


def _shown(value: Any) -> Any:
    """Every value a template prints: control and bidi characters as escapes (`\u202e`), so the page
    shows what was recorded; markup put in as is (the timeline) and non-text values stay as they are."""
    return value if isinstance(value, Markup) or not isinstance(value, str) else visible(value, multiline=True)


_TEMPLATES = Environment(loader=PackageLoader("infra.http", "templates"), autoescape=True,
                         undefined=StrictUndefined, finalize=_shown)
_TEMPLATES.filters["segment"] = segment = _segment


@contextmanager
def _consistent(reader: Reader) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor from the server, in one read transaction: every query of a page sees the same batch."""
    con = reader()
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        finally:
            con.execute("ROLLBACK")
    finally:
        con.close()


CATALOG_PAGE = 100  # tools a page of `/` shows: a catalog of 10,000 stays a page of ~60 KB


def catalog_view(con: duckdb.DuckDBPyConnection, index: ConsoleIndex, page: str | None) -> dict[str, Any]:
    """A page of the catalog (natural order of family, then ID), how many aliases are deprecated or retired
    (their windows are the deprecations page's: the audit's rules take a second on a large catalog), and
    the subjects."""
    listed = console.catalog_page(con, index.of(con), console.page_number(page), CATALOG_PAGE)
    families = [{"name": name or "(no family)", "tools": list(members)}
                for name, members in groupby(listed.pop("tools"), key=lambda t: t["family"])]
    windows = scalar(con, "SELECT count(*) FROM aliases WHERE lifecycle <> 'alias'")
    return {"families": families, "tool_count": listed["total"], "pages": listed, "windows": windows,
            "subjects": [f"{kind}:{name}" for kind, name in subjects_at(con)]}


def render(template: str, **context: Any) -> str:
    """A page of templates/ (the sign-in pages' too, infra/http/signin.py)."""
    return _TEMPLATES.get_template(template).render(style=_STYLE, **context)


def render_page(reader: Reader, template: str, view: Callable[[duckdb.DuckDBPyConnection], dict[str, Any]],
                session: dict[str, str] | None = None, integrity: dict[str, Any] | None = None) -> HTMLResponse:
    """`session`: who the browser is signed in as, for the sign-out form (None: not signed in);
    `integrity`: the server's last chain check for the header (infra/http/integrity.py; None: not known).

    The answer's `Server-Timing` header says how long the page took to read and render in the server (`page`,
    wall-clock ms) and the CPU time of the thread that did it (`cpu`): the console's budget (≤ 100 ms a page,
    issue 32) is measured from it by `toolcat bench --only console`, apart from the client and the loopback."""
    started, cpu = time.perf_counter(), time.thread_time()
    try:
        with _consistent(reader) as con:
            context = view(con) | {"position": read_tracking(con).position}
        html, status = render(template, session=session, integrity=integrity, **context), 200
    except ToolcatError as error:
        status = status_of(error)
        html = render("error.html", status=status, code=error.code, message=error.message, session=session,
                      integrity=integrity)
    timing = (f"page;dur={(time.perf_counter() - started) * 1000:.2f}, "
              f"cpu;dur={(time.thread_time() - cpu) * 1000:.2f}")
    return HTMLResponse(html, status_code=status, headers={"Server-Timing": timing})


def web_router(reader: Reader, *dependencies: Any,
               mcp_drift: Callable[[], dict[str, Any] | None] = lambda: None,
               session: Callable[[Request], dict[str, str] | None] = lambda request: None,
               integrity: Callable[[], dict[str, Any] | None] = lambda: None,
               index: ConsoleIndex | None = None) -> APIRouter:
    """The web page's routes; `reader()` answers a new DuckDB cursor on the server's read model, which
    each page closes when done. `dependencies` run before every page (the server's: the `read` scope).
    `mcp_drift()`: what the server's MCP drift check found (infra/http/mcp_drift.py; None: it is off).
    `session(request)`: who the browser is signed in as (infra/http/signin.py; None: not signed in).
    `integrity()`: the server's last chain check (infra/http/integrity.py; None: not known).
    `index`: the console's entries in natural order, kept between pages (projections/console.py).
    A subject's pages are console_subjects.py's."""
    router = APIRouter(include_in_schema=False, dependencies=list(dependencies))
    entries = index or ConsoleIndex()

    @router.get("/", response_class=HTMLResponse)
    def catalog_page(request: Request) -> HTMLResponse:
        page = request.query_params.get("page")  # checked by the page itself: a bad one is a 400 page
        return render_page(reader, "catalog.html",
                           lambda con: catalog_view(con, entries, page) | {"mcp_drift": mcp_drift()},
                           session(request), integrity())

    return router
