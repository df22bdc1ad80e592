"""`snapshot.duckdb` for DuckDB clients outside the server (infra/http/snapshot.py), with real processes.

A writer keeps applying batches to a live read model (opened as the server may open it, with DuckDB's
external access off) while the snapshot is republished again and again; a separate `duckdb` process keeps
opening the snapshot read-only. It must never fail to open or read it, and every open must see one whole
read model: its tracking row and its events agree, and its fingerprint is the live model's at that
position.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import duckdb
import pytest

from domain.base import Meta
from infra.http.snapshot import publish_snapshot, snapshot_path
from infra.http.state import NO_AUTOMATIC_CHECKPOINT
from infra.settings import Settings
from infra.wiring import open_catalog
from projections.catchup import catch_up
from projections.fingerprint import fingerprint
from projections.projector import Projector
from projections.tracking import read_tracking
from tests.support import PROJECT_ROOT, SCRIPT, clean_environ, run_in_process

WRITES = 20  # at least; the writer goes on until the client has read while it wrote
MAX_WRITES = 400  # a bound, should the client never get to read
PUBLISHES = 20
OPENS = 10

# The outside client: opens the snapshot read-only until told to stop; one JSON line per open.
CLIENT = r"""
import json, os, sys
import duckdb
from projections.fingerprint import fingerprint
path, stop, out = sys.argv[1:4]
with open(out, "w") as lines:
    while not os.path.exists(stop):
        try:
            con = duckdb.connect(path, read_only=True)
            try:
                tracking, newest = con.execute(
                    "select (select position from tracking), (select max(position) from events)").fetchone()
                seen = {"tracking": tracking, "newest": newest, "fingerprint": fingerprint(con)}
            finally:
                con.close()
        except Exception as error:
            seen = {"error": repr(error)}
        lines.write(json.dumps(seen) + "\n")
        lines.flush()
"""

# Another process trying the server's file: exit 3 with the error when it cannot open it.
OPENER = r"""
import sys
import duckdb
try:
    duckdb.connect(sys.argv[1], read_only=True).close()
except duckdb.Error as error:
    print(error)
    sys.exit(3)
"""


@pytest.fixture
def live(home: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The example story's read model, opened read-write as the server opens it."""
    run_in_process(home, [*SCRIPT, ["unit", "create", "snapshots"], ["agent", "create", "s", "--unit", "snapshots"],
                          ["project"]])
    # The server may forbid DuckDB any file access of its own; the snapshot must not need it. And it turns
    # DuckDB's own checkpoints off (state.py), so that a copy can run beside its writer.
    con = duckdb.connect(str(home / "catalog.duckdb"), config={"enable_external_access": False,
                                                               "checkpoint_threshold": NO_AUTOMATIC_CHECKPOINT})
    with closing(con):
        yield con


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_first_snapshot_holds_the_live_read_model(home: Path, live: duckdb.DuckDBPyConnection) -> None:
    pause = threading.Lock()
    position = publish_snapshot(live, home, pause)

    assert position == read_tracking(live).position > 0
    assert not pause.locked()
    assert sorted(p.name for p in home.iterdir() if "snapshot" in p.name) == ["snapshot.duckdb"]
    with closing(duckdb.connect(str(snapshot_path(home)), read_only=True)) as copy:
        assert read_tracking(copy).position == position
        assert fingerprint(copy) == fingerprint(live, position)


def _write(home: Path, live: duckdb.DuckDBPyConnection, times: int) -> None:
    """`times` grant changes, each applied to the live read model in a commit of its own."""
    with closing(open_catalog(Settings(home=home, event_store_url=None))) as catalog:
        for index in range(times):
            change = catalog.add_grant if index % 2 == 0 else catalog.revoke_grant
            change("agent:s", "read", Meta(actor="snapshot-test", reason="test"))
            catch_up(catalog, Projector(live))


