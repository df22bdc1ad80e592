"""Batch buffers for DuckDB: rows are changed in memory during a batch and written in bulk at its end."""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from projections.schema import BITEMPORAL_TABLES, HISTORY_TABLES

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow tries to import dateutil (optional, not installed here) each time it converts datetimes, and
# Python does not remember a failed import: ≈ 0.3 ms a table, a few ms of every follower batch. A None
# entry in sys.modules makes that import fail at once; an installed dateutil is left alone.
if importlib.util.find_spec("dateutil") is None:
    sys.modules.setdefault("dateutil", None)  # type: ignore[arg-type]


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]]) -> None:
    """One bulk insert through Arrow (matched by column name), never one statement per row."""
    if rows:
        insert_columns(con, table, {name: [row.get(name) for row in rows] for name in rows[0]})


def insert_columns(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, list[Any]] | pa.Table,
                   types: dict[str, str] | None = None) -> None:
    """The same from columns (name → values): the hot path builds these without a dict per row; or from
    an Arrow table already built from them (by the catch-up's read-ahead thread). With the columns' DuckDB
    `types`, a few rows go as list parameters (`given_rows`)."""
    import pyarrow as pa  # here, not at the top: a read that writes nothing never loads it
    if types is not None and not isinstance(columns, pa.Table):
        with given_rows(con, "_toolcat_batch", columns, types) as (source, params):
            run(con, f"INSERT INTO {table} BY NAME SELECT * FROM {source}", params)
        return
    batch = columns if isinstance(columns, pa.Table) else pa.table(columns)
    with registered(con, "_toolcat_batch", batch):
        run(con, f"INSERT INTO {table} BY NAME SELECT * FROM _toolcat_batch")


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> Iterator[None]:
    """An Arrow table visible to the statements inside the block under `name`."""
    con.register(name, table)
    try:
        yield
    finally:
        try:
            con.unregister(name)
        except duckdb.TransactionException:  # the statement failed and aborted the transaction: keep its error
            pass


# Up to this many rows go to a statement as list parameters (below), more through Arrow.
FEW_ROWS = 64


@contextmanager
def given_rows(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, list[Any]],
               types: dict[str, str]) -> Iterator[tuple[str, dict[str, list[Any]]]]:
    """Rows given column by column (name → values, of the DuckDB `types`) as a FROM item and the
    parameters it takes: a few as the subquery `(SELECT unnest($name::TYPE[]) AS name, …)` over list
    parameters, many as an Arrow table registered under `name`. For a follower's few rows registering
    costs about 1 ms of CPU more per statement than the statement itself, a third of a small pass."""
    if len(next(iter(columns.values()))) > FEW_ROWS:
        import pyarrow as pa
        with registered(con, name, pa.table(columns)):
            yield name, {}
    else:
        yield "(SELECT " + ", ".join(f"unnest(${n}::{types[n]}[]) AS {n}" for n in columns) + ")", columns


def among(column: str, parameter: str, values: list[Any], type_: str = "VARCHAR") -> str:
    """A predicate: `column` is one of `values` (given as the list parameter `parameter`). A few are
    looked up with list_contains, which DuckDB evaluates row by row with no join to plan and run (≈ 0.5 ms
    less per statement of a follower's pass); many by a semi-join (list_contains would be quadratic)."""
    if len(values) <= FEW_ROWS:
        return f"list_contains(${parameter}::{type_}[], {column})"
    return f"{column} IN (SELECT unnest(${parameter}::{type_}[]))"


def select_rows(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> list[dict[str, Any]]:
    return con.sql(sql, params=params or None).to_arrow_table().to_pylist()


def plain_rows(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> list[dict[str, Any]]:
    """`select_rows` without Arrow, for the few rows of a command line read (loading pyarrow costs about
    40 ms of its start), and for a long query text: `con.sql` parses, tokenizes and binds the text in
    Python before running it (≈ 55 ms of CPU of the ≈ 130 ms of who-can for one tool at a past position
    on the bench catalog), `con.execute` runs it as it is. Only for plain columns (text, integers,
    booleans, floats, dates): DuckDB's own conversion answers a UUID, MAP, INTERVAL, HUGEINT or
    TIMESTAMPTZ otherwise than Arrow's."""
    cursor = con.execute(sql, params or [])
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def run(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> list[tuple]:
    """Execute and drain the result, so the connection is free for the next statement."""
    return con.execute(sql, params or []).fetchall()


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> Any:
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
        self.clear()

    def clear(self) -> None:
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
        self.clear()

    def clear(self) -> None:
        self.rows, self.groups = {}, set()


class HistoryRows:
    """Type-2 history: a change closes the open version of its key and opens the next one.

    Versions are kept per event position, so as-of reads are exact at every position even though a
    batch writes many events in one transaction. A `None` row ends the key's history.
    """

    def __init__(self, table: str, keys: tuple[str, ...]) -> None:
        if table not in HISTORY_TABLES:
            raise ValueError(f"{table} is not listed in schema.HISTORY_TABLES")
        self.table, self.keys = table, keys
        # Bitemporal tables also carry effective_from / effective_to: when a change took effect.
        self.bitemporal = table in BITEMPORAL_TABLES
        self.changes: dict[tuple, list[tuple[int, Any, dict[str, Any] | None, Any]]] = {}

    def set(self, key: tuple, row: dict[str, Any] | None, position: int, at: Any,
            effective_at: Any = None) -> None:
        versions = self.changes.setdefault(key, [])
        if versions and versions[-1][0] == position:
            versions.pop()  # two changes at one position: only the last is ever visible
        versions.append((position, at, row, effective_at or at))

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self.changes:
            return
        closes = [{**dict(zip(self.keys, key)), "_pos": versions[0][0], "_time": versions[0][1],
                   "_effective_at": versions[0][3]} for key, versions in self.changes.items()]
        match = " AND ".join(f"h.{k} = c.{k}" for k in self.keys)
        effective_to = ", effective_to = c._effective_at" if self.bitemporal else ""
        import pyarrow as pa
        with registered(con, "_toolcat_closes", pa.Table.from_pylist(closes)):
            run(con, f"UPDATE {self.table} AS h SET valid_to = c._pos, valid_to_time = c._time{effective_to} "
                     f"FROM _toolcat_closes AS c WHERE {match} AND h.valid_to IS NULL")
        opened = []
        for key, versions in self.changes.items():
            for index, (position, at, row, effective_at) in enumerate(versions):
                if row is None:
                    continue
                following = versions[index + 1] if index + 1 < len(versions) else None
                version = {**dict(zip(self.keys, key)), **row, "valid_from": position, "valid_from_time": at,
                           "valid_to": following[0] if following else None,
                           "valid_to_time": following[1] if following else None}
                if self.bitemporal:
                    version.update(effective_from=effective_at, effective_to=following[3] if following else None)
                opened.append(version)
        insert_rows(con, self.table, opened)
        self.clear()

    def clear(self) -> None:
        self.changes = {}


class Buffer(Protocol):
    """What a part writes at the end of a batch: AppendRows, GroupedRows, HistoryRows, sql_history.SqlHistory."""

    def flush(self, con: duckdb.DuckDBPyConnection) -> None: ...

    def clear(self) -> None: ...


class BufferedPart:
    """A projection part whose rows are buffered during a batch: flushed together, or all discarded."""

    def _buffers(self) -> tuple[Buffer, ...]:
        raise NotImplementedError

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        for rows in self._buffers():
            rows.flush(con)

    def discard(self) -> None:
        """Forget a failed batch's buffered rows."""
        for rows in self._buffers():
            rows.clear()
