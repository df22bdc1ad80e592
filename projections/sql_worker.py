"""User SQL in a worker process: bounded in memory and stopped for certain.

Why not in the caller's process: DuckDB's `interrupt()` is checked between vector chunks, and its
`memory_limit` bounds only the buffer manager. One scalar expression that builds a huge value
(`SELECT len(range(200000000))` makes a LIST of 200 million BIGINTs) allocates outside the buffer
manager and never reaches an interrupt check: it ran 253 s and grew the server to 14.5 GB although the
timeout was 30 s and the memory_limit 488 MiB. So the query runs in a spawned child whose address space
is capped (`RLIMIT_AS`): an allocation past the cap fails there (DuckDB answers OutOfMemory, or the
child dies), never in the server. The caller waits at most the timeout plus a grace second, then kills
the child; the query's own timer (`run_query`) still answers an ordinary slow query first.

The child opens the database file read-only: DuckDB lets a second process read a file only when no
process holds it for writing, so the server passes its published snapshot (`snapshot.duckdb`) and the
command line the read model it has just caught up and closed. A worker stays warm between queries
(starting one imports DuckDB and Arrow, about a second); one killed or broken is replaced.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from multiprocessing.connection import Connection
from typing import Any

import pyarrow as pa

from domain.errors import SqlError, SqlRefused, SqlTimeout

# How long past the statement timeout the caller waits before it kills the worker: the query's own timer
# interrupts first whenever DuckDB reaches an interrupt check.
GRACE_SECONDS = 1.0
_ERRORS = {"sql_refused": SqlRefused, "sql_timeout": SqlTimeout, "sql_error": SqlError}


def _serve(requests: Connection, address_space_bytes: int, config: dict[str, Any]) -> None:
    """The worker's loop: one request at a time, an Arrow IPC stream or an error back."""
    import resource

    import duckdb

    from projections.sql_encode import limit_metadata  # noqa: F401  (imported before the cap is set)
    from projections.user_sql import run_query
    resource.setrlimit(resource.RLIMIT_AS, (address_space_bytes, address_space_bytes))
    opened: tuple[tuple[str, int, int], duckdb.DuckDBPyConnection] | None = None
    while True:
        try:
            path, query, timeout_seconds, row_limit, max_bytes = requests.recv()
        except EOFError:
            return
        try:
            stat = os.stat(path)
            key = (path, stat.st_ino, stat.st_mtime_ns)  # a new snapshot is renamed over the old: reopen
            if opened is None or opened[0] != key:
                if opened is not None:
                    opened[1].close()
                opened = (key, duckdb.connect(path, read_only=True, config=config))
            table = run_query(opened[1], query, timeout_seconds, row_limit, max_bytes)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            requests.send(("ok", sink.getvalue().to_pybytes()))
        except (SqlRefused, SqlTimeout, SqlError) as error:
            requests.send((error.code, str(error)))
        except (MemoryError, duckdb.OutOfMemoryException) as error:
            requests.send(("memory", str(error)))
        except Exception as error:  # the worker answers every request, whatever failed
            requests.send(("sql_error", f"the query failed: {error}"))


class SqlWorkers:
    """Worker processes for user SQL, one query each at a time; idle ones wait warm for the next."""

    def __init__(self, address_space_bytes: int, config: dict[str, Any], keep_idle: int = 2) -> None:
        self.address_space_bytes = address_space_bytes
        self.config = config
        self.keep_idle = keep_idle
        self._idle: list[tuple[Any, Connection]] = []
        self._lock = threading.Lock()
        self._context = multiprocessing.get_context("spawn")  # never fork a threaded server

    def warm(self) -> None:
        """Start one worker now, so that the first query does not wait for it."""
        with self._lock:
            if not self._idle:
                self._idle.append(self._start())

    def _start(self) -> tuple[Any, Connection]:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(theirs, self.address_space_bytes, self.config),
                                        name="toolcat-sql", daemon=True)
        process.start()
        theirs.close()
        return process, ours

    def run(self, path: str, query: str, timeout_seconds: float, row_limit: int, max_bytes: int) -> pa.Table:
        """`run_query` on the database file `path`, in a worker; the same answers and errors, and besides:
        `SqlTimeout` when the worker has not answered within the timeout plus a grace second (it is
        killed), `SqlRefused` when the query needed more memory than a worker may take."""
        from projections.user_sql import check_query
        check_query(query)  # refused here already: no worker needed
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = self._start()
        process, pipe = worker
        try:
            pipe.send((path, query, timeout_seconds, row_limit, max_bytes))
            if not pipe.poll(timeout_seconds + GRACE_SECONDS):
                self._kill(worker)
                raise SqlTimeout(f"the query ran longer than {timeout_seconds:g} s and was stopped",
                                 timeout_seconds=timeout_seconds)
            answer = pipe.recv()
        except (EOFError, OSError, BrokenPipeError):
            self._kill(worker)
            raise SqlRefused("the query needed more memory than a query may take "
                             f"({self.address_space_bytes // 2**20} MiB of address space) and was stopped")
        kind, payload = answer
        if kind == "ok":
            self._release(worker)
            return pa.ipc.open_stream(payload).read_all()
        if kind == "memory":
            self._kill(worker)  # a worker that ran out of memory may be left in any state
            raise SqlRefused(f"the query needed more memory than a query may take and was stopped: {payload}")
        self._release(worker)
        if kind == "sql_timeout":
            raise SqlTimeout(payload, timeout_seconds=timeout_seconds)
        raise _ERRORS[kind](payload)

    def _release(self, worker: tuple[Any, Connection]) -> None:
        with self._lock:
            if len(self._idle) < self.keep_idle:
                self._idle.append(worker)
                return
        self._kill(worker)

    @staticmethod
    def _kill(worker: tuple[Any, Connection]) -> None:
        process, pipe = worker
        process.kill()
        process.join()
        pipe.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            self._kill(worker)


def workers_for(memory_bytes: int, duckdb_memory_limit: str) -> SqlWorkers:
    """The workers of a server or a command: the sandbox, DuckDB's memory_limit inside the capped space."""
    from projections.user_sql import sandbox_config
    return SqlWorkers(memory_bytes, sandbox_config(memory_limit=duckdb_memory_limit))
