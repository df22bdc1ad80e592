"""Reading the effective tool set from the history tables: for now or any past position (and time).

The query itself is `sql/effective_set.sql`; this module registers the subjects asked about as the table
`_subjects` and runs it. The materialized copy kept for fast reads is maintained by maintenance.py.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import duckdb

from projections.digest import digest
from projections.rows import plain_rows, registered, run, scalar, select_rows
from projections.schema import as_of_tables
from projections.sqlfiles import query

INFINITY = 2**62  # a position past any event: `at` for "now"


@contextmanager
def subjects_registered(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]]) -> Iterator[None]:
    """The subjects asked about, (kind, name) pairs, visible to the queries as the table `_subjects`."""
    import pyarrow as pa  # here: `effective` of the current set never registers a table
    table = pa.table({"kind": [s[0] for s in subjects], "name": [s[1] for s in subjects]},
                     schema=pa.schema([("kind", pa.string()), ("name", pa.string())]))
    with registered(con, "_subjects", table):
        yield


def _as_of(at: int, effective_at: str | None) -> dict[str, Any]:
    return {"at": at, "effective_at": effective_at}


def subjects_at(con: duckdb.DuckDBPyConnection, at: int = INFINITY) -> list[tuple[str, str]]:
    """Every subject (kind, name) that exists as of position `at` (default: now)."""
    return [tuple(r) for r in run(con, query("subjects_at"), {"at": at})]


def effective_digest(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]], at: int) -> str:
    """The digest (digest.py) of every subject's set at `at`, computed inside DuckDB."""
    with subjects_registered(con, subjects):
        return digest(con, query("effective_rows"), _as_of(at, None))


def effective_rows(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]],
                   at: int = INFINITY, effective_at: str | None = None) -> list[dict[str, Any]]:
    """The effective set of each subject as known at position `at` (default: now) and, when given, in
    effect at time `effective_at`; sorted by subject and tool."""
    with subjects_registered(con, subjects):
        return plain_rows(con, query("effective_rows") + "ORDER BY subject_kind, subject, tool_id",
                           _as_of(at, effective_at))


def explain_rows(con: duckdb.DuckDBPyConnection, subject: tuple[str, str], tool_key: str,
                 at: int = INFINITY, effective_at: str | None = None) -> list[dict[str, Any]]:
    """Every way the subject is granted the tool, the winner first."""
    with subjects_registered(con, [subject]):
        return plain_rows(con, query("explain", as_of_tables=as_of_tables(one_tool=True)),
                           {**_as_of(at, effective_at), "tool": tool_key})


# What `explain` answers about each way a subject is granted a tool.
EXPLAIN_FIELDS = ("provenance", "inherited_from", "exposure", "position", "cause")


def explanation(con: duckdb.DuckDBPyConnection, subject: tuple[str, str], tool: dict[str, Any],
                at: int = INFINITY, effective_at: str | None = None) -> dict[str, Any]:
    """Why the subject sees (or not) the tool (a row of queries.lookup): the winning way, the ways it
    shadows, and the positions of the events behind them."""
    ways = explain_rows(con, subject, tool["tool_key"], at, effective_at)
    grants = [{k: w[k] for k in EXPLAIN_FIELDS} for w in ways]
    # The ID as it was at `at` (what `effective --at` lists), and every event that decided the answer:
    # the grants, and what disabled the tool (its schema, the agent's state mode, its allowlist).
    tool_id = ways[0]["tool_id"] if ways else _id_at(con, tool["tool_key"], at) or tool["canonical_id"]
    decided = {g["position"] for g in grants} | {w["exposure_position"] for w in ways if w["exposure_position"]}
    return {"subject": f"{subject[0]}:{subject[1]}", "tool_id": tool_id, "visible": bool(grants),
            "winner": grants[0] if grants else None, "shadowed": grants[1:],
            "positions": sorted(decided)}


def left_at(con: duckdb.DuckDBPyConnection, subject: tuple[str, str], tool_key: str, at: int = INFINITY
            ) -> dict[str, Any] | None:
    """For a tool the subject no longer sees at `at`: the event that ended its last version in the subject's
    set (e.g. the grant's revoke), as {"position", "type", "recorded_at"}; None when it never saw it."""
    rows = run(con, """
        SELECT h.valid_to, e.type, epoch_us(e.recorded_at) FROM effective_history_for_subject($kind, $name) h
        JOIN events e ON e.position = h.valid_to
        WHERE h.tool_key = $key AND h.valid_to IS NOT NULL AND h.valid_to <= $at
        ORDER BY h.valid_to DESC LIMIT 1""", {"kind": subject[0], "name": subject[1], "key": tool_key, "at": at})
    if not rows:
        return None
    position, kind, recorded = rows[0]
    when = datetime.fromtimestamp(recorded / 1e6, timezone.utc)
    return {"position": position, "type": kind, "recorded_at": when.isoformat(timespec="microseconds")}


def _id_at(con: duckdb.DuckDBPyConnection, tool_key: str, at: int) -> str | None:
    return scalar(con, "SELECT canonical_id FROM tool_history WHERE tool_key = ? AND valid_from <= ? "
                       "AND (valid_to IS NULL OR valid_to > ?)", [tool_key, at, at])
