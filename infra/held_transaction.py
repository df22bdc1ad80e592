"""One SQLite store transaction held open across several commands of one thread (a server's group commit,
infra/http/writer.py): the commands' saves and reads join it, each as a savepoint, and one COMMIT (one
fsync) records them all.

eventsourcing opens a transaction of its own for each save and each read (`SQLiteDatastore.transaction`).
The server's store is built by `GroupCommitSQLiteFactory`, given to eventsourcing as its persistence module
(the PERSISTENCE_MODULE setting names a factory class, the library's own extension point): its datastore is
a `SQLiteDatastore` whose `transaction`, while a transaction is held, makes the holding thread's calls
savepoints inside it instead. A save that fails is undone alone (ROLLBACK TO), as its own transaction would
have been, and every read of that thread sees what the earlier commands wrote. Other threads (the follower,
readers) go on using their own connections and see only what is committed.

eventsourcing is pinned in pyproject.toml for this: tests/integration/test_held_transaction.py fails on
another version until these are checked against it.
"""
from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing import persistence
from eventsourcing.sqlite import SQLiteConnection, SQLiteCursor, SQLiteDatastore, SQLiteFactory
from eventsourcing.utils import EnvType, get_topic

from domain.catalog import Catalog

_SAVEPOINT = "toolcat_command"

# sqlite3's errors as eventsourcing's own transactions raise them (a conflicting insert: IntegrityError, a
# RecordConflictError), most specific first.
_AS_THE_LIBRARY_RAISES: tuple[tuple[type[sqlite3.Error], type[persistence.PersistenceError]], ...] = (
    (sqlite3.InterfaceError, persistence.InterfaceError), (sqlite3.DataError, persistence.DataError),
    (sqlite3.OperationalError, persistence.OperationalError), (sqlite3.IntegrityError, persistence.IntegrityError),
    (sqlite3.InternalError, persistence.InternalError), (sqlite3.ProgrammingError, persistence.ProgrammingError),
    (sqlite3.NotSupportedError, persistence.NotSupportedError), (sqlite3.DatabaseError, persistence.DatabaseError),
    (sqlite3.Error, persistence.PersistenceError))


class HeldTransaction:
    """A file-based SQLite store's transaction, begun and committed by one thread (`begin`, `commit`)."""

    def __init__(self, datastore: SQLiteDatastore) -> None:
        self._datastore = datastore
        self._connection: SQLiteConnection | None = None
        self._holder: int | None = None

    @classmethod
    def of(cls, catalog: Catalog) -> HeldTransaction | None:
        """For the catalog's store when it was built by GroupCommitSQLiteFactory; None for any other (each
        command then commits on its own)."""
        datastore = getattr(catalog.recorder, "datastore", None)
        return datastore.held if isinstance(datastore, GroupCommitDatastore) else None

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

    def joined_by_this_thread(self) -> SQLiteConnection | None:
        """The held connection when this thread holds it."""
        return self._connection if self._holder == threading.get_ident() else None


class GroupCommitDatastore(SQLiteDatastore):
    """eventsourcing's SQLite datastore, whose transactions join the held one on the thread that holds it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held = HeldTransaction(self)

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[SQLiteCursor]:
        connection = self.held.joined_by_this_thread()
        if connection is None:
            with super().transaction(commit=commit) as cursor:
                yield cursor
            return
        with _savepoint(connection, commit=commit) as cursor:
            yield cursor


@contextmanager
def _savepoint(connection: SQLiteConnection, *, commit: bool) -> Iterator[SQLiteCursor]:
    """What eventsourcing's transaction is (its cursor, all undone on an error or when not committing, its
    errors), as a savepoint of the held transaction."""
    try:
        with connection.cursor() as begin:
            begin.execute(f"SAVEPOINT {_SAVEPOINT}")
        cursor = connection.cursor()
        try:
            with cursor:  # closed at the end
                yield cursor
        except BaseException:
            _end(connection, f"ROLLBACK TO {_SAVEPOINT}", f"RELEASE {_SAVEPOINT}")
            raise
        if commit:
            _end(connection, f"RELEASE {_SAVEPOINT}")
        else:
            _end(connection, f"ROLLBACK TO {_SAVEPOINT}", f"RELEASE {_SAVEPOINT}")
    except sqlite3.Error as error:
        raise next(ours for theirs, ours in _AS_THE_LIBRARY_RAISES if isinstance(error, theirs))(error) from error


def _end(connection: SQLiteConnection, *statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


class GroupCommitSQLiteFactory(SQLiteFactory):
    """eventsourcing's SQLite persistence, on a GroupCommitDatastore (a file: an in-memory SQLite lets no one
    read while a writer holds its connection)."""

    def __init__(self, env: EnvType | Any) -> None:
        super().__init__(env)
        built = self.datastore
        assert not built.pool.is_sqlite_memory_mode, "group commit needs a SQLite file"
        self.datastore = GroupCommitDatastore(
            db_name=built.pool.db_name, lock_timeout=built.pool.lock_timeout,
            single_row_tracking=built.single_row_tracking, originator_id_type=built.originator_id_type)
        built.close()


# The PERSISTENCE_MODULE setting that builds a store with group commit.
GROUP_COMMIT_PERSISTENCE = get_topic(GroupCommitSQLiteFactory)
