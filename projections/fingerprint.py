"""A digest of the read model's content as of a position, to prove that two read models (from the store,
from Kafka, after a rebuild, or a replay) say the same thing, bit for bit.

It is computed as of any position P from what the read model records for positions up to P — the events,
the append-only tables, the history tables clipped at P, the static tool descriptors and the effective
sets at P — so a read model that has moved on can still be compared with a replay that stopped at P.
Nothing about how or when a copy was built enters it (tracking times, offsets, migration times).
"""
from __future__ import annotations

import hashlib

import duckdb

from projections.digest import digest
from projections.effective.reads import effective_digest, subjects_at, subjects_registered
from projections.effective.maintenance import valid_through
from projections.effective.rebuild import NOW, materialized_differences
from projections.rows import scalar
from projections.sqlfiles import query
from projections.tracking import read_tracking
from projections.schema import BITEMPORAL_TABLES, HISTORY_TABLES

_UP_TO = "position <= $at"
APPEND_ONLY = {"events": _UP_TO, "naming_policy": _UP_TO, "releases": _UP_TO, "release_plans": _UP_TO,
               "alias_milestones": _UP_TO,
               "alias_steps": _UP_TO, "seals": _UP_TO, "compatibility_modes": _UP_TO,
               "mcp_syncs": _UP_TO}
# Classes change (`tool classify`): tool_class_history carries them, as of every position; so do input schemas
# (`tool update --schema`) in tool_schema_history, and schema_valid in tool_history.
_STATIC_TOOL = ("tool_key, family, group_name, tier, visibility, source, backing_server, plugin, "
                "risk, requires_state, registered_position, registered_at")


def _clipped(table: str) -> str:
    """History rows known at P, with versions that ended after P shown as still open (and, for bitemporal
    tables, with no end of effect yet either)."""
    ends = ["valid_to", "valid_to_time"] + (["effective_to"] if table in BITEMPORAL_TABLES else [])
    replaced = ", ".join(f"CASE WHEN valid_to > $at THEN NULL ELSE {column} END AS {column}" for column in ends)
    return f"SELECT * REPLACE ({replaced}) FROM {table} WHERE valid_from <= $at"


def _materialized(con: duckdb.DuckDBPyConnection) -> str:
    """effective_tools in the columns, in the order, of a recomputation (effective_rows.sql)."""
    with subjects_registered(con, []):
        columns = [d[0] for d in con.execute(query("effective_rows") + " LIMIT 0", NOW).description]
    return f"SELECT {', '.join(columns)} FROM effective_tools"


def _documents_agree(con: duckdb.DuckDBPyConnection, chunk: int = 2000) -> bool:
    """Whether effective_documents (what reads serve) holds exactly the sets of effective_tools, and
    nothing else; compared a chunk of subjects at a time, so memory stays bounded."""
    subjects = subjects_at(con)
    if scalar(con, "SELECT count(*) FROM effective_documents") != len(subjects):
        return False
    rendered = f"SELECT subject, tools::VARCHAR AS tools FROM ({query('effective_documents', rows='effective_tools')})"
    stored = ("SELECT subject, tools::VARCHAR AS tools FROM effective_documents "
              "WHERE subject IN (SELECT kind || ':' || name FROM _subjects)")
    for start in range(0, len(subjects), chunk):
        with subjects_registered(con, subjects[start:start + chunk]):
            if digest(con, rendered) != digest(con, stored):
                return False
    return True


_DIFFER = b"materialized effective sets differ from the history\n"


def fingerprint(con: duckdb.DuckDBPyConnection, at: int | None = None, deep: bool = False) -> str:
    """The read model's fingerprint as of `at` (default: the position it has reached).

    At the position reached, the effective sets enter it as the digest of the materialized table (the
    same rows a recomputation from history gives, so the same digest). `deep` recomputes them from the
    history instead and compares the materialized tables with that row by row, as any `at` in the past
    does: far slower at scale, it also proves the materialized copy right."""
    head = read_tracking(con).position
    at = head if at is None else at
    whole = hashlib.sha256(f"position:{at}\n".encode())
    parts: list[tuple[str, str]] = [(t, f"SELECT * FROM {t} WHERE {w}") for t, w in APPEND_ONLY.items()]
    parts += [(t, _clipped(t)) for t in HISTORY_TABLES]
    parts.append(("tools", f"SELECT {_STATIC_TOOL} FROM tools WHERE registered_position <= $at"))
    for name, select in parts:
        whole.update(f"{name}:{digest(con, select, {'at': at})}\n".encode())
    if at == head and not deep and valid_through(con) >= head:
        whole.update(f"effective:{digest(con, _materialized(con))}\n".encode())
        if not _documents_agree(con):
            whole.update(_DIFFER)
        return whole.hexdigest()
    subjects = subjects_at(con, at)
    whole.update(f"effective:{effective_digest(con, subjects, at)}\n".encode())
    if at == head and materialized_differences(con, subjects):
        # The sets the reads serve differ from what the history says: that must never match a replay.
        whole.update(_DIFFER)
    return whole.hexdigest()
