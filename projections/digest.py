"""The one digest of a set of rows, used by the fingerprint and by the effective-set refresh.

Each row is hashed as its text (md5 of the row cast to VARCHAR: column names and values), and the set is
SHA-256 over its row hashes in sorted order: independent of row order, and stable across processes and
DuckDB versions (md5 and sha256 are fixed functions; DuckDB's `hash()` is not guaranteed to be).
"""
from __future__ import annotations

from typing import Any

import duckdb

from projections.rows import scalar

# The hash of row `r`; SQL files name the relation they digest `r`.
ROW_MD5 = "md5(CAST(r AS VARCHAR))"
# The aggregate over a column `row_md5` of row hashes (the empty set has a digest too).
SET_DIGEST = "sha256(coalesce(string_agg(row_md5, '' ORDER BY row_md5), ''))"


def digest(con: duckdb.DuckDBPyConnection, select: str, params: dict[str, Any] | None = None) -> str:
    """The digest of the rows `select` returns, computed inside DuckDB: small in memory for any size."""
    return scalar(con, f"SELECT {SET_DIGEST} FROM (SELECT {ROW_MD5} AS row_md5 FROM ({select}) r)", params)
