"""The reads of the console's search, catalog and tool pages (infra/http/console_tools.py), from DuckDB only.

Names are shown in natural order (`tool_2` before `tool_10`). Computing that order in SQL costs 75 ms or
more a page on 10,000 tools (a regular expression per row), and gathering every searchable name from five
tables and views another 30 ms; so `console_index` gathers them (console_entries.sql) with each one's rank
in natural order once, `ConsoleIndex` keeps that while the read model stays at the same position, and the
page queries read it as the table `_entries` (an Arrow table: a few milliseconds for 11,000 rows).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from domain.errors import UnknownTool, UsageError
from domain.grammar import check_id_text, shown
from domain.routing import RouteRule, ToolFacts
from domain.schema_compat import breaking_changes
from domain.taxonomy import GROUPS, SOURCES, TIERS
from projections import queries
from projections.rows import registered, run, scalar, select_rows
from projections.sqlfiles import query
from projections.tracking import read_tracking

KINDS = ("tool", "alias", "unit", "agent", "connector")
LIFECYCLES = ("canonical", "alias", "deprecated", "retired")
# The values a search's fixed filters take (the page offers them as choices).
CHOICES = {"kind": KINDS, "group": GROUPS, "tier": TIERS, "lifecycle": LIFECYCLES, "source": SOURCES}
_DIGITS = re.compile(r"(\d+)")
_LONGEST_TEXT = 200  # a search text or filter value longer than any ID the policy admits is a mistake


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """The key that sorts names as people count: text parts as text, digit runs as numbers."""
    return tuple((1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(name) if part)


def console_index(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """Every entry the console lists (console_entries.sql), with the rank of its ID and of its family in
    natural order, sorted by that rank."""
    entries = con.sql(query("console_entries")).to_arrow_table()
    names = set(entries.column("id").to_pylist()) | {f for f in entries.column("family").to_pylist() if f}
    rank = {name: i for i, name in enumerate(sorted(names, key=lambda n: (natural_key(n), n)))}
    ids, families = entries.column("id").to_pylist(), entries.column("family").to_pylist()
    entries = entries.append_column("rank", pa.array([rank[i] for i in ids], pa.int64()))
    entries = entries.append_column("family_rank", pa.array([rank.get(f) if f else None for f in families],
                                                            pa.int64()))
    entries = entries.sort_by([("rank", "ascending"), ("kind", "ascending")])
    return entries.append_column("row", pa.array(range(entries.num_rows), pa.int64()))


def _rows(index: pa.Table, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries a page query found (by their `row`), in its order."""
    return index.take(pa.array([f["row"] for f in found], pa.int64())).to_pylist()


