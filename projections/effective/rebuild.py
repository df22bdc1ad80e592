"""The materialized current effective sets, `effective_tools` and `effective_documents`, recomputed by the
SQL of the rule (effective_set.sql): for some subjects, or for all in one set-based pass; and checked
against a recomputation from the history tables."""
from __future__ import annotations

import duckdb

from projections.effective.reads import INFINITY, subjects_registered
from projections.rows import run, scalar
from projections.sqlfiles import query

# effective_tools' index, dropped while a set-based pass rewrites the table (migration 100 explains it).
SUBJECT_INDEX = "CREATE INDEX effective_tools_subject ON effective_tools (subject)"
# The current sets: every event known, no effective-time cut.
NOW = {"at": INFINITY, "effective_at": None}


def recompute(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]]) -> list[str]:
    """Recompute the materialized current set of these subjects (set-based: one query for all);
    returns the subjects (`kind:name`) whose set changed."""
    if not subjects:
        return []
    with subjects_registered(con, subjects):
        before = dict(run(con, query("set_digests")))
        # A subject without a document yet is new: published even when its set is empty ("tools": [])
        documented = {s for (s,) in run(con, "SELECT subject FROM effective_documents "
                                             "WHERE subject IN (SELECT kind || ':' || name FROM _subjects)")}
        run(con, "DELETE FROM effective_tools e USING _subjects s "
                 "WHERE e.subject_kind = s.kind AND e.subject = s.name")
        run(con, "INSERT INTO effective_tools BY NAME " + query("effective_rows"), NOW)
        after = dict(run(con, query("set_digests")))
        run(con, "DELETE FROM effective_documents WHERE subject IN (SELECT kind || ':' || name FROM _subjects)")
        run(con, "INSERT INTO effective_documents BY NAME " + query("effective_documents", rows="effective_tools"))
    new = {f"{kind}:{name}" for kind, name in subjects} - documented
    return sorted(s for s in before.keys() | after.keys() | new if before.get(s) != after.get(s) or s in new)


def materialized_differences(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]],
                             chunk: int = 500) -> int:
    """How many rows of effective_tools and effective_documents differ from a recomputation from history;
    compared a chunk of subjects at a time, so memory stays bounded whatever the read model's size."""
    check = query("materialized_differences", rows="computed")
    differences = 0
    for start in range(0, len(subjects), chunk):
        with subjects_registered(con, subjects[start:start + chunk]):
            differences += run(con, check, NOW)[0][0]
    # Rows for subjects that do not exist at all are differences too.
    known = {f"{kind}:{name}" for kind, name in subjects}
    stray = run(con, "SELECT DISTINCT subject FROM effective_documents UNION SELECT DISTINCT subject_kind || ':' || "
                     "subject FROM effective_tools")
    return differences + sum(1 for (subject,) in stray if subject not in known)


def rebuild_all(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]],
                chunk: int = 2000) -> list[str]:
    """Recompute every subject's set in one set-based pass: the table is replaced whole with its index
    dropped meanwhile (no per-subject before/after digests), and only the documents that changed are
    rewritten. Documents are rendered a chunk of subjects at a time: one JSON list per subject for all
    of them at once does not fit the memory limit at a million events. Returns the subjects (`kind:name`)
    whose document changed."""
    if _nothing_materialized(con):
        return _materialize_first(con, subjects, chunk)
    with subjects_registered(con, subjects):
        run(con, "CREATE OR REPLACE TEMP TABLE _fresh_tools AS " + query("effective_rows"), NOW)
    changed: list[str] = []
    for start in range(0, len(subjects), chunk):
        changed += _replace_changed_documents(con, subjects[start:start + chunk])
    run(con, "DROP INDEX IF EXISTS effective_tools_subject")
    run(con, "DELETE FROM effective_tools")
    run(con, "INSERT INTO effective_tools BY NAME SELECT * FROM _fresh_tools")
    run(con, SUBJECT_INDEX)
    run(con, "DROP TABLE _fresh_tools")
    return sorted(changed)


def _replace_changed_documents(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]]) -> list[str]:
    """Compare these subjects' documents rendered from `_fresh_tools` with the stored ones, and write only
    those that differ. Each document is rendered once, into a temp table both steps read: rendering is
    most of the cost, and a rebuild from nothing writes every document."""
    with subjects_registered(con, subjects):
        run(con, "CREATE OR REPLACE TEMP TABLE _fresh_documents AS "
                 + query("effective_documents", rows="_fresh_tools"))
        changed = [s for (s,) in run(con, query("changed_documents",
                                                effective_documents="SELECT * FROM _fresh_documents"))]
    run(con, "DELETE FROM effective_documents WHERE subject IN (SELECT unnest($s::VARCHAR[]))", {"s": changed})
    run(con, "INSERT INTO effective_documents BY NAME SELECT * FROM _fresh_documents "
             "WHERE subject IN (SELECT unnest($s::VARCHAR[]))", {"s": changed})
    run(con, "DROP TABLE _fresh_documents")
    return changed


def _nothing_materialized(con: duckdb.DuckDBPyConnection) -> bool:
    return not scalar(con, "SELECT EXISTS (FROM effective_documents) OR EXISTS (FROM effective_tools)")


def _materialize_first(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]], chunk: int) -> list[str]:
    """rebuild_all into empty tables (a rebuild, a replay, a first catch-up): every document is new, so
    the rows go straight into effective_tools (no temp copy of them) and the documents straight into
    effective_documents, with nothing to compare. At a million events this halves the final refresh.
    Returns every subject (`kind:name`), as the comparison with no stored documents would."""
    run(con, "DROP INDEX IF EXISTS effective_tools_subject")
    with subjects_registered(con, subjects):
        run(con, "INSERT INTO effective_tools BY NAME " + query("effective_rows"), NOW)
    run(con, SUBJECT_INDEX)
    for start in range(0, len(subjects), chunk):
        with subjects_registered(con, subjects[start:start + chunk]):
            run(con, "INSERT INTO effective_documents BY NAME "
                     + query("effective_documents", rows="effective_tools"))
    return sorted(f"{kind}:{name}" for kind, name in subjects)
