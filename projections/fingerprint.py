"""A digest of the read model's content, to prove two read models (store, Kafka, rebuild) are the same."""
from __future__ import annotations

import hashlib

import duckdb

from projections.rows import run

# Every table a contract read uses, with the columns that describe the history (not when or how
# this copy was built: tracking.updated_at, migration times and Kafka offsets differ between copies).
FINGERPRINT_TABLES: dict[str, str] = {
    "tracking": "projection, position, hash, events",
    "events": "*",
    "naming_policy": "*",
    "releases": "*",
    "tools": "*",
    "aliases": "*",
    "alias_milestones": "*",
    "alias_steps": "*",
    "tool_history": "*",
    "alias_history": "*",
    "platform_namespaces": "*",
    "pattern_shims": "*",
    "unit_history": "*",
    "agent_history": "*",
    "allowlist_history": "*",
    "image_history": "*",
    "connector_history": "*",
    "binding_history": "*",
    "grant_history": "*",
    "effective_tools": "*",
}


def table_digest(con: duckdb.DuckDBPyConnection, table: str, columns: str = "*") -> str:
    """SHA-256 of the table's rows in a canonical order, computed inside DuckDB."""
    rows = run(con, f"SELECT sha256(coalesce(string_agg(r, chr(10) ORDER BY r), '')) FROM "
                    f"(SELECT CAST(t AS VARCHAR) AS r FROM (SELECT {columns} FROM {table}) t)")
    return rows[0][0]


def fingerprint(con: duckdb.DuckDBPyConnection) -> str:
    digest = hashlib.sha256()
    for table, columns in FINGERPRINT_TABLES.items():
        digest.update(f"{table}:{table_digest(con, table, columns)}\n".encode())
    return digest.hexdigest()