class ConsoleIndex:
    """`console_index` kept while the read model stays at one position (a server keeps one for its pages):
    the catalog changes far less often than it is read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: tuple[tuple[int, str], pa.Table] | None = None

    def of(self, con: duckdb.DuckDBPyConnection) -> pa.Table:
        tracking = read_tracking(con)
        at = (tracking.position, tracking.hash)
        with self._lock:
            if self._kept is None or self._kept[0] != at:
                self._kept = (at, console_index(con))
            return self._kept[1]


@contextmanager
def _indexed(con: duckdb.DuckDBPyConnection, index: pa.Table) -> Iterator[None]:
    with registered(con, "_entries", index):
        yield


def when(value: datetime) -> str:
    """A recorded time as the pages show it: UTC, to the second."""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def page_number(text: str | None, name: str = "page") -> int:
    """A page asked for in a URL: a whole number from 1 (none: the first)."""
    if text is None or text == "":
        return 1
    if not text.isdigit() or not 1 <= int(text) <= 1_000_000:
        raise UsageError(f"{name} {shown(text)} is not a page number (a whole number from 1)", **{name: text[:50]})
    return int(text)


def pages_of(total: int, per_page: int, page: int, name: str = "page") -> dict[str, int]:
    """Where a page stands among all; asking past the last page is a mistake, not an empty answer."""
    last = max(1, -(-total // per_page))
    if page > last:
        raise UsageError(f"{name} {page} is past the last page ({last})", **{name: page, "last": last})
    return {"page": page, "last": last, "total": total}


# -- search ------------------------------------------------------------------------------------------------
def _one_of(name: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if not value:
        return None
    if value not in allowed:
        raise UsageError(f"{name} {shown(value)} is not one of: {', '.join(allowed)}", **{name: value[:50]})
    return value


def _known(con: duckdb.DuckDBPyConnection, name: str, value: str | None, names_sql: str) -> str | None:
    """A filter naming a family or server: one the catalog knows (a typo is told, with the nearest name)."""
    if not value:
        return None
    if len(value) > _LONGEST_TEXT or not scalar(con, f"SELECT count(*) FROM ({names_sql}) AS k(n) WHERE n = ?",
                                               [value]):
        near = queries.nearest(con, names_sql, value[:_LONGEST_TEXT])
        raise UsageError(f"no {name} {shown(value)} in the catalog" + (f"; did you mean '{near}'?" if near else ""),
                         **{name: value[:50]})
    return value


def search_filters(con: duckdb.DuckDBPyConnection, asked: dict[str, str | None]) -> dict[str, str | None]:
    """The filters of a search, checked: a value that can match nothing is refused with what would."""
    return {
        "kind": _one_of("kind", asked.get("kind"), KINDS),
        "family": _known(con, "family", asked.get("family"), "SELECT DISTINCT family FROM tools"),
        "group": _one_of("group", asked.get("group"), GROUPS),
        "tier": _one_of("tier", asked.get("tier"), TIERS),
        "lifecycle": _one_of("lifecycle", asked.get("lifecycle"), LIFECYCLES),
        "source": _one_of("source", asked.get("source"), SOURCES),
        "server": _known(con, "server", asked.get("server"),
                         "SELECT DISTINCT backing_server FROM tools UNION SELECT name FROM mcp_servers"),
    }


def search(con: duckdb.DuckDBPyConnection, index: pa.Table, text: str, filters: dict[str, str | None],
           page: int, per_page: int) -> dict[str, Any]:
    """The entries whose ID starts with `text` or whose description holds every word of it, filtered, a page
    of them in natural order, with how many match in all."""
    text = text.strip()
    if len(text) > _LONGEST_TEXT:
        raise UsageError(f"the search text is {len(text)} characters long; at most {_LONGEST_TEXT}")
    lowered = text.lower()
    params = {"prefix": lowered or None, "words": lowered.split(), "limit": per_page,
              "offset": (page - 1) * per_page, **filters}
    with _indexed(con, index):
        found = select_rows(con, query("console_search"), params)
    total = found[0]["total"] if found else _count_only(con, index, params) if page > 1 else 0
    return {"results": _rows(index, found), **pages_of(total, per_page, page)}


def _count_only(con: duckdb.DuckDBPyConnection, index: pa.Table, params: dict[str, Any]) -> int:
    """How many match when the page asked for is past them all (its rows cannot say)."""
    with _indexed(con, index):
        rows = select_rows(con, query("console_search"), params | {"limit": 1, "offset": 0})
    return rows[0]["total"] if rows else 0


# -- the catalog at `/` ------------------------------------------------------------------------------------
def catalog_page(con: duckdb.DuckDBPyConnection, index: pa.Table, page: int, per_page: int) -> dict[str, Any]:
    """A page of tools in natural order of family then ID, with their live aliases."""
    params = {"limit": per_page, "offset": (page - 1) * per_page}
    with _indexed(con, index):
        found = select_rows(con, query("console_catalog"), params)
    tools = _rows(index, found)
    total = found[0]["total"] if found else scalar(con, "SELECT count(*) FROM tools")
    aliases = select_rows(con, "SELECT tool_key, alias AS id, lifecycle, shim FROM aliases WHERE lifecycle <> 'retired' "
                               "AND tool_key IN (SELECT unnest(?::VARCHAR[])) ORDER BY alias",
                          [[t["tool_key"] for t in tools]])
    for tool in tools:
        tool["aliases"] = [a for a in aliases if a["tool_key"] == tool["tool_key"]]
    return {"tools": tools, **pages_of(total, per_page, page)}


# -- a tool's page -----------------------------------------------------------------------------------------
def tool_named(con: duckdb.DuckDBPyConnection, tool_id: str) -> dict[str, Any]:
    """The tool an ID names (its canonical ID or any alias, retired ones too: an old link still leads to
    it): its key and canonical ID."""
    check_id_text(tool_id, non_ascii=True)
    found = select_rows(con, query("console_tool_named"), {"id": tool_id})
    if not found:
        queries.lookup(con, tool_id)  # raises unknown_tool, with its did-you-mean
        raise UnknownTool(f"no tool or alias '{tool_id}' in the catalog", tool_id=tool_id)
    return found[0]


def tool_page(con: duckdb.DuckDBPyConnection, named: dict[str, Any]) -> dict[str, Any]:
    """A tool's descriptor, its aliases with their windows, its schema versions with their verdicts, its
    classes and the route rules that match it; `named`: what `tool_named` answered."""
    key = named["tool_key"]
    tool = queries.tool_descriptor(con, key)
    classes = run(con, "SELECT classes FROM tool_class_history WHERE tool_key = ? AND valid_to IS NULL", [key])
    tool["classes"] = list(classes[0][0]) if classes else tool["classes"]
    facts = ToolFacts(tool_key=key, canonical_id=named["canonical_id"], classes=tool["classes"])
    return {"tool": tool, "tool_key": key, "aliases": _aliases(con, key), "schemas": schema_versions(con, key),
            "rules": matching_rules(con, facts)}


def _aliases(con: duckdb.DuckDBPyConnection, key: str) -> list[dict[str, Any]]:
    """Every alias of the tool, retired ones too, with its window as `audit alias` tells it."""
    names = [name for (name,) in run(con, "SELECT alias FROM aliases WHERE tool_key = ?", [key])]
    return [queries.audit_alias(con, name) for name in sorted(names, key=natural_key)]


def schema_versions(con: duckdb.DuckDBPyConnection, key: str) -> list[dict[str, Any]]:
    """Each input schema version, with its verdict against the one before under the compatibility mode in
    force when it was recorded (`backward` before any was set): a version recorded in spite of it was
    accepted as incompatible (`tool update --accept-incompatible`, an MCP server that already changed)."""
    rows = select_rows(con, query("console_schema_versions"), {"key": key})
    before = None
    for row in rows:
        schema = orjson.loads(row["input_schema"])
        row["recorded_at"] = when(row["recorded_at"])
        row["input_schema"] = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
        if row["version"] == rows[0]["version"]:
            row["verdict"], row["breaks"] = "first version", []
        else:
            row["breaks"] = breaking_changes(before, schema, row["mode"])
            row["verdict"] = (f"incompatible under {row['mode']}" if row["breaks"] else
                              f"compatible under {row['mode']}")
        before = schema
    return rows


def matching_rules(con: duckdb.DuckDBPyConnection, facts: ToolFacts) -> list[dict[str, Any]]:
    """The route rules in force that deny a call of the tool, or that a call of it arms (their `after`
    side), as the route decision itself matches them (domain/routing.py)."""
    found = []
    for row in select_rows(con, "SELECT * FROM route_rules ORDER BY rule_id"):
        rule = RouteRule(**{name: row[name] for name in RouteRule.model_fields if name in row})
        denies, arms = rule.denies(facts), rule.triggered_by([facts]) is facts
        if denies or arms:
            found.append({"rule_id": rule.rule_id, "scope": rule.scope, "denies": denies, "arms": arms,
                          "reason_code": rule.reason_code(), "since": row["valid_from"]})
    return found


def tool_events(con: duckdb.DuckDBPyConnection, key: str, page: int, per_page: int) -> dict[str, Any]:
    """A page of every event of the tool, oldest first: type, date, actor, reason and what it recorded."""
    rows = select_rows(con, query("console_tool_events"), {"key": key, "limit": per_page,
                                                           "offset": (page - 1) * per_page})
    total = rows[0]["total"] if rows else scalar(con, "SELECT count(*) FROM events WHERE originator_id = ?", [key])
    for row in rows:
        row["recorded_at"] = when(row["recorded_at"])
    return {"events": rows, **pages_of(total, per_page, page, "history_page")}
