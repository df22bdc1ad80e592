"""The integrity watch of `toolcat serve`: the last chain check and seal comparison, shown in every web
page's header and under `integrity` in `/v1/health`.

When: once the server has caught up at start, then again TOOLCAT_INTEGRITY_SECONDS after the last check
ended (0: never), and never sooner than four times the last check's own duration. Not after each applied
batch: an altered history comes with no event (someone rewrites a stored row), so a check per batch would
find nothing a batch brings and would miss the edit on an idle server; and a check walks the whole chain
(≈ 1 s of CPU per 24,000 events here), which a batch every few milliseconds could not afford.

Where: in a worker process of its own (infra/integrity_check.py), so the walk never takes the GIL from the
pages and reads. It compares the chain with the hashes of the published snapshot (the read model as of its
last publication, which the worker can open while the server holds the read model), every seal, and the
hash the live read model recorded at its head.
"""
from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.pool
import os
import threading
import time
from datetime import datetime, timezone
from typing import Any

from infra.http.snapshot import snapshot_path
from infra.http.state import ServerState
from infra.integrity_check import check_history
from projections.rows import run

log = logging.getLogger("toolcat.serve")
# The least pause between two checks, as a multiple of the last one's duration: at most a fifth of a core.
PAUSE_FACTOR = 4
# The worker's scheduling priority below the server's (an os.nice increment; 19 is the lowest). A check is
# background work: at normal priority its first walk (right after start-up: the worker's imports, then the
# whole chain: ≈ 1 s of a core on the 24,000-event benchmark catalog) took a core from the requests of a
# 2-core machine already loaded, and effective reads at 500/s slowed while it ran.
NICENESS = 10


class IntegrityWatch:
    def __init__(self, state: ServerState) -> None:
        self.state, self.every = state, state.settings.integrity_seconds
        # The last answer (replaced whole, never edited): see `report`.
        self.last: dict[str, Any] = {"verdict": "pending" if self.on else "off"}
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolcat-integrity", daemon=True)
        self._pool: multiprocessing.pool.Pool | None = None
        state.on_caught_up.append(self._ready.set)

    @property
    def on(self) -> bool:
        return self.every > 0

    def start(self) -> None:
        if self.on:
            # Spawned, not forked: a fork of the server would copy its threads' locks in whatever state.
            # Niced before it imports anything (the initializer runs first): the check never competes with
            # the server's threads for a core, only takes what they leave.
            self._pool = multiprocessing.get_context("spawn").Pool(1, initializer=os.nice, initargs=(NICENESS,))
            self._thread.start()

    def stop(self) -> None:
        """Stop at once: a check under way is abandoned (its worker killed), not waited for."""
        self._stopping.set()
        self._ready.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()

    def report(self) -> dict[str, Any]:
        """What the header and `/v1/health` show: `verdict` (`verified`, `unverified`: nothing vouched for
        the chain, `altered`, `pending`: not checked yet, `off`), and once checked `checked_at`, `events`,
        `seals`; when altered the `position` found (None: not located yet) and the `message`."""
        return self.last

    def _run(self) -> None:
        self._ready.wait()
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                found = self.check()
                if found is None:  # stopping
                    return
                self.last = found
            except Exception as error:  # noqa: BLE001 - the store unreachable now: say so, check again later
                log.warning("the integrity check failed: %s", error)
                self.last = {**self.last, "error": f"{type(error).__name__}: {error}"}
            took = time.monotonic() - started
            self._stopping.wait(max(self.every, PAUSE_FACTOR * took))

    def check(self) -> dict[str, Any] | None:
        """One check, waited for (on the watch's thread); None when the server stops meanwhile."""
        assert self._pool is not None
        cursor = self.state.new_cursor()
        try:
            head = run(cursor, "SELECT hash FROM events ORDER BY position DESC LIMIT 1")
        finally:
            cursor.close()
        snapshot = snapshot_path(self.state.settings.home)
        pending = self._pool.apply_async(check_history, (self.state.settings.model_dump_json(),
                                                         str(snapshot) if snapshot.exists() else None,
                                                         head[0][0] if head else None))
        while True:
            try:
                found = pending.get(0.5)
                break
            except multiprocessing.TimeoutError:
                if self._stopping.is_set():
                    return None
        checked = {"verdict": found["verdict"], "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   "every_seconds": self.every}
        if found["verdict"] == "altered":
            return checked | {"position": found["position"], "message": found["message"]}
        return checked | {"events": found["events"], "position": found["position"], "seals": found["seals"]}
