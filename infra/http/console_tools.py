"""The console's pages about tools, server-rendered (templates/*.html):

`/search?q=&kind=&family=&group=&tier=&lifecycle=&source=&server=&page=`
    tools, aliases, units, agents and connectors whose ID starts with `q` or whose description holds every
    word of it, narrowed by the filters, a page at a time in natural order (tool_2 before tool_10)
`/tools/{tool}?as_of=YYYY-MM-DD&at=N&who_page=&history_page=`
    a tool (by its canonical ID or any alias): its descriptor, aliases with their windows, schema versions
    with their compatibility verdicts, classes and the route rules that match it, its history (every
    event, paged), and who can call it now or as known at the end of a date (the `who-can` answer)

A filter value that can match nothing (a tier that does not exist, a family the catalog lacks, a page past
the last) is refused with a 400 page saying what would do; an unknown tool is a 404 page. The reads are
projections/console.py's and the `who-can` command's own (projections/who_can.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

import duckdb
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from infra.http.console_subjects import moment, recorded_at
from infra.http.web import Reader, render_page
from projections import console
from projections.console import ConsoleIndex
from projections.who_can import who_can

SEARCH_PAGE = 50  # results a search page shows
HISTORY_PAGE = 50  # events a tool page shows
WHO_PAGE = 100  # subjects a tool page shows
FILTERS = ("kind", "family", "group", "tier", "lifecycle", "source", "server")


def _query(values: dict[str, Any]) -> str:
    """The query string of a link that keeps the other parameters of the page (empty ones left out)."""
    return urlencode({name: value for name, value in values.items() if value not in (None, "")})


def search_view(con: duckdb.DuckDBPyConnection, index: ConsoleIndex, params: dict[str, str]) -> dict[str, Any]:
    asked = {name: params.get(name) or None for name in FILTERS}
    filters = console.search_filters(con, asked)
    text = params.get("q", "")
    found = console.search(con, index.of(con), text, filters, console.page_number(params.get("page")), SEARCH_PAGE)
    return {"q": text, "filters": asked, "choices": console.CHOICES,
            "link": lambda **changed: "/search?" + _query({"q": text, **asked, "page": None} | changed), **found}


def _holders(con: duckdb.DuckDBPyConnection, key: str, at: int | None, page: str | None) -> dict[str, Any]:
    """A page of who can call the tool at `at` (None: now), and how many in all, how many enabled."""
    subjects = who_can(con, key, at)
    number = console.page_number(page, "who_page")
    return {"who": subjects[(number - 1) * WHO_PAGE:number * WHO_PAGE],
            "who_pages": console.pages_of(len(subjects), WHO_PAGE, number, "who_page"),
            "who_total": len(subjects), "enabled": sum(1 for s in subjects if s["exposure"] == "enabled")}


def tool_view(con: duckdb.DuckDBPyConnection, tool_id: str, params: dict[str, str]) -> dict[str, Any]:
    named = console.tool_named(con, tool_id)
    at_given, as_of = params.get("at") or None, params.get("as_of") or None
    at = moment(con, at_given, as_of)  # as `who-can --at/--as-of` takes it (a date: the end of that day, UTC)
    history = console.tool_events(con, named["tool_key"], console.page_number(params.get("history_page"),
                                                                             "history_page"), HISTORY_PAGE)
    kept = {"as_of": as_of, "at": at_given}  # what the page's links keep

    def link(**changed: Any) -> str:
        pages = {"who_page": params.get("who_page"), "history_page": params.get("history_page")}
        return f"/tools/{quote(named['canonical_id'], safe='')}?" + _query(kept | pages | changed)

    return console.tool_page(con, named) | _holders(con, named["tool_key"], at, params.get("who_page")) | {
        "asked_as": tool_id, "at": at, "as_of": as_of or "", "at_given": at_given or "",
        "at_time": recorded_at(con, at) if at is not None else None, "history": history,
        "moment": ("?" + _query(kept)) if at is not None else "", "link": link}


def console_tools_router(reader: Reader, *dependencies: Any,
                         session: Callable[[Request], dict[str, str] | None] = lambda request: None,
                         integrity: Callable[[], dict[str, Any] | None] = lambda: None,
                         index: ConsoleIndex | None = None) -> APIRouter:
    """The pages above; `reader`, `dependencies`, `session` and `integrity` as web.py's `web_router` takes
    them; `index`: the entries in natural order, kept between pages (shared with `/`)."""
    router = APIRouter(include_in_schema=False, dependencies=list(dependencies))
    entries = index or ConsoleIndex()

    def page(request: Request, template: str, view: Callable[[duckdb.DuckDBPyConnection], dict[str, Any]]
             ) -> HTMLResponse:
        return render_page(reader, template, view, session(request), integrity())

    @router.get("/search", response_class=HTMLResponse)
    def search_page(request: Request) -> HTMLResponse:
        params = dict(request.query_params)
        return page(request, "search.html", lambda con: search_view(con, entries, params))

    @router.get("/tools/{tool}", response_class=HTMLResponse)
    def tool_page(request: Request, tool: str) -> HTMLResponse:
        params = dict(request.query_params)
        return page(request, "tool.html", lambda con: tool_view(con, tool, params))

    return router
