"""Who could call a tool: every subject whose effective set holds it, now or as of a past position, with
the provenance and exposure of its row (`toolcat who-can`)."""
from __future__ import annotations

from typing import Any

import duckdb

from projections.effective.reads import subjects_at, subjects_registered
from projections.rows import plain_rows, select_rows
from projections.schema import as_of_tables
from projections.sqlfiles import query
from projections.tracking import read_tracking

FIELDS = ("subject", "provenance", "inherited_from", "exposure")


def who_can(con: duckdb.DuckDBPyConnection, tool_key: str, at: int | None = None) -> list[dict[str, Any]]:
    """The subjects that see the tool `tool_key`, sorted by kind (agents, then units) and name. Now (or as
    of the read model's own position, the same sets): read from the maintained sets; as of an earlier `at`:
    recomputed from history for every subject that existed then, for that tool alone (the rest of each set
    plays no part in its row)."""
    if at is not None and at >= read_tracking(con).position:
        at = None
    if at is None:
        rows = select_rows(con, "SELECT * FROM effective_tools WHERE tool_key = $k "
                                "ORDER BY subject_kind, subject", {"k": tool_key})
    else:
        with subjects_registered(con, subjects_at(con, at)):
            rows = plain_rows(con, query("effective_rows", as_of_tables=as_of_tables(one_tool=True))
                               + "ORDER BY subject_kind, subject", {"at": at, "effective_at": None, "tool": tool_key})
    return [{"subject": f"{r['subject_kind']}:{r['subject']}",
             **{k: r[k] for k in FIELDS if k != "subject"}} for r in rows]
