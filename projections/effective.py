"""The effective tool set in SQL: one query for now and for any past position.

Every source is read through its history table at position `$at`, so the same text answers the
current set (at = the tracking position) and as-of questions. The subjects asked about come from a
table named `_subjects` (kind, name) registered by the caller.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import pyarrow as pa

from projections.rows import run, select_rows

_SOURCES = ["tool_history", "alias_history", "platform_namespaces", "pattern_shims", "unit_history",
            "agent_history", "allowlist_history", "image_history", "connector_history", "binding_history",
            "grant_history"]


_BITEMPORAL = ("grant_history", "binding_history")


def _as_of(table: str) -> str:
    """Rows known at position $at; for grants and bindings, with $effective set, rows in effect at that time
    as far as was known at $at (a change recorded later, or taking effect later, does not count)."""
    if table not in _BITEMPORAL:
        return (f"{table}_at AS (SELECT * FROM {table} WHERE valid_from <= $at "
                f"AND (valid_to IS NULL OR valid_to > $at))")
    return (f"{table}_at AS (SELECT * FROM {table} WHERE valid_from <= $at AND ("
            f"($effective::TIMESTAMPTZ IS NULL AND (valid_to IS NULL OR valid_to > $at)) OR "
            f"($effective::TIMESTAMPTZ IS NOT NULL AND effective_from <= $effective::TIMESTAMPTZ "
            f"AND (valid_to IS NULL OR valid_to > $at OR effective_to > $effective::TIMESTAMPTZ))))")


CANDIDATES = "WITH RECURSIVE " + ",\n".join(_as_of(t) for t in _SOURCES) + """,
roots AS (
    SELECT s.kind, s.name, s.name AS unit, 0 AS depth
    FROM _subjects s JOIN unit_history_at u ON s.kind = 'unit' AND u.name = s.name
    UNION ALL
    SELECT s.kind, s.name, a.unit, 1 FROM _subjects s JOIN agent_history_at a ON s.kind = 'agent' AND a.name = s.name
),
chain AS (  -- the subject's own unit (for a unit: itself) and every ancestor, with the distance to it
    SELECT * FROM roots
    UNION ALL
    SELECT c.kind, c.name, u.parent, c.depth + 1
    FROM chain c JOIN unit_history_at u ON u.name = c.unit WHERE u.parent IS NOT NULL
),
wanted AS (  -- the grant holders whose grants matter: the subjects and every unit in their chains
    SELECT DISTINCT 'agent' AS kind, name FROM _subjects WHERE kind = 'agent'
    UNION SELECT DISTINCT 'unit', unit FROM chain
),
grant_rows AS (
    SELECT g.* FROM grant_history_at g JOIN wanted w ON g.subject_kind = w.kind AND g.subject = w.name
),
granted AS (  -- every (grant holder, tool) pair a grant covers: by tool key, or by namespace prefix
    SELECT g.subject_kind, g.subject, g.target, g.valid_from AS position, g.tool_key
    FROM grant_rows g JOIN tool_history_at t ON t.tool_key = g.tool_key
    UNION ALL
    SELECT g.subject_kind, g.subject, g.target, g.valid_from, t.tool_key
    FROM grant_rows g JOIN tool_history_at t
      ON g.tool_key IS NULL AND t.namespace = split_part(g.target, '.', 1)
     AND starts_with(t.canonical_id, rtrim(g.target, '*'))
),
candidates AS (
    SELECT s.kind, s.name, g.tool_key, 1 AS rank, 'explicit' AS provenance, NULL AS inherited_from,
           0 AS depth, g.position, 'grant ' || g.target || ' on agent:' || s.name AS cause
    FROM _subjects s JOIN granted g ON s.kind = 'agent' AND g.subject_kind = 'agent' AND g.subject = s.name
    UNION ALL
    SELECT c.kind, c.name, g.tool_key, 1, 'explicit', CASE WHEN c.depth > 0 THEN c.unit END,
           c.depth, g.position, 'grant ' || g.target || ' on unit:' || c.unit
    FROM chain c JOIN granted g ON g.subject_kind = 'unit' AND g.subject = c.unit
    UNION ALL
    SELECT c.kind, c.name, t.tool_key, 2, 'connector:' || b.slug, CASE WHEN c.depth > 0 THEN c.unit END,
           c.depth, b.valid_from, 'connector ' || b.slug || ' bound to unit:' || c.unit
    FROM chain c JOIN binding_history_at b ON b.unit = c.unit
    JOIN connector_history_at k ON k.slug = b.slug
    JOIN tool_history_at t ON t.namespace = split_part(k.namespace, '.', 1)
     AND starts_with(t.canonical_id, k.namespace || '.')
    UNION ALL
    SELECT s.kind, s.name, t.tool_key, 3, 'platform', NULL, 0, t.valid_from, 'platform namespace ' || t.namespace
    FROM _subjects s JOIN tool_history_at t ON t.namespace IN (SELECT namespace FROM platform_namespaces_at)
    WHERE s.kind = 'unit' AND s.name IN (SELECT name FROM unit_history_at)
       OR s.kind = 'agent' AND s.name IN (SELECT name FROM agent_history_at)
    UNION ALL
    SELECT s.kind, s.name, i.tool_key, 4, 'image', NULL, 0, i.valid_from, 'image ' || i.image
    FROM _subjects s
    JOIN (SELECT agent, image, valid_from, unnest(tool_keys) AS tool_key FROM image_history_at) i
      ON s.kind = 'agent' AND i.agent = s.name
    JOIN tool_history_at t ON t.tool_key = i.tool_key
),
allow AS (  -- allowlist entries of the agents asked about, pattern shims expanded
    SELECT l.agent, coalesce(sh.target, l.pattern) AS pattern
    FROM (SELECT agent, unnest(patterns) AS pattern FROM allowlist_history_at
          WHERE agent IN (SELECT name FROM _subjects WHERE kind = 'agent')) l
    LEFT JOIN pattern_shims_at sh ON sh.pattern = l.pattern
),
allowed AS (  -- (agent, tool) pairs an allowlist admits, through canonical IDs, aliases and shims
    SELECT a.agent, t.tool_key FROM allow a, tool_history_at t WHERE a.pattern = '*'
    UNION
    SELECT a.agent, t.tool_key FROM allow a JOIN tool_history_at t ON t.canonical_id = a.pattern
    UNION
    SELECT a.agent, t.tool_key FROM allow a JOIN tool_history_at t
      ON a.pattern LIKE '%.*' AND t.namespace = split_part(a.pattern, '.', 1)
     AND starts_with(t.canonical_id, rtrim(a.pattern, '*'))
    UNION
    SELECT a.agent, al.tool_key FROM allow a JOIN alias_history_at al
      ON al.lifecycle <> 'retired' AND al.alias = a.pattern
    UNION
    SELECT a.agent, al.tool_key FROM allow a JOIN alias_history_at al
      ON al.lifecycle <> 'retired' AND a.pattern LIKE '%.*' AND a.pattern <> '*'
     AND split_part(al.alias, '.', 1) = split_part(a.pattern, '.', 1) AND starts_with(al.alias, rtrim(a.pattern, '*'))
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY kind, name, tool_key
                                 ORDER BY rank, depth, provenance, position) AS place
    FROM candidates
),
described AS (
    SELECT r.*, t.canonical_id AS tool_id, t.namespace, t.description,
           CASE WHEN r.kind = 'unit' THEN NULL
                WHEN NOT t.schema_valid THEN 'disabled_invalid_schema'
                WHEN t.requires_state AND ag.state_mode = 'stateless' THEN 'disabled_by_state_mode'
                WHEN al.agent IS NOT NULL AND ok.agent IS NULL THEN 'disabled_by_agent_allowlist'
                ELSE 'enabled' END AS exposure
    FROM ranked r JOIN tool_history_at t USING (tool_key)
    LEFT JOIN agent_history_at ag ON r.kind = 'agent' AND ag.name = r.name
    LEFT JOIN allowlist_history_at al ON r.kind = 'agent' AND al.agent = r.name
    LEFT JOIN allowed ok ON r.kind = 'agent' AND ok.agent = r.name AND ok.tool_key = r.tool_key
)
"""

EFFECTIVE_COLUMNS = ("kind AS subject_kind, name AS subject, tool_key, tool_id, namespace, description, "
                     "provenance, inherited_from, exposure")
INFINITY = 2**62


@contextmanager
def _subjects_registered(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]]) -> Iterator[None]:
    """The subjects asked about, visible to the queries as the table `_subjects`."""
    table = pa.table({"kind": [s[0] for s in subjects], "name": [s[1] for s in subjects]},
                     schema=pa.schema([("kind", pa.string()), ("name", pa.string())]))
    con.register("_subjects", table)
    try:
        yield
    finally:
        con.unregister("_subjects")


def _with_subjects(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]], sql: str,
                   params: dict[str, Any]) -> list[dict[str, Any]]:
    with _subjects_registered(con, subjects):
        return select_rows(con, sql, params)


_ROW = "md5(CAST(struct_pack(subject_kind, subject, tool_key, tool_id, namespace, description, provenance, " \
       "inherited_from, exposure) AS VARCHAR))"


def effective_digest(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]], at: int) -> str:
    """A digest of every subject's set at `at`, computed inside DuckDB (no rows move into Python)."""
    sql = (f"SELECT sha256(coalesce(string_agg(h, '' ORDER BY h), '')) AS digest FROM (SELECT {_ROW} AS h FROM "
           f"({CANDIDATES} SELECT {EFFECTIVE_COLUMNS} FROM described WHERE place = 1))")
    return _with_subjects(con, subjects, sql, {"at": at, "effective": None})[0]["digest"]


