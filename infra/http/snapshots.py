"""The server's side of `snapshot.duckdb` (infra/http/snapshot.py makes one): published once caught up at start,
then every TOOLCAT_SNAPSHOT_SECONDS when batches were applied meanwhile, and on request (`POST /v1/snapshot`, which
`toolcat export` uses through `request_snapshot` when the snapshot it finds is stale)."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel

from infra.http.answers import json_response, server_of
from infra.http.auth import require
from infra.http.snapshot import publish_snapshot, snapshot_path
from infra.http.state import ServerState

log = logging.getLogger("toolcat.serve")
router = APIRouter(tags=["operators"])


class Snapshot(BaseModel):
    position: int
    path: str


class SnapshotPublisher:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.position: int | None = None  # what the published snapshot holds; None before the first
        self.side_writes = 0  # the server's side writes it holds (ServerState.side_writes)
        self._one_at_a_time = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        state.metrics.snapshot_lag.set_function(
            lambda: state.position - self.position if self.position is not None else state.position)

    def start(self) -> None:
        """Publish now, then, while batches are applied, at most every `snapshot_seconds`. A thread of its
        own rather than a hook after each batch: the last batch of a burst is published too, at most
        `snapshot_seconds` later, even when no batch follows it. A first publish that fails leaves the
        next ones to try (the server runs this in its follower, once caught up at start)."""
        try:
            self.publish()
        except Exception:
            log.exception("publishing %s failed", snapshot_path(self.state.settings.home))
        self._thread = threading.Thread(target=self._every, name="toolcat-snapshots", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """(Before the server's state closes its database.) Wait for a publish in progress, then stop."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()

    def _every(self) -> None:
        while not self._stopping.wait(self.state.settings.snapshot_seconds):
            try:
                self.publish()
            except Exception:  # a failed snapshot leaves the last one in place; the next try may work
                log.exception("publishing %s failed", snapshot_path(self.state.settings.home))

    def publish(self) -> int:
        """Publish unless the snapshot already holds what the read model holds; its position."""
        with self._one_at_a_time:
            side_writes = self.state.side_writes()
            if self.position is None or self.position < self.state.position or self.side_writes < side_writes:
                position = publish_snapshot(self.state.con, self.state.settings.home, self.state.pause_writes(),
                                            self.state.checkpoints)
                self.position, self.side_writes = position, side_writes
                self.state.metrics.snapshot_published.set(time.time())
            return self.position


@router.post("/v1/snapshot", response_model=Snapshot)
def snapshot(request: Request, _: Any = Depends(require("write", "snapshot"))) -> Response:
    """Publish `snapshot.duckdb` now, caught up with the store (nothing is copied when it already is).
    Needs `write`: a publication pauses the writer, so readers may not ask for one (the server's own
    command line may, for `export`)."""
    state = server_of(request)
    state.wait_for(state.store_head() if state.source == "store" else state.position, 10.0)
    position = request.app.state.snapshots.publish()
    return json_response({"position": position, "path": str(snapshot_path(state.settings.home))})