def _only_the_snapshot(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir() if "snapshot" in p.name)


def test_a_snapshot_folds_in_what_was_committed_since_the_last_checkpoint(
        home: Path, live: duckdb.DuckDBPyConnection) -> None:
    """Those batches are only in the server's WAL: the snapshot holds them all the same, and the server's
    own file is not checkpointed for it (its writer is held only to note where the WAL ends)."""
    live.execute("CHECKPOINT")
    checkpointed = read_tracking(live).position
    _write(home, live, 3)
    wal = home / "catalog.duckdb.wal"
    logged = wal.stat().st_size
    assert logged > 0 and read_tracking(live).position > checkpointed

    position = publish_snapshot(live, home, threading.Lock(), threading.Lock())

    assert position == read_tracking(live).position > checkpointed
    assert wal.stat().st_size == logged
    assert _only_the_snapshot(home) == ["snapshot.duckdb"]  # the copy's WAL was folded into it
    with closing(duckdb.connect(str(snapshot_path(home)), read_only=True)) as copy:
        assert read_tracking(copy).position == position
        assert fingerprint(copy) == fingerprint(live, position)


def test_a_snapshot_holds_the_commit_noted_not_those_after_it(home: Path, live: duckdb.DuckDBPyConnection) -> None:
    """Batches committed after the WAL's length was noted, while the file is copied, stay out of the
    copy: it holds exactly the position noted, whole."""
    _write(home, live, 2)
    noted = read_tracking(live).position

    class WriteOnceResumed:  # the writer resumes as soon as the snapshot has noted where the WAL ends
        def __enter__(self) -> None:
            pass

        def __exit__(self, *_: object) -> None:
            _write(home, live, 3)

    position = publish_snapshot(live, home, WriteOnceResumed(), threading.Lock())

    assert position == noted < read_tracking(live).position
    with closing(duckdb.connect(str(snapshot_path(home)), read_only=True)) as copy:
        assert read_tracking(copy).position == noted
        assert fingerprint(copy) == fingerprint(live, noted)


def test_a_failed_publish_leaves_the_previous_snapshot(home: Path, live: duckdb.DuckDBPyConnection) -> None:
    first = publish_snapshot(live, home, threading.Lock())
    _write(home, live, 2)

    class FailingOnceCopied:
        def __enter__(self) -> None:
            pass

        def __exit__(self, *_: object) -> None:
            raise OSError("no space left on device")

    with pytest.raises(OSError):
        publish_snapshot(live, home, threading.Lock(), FailingOnceCopied())
    assert _only_the_snapshot(home) == ["snapshot.duckdb"]  # no copy, no copied WAL left behind
    with closing(duckdb.connect(str(snapshot_path(home)), read_only=True)) as copy:
        assert read_tracking(copy).position == first < read_tracking(live).position


def test_the_server_keeps_its_lock_on_the_read_model_while_it_publishes(
        home: Path, live: duckdb.DuckDBPyConnection) -> None:
    """Reading the database file from the server's process would drop DuckDB's lock on it (POSIX locks)."""
    for _ in range(2):
        publish_snapshot(live, home, threading.Lock())
    opened = subprocess.run([sys.executable, "-c", OPENER, str(home / "catalog.duckdb")], cwd=PROJECT_ROOT,
                            env=clean_environ(), capture_output=True, text=True, timeout=60)
    assert opened.returncode == 3, opened.stdout + opened.stderr
    assert "lock" in opened.stdout.lower()


def test_with_checkpoints_held_writes_are_paused_only_to_note_where_the_wal_ends(
        home: Path, live: duckdb.DuckDBPyConnection) -> None:
    pause, copies = threading.Lock(), []

    class Checkpoints:
        def __enter__(self) -> None:
            pass

        def __exit__(self, *_: object) -> None:  # the copy is made by now
            copies.append(pause.locked())

    position = publish_snapshot(live, home, pause, Checkpoints())
    assert copies == [False]  # the writer was free while the file was copied
    with closing(duckdb.connect(str(snapshot_path(home)), read_only=True)) as copy:
        assert fingerprint(copy) == fingerprint(live, position)