def materialized_differences(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]],
                             chunk: int = 500) -> int:
    """How many rows of effective_tools and effective_documents differ from a recomputation from history;
    compared a chunk of subjects at a time, so memory stays bounded whatever the read model's size."""
    computed = f"({CANDIDATES} SELECT {EFFECTIVE_COLUMNS} FROM described WHERE place = 1)"
    served = ("(SELECT e.subject_kind, e.subject, e.tool_key, e.tool_id, e.namespace, e.description, e.provenance, "
              "e.inherited_from, e.exposure FROM effective_tools e JOIN _subjects s "
              "ON e.subject_kind = s.kind AND e.subject = s.name)")
    documents = ("SELECT s.kind || ':' || s.name AS subject, coalesce(to_json(list(struct_pack(c.tool_id, "
                 "c.namespace, c.description, c.provenance, c.inherited_from, c.exposure) ORDER BY c.tool_id) "
                 "FILTER (WHERE c.tool_id IS NOT NULL)), '[]')::VARCHAR AS tools FROM _subjects s LEFT JOIN "
                 "computed c ON c.subject_kind = s.kind AND c.subject = s.name GROUP BY 1")
    sql = (f"WITH computed AS MATERIALIZED {computed}, expected AS ({documents}), "
           "stored AS (SELECT d.subject, d.tools::VARCHAR AS tools FROM effective_documents d "
           "WHERE d.subject IN (SELECT kind || ':' || name FROM _subjects)) "
           f"SELECT (SELECT count(*) FROM ((SELECT * FROM computed EXCEPT ALL SELECT * FROM {served}) UNION ALL "
           f"(SELECT * FROM {served} EXCEPT ALL SELECT * FROM computed))) + (SELECT count(*) FROM "
           "((SELECT * FROM expected EXCEPT ALL SELECT * FROM stored) UNION ALL "
           "(SELECT * FROM stored EXCEPT ALL SELECT * FROM expected))) AS n")
    differences = sum(_with_subjects(con, subjects[start:start + chunk], sql, {"at": INFINITY, "effective": None})
                      [0]["n"] for start in range(0, len(subjects), chunk))
    # Rows for subjects that do not exist at all are differences too.
    known = {f"{kind}:{name}" for kind, name in subjects}
    stray = run(con, "SELECT DISTINCT subject FROM effective_documents UNION SELECT DISTINCT subject_kind || ':' || "
                     "subject FROM effective_tools")
    return differences + sum(1 for (subject,) in stray if subject not in known)


