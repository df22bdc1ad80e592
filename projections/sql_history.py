"""Type-2 history built in SQL from a batch's rows of `events`, for the history tables whose versions are a
pure function of the events (no state read back): no Python dict per event, one pass of window functions.

The projector inserts a batch's `events` rows before the parts flush, so a part's SQL can read them. A
`changes` query (`sql/<name>.sql`) turns the batch's events into one row per change: the table's key and
value columns, `position`, `recorded_at`, `ended` (the change ends the key's history) and, for a
bitemporal table, `effective_at` (when it took effect, else when recorded). It reads the events of
positions `$first` to `$last` and any other parameter the part gives. From those rows the same versions
as `rows.HistoryRows` are written: the open version of each key touched is closed by its first change, and
each change that does not end the key opens a version that the key's next change (`lead()`) closes.
Each event makes at most one change per key, so no two changes of a key share a position.

A table may also say how to work out a change in Python (`PythonChanges`): a follower's few events then go
to the close and the open as list parameters, with no temporary table to create, check and drop.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from domain.registry import upcast
from projections.envelope import Envelope
from projections.rows import FEW_ROWS, given_rows, run, scalar
from projections.schema import BITEMPORAL_TABLES, HISTORY_TABLES
from projections.sqlfiles import query

_CHANGES = "_toolcat_changes"


@dataclass(frozen=True)
class PythonChanges:
    """The changes query's row of one event, worked out in Python from the event and its upcast data (`of`),
    with the DuckDB type of each of its columns (`types`). For a batch of a few events: the query's
    temporary table, the check of it and its drop cost ≈ 5 ms of a follower's pass of 8 grants, a fifth of
    it. The changes query stays the definition; tests hold the two to the same rows.
    `opening`: the event types whose change never finds its key open, because the domain refuses the event
    while it is (a grant added that the subject already holds): a batch of only these closes nothing."""
    of: Callable[[Envelope, dict[str, Any]], dict[str, Any]]
    types: dict[str, str]
    opening: frozenset[str] = frozenset()


class _BatchSql:
    """A table written from the batch's events by SQL, when the batch holds one of its event `types`."""

    def __init__(self, types: frozenset[str]) -> None:
        self.types = types
        self.params: dict[str, Any] | None = None
        self.alone = False

    def plan(self, envelopes: Sequence[Envelope], present: set[str], **params: Any) -> None:
        """Called from the part's prefetch with the batch (sorted by position), its event types (`present`)
        and the query's other parameters. A batch with none of `types` leaves the table alone: a following
        batch of a few events runs no statement for it."""
        self.params = None if self.types.isdisjoint(present) else {
            "first": envelopes[0].position, "last": envelopes[-1].position, **params}
        self.alone = len(envelopes) == 1  # one event: no key can change twice

    def clear(self) -> None:
        self.params = None


