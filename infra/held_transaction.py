"""One SQLite store transaction held open across several commands of one thread (a server's group commit,
infra/http/writer.py): the commands' saves and reads join it, each as a savepoint, and one COMMIT (one
fsync) records them all.

eventsourcing opens a transaction of its own for each save and each read (`SQLiteDatastore.transaction`).
While this holds one, the calls of the holding thread become savepoints inside it instead: a save that
fails is undone alone (ROLLBACK TO), as its own transaction would have been, and every read of that thread
sees what the earlier commands wrote. Other threads (the follower, readers) go on using their own
connections and see only what is committed.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing.sqlite import SQLiteConnection, SQLiteCursor, SQLiteDatastore, SQLiteTransaction

from domain.catalog import Catalog

_SAVEPOINT = "toolcat_command"


class _SavepointEnds:
    """What `SQLiteTransaction` ends a transaction with, for a savepoint of the held transaction: its
    commit releases the savepoint, its rollback undoes what was done since."""

    def __init__(self, connection: SQLiteConnection) -> None:
        self._connection = connection

    def cursor(self) -> SQLiteCursor:
        return self._connection.cursor()

    def commit(self) -> None:
        self._execute(f"RELEASE {_SAVEPOINT}")

    def rollback(self) -> None:
        self._execute(f"ROLLBACK TO {_SAVEPOINT}")
        self._execute(f"RELEASE {_SAVEPOINT}")

    def _execute(self, statement: str) -> None:
        with self.cursor() as cursor:
            cursor.execute(statement)


class _Savepoint(SQLiteTransaction):
    """A transaction of the library's, as a savepoint (its errors translated as the library's own are)."""

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        cursor.execute(f"SAVEPOINT {_SAVEPOINT}")
        return cursor


class HeldTransaction:
    """A file-based SQLite store's transaction, begun and committed by one thread (`begin`, `commit`)."""

    def __init__(self, datastore: SQLiteDatastore) -> None:
        self._datastore, self._own_transaction = datastore, datastore.transaction
        self._connection: SQLiteConnection | None = None
        self._holder: int | None = None
        datastore.transaction = self._transaction  # type: ignore[method-assign]

    @classmethod
    def of(cls, catalog: Catalog) -> HeldTransaction | None:
        """For the catalog's store when it is a SQLite file; None for any other (each command then commits
        on its own). An in-memory SQLite lets no one read while a writer holds its connection."""
        datastore = getattr(catalog.recorder, "datastore", None)
        if not isinstance(datastore, SQLiteDatastore) or datastore.pool.is_sqlite_memory_mode:
            return None
        return cls(datastore)

    @property
    def is_open(self) -> bool:
        return self._connection is not None

    def begin(self) -> None:
        """IMMEDIATE: the store's write lock is taken now (waiting as any writer does), so the reads inside
        never see a snapshot another process's commit makes stale before the first save."""
        connection = self._datastore.pool.get_connection(is_writer=True)
        try:
            with connection.cursor() as cursor:
                cursor.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._datastore.pool.put_connection(connection)
            raise
        self._connection, self._holder = connection, threading.get_ident()

    def commit(self) -> None:
        """End the held transaction by committing it; a COMMIT that fails keeps nothing of it (rolled back)."""
        connection, self._connection, self._holder = self._connection, None, None
        assert connection is not None, "no transaction is held"
        try:
            connection.commit()
        except BaseException:
            with contextlib.suppress(Exception):  # a failed COMMIT may leave the transaction open
                connection.rollback()
            raise
        finally:
            self._datastore.pool.put_connection(connection)

    @contextmanager
    def _transaction(self, *, commit: bool) -> Iterator[Any]:
        connection = self._connection
        if connection is None or threading.get_ident() != self._holder:
            with self._own_transaction(commit=commit) as cursor:
                yield cursor
            return
        with _Savepoint(_SavepointEnds(connection), commit=commit) as cursor, cursor:  # type: ignore[arg-type]
            yield cursor