def effective_rows(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]],
                   at: int = INFINITY, effective_at: str | None = None) -> list[dict[str, Any]]:
    """The effective set of each subject as known at position `at` (default: now) and, when given, in
    effect at time `effective_at`; sorted by subject and tool."""
    sql = (CANDIDATES + f"SELECT {EFFECTIVE_COLUMNS} FROM described WHERE place = 1 "
           "ORDER BY subject_kind, subject, tool_id")
    return _with_subjects(con, subjects, sql, {"at": at, "effective": effective_at})


def explain_rows(con: duckdb.DuckDBPyConnection, subject: tuple[str, str], tool_key: str,
                 at: int = INFINITY, effective_at: str | None = None) -> list[dict[str, Any]]:
    """Every way the subject is granted the tool, the winner first."""
    sql = (CANDIDATES + "SELECT tool_id, provenance, inherited_from, exposure, position, cause, place "
           "FROM described WHERE tool_key = $tool ORDER BY place")
    return _with_subjects(con, [subject], sql, {"at": at, "tool": tool_key, "effective": effective_at})


# One digest per subject, computed in DuckDB: comparing sets never moves their rows into Python.
# Rows are unique per (subject, tool), so an XOR of row hashes changes whenever the set does.
_SNAPSHOT = ("SELECT subject_kind || ':' || subject AS subject, bit_xor(hash(tool_key, tool_id, description, "
             "provenance, inherited_from, exposure)) AS digest, count(*) AS n "
             "FROM effective_tools e JOIN _subjects s ON e.subject_kind = s.kind AND e.subject = s.name GROUP BY 1")


