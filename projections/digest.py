"""The one digest of a set of rows, used by the fingerprint and by the effective-set refresh.

Each row is hashed as its text (md5 of the row cast to VARCHAR: column names and values), and the set is
SHA-256 over its row hashes in sorted order: independent of row order, and stable across processes and
DuckDB versions (md5 and sha256 are fixed functions; DuckDB's `hash()` is not guaranteed to be).
"""
from __future__ import annotations

import hashlib
from typing import Any

import duckdb

# The hash of row `r`; SQL files name the relation they digest `r`.
ROW_MD5 = "md5(CAST(r AS VARCHAR))"
# The aggregate over a column `row_md5` of row hashes (the empty set has a digest too).
SET_DIGEST = "sha256(coalesce(string_agg(row_md5, '' ORDER BY row_md5), ''))"


def digest(con: duckdb.DuckDBPyConnection, select: str, params: dict[str, Any] | None = None) -> str:
    """The digest of the rows `select` returns: SET_DIGEST's value, with the row hashes sorted by DuckDB (which
    spills to disk) and hashed here as they stream. SET_DIGEST's `string_agg` would hold every row hash in one
    string, which cannot spill: at a million events, effective_tools' hashes alone outgrow the memory limit."""
    cursor = con.execute(f"SELECT {ROW_MD5} AS row_md5 FROM ({select}) r ORDER BY row_md5", params or [])
    whole = hashlib.sha256()
    while rows := cursor.fetchmany(65536):
        whole.update("".join(row[0] for row in rows).encode())
    return whole.hexdigest()
