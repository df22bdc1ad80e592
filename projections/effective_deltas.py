"""Specialised refreshes of the current effective sets for the frequent event kinds of a follower's small
batches (DESIGN.md section 5), beside the general query of materialize.refresh, which they fall back to.

The general query costs ≈ 20 ms of DuckDB work even for one subject (it reads every history table); a
grant added on an agent or a unit changes only the rows of the tools it covers, for the subjects at or
below its holder, and those rows follow from the rows already there. So:

- while a batch is applied, effective_part.py notes its events in the connection's temporary table
  `_effective_deltas`: each grant added (`grant_added`), and `general` for any other event that can change
  a set;
- `refresh` applies them when they explain every dirty subject (no `general`, and every dirty row's
  position is one of theirs: a batch of another connection, or one left by a crash, is not), and
  answers None otherwise, for the general query.
"""
from __future__ import annotations

import duckdb

from projections.effective import subjects_registered
from projections.rows import insert_rows, run, scalar
from projections.sqlfiles import query

DELTAS = "_effective_deltas"


def note(con: duckdb.DuckDBPyConnection, grants_added: list[dict[str, object]], general: bool) -> None:
    """Record a batch's events for the next refresh (in the batch's transaction: a rollback forgets them)."""
    if not grants_added and not general:
        return
    run(con, f"CREATE TEMP TABLE IF NOT EXISTS {DELTAS} (kind VARCHAR, position BIGINT, holder_kind VARCHAR, "
             "holder VARCHAR, target VARCHAR, tool_key VARCHAR)")
    rows = [{"kind": "grant_added", **grant} for grant in grants_added]
    insert_rows(con, DELTAS, rows + ([{"kind": "general"}] if general else []))


def forget(con: duckdb.DuckDBPyConnection) -> None:
    """The sets are refreshed: what was noted is applied."""
    run(con, f"DROP TABLE IF EXISTS temp.{DELTAS}")


def refresh(con: duckdb.DuckDBPyConnection) -> list[str] | None:
    """Refresh the dirty subjects' current sets from the noted grants; the subjects (`kind:name`) whose set
    changed, or None when the noted events do not explain every dirty subject (nothing is written)."""
    if not _explains(con):
        return None
    run(con, "CREATE OR REPLACE TEMP TABLE _delta_rows AS " + query("grant_added_rows"))
    changed = [(kind, name) for kind, name in run(con, "SELECT DISTINCT subject_kind, subject FROM _delta_rows")]
    run(con, "DELETE FROM effective_tools e USING _delta_rows d WHERE e.subject_kind = d.subject_kind "
             "AND e.subject = d.subject AND e.tool_key = d.tool_key")
    run(con, "INSERT INTO effective_tools BY NAME SELECT * FROM _delta_rows")
    run(con, "DROP TABLE temp._delta_rows")
    _render(con, changed)
    return sorted(f"{kind}:{name}" for kind, name in changed)


def _explains(con: duckdb.DuckDBPyConnection) -> bool:
    noted = scalar(con, "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = $t", {"t": DELTAS})
    return bool(noted) and not scalar(con, f"""
        SELECT (SELECT count(*) FROM {DELTAS} WHERE kind = 'general')
             + (SELECT count(*) FROM effective_dirty d
                WHERE NOT EXISTS (SELECT 1 FROM {DELTAS} n WHERE n.position = d.position))""")


def _render(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]]) -> None:
    """Write these subjects' documents again from their rows."""
    if subjects:
        with subjects_registered(con, subjects):
            run(con, "DELETE FROM effective_documents WHERE subject IN (SELECT kind || ':' || name FROM _subjects)")
            run(con, "INSERT INTO effective_documents BY NAME " + query("effective_documents", rows="effective_tools"))
