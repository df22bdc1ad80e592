"""Who could call a tool: every subject whose effective set holds it, now or as of a past position, with
the provenance and exposure of its row (`toolcat who-can`)."""
from __future__ import annotations

from typing import Any

import duckdb

from projections.effective.reads import effective_rows, subjects_at
from projections.rows import select_rows

FIELDS = ("subject", "provenance", "inherited_from", "exposure")


def who_can(con: duckdb.DuckDBPyConnection, tool_key: str, at: int | None = None) -> list[dict[str, Any]]:
    """The subjects that see the tool `tool_key`, sorted by kind (agents, then units) and name. Now: read from
    the maintained sets; as of `at`: recomputed from history for every subject that existed then."""
    if at is None:
        rows = select_rows(con, "SELECT * FROM effective_tools WHERE tool_key = $k "
                                "ORDER BY subject_kind, subject", {"k": tool_key})
    else:
        rows = [r for r in effective_rows(con, subjects_at(con, at), at) if r["tool_key"] == tool_key]
    return [{"subject": f"{r['subject_kind']}:{r['subject']}",
             **{k: r[k] for k in FIELDS if k != "subject"}} for r in rows]
