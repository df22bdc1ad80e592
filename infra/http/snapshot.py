"""Snapshots of the read model for DuckDB clients outside the server: `snapshot.duckdb` in the home.

The server owns `catalog.duckdb`, and DuckDB lets no other process read a file another process writes.
So, between batches, the server checkpoints its database (everything committed moves from the WAL into
the file), copies the file with its writer held, and renames the copy over `snapshot.duckdb`. A rename is
atomic: a client opening `snapshot.duckdb` read-only gets either the old complete file or the new one,
and the server never opens the snapshot, so nothing ever locks a client out.

A plain file copy, not DuckDB's ATTACH or COPY: the server's database may run with
`enable_external_access=false`, which forbids DuckDB itself from writing other files. And the copy is made
by a child process (`cp`): POSIX releases every lock a process holds on a file as soon as the process
closes any descriptor of that file, so reading `catalog.duckdb` from the server's own process would silently
drop DuckDB's lock on it and let other processes write the server's file.
"""
from __future__ import annotations

import os
import subprocess
import uuid
from contextlib import AbstractContextManager, closing, nullcontext
from pathlib import Path

import duckdb
import httpx

from domain.errors import Unavailable
from infra.http.address import live_address
from infra.http.problems import error_from_problem
from infra.settings import Settings
from projections.connection import connect
from projections.projector import read_tracking
from projections.rows import scalar

SNAPSHOT_FILE = "snapshot.duckdb"


def snapshot_path(home: Path) -> Path:
    return Path(home) / SNAPSHOT_FILE


def database_file(con: duckdb.DuckDBPyConnection) -> Path:
    """The file holding the connection's current database."""
    found = scalar(con, "SELECT path FROM duckdb_databases() WHERE database_name = current_database()")
    if not found:
        raise ValueError("the connection's database is in memory: there is no file to snapshot")
    return Path(found)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _checkpointed(con: duckdb.DuckDBPyConnection, source: Path) -> int:
    """Checkpoint, then the position the file now holds. Refuses a file whose WAL still holds changes:
    a copy without them would not be the read model it claims to be."""
    con.execute("CHECKPOINT")
    wal = source.with_name(source.name + ".wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise RuntimeError(f"the checkpoint left {wal} non-empty: is a write still in progress?")
    return read_tracking(con).position


def publish_snapshot(con: duckdb.DuckDBPyConnection, home: Path, pause_writes: AbstractContextManager[object],
                     hold_checkpoints: AbstractContextManager[object] | None = None) -> int:
    """Publish `snapshot.duckdb` in `home` from the database `con` is connected to; returns the position
    (the tracking row's) the snapshot holds.

    `pause_writes`, a context manager, holds the server's writer between batches while the file is
    checkpointed. Between checkpoints DuckDB changes the file only in blocks the last checkpoint left
    free (commits go to the WAL), so the copy needs only that no checkpoint runs meanwhile:
    `hold_checkpoints` promises that (the server's connection checkpoints only inside it, see state.py),
    and the writer goes on while the file is copied. Without it the copy is made with writes paused too.
    The copy is written to a temporary file in the home, flushed to disk, then renamed over the snapshot;
    the directory is flushed too, so the rename survives a crash."""
    home = Path(home)
    temporary = home / f".snapshot-{uuid.uuid4().hex[:12]}.duckdb.tmp"
    with closing(con.cursor()) as cursor:
        source = database_file(cursor)
        try:
            held, paused = (pause_writes, nullcontext()) if hold_checkpoints is None else (hold_checkpoints,
                                                                                            pause_writes)
            with held:
                with paused:
                    position = _checkpointed(cursor, source)
                subprocess.run(["cp", str(source), str(temporary)], check=True, capture_output=True)
            _fsync(temporary)
            os.replace(temporary, snapshot_path(home))
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    _fsync(home)
    return position


def request_snapshot(settings: Settings) -> int | None:
    """Ask a `toolcat serve` running on the settings' home to publish a snapshot now (`POST /v1/snapshot`,
    with the token it keeps for the home's own command line), and answer the position it holds; None when
    no server runs there.

    How commands that read whole files (`toolcat export`) get a fresh snapshot without touching the file a
    server owns."""
    address = live_address(Path(settings.home))
    if address is None:
        return None
    try:
        answer = httpx.post(address.url + "/v1/snapshot", headers={"Authorization": f"Bearer {address.token}"},
                            timeout=httpx.Timeout(600.0, connect=5.0))  # a large read model takes a while to copy
    except httpx.HTTPError as error:
        raise Unavailable(f"the server at {address.url} did not answer: {error}", server=address.url) from error
    if answer.status_code >= 400:
        raise error_from_problem(answer.status_code, answer.json() if answer.content else None)
    return int(answer.json()["position"])


def open_snapshot(home: Path, at_least: int) -> duckdb.DuckDBPyConnection | None:
    """The home's snapshot opened read-only when it holds position `at_least` or later, else None."""
    path = snapshot_path(home)
    if not path.exists():
        return None
    try:
        con = connect(str(path), read_only=True)
    except duckdb.Error:  # replaced between the check and the open, or not a database: use another way
        return None
    try:
        if read_tracking(con).position >= at_least:
            return con
    except duckdb.Error:
        pass
    con.close()
    return None
