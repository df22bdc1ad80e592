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

from projections.effective import effective_digest, materialized_differences
from projections.projector import read_tracking
from projections.rows import run

_UP_TO = "position <= $at"
APPEND_ONLY = {"events": _UP_TO, "naming_policy": _UP_TO, "releases": _UP_TO, "alias_milestones": _UP_TO,
               "alias_steps": _UP_TO, "seals": _UP_TO}
HISTORY = ("tool_history", "alias_history", "platform_namespaces", "pattern_shims", "unit_history",
           "agent_history", "allowlist_history", "image_history", "connector_history", "binding_history",
           "grant_history")
_STATIC_TOOL = ("tool_key, family, group_name, tier, visibility, source, backing_server, plugin, input_schema, "
                "schema_valid, classes, risk, requires_state, registered_position, registered_at")


def _digest(con: duckdb.DuckDBPyConnection, select: str, at: int) -> str:
    """SHA-256 over the sorted MD5s of the rows: canonical, and small in memory for any table size."""
    rows = run(con, f"SELECT sha256(coalesce(string_agg(h, '' ORDER BY h), '')) FROM "
                    f"(SELECT md5(CAST(t AS VARCHAR)) AS h FROM ({select}) t)", {"at": at} if "$at" in select else None)
    return rows[0][0]


_BITEMPORAL = ("grant_history", "binding_history")


def _clipped(table: str) -> str:
    """History rows known at P, with versions that ended after P shown as still open (and, for bitemporal
    tables, with no end of effect yet either)."""
    ends = ["valid_to", "valid_to_time"] + (["effective_to"] if table in _BITEMPORAL else [])
    replaced = ", ".join(f"CASE WHEN valid_to > $at THEN NULL ELSE {column} END AS {column}" for column in ends)
    return f"SELECT * REPLACE ({replaced}) FROM {table} WHERE valid_from <= $at"


def _subjects_at(con: duckdb.DuckDBPyConnection, at: int) -> list[tuple[str, str]]:
    return [tuple(r) for r in run(con, """
        SELECT 'unit', name FROM unit_history WHERE valid_from <= $at AND (valid_to IS NULL OR valid_to > $at)
        UNION ALL
        SELECT 'agent', name FROM agent_history WHERE valid_from <= $at AND (valid_to IS NULL OR valid_to > $at)
        ORDER BY 1, 2""", {"at": at})]


def fingerprint(con: duckdb.DuckDBPyConnection, at: int | None = None) -> str:
    """The read model's fingerprint as of `at` (default: the position it has reached)."""
    head = read_tracking(con).position
    at = head if at is None else at
    digest = hashlib.sha256(f"position:{at}\n".encode())
    parts: list[tuple[str, str]] = [(t, f"SELECT * FROM {t} WHERE {w}") for t, w in APPEND_ONLY.items()]
    parts += [(t, _clipped(t)) for t in HISTORY]
    parts.append(("tools", f"SELECT {_STATIC_TOOL} FROM tools WHERE registered_position <= $at"))
    for name, select in parts:
        digest.update(f"{name}:{_digest(con, select, at)}\n".encode())
    subjects = _subjects_at(con, at)
    digest.update(f"effective:{effective_digest(con, subjects, at)}\n".encode())
    if at == head and materialized_differences(con, subjects):
        # The sets the reads serve differ from what the history says: that must never match a replay.
        digest.update(b"materialized effective sets differ from the history\n")
    return digest.hexdigest()

