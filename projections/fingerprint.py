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
from projections.effective import effective_digest, subjects_at
from projections.materialize import materialized_differences
from projections.projector import read_tracking
from projections.schema import BITEMPORAL_TABLES, HISTORY_TABLES

_UP_TO = "position <= $at"
APPEND_ONLY = {"events": _UP_TO, "naming_policy": _UP_TO, "releases": _UP_TO, "release_plans": _UP_TO,
               "alias_milestones": _UP_TO,
               "alias_steps": _UP_TO, "seals": _UP_TO}
# Classes change (`tool classify`): tool_class_history carries them, as of every position.
_STATIC_TOOL = ("tool_key, family, group_name, tier, visibility, source, backing_server, plugin, input_schema, "
                "schema_valid, risk, requires_state, registered_position, registered_at")


def _clipped(table: str) -> str:
    """History rows known at P, with versions that ended after P shown as still open (and, for bitemporal
    tables, with no end of effect yet either)."""
    ends = ["valid_to", "valid_to_time"] + (["effective_to"] if table in BITEMPORAL_TABLES else [])
    replaced = ", ".join(f"CASE WHEN valid_to > $at THEN NULL ELSE {column} END AS {column}" for column in ends)
    return f"SELECT * REPLACE ({replaced}) FROM {table} WHERE valid_from <= $at"


def fingerprint(con: duckdb.DuckDBPyConnection, at: int | None = None) -> str:
    """The read model's fingerprint as of `at` (default: the position it has reached)."""
    head = read_tracking(con).position
    at = head if at is None else at
    whole = hashlib.sha256(f"position:{at}\n".encode())
    parts: list[tuple[str, str]] = [(t, f"SELECT * FROM {t} WHERE {w}") for t, w in APPEND_ONLY.items()]
    parts += [(t, _clipped(t)) for t in HISTORY_TABLES]
    parts.append(("tools", f"SELECT {_STATIC_TOOL} FROM tools WHERE registered_position <= $at"))
    for name, select in parts:
        whole.update(f"{name}:{digest(con, select, {'at': at})}\n".encode())
    subjects = subjects_at(con, at)
    whole.update(f"effective:{effective_digest(con, subjects, at)}\n".encode())
    if at == head and materialized_differences(con, subjects):
        # The sets the reads serve differ from what the history says: that must never match a replay.
        whole.update(b"materialized effective sets differ from the history\n")
    return whole.hexdigest()
