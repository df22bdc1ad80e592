"""A home's files are its owner's alone: the event store, the read model, the snapshot, the token file, the
server's address file (which holds a token) and every file beside them.

The process's umask is made 0o077 when a command starts, so each file any part of toolcat — or a library
it drives (SQLite, DuckDB, eventsourcing) — creates is 0600 and each directory 0700, whatever umask the
shell had: one setting instead of a mode at each of the many places files are created (SQLite's journal,
DuckDB's WAL and spill directory included). A home made by an older toolcat with a looser mode is tightened
to 0700 (when it holds toolcat's files: a `--home` pointing at some other directory is left as it is).
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077
# Files only a toolcat home holds.
_HOME_MARKERS = ("events.sqlite", "catalog.duckdb", "tokens.json", "serve.json")


def keep_private(home: Path) -> None:
    """From now on this process creates files for its user only; the home, when it is one, is 0700."""
    os.umask(PRIVATE_UMASK)
    with contextlib.suppress(OSError):  # not there yet (made 0700 under this umask), or not ours
        found = home.stat()
        if (stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and found.st_mode & 0o077
                and any((home / name).exists() for name in _HOME_MARKERS)):
            home.chmod(0o700)
