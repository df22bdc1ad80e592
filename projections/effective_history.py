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
_MINE = "o.subject_kind = s.kind AND o.subject = s.name"
# An old version still open at the cut, and a new one starting at the cut equal to it: one version.
_OPEN = "o.valid_from < $cut AND (o.valid_to IS NULL OR o.valid_to > $cut)"
_GOES_ON = f"n.valid_from = $cut AND {_SAME_ROW}"


def refresh_history(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]], cut: int,
                    chunk: int = 200) -> None:
    """Rewrite the versions of these subjects (kind, name) from position `cut` on (the first position
    not yet settled), inside the caller's transaction. Set-based: one query per chunk of subjects (a
    rebuild's whole history at once does not fit the memory limit at 200,000 events), written straight
    into effective_history: DuckDB 2.0.0 loses every row of a table created in the same transaction once
    several inserts into it pass about 600,000 rows."""
    if not subjects:
        return
    rows = query("effective_history_rows", window_tables=WINDOW_TABLES)
    cut_only = {"cut": cut}
    with subjects_registered(con, subjects):
        run(con, f"DELETE FROM effective_history o USING _subjects s WHERE {_MINE} AND o.valid_from >= $cut", cut_only)
    for start in range(0, len(subjects), chunk):
        with subjects_registered(con, subjects[start:start + chunk]):
            run(con, f"INSERT INTO effective_history BY NAME SELECT * FROM ({rows})", {**cut_only, "never": INFINITY})
    with subjects_registered(con, subjects):
        # An old version open across the cut ends there, unless an equal new version starts there: then the
        # old one takes the new one's end and the new one goes.
        run(con, f"""UPDATE effective_history o SET valid_to = $cut,
                         valid_to_time = (SELECT recorded_at FROM events WHERE position = $cut)
                     FROM _subjects s WHERE {_MINE} AND {_OPEN}
                     AND NOT EXISTS (SELECT 1 FROM effective_history n WHERE {_GOES_ON})""", cut_only)
        run(con, f"""UPDATE effective_history o SET valid_to = n.valid_to, valid_to_time = n.valid_to_time
                     FROM _subjects s, effective_history n WHERE {_MINE} AND {_OPEN} AND {_GOES_ON}""", cut_only)
        run(con, f"""DELETE FROM effective_history n USING _subjects s WHERE n.subject_kind = s.kind
                     AND n.subject = s.name AND n.valid_from = $cut AND EXISTS (
                         SELECT 1 FROM effective_history o WHERE o.valid_from < $cut
                         AND o.valid_to IS NOT DISTINCT FROM n.valid_to AND {_SAME_ROW})""", cut_only)
