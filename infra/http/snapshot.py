"""Snapshots of the read model for DuckDB clients outside the server: `snapshot.duckdb` in the home.

The server owns `catalog.duckdb`, and DuckDB lets no other process read a file another process writes.
So the server notes, between batches, its position and how long the WAL is (a commit boundary: everything
committed up to then), child processes copy the file and the WAL up to that length, and the server opens
the copy as a database of its own: DuckDB replays the copied WAL, a CHECKPOINT folds it into the copy's
file (closing removes the copy's WAL), and the copy, flushed to disk and holding the noted position, is
renamed over `snapshot.duckdb`. A rename is atomic: a client opening `snapshot.duckdb` read-only gets
either the old complete file or the new one, and the server never opens the snapshot, so nothing ever
locks a client out.

Why a copy of the file and a prefix of its WAL is the read model at the noted commit: between
checkpoints DuckDB writes the file only in blocks the last checkpoint left free (commits go to the WAL;
a large insert may write its blocks into free ones first, and its WAL record points at them, written
before the commit ends); so while no checkpoint runs (`hold_checkpoints`), the file holds the last
checkpoint plus every block the WAL prefix points at, and the WAL prefix ends at a commit. The server's
writer is held only to note the position and the WAL's length, not for a checkpoint, a copy or a fold.

A plain file copy, not DuckDB's ATTACH or COPY: the server's database may run with
`enable_external_access=false`, which forbids DuckDB itself from writing other files. And the copy is made
by a child process: POSIX releases every lock a process holds on a file as soon as the process closes any
descriptor of that file, so reading `catalog.duckdb` from the server's own process would silently drop
DuckDB's lock on it and let other processes write the server's file.
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
from projections.tracking import read_tracking
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


def _wal_of(database: Path) -> Path:
    return database.with_name(database.name + ".wal")


def _wal_bytes(database: Path) -> int:
    """The length of the database's WAL (stat: opening the server's from this process would drop DuckDB's
    locks on it)."""
    try:
        return _wal_of(database).stat().st_size
    except FileNotFoundError:
        return 0


def _copy(source: Path, wal_bytes: int, temporary: Path) -> None:
    """`source` and the first `wal_bytes` of its WAL copied to `temporary` and its WAL, by child processes."""
    subprocess.run(["cp", str(source), str(temporary)], check=True, capture_output=True)
    if wal_bytes:
        with open(_wal_of(temporary), "wb") as wal:
            subprocess.run(["head", "-c", str(wal_bytes), str(_wal_of(source))], stdout=wal,
                           stderr=subprocess.PIPE, check=True)
        if _wal_of(temporary).stat().st_size != wal_bytes:
            raise RuntimeError(f"{_wal_of(source)} is shorter than the {wal_bytes} bytes noted")


def _folded(temporary: Path, wal_bytes: int) -> int:
    """Fold the copied WAL into the copy, flush it to disk; the position it holds. In this process: a
    database of its own (not the server's, whose settings it does not share), on a file the server never
    opens (so no lock of the server's is dropped). One DuckDB thread: the fold is small (the WAL since the
    last checkpoint, bounded by state.py) and the follower and the requests need the cores more."""
    with closing(connect(str(temporary), read_only=not wal_bytes, config={"threads": 1})) as copy:
        if wal_bytes:
            copy.execute("CHECKPOINT")
        position = read_tracking(copy).position
    if _wal_bytes(temporary):
        raise RuntimeError(f"the checkpoint left {_wal_of(temporary)} non-empty")
    _fsync(temporary)
    return position


def publish_snapshot(con: duckdb.DuckDBPyConnection, home: Path, pause_writes: AbstractContextManager[object],
                     hold_checkpoints: AbstractContextManager[object] | None = None) -> int:
    """Publish `snapshot.duckdb` in `home` from the database `con` is connected to; returns the position
    (the tracking row's) the snapshot holds.

    `pause_writes`, a context manager, holds the server's writer between batches while the position and
    the WAL's length are noted (a read and a stat). `hold_checkpoints` promises that no checkpoint runs
    inside it (the server's connection checkpoints only inside it, see state.py); it is held while the
    file and the WAL are copied, and the writer goes on meanwhile. Without it the copy is made with writes
    paused too. The fold, the flush to disk and the rename run outside both. The directory is flushed too,
    so the rename survives a crash; on any failure the temporary copy is removed and the previous snapshot
    stays."""
    home = Path(home)
    temporary = home / f".snapshot-{uuid.uuid4().hex[:12]}.duckdb.tmp"
    with closing(con.cursor()) as cursor:
        source = database_file(cursor)
        try:
            held, paused = (pause_writes, nullcontext()) if hold_checkpoints is None else (hold_checkpoints,
                                                                                            pause_writes)
            with held:
                with paused:
                    noted, wal_bytes = read_tracking(cursor).position, _wal_bytes(source)
                _copy(source, wal_bytes, temporary)
            position = _folded(temporary, wal_bytes)
            if position < noted:  # (more is possible only when the writer was not paused: Kafka's follower)
                raise RuntimeError(f"the snapshot's copy holds position {position}, not {noted}: its WAL was "
                                   "cut short or not replayed")
            os.replace(temporary, snapshot_path(home))
        except BaseException:
            temporary.unlink(missing_ok=True)
            _wal_of(temporary).unlink(missing_ok=True)
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
