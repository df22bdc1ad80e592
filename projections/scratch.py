"""What a planned change would do to every subject's effective set, without touching the read model: the
read model is copied into an in-memory scratch one, the planned events are projected into the copy by the
one projector, and the effective-set query runs on both."""
from __future__ import annotations

from typing import Any

import duckdb

from domain.history import HistoryRecord
from projections.connection import connect
from projections.envelope import chain_all
from projections.effective.reads import effective_rows, subjects_at
from projections.migrate import migrate
from projections.projector import Projector
from projections.tracking import read_tracking
from projections.rows import run

# The fields of an effective row whose change a plan reports (besides a tool gained or lost).
CHANGE_FIELDS = ("provenance", "exposure")
# The history of events is what the scratch copy needs least and the largest table: leave it behind.
_NOT_COPIED = ("events",)


def copy_relations(live: duckdb.DuckDBPyConnection, scratch: duckdb.DuckDBPyConnection,
                   skip: tuple[str, ...]) -> None:
    """Every table's rows from `live` into the same (migrated) tables of `scratch`, through Arrow."""
    tables = [r[0] for r in run(live, "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                      "current_database() AND NOT temporary")]
    for table in tables:
        if table in skip or table == "schema_migrations":
            continue
        rows = live.sql(f'SELECT * FROM "{table}"').to_arrow_table()
        scratch.register("_copied", rows)
        try:
            run(scratch, f'INSERT INTO "{table}" SELECT * FROM _copied')
        finally:
            scratch.unregister("_copied")


def scratch_copy(live: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    scratch = connect()
    migrate(scratch)
    copy_relations(live, scratch, skip=_NOT_COPIED)
    return scratch


def effective_sets(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, dict[str, Any]]]:
    """Every subject's current effective set: subject ("unit:NAME") → tool ID → row."""
    sets: dict[str, dict[str, dict[str, Any]]] = {f"{k}:{n}": {} for k, n in subjects_at(con)}
    for row in effective_rows(con, subjects_at(con)):
        sets[f"{row['subject_kind']}:{row['subject']}"][row["tool_id"]] = row
    return sets


def set_changes(before: dict[str, dict[str, dict[str, Any]]],
                after: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per subject whose set differs: the tools gained, lost, and the fields that changed."""
    effects: dict[str, dict[str, Any]] = {}
    for subject in sorted(set(before) | set(after)):
        old, new = before.get(subject, {}), after.get(subject, {})
        changes = [{"tool_id": tool, "field": field, "from": old[tool][field], "to": new[tool][field]}
                   for tool in sorted(set(old) & set(new)) for field in CHANGE_FIELDS
                   if old[tool][field] != new[tool][field]]
        gains, loses = sorted(set(new) - set(old)), sorted(set(old) - set(new))
        if gains or loses or changes:
            effects[subject] = {"gains": gains, "loses": loses, "changes": changes}
    return effects


def predicted_effects(live: duckdb.DuckDBPyConnection, planned: list[HistoryRecord]) -> dict[str, dict[str, Any]]:
    """The effective-set changes the planned events (positions right after the live head) would cause."""
    before = effective_sets(live)
    scratch = scratch_copy(live)
    try:
        tracking = read_tracking(scratch)
        if planned:
            Projector(scratch).apply(chain_all(planned, tracking.position, tracking.hash), chained_here=True)
        return set_changes(before, effective_sets(scratch))
    finally:
        scratch.close()
