"""The Kafka loop of `project --from kafka`: poll `toolcat.events`, apply each batch to the read model,
publish the changed subjects to the changelog, dead-letter a bad message (and stop), and close the read
model and the consumer whatever happens.

It is given its clients and callables; building them from settings is infra's job.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb

from consumers.kafka_io import Consumer
from consumers.prefetch import Prefetcher
from consumers.streaming import BATCH_EVENTS, BATCH_SECONDS, Parsed, StreamProjector
from projections.catchup import gc_paused
from projections.effective.maintenance import FastPaths
from projections.projector import Projector
from projections.tracking import Tracking

# How long the loop waits for a batch before it counts the topic quiet (settles, checks idleness, stops).
POLL_SECONDS = 0.5


@dataclass
class KafkaProjection:
    consumer: Consumer  # either client library behind consumers.kafka_io, no group subscription
    topic: str
    dead_letter: Callable[[Any, str], None]  # (message, reason): sends a bad message to the dead-letter topic
    publish_changes: Callable[[duckdb.DuckDBPyConnection], int]  # the changelog of the subjects a batch changed
    # Opens the read model for writing; None when stopped while waiting for it.
    open_read_model: Callable[[], duckdb.DuckDBPyConnection | None]
    should_stop: Callable[[], bool]
    progress: Callable[[Tracking], None] | None = None
    batch_events: int = BATCH_EVENTS  # the most messages one batch gathers (tests make it small)
    batch_seconds: float = BATCH_SECONDS  # how long after its first poll a batch stops gathering
    fast_paths: FastPaths = FastPaths()  # the effective sets' speed-ups on (the setting effective_fast_paths)

    def run(self, follow: bool, idle_seconds: float) -> Tracking:
        """Project until stopped (`follow`) or until the topic was quiet for `idle_seconds`. While the
        topic is quiet a follower closes the read model, so readers are never locked out for long."""
        stream = StreamProjector(self.consumer, self.topic, self.dead_letter, self.batch_events, self.batch_seconds)
        con, prefetch = None, None
        try:
            con = self.open_read_model()
            if con is None:
                return Tracking(0, "", 0)
            stream.assign(con)
            prefetch = Prefetcher(stream)  # the next batch polled and parsed while one is applied
            tracking, idle_since = Projector(con).tracking(), time.monotonic()
            while not self.should_stop():
                batch = prefetch.next(POLL_SECONDS)
                if batch is None:
                    if con is not None:  # caught up: the sets a full batch left dirty are due now
                        self._settle(con)
                    if not follow and time.monotonic() - idle_since > idle_seconds:
                        break
                    if follow and con is not None:
                        con.close()
                        con = None
                    continue
                idle_since = time.monotonic()
                con = con or self.open_read_model()
                if con is None:
                    break
                tracking = self._apply(stream, con, batch)
            if con is not None:
                self._settle(con)  # stopped after a full batch: its sets are refreshed before closing
        finally:
            if prefetch is not None:
                prefetch.close()
            if con is not None:
                con.close()
            self.consumer.close()
        return tracking

    def _settle(self, con: duckdb.DuckDBPyConnection) -> None:
        Projector(con, fast_paths=self.fast_paths).settle()  # nothing to do when the last batch settled them
        self.publish_changes(con)

    def _apply(self, stream: StreamProjector, con: duckdb.DuckDBPyConnection, batch: Parsed) -> Tracking:
        with gc_paused():  # as a store catch-up: a large batch's young objects hold no cycles
            tracking = stream.apply_parsed(Projector(con, fast_paths=self.fast_paths), batch, settle=not batch.full)
        self.publish_changes(con)
        if self.progress:
            self.progress(tracking)
        return tracking
