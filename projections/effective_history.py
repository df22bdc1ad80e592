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
from projections.sqlfiles import query

_KEY = ("subject_kind", "subject", "tool_key")
_VALUE = ("tool_id", "namespace", "description", "provenance", "inherited_from", "exposure")
_MINE = "h.subject_kind = s.kind AND h.subject = s.name"
# A version open across the cut (o) and a new version starting at the cut equal to it (n) are one version:
# it keeps o's start and takes n's end. An o without such an n ends at the cut; an n without an o is new.
_SAME_ROW = " AND ".join([f"o.{c} = n.{c}" for c in _KEY] + [f"o.{c} IS NOT DISTINCT FROM n.{c}" for c in _VALUE])
_SPLICED = ", ".join(
    [f"CASE WHEN o.subject IS NULL THEN n.{c} ELSE o.{c} END AS {c}" for c in (*_KEY, *_VALUE)]
    + [f"CASE WHEN o.subject IS NULL THEN n.{c} ELSE o.{c} END AS {c}" for c in ("valid_from", "valid_from_time")]
    + ["CASE WHEN n.subject IS NULL THEN $cut ELSE n.valid_to END AS valid_to",
       "CASE WHEN n.subject IS NULL THEN (SELECT recorded_at FROM events WHERE position = $cut) "
       "ELSE n.valid_to_time END AS valid_to_time"])


def refresh_history(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]], cut: int,
                    chunk: int = 200) -> None:
    """Rewrite the versions of these subjects (kind, name) from position `cut` on (the first position
    not yet settled), inside the caller's transaction. Set-based: one query per chunk of subjects (a
    rebuild's whole history at once does not fit the memory limit at 200,000 events), written straight
    into effective_history: DuckDB 2.0.0 loses every row of a table created in the same transaction once
    several inserts into it pass about 600,000 rows (`_open_history` is written by one statement)."""
    if not subjects:
        return
    rows = query("effective_history_rows")
    cut_only = {"cut": cut}
    touched = "(h.valid_from >= $cut OR h.valid_to IS NULL OR h.valid_to > $cut)"
    with subjects_registered(con, subjects):
        # The versions open across the cut are set aside, and everything of these subjects from the cut on goes.
        run(con, f"CREATE OR REPLACE TEMP TABLE _open_history AS SELECT h.* FROM effective_history h "
                 f"JOIN _subjects s ON {_MINE} WHERE h.valid_from < $cut AND {touched}", cut_only)
        run(con, f"DELETE FROM effective_history h USING _subjects s WHERE {_MINE} AND {touched}", cut_only)
    for start in range(0, len(subjects), chunk):
        with subjects_registered(con, subjects[start:start + chunk]):
            run(con, f"""INSERT INTO effective_history BY NAME SELECT {_SPLICED}
                FROM (SELECT * FROM ({rows})) n
                FULL JOIN (SELECT h.* FROM _open_history h JOIN _subjects s ON {_MINE}) o
                  ON n.valid_from = $cut AND {_SAME_ROW}""", {**cut_only, "never": INFINITY})
    run(con, "DROP TABLE _open_history")
