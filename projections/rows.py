"""Batch buffers for DuckDB: rows are changed in memory during a batch and written in bulk at its end."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb
import pyarrow as pa


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]]) -> None:
    """One bulk insert through Arrow (matched by column name), never one statement per row."""
    if not rows:
        return
    batch = pa.Table.from_pylist(rows)
    con.register("_toolcat_batch", batch)
    try:
        run(con, f"INSERT INTO {table} BY NAME SELECT * FROM _toolcat_batch")
    finally:
        con.unregister("_toolcat_batch")


def select_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None
                ) -> list[dict[str, Any]]:
    return con.sql(sql, params=params or None).to_arrow_table().to_pylist()


def run(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[tuple]:
    """Execute and drain the result, so the connection is free for the next statement."""
    return con.execute(sql, params or []).fetchall()


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> Any:
    rows = run(con, sql, params)
    return rows[0][0] if rows else None


class AppendRows:
    """Rows only ever added (events, milestones, steps, releases)."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.rows: list[dict[str, Any]] = []

    def add(self, **row: Any) -> None:
        self.rows.append(row)

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        insert_rows(con, self.table, self.rows)
        self.rows = []


class GroupedRows:
    """Rows changed in place, grouped by an owner column (e.g. every alias row of one tool).

    A batch loads the groups it touches once, changes them in memory, then replaces those groups
    wholesale: one delete and one bulk insert per table and batch.
    """

    def __init__(self, table: str, key: str, group: str) -> None:
        self.table, self.key, self.group = table, key, group
        self.rows: dict[Any, dict[str, Any]] = {}
        self.groups: set[Any] = set()

    def load(self, con: duckdb.DuckDBPyConnection, groups: Iterable[Any]) -> None:
        wanted = sorted(set(groups) - self.groups)
        if not wanted:
            return
        self.groups.update(wanted)
        for row in select_rows(con, f"SELECT * FROM {self.table} WHERE {self.group} IN "
                                    "(SELECT unnest(?::VARCHAR[]))", [wanted]):
            self.rows[row[self.key]] = row

    def get(self, key: Any) -> dict[str, Any]:
        return self.rows[key]

    def find(self, key: Any) -> dict[str, Any] | None:
        return self.rows.get(key)

    def put(self, row: dict[str, Any]) -> None:
        self.groups.add(row[self.group])
        self.rows[row[self.key]] = row

    def remove(self, key: Any) -> None:
        self.rows.pop(key, None)

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self.groups:
            return
        run(con, f"DELETE FROM {self.table} WHERE {self.group} IN (SELECT unnest(?::VARCHAR[]))",
            [sorted(self.groups)])
        insert_rows(con, self.table, list(self.rows.values()))
        self.rows, self.groups = {}, set()