_DOCUMENTS = """
    INSERT INTO effective_documents
    SELECT s.kind || ':' || s.name,
           coalesce(to_json(list(struct_pack(e.tool_id, e.namespace, e.description, e.provenance,
                                             e.inherited_from, e.exposure) ORDER BY e.tool_id)
                            FILTER (WHERE e.tool_id IS NOT NULL)), '[]')
    FROM _subjects s LEFT JOIN effective_tools e ON e.subject_kind = s.kind AND e.subject = s.name
    GROUP BY 1"""


def refresh(con: duckdb.DuckDBPyConnection, subjects: list[tuple[str, str]]) -> list[str]:
    """Recompute the materialized current set of these subjects (set-based: one query for all);
    returns the subjects (`kind:name`) whose set changed."""
    if not subjects:
        return []
    with _subjects_registered(con, subjects):
        before = {r[0]: r[1:] for r in run(con, _SNAPSHOT)}
        run(con, "DELETE FROM effective_tools e USING _subjects s "
                 "WHERE e.subject_kind = s.kind AND e.subject = s.name")
        run(con, f"INSERT INTO effective_tools SELECT * FROM ({CANDIDATES} SELECT {EFFECTIVE_COLUMNS} "
                 "FROM described WHERE place = 1)", {"at": INFINITY, "effective": None})
        after = {r[0]: r[1:] for r in run(con, _SNAPSHOT)}
        run(con, "DELETE FROM effective_documents WHERE subject IN (SELECT kind || ':' || name FROM _subjects)")
        run(con, _DOCUMENTS)
    return sorted(s for s in before.keys() | after.keys() if before.get(s) != after.get(s))
