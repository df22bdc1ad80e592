"""The streamed digest of a set of rows is SET_DIGEST's value: the same fingerprints whether DuckDB
aggregates the row hashes in SQL (the refresh's per-subject digests) or streams them sorted (the
fingerprint's whole tables, too large for one string in memory)."""
from __future__ import annotations

from contextlib import closing

import duckdb
import pytest

from projections.digest import ROW_MD5, SET_DIGEST, digest


@pytest.mark.parametrize("rows", [0, 1, 7, 70_000])
def test_the_streamed_digest_equals_the_sql_aggregate(rows: int) -> None:
    # given a relation of `rows` rows, more than one fetched page for the largest
    with closing(duckdb.connect()) as con:
        select = f"SELECT i, 'tool-' || (i % 97) AS name FROM range({rows}) t(i)"
        # when digested both ways, then they agree, the empty set included
        in_sql = con.execute(f"SELECT {SET_DIGEST} FROM (SELECT {ROW_MD5} AS row_md5 FROM ({select}) r)").fetchone()
        assert digest(con, select) == in_sql[0]
