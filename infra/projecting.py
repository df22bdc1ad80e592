"""Keeping a read model up to date, from the store or from Kafka: the loops behind `toolcat project` and
the follower of `toolcat serve` (which composes the same store pass and wait with the connection it owns).

The store path catches up in process; the Kafka path is `consumers.runner.KafkaProjection`, given the
clients built here. Either way each batch's changed subjects go to the changelog topic when Kafka is
configured, and `project --follow` holds the DuckDB file only while it has a batch to apply.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable

import duckdb

from domain.catalog import Catalog
from domain.errors import Unavailable
from infra import kafka_clients
from infra.settings import Settings
from infra.wiring import open_read_model
from projections.catchup import catch_up
from projections.effective.maintenance import FastPaths
from projections.projector import Projector
from projections.tracking import Tracking

Progress = Callable[[Tracking], None] | None
ShouldStop = Callable[[], bool]


def changelog_publisher(settings: Settings) -> Callable[[duckdb.DuckDBPyConnection], int]:
    """Publishes changed subjects to the changelog topic when Kafka is configured (else does nothing)."""
    if not settings.kafka_bootstrap:
        return lambda con: 0
    from consumers.changelog import publish_changes
    kafka_clients.ensure_topics(settings)
    producer = kafka_clients.producer(settings)
    return lambda con: publish_changes(con, producer, settings.kafka_effective_topic)


def open_waiting(settings: Settings, follow: bool, should_stop: ShouldStop) -> duckdb.DuckDBPyConnection | None:
    """Open the read model for writing; a follower waits for readers that hold it, with a notice (None:
    stopped while waiting)."""
    while True:
        try:
            return open_read_model(settings)
        except Unavailable as error:
            if not follow:
                raise
            if should_stop():
                return None
            sys.stderr.write(f"waiting for the read model: {error.message}\n")


def projector_of(con: duckdb.DuckDBPyConnection, settings: Settings) -> Projector:
    """The projector of a read model's connection, with the effective sets' fast paths the settings turn on."""
    return Projector(con, fast_paths=FastPaths.named(settings.effective_fast_paths))


def store_pass(catalog: Catalog, con: duckdb.DuckDBPyConnection, publish: Callable[[duckdb.DuckDBPyConnection], int],
               progress: Progress = None, projector: Projector | None = None, head: int | None = None) -> Tracking:
    """One pass of a store follower: apply the stored events not yet applied, up to the store's head as the
    pass starts (a pass ends even while writers keep adding), then publish the changes. `projector`: the
    one of `con` that the caller keeps from pass to pass (it remembers the tracking row: a statement less);
    `head`: the store's head as the caller just read it (wait_for_events)."""
    if head is None:
        head = catalog.recorder.max_notification_id() or 0
    tracking = catch_up(catalog, projector or Projector(con), until=head, progress=progress)
    publish(con)
    return tracking


def wait_for_events(catalog: Catalog, position: int, should_stop: ShouldStop, pause: Callable[[], None]) -> int:
    """Until the store holds events after `position` (or stopped), `pause` between looks; the store's head
    at the last look. A server's follower takes it as its next pass's (one read of the store less a pass: a
    transaction of the store, three waits for the GIL on a busy server)."""
    while (head := catalog.recorder.max_notification_id() or 0) <= position and not should_stop():
        pause()
    return head


def project_store(settings: Settings, catalog: Catalog, follow: bool, should_stop: ShouldStop,
                  progress: Progress = None) -> Tracking:
    publish = changelog_publisher(settings)
    tracking = Tracking(0, "", 0)
    while not should_stop():
        # The file is opened only while there is work, so readers are never locked out for long.
        con = open_waiting(settings, follow, should_stop)
        if con is None:
            break
        try:
            tracking = store_pass(catalog, con, publish, progress, projector_of(con, settings))
        finally:
            con.close()
        if not follow:
            break
        wait_for_events(catalog, tracking.position, should_stop, lambda: time.sleep(settings.follow_poll_seconds))
    return tracking


def project_kafka(settings: Settings, follow: bool, idle_seconds: float, should_stop: ShouldStop,
                  progress: Progress = None,
                  open_model: Callable[[], duckdb.DuckDBPyConnection | None] | None = None) -> Tracking:
    """`open_model` opens the read model for each stretch of batches (default: the file, waiting for
    readers that hold it; a server gives a new cursor of the connection it owns)."""
    from consumers.runner import KafkaProjection
    from consumers.streaming import dead_letter_to
    kafka_clients.ensure_topics(settings)
    dead_letters = kafka_clients.producer(settings)
    return KafkaProjection(
        consumer=kafka_clients.consumer(settings, settings.kafka_group_id),
        topic=settings.kafka_events_topic,
        dead_letter=dead_letter_to(dead_letters, settings.kafka_dlq_topic),
        publish_changes=changelog_publisher(settings),
        open_read_model=open_model or (lambda: open_waiting(settings, follow, should_stop)),
        should_stop=should_stop, progress=progress, batch_seconds=settings.follow_batch_seconds,
        fast_paths=FastPaths.named(settings.effective_fast_paths),
    ).run(follow, idle_seconds)
