"""`effective_history`: the effective sets through history, type-2 per (subject, tool), maintained with the
materialized sets (effective_sets.refresh_dirty calls `refresh_history` in the refresh's transaction).

The table must not depend on when the sets were refreshed (a catch-up refreshes once at its end, a follower
with every batch), so it is not written from "what changed at this refresh": the versions of each dirty
subject are recomputed from the history tables (`sql/effective_history_rows.sql`, a temporal join packed
into maximal versions) for every position after the last settled one, and spliced onto the versions
before it. Packing makes the split invisible: an unchanged row open across the cut stays one version.
"""
from __future__ import annotations

import duckdb

from projections.effective import INFINITY, subjects_registered
from projections.rows import run
from projections.schema import HISTORY_TABLES
from projections.sqlfiles import query

# One CTE per history table, `<table>_w`: its versions still valid at $cut or later, as intervals [lo, hi)
# of positions (hi = $never while current), clipped to start no earlier than $cut.
WINDOW_TABLES = ",\n".join(
    f"{table}_w AS (SELECT *, greatest(valid_from, $cut) AS lo, coalesce(valid_to, $never) AS hi "
    f"FROM {table} WHERE valid_to IS NULL OR valid_to > $cut)" for table in HISTORY_TABLES)

_KEY = ("subject_kind", "subject", "tool_key")
_VALUE = ("tool_id", "namespace", "description", "provenance", "inherited_from", "exposure")
_SAME_ROW = " AND ".join([f"o.{c} = n.{c}" for c in _KEY] + [f"o.{c} IS NOT DISTINCT FROM n.{c}" for c in _VALUE])


def refresh_history(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]], cut: int) -> None:
    """Rewrite the versions of these subjects (kind, name) from position `cut` on (the first position
    not yet settled), inside the caller's transaction; set-based, one query for all of them."""
    if not subjects:
        return
    params = {"cut": cut, "never": INFINITY}
    with subjects_registered(con, subjects):
        run(con, "CREATE OR REPLACE TEMP TABLE _new_history AS "
                 + query("effective_history_rows", window_tables=WINDOW_TABLES), params)
        # The versions open across the cut are set aside and everything from the cut on is removed …
        mine = "h.subject_kind = s.kind AND h.subject = s.name"
        run(con, f"CREATE OR REPLACE TEMP TABLE _open_history AS SELECT h.* FROM effective_history h "
                 f"JOIN _subjects s ON {mine} WHERE h.valid_from < $cut "
                 f"AND (h.valid_to IS NULL OR h.valid_to > $cut)", {"cut": cut})
        run(con, f"DELETE FROM effective_history h USING _subjects s WHERE {mine} "
                 f"AND (h.valid_from >= $cut OR h.valid_to IS NULL OR h.valid_to > $cut)", {"cut": cut})
    # … then an open version goes on in an equal new one that starts at the cut, or ends at the cut.
    continued = f"n.valid_from = $cut AND {_SAME_ROW}"
    run(con, f"""INSERT INTO effective_history BY NAME
        SELECT o.* REPLACE (CASE WHEN n.subject IS NULL THEN $cut ELSE n.valid_to END AS valid_to,
                            CASE WHEN n.subject IS NULL THEN (SELECT recorded_at FROM events WHERE position = $cut)
                                 ELSE n.valid_to_time END AS valid_to_time)
        FROM _open_history o LEFT JOIN _new_history n ON {continued}
        UNION ALL BY NAME
        SELECT n.* FROM _new_history n WHERE NOT EXISTS (SELECT 1 FROM _open_history o WHERE {continued})""",
        {"cut": cut})
    run(con, "DROP TABLE _new_history")
    run(con, "DROP TABLE _open_history")