def test_a_snapshot_is_taken_with_writes_paused(home: Path, live: duckdb.DuckDBPyConnection) -> None:
    class Pause:
        entered = exited = 0

        def __enter__(self) -> None:
            Pause.entered += 1

        def __exit__(self, *_: object) -> None:
            Pause.exited += 1

    publish_snapshot(live, home, Pause())
    assert (Pause.entered, Pause.exited) == (1, 1)


@pytest.mark.parametrize("beside_the_writer", [False, True], ids=["copied-with-writes-paused", "copied-beside-writes"])
def test_an_outside_client_is_never_locked_out_and_always_sees_a_whole_read_model(
        home: Path, tmp_path: Path, live: duckdb.DuckDBPyConnection, beside_the_writer: bool) -> None:
    settings = Settings(home=home, event_store_url=None)
    meta = Meta(actor="snapshot-test", reason="test")
    pause = threading.Lock()  # held by the writer for each batch, as the server holds its writer
    # beside the writer: it is paused only to note where the WAL ends, the copy runs while it applies batches
    checkpoints = threading.Lock() if beside_the_writer else None
    writer_con, snapshot_con = live.cursor(), live.cursor()
    failures: list[BaseException] = []

    def client_read_while_writing() -> bool:
        opens = lines_of(seen)
        return len(opens) >= OPENS and len({o.get("tracking") for o in opens}) >= 2

    def write() -> None:
        try:
            with closing(open_catalog(settings)) as catalog:
                for index in range(MAX_WRITES):
                    if stop.exists() or (index >= WRITES and client_read_while_writing()):
                        return
                    change = catalog.add_grant if index % 2 == 0 else catalog.revoke_grant
                    change("agent:s", "read", meta)
                    with pause:
                        catch_up(catalog, Projector(writer_con))
        except BaseException as error:  # reported by the test below
            failures.append(error)

    stop, seen = tmp_path / "stop", tmp_path / "client.jsonl"
    published = [publish_snapshot(snapshot_con, home, pause, checkpoints)]
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(snapshot_path(home)), str(stop), str(seen)],
                              cwd=PROJECT_ROOT, env=clean_environ(), stderr=subprocess.PIPE, text=True)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        # republish while the writer writes, at least PUBLISHES times, and once more after its last write
        # (a publish under way as the writer ends noted the position before its last batch)
        while True:
            done = not writer.is_alive()
            published.append(publish_snapshot(snapshot_con, home, pause, checkpoints))
            assert client.poll() is None, client.stderr.read() if client.stderr else ""
            if done and len(published) >= PUBLISHES:
                break
    finally:
        stop.touch()
        writer.join(timeout=120)
        _, errors = client.communicate(timeout=120)
    assert not failures, failures
    assert client.returncode == 0, errors

    # every publish answered the position it holds; the last one the live head, the store's
    assert published == sorted(published)
    with closing(open_catalog(settings)) as catalog:
        assert published[-1] == read_tracking(snapshot_con).position == catalog.recorder.max_notification_id()
    assert published[-1] - published[0] >= WRITES
    assert not [p for p in home.iterdir() if p.name.startswith(".snapshot-")]

    opens = lines_of(seen)
    assert len(opens) >= OPENS
    assert [o for o in opens if "error" in o] == []
    assert all(o["tracking"] == o["newest"] for o in opens), opens
    assert len({o["tracking"] for o in opens}) >= 2  # the client read snapshots while they were written
    live_fingerprints = {p: fingerprint(snapshot_con, p) for p in {o["tracking"] for o in opens}}
    assert [o for o in opens if o["fingerprint"] != live_fingerprints[o["tracking"]]] == []