class SqlHistory(_BatchSql):
    """A history table written from the batch's events by its changes query."""

    def __init__(self, table: str, keys: tuple[str, ...], changes: str, types: frozenset[str],
                 new_keys: bool = False, python: PythonChanges | None = None) -> None:
        """`new_keys`: every change is the first of its key ever (an aggregate's creation event, keyed by
        the aggregate's id), so there is no open version to close. `python`: the changes worked out in
        Python, for a batch of a few events."""
        if table not in HISTORY_TABLES:
            raise ValueError(f"{table} is not listed in schema.HISTORY_TABLES")
        super().__init__(types)
        self.table, self.keys, self.changes, self.new_keys, self.python = table, keys, changes, new_keys, python
        self.bitemporal = table in BITEMPORAL_TABLES
        self.rows: list[dict[str, Any]] | None = None
        self.opens_only = False  # every one of `rows` is of python.opening: nothing to close

    def plan(self, envelopes: Sequence[Envelope], present: set[str], **params: Any) -> None:
        """(As _BatchSql.plan.) A few events whose changes are each their key's only one in the batch are
        worked out in Python now, when the table says how."""
        super().plan(envelopes, present, **params)
        if self.params is None or self.python is None or len(envelopes) > FEW_ROWS:
            return
        changed = [e for e in envelopes if e.type in self.types]
        rows = [self.python.of(e, upcast(e.type, e.type_version, e.data)) for e in changed]
        if len({tuple(row[key] for key in self.keys) for row in rows}) == len(rows):
            self.rows = rows
            self.opens_only = all(e.type in self.python.opening for e in changed)

    def clear(self) -> None:
        super().clear()
        self.rows, self.opens_only = None, False

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        if self.params is None:
            return
        if self.rows is not None and self.python is not None:
            columns = {name: [row[name] for row in self.rows] for name in self.python.types}
            with given_rows(con, _CHANGES, columns, self.python.types) as (changes, params):
                if not (self.new_keys or self.opens_only):
                    run(con, self._close_sql(True, changes), params)
                run(con, self._open_sql(True, changes), params)
            self.clear()
            return
        # The changes in a temporary table, not a CTE read by both statements: with its true size known,
        # the close joins the few changes of a small batch to the history, not the whole history to a
        # guess (about 3x faster for a batch of 20 events). Dropped once written: user SQL runs on the
        # projector's connection, where a leftover would show (on failure the batch's transaction rolls
        # back, and the table with it).
        run(con, f"CREATE TEMP TABLE {_CHANGES} AS {query(self.changes)}", self.params)
        # When no key changes twice in the batch (a follower's batch, nearly always), its changes need no
        # window to be put in order: each closes its key's open version and opens one that stays open.
        # DuckDB's window operators cost ≈ 2.5 ms each even for a few rows; the check ≈ 1 ms.
        once = self.new_keys or self.alone or scalar(
            con, f"SELECT count(*) = count(DISTINCT ({', '.join(self.keys)})) FROM {_CHANGES}")
        if not self.new_keys:
            run(con, self._close_sql(once))
        run(con, self._open_sql(once))
        run(con, f"DROP TABLE {_CHANGES}")
        self.clear()

    def _close_sql(self, once: bool, changes: str = _CHANGES) -> str:
        """Close each changed key's open version at its first change (`once`: its only one), the changes
        read from `changes` (a table, or a FROM item of list parameters)."""
        keys = ", ".join(self.keys)
        match = " AND ".join(f"h.{k} = c.{k}" for k in self.keys)
        effective_to = ", effective_to = c.effective_at" if self.bitemporal else ""
        first = changes if once else (f"(SELECT * FROM {changes} QUALIFY row_number() OVER (PARTITION BY {keys} "
                                       "ORDER BY position) = 1)")
        return (f"UPDATE {self.table} AS h SET valid_to = c.position, valid_to_time = c.recorded_at{effective_to} "
                f"FROM {first} AS c WHERE {match} AND h.valid_to IS NULL")

    def _open_sql(self, once: bool, changes: str = _CHANGES) -> str:
        """A version per change that does not end its key, closed by the key's next change (`once`: none)."""
        def following(column: str) -> str:
            return "NULL" if once else f"lead({column}) OVER (PARTITION BY {', '.join(self.keys)} ORDER BY position)"
        excluded = "position, recorded_at, ended" + (", effective_at" if self.bitemporal else "")
        effective = (f", effective_at AS effective_from, {following('effective_at')} AS effective_to"
                     if self.bitemporal else "")
        return (f"INSERT INTO {self.table} BY NAME SELECT * EXCLUDE ({excluded}), position AS valid_from, "
                f"{following('position')} AS valid_to, recorded_at AS valid_from_time, "
                f"{following('recorded_at')} AS valid_to_time{effective} FROM {changes} "
                + ("WHERE NOT ended" if once else "QUALIFY NOT ended"))


class SqlAppend(_BatchSql):
    """Rows only ever added, selected from the batch's events by `sql/<rows>.sql` (same parameters)."""

    def __init__(self, table: str, rows: str, types: frozenset[str]) -> None:
        super().__init__(types)
        self.table, self.rows = table, rows

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        if self.params is not None:
            run(con, f"INSERT INTO {self.table} BY NAME {query(self.rows)}", self.params)
        self.clear()
