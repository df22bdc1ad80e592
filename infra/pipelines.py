"""Handlers of the pipeline commands: project, relay, watch, dev-broker."""
from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import duckdb

from domain.errors import Unavailable
from infra import kafka_clients
from infra.broker import DevBroker
from infra.context import Context
from infra.reads import emit, progress_printer
from infra.relay import Relay, RelayLock, RelayState, chain_head
from infra.render import print_json, print_text
from infra.wiring import open_read_model
from projections.catchup import catch_up
from projections.projector import Projector, Tracking


class StopFlag:
    """Set by Ctrl-C or SIGTERM, so a following loop finishes its batch and exits cleanly."""

    def __init__(self) -> None:
        self.stopped = False
        signal.signal(signal.SIGTERM, self._stop)

    def _stop(self, *_: Any) -> None:
        self.stopped = True

    def __call__(self) -> bool:
        return self.stopped


def _changelog(ctx: Context) -> Callable[[duckdb.DuckDBPyConnection], int]:
    """Publishes changed subjects to the changelog topic when Kafka is configured."""
    if not ctx.settings.kafka_bootstrap:
        return lambda con: 0
    from consumers.changelog import publish_changes
    kafka_clients.ensure_topics(ctx.settings)
    producer = kafka_clients.producer(ctx.settings)
    return lambda con: publish_changes(con, producer, ctx.settings.kafka_effective_topic)


def _project_store(ctx: Context, stop: StopFlag) -> Tracking:
    publish = _changelog(ctx)
    progress = progress_printer(ctx)
    tracking = Tracking(0, "", 0)
    while not stop():
        # The file is opened only while there is work, so readers are never locked out for long.
        con = _open_waiting(ctx, stop)
        if con is None:
            break
        try:
            tracking = catch_up(ctx.catalog, Projector(con), progress=progress)
            publish(con)
        finally:
            con.close()
        if not ctx.args.follow:
            break
        while not stop() and (ctx.catalog.recorder.max_notification_id() or 0) <= tracking.position:
            time.sleep(ctx.settings.follow_poll_seconds)
    return tracking


def _open_waiting(ctx: Context, stop: StopFlag) -> duckdb.DuckDBPyConnection | None:
    """Open the read model for writing; a follower waits for readers that hold it, with a notice."""
    while True:
        try:
            return open_read_model(ctx.settings)
        except Unavailable as error:
            if not ctx.args.follow:
                raise
            if stop():
                return None
            sys.stderr.write(f"waiting for the read model: {error.message}\n")


def _project_kafka(ctx: Context, stop: StopFlag) -> Tracking:
    from consumers.streaming import StreamProjector, dead_letter_value
    settings = ctx.settings
    kafka_clients.ensure_topics(settings)
    dlq = kafka_clients.producer(settings)

    def dead_letters(message: Any, reason: str) -> None:
        dlq.send(settings.kafka_dlq_topic, key=message.key, value=dead_letter_value(message, reason))
        dlq.flush(timeout=10)

    stream = StreamProjector(kafka_clients.consumer(settings, settings.kafka_group_id),
                             settings.kafka_events_topic, dead_letters)
    publish = _changelog(ctx)
    progress = progress_printer(ctx)
    con: duckdb.DuckDBPyConnection | None = open_read_model(settings)
    stream.assign(con)
    tracking, idle_since = Projector(con).tracking(), time.monotonic()
    try:
        while not stop():
            messages = stream.poll()
            if not messages:
                if not ctx.args.follow and time.monotonic() - idle_since > ctx.args.idle_seconds:
                    break
                if ctx.args.follow and con is not None:
                    con.close()  # release the file while the topic is quiet
                    con = None
                continue
            idle_since = time.monotonic()
            con = con or _open_waiting(ctx, stop)
            if con is None:
                break
            tracking = stream.apply(Projector(con), messages)
            publish(con)
            if progress:
                progress(tracking)
    finally:
        if con is not None:
            con.close()
        stream.consumer.close()
    return tracking


def cmd_project(ctx: Context) -> int:
    stop = StopFlag()
    source = ctx.args.source
    try:
        tracking = _project_store(ctx, stop) if source == "store" else _project_kafka(ctx, stop)
    except KeyboardInterrupt:
        tracking = Projector(open_read_model(ctx.settings)).tracking()
    document = {"position": tracking.position, "events": tracking.events, "source": source}
    return emit(ctx, document, f"read model at position {tracking.position} ({tracking.events} events, "
                               f"from the {source})")


def cmd_relay(ctx: Context) -> int:
    settings, stop = ctx.settings, StopFlag()
    home = settings.home
    home.mkdir(parents=True, exist_ok=True)
    state = RelayState(home / f"relay-{settings.kafka_events_topic}.json")
    with RelayLock(home / f"relay-{settings.kafka_events_topic}.lock"):
        if ctx.args.from_position is not None:
            state.save(*chain_head(ctx.catalog, ctx.args.from_position))
        def connect() -> Any:
            # Topics are (re)created on every connection: a broker that comes back empty must not
            # auto-create them with its own defaults (e.g. more partitions, losing the total order).
            kafka_clients.ensure_topics(settings)
            return kafka_clients.producer(settings)

        relay = Relay(ctx.catalog, connect, settings.kafka_events_topic, state,
                      page_size=settings.relay_page_size,
                      notify=(lambda m: None) if ctx.as_json else (lambda m: sys.stderr.write(m + "\n")))
        try:
            published = relay.run(ctx.args.follow, settings.kafka_retry_seconds, settings.follow_poll_seconds,
                                  should_stop=stop)
        except KeyboardInterrupt:
            published = 0
        finally:
            relay.close()
    position, _ = state.load()
    document = {"position": position, "published": published, "topic": settings.kafka_events_topic}
    return emit(ctx, document, f"relayed {published} events to {settings.kafka_events_topic}; "
                               f"relay position {position}")


def cmd_watch(ctx: Context) -> int:
    from consumers.watch import watch
    settings, stop = ctx.settings, StopFlag()
    kafka_clients.ensure_topics(settings)
    consumer = kafka_clients.consumer(settings, None)
    seen: list[dict[str, Any]] = []

    def show(position: int, changes: list[dict[str, Any]]) -> None:
        seen.append({"position": position, "changes": changes})
        if ctx.as_json:
            return
        for change in changes:
            mark = {"added": "+", "removed": "-", "changed": "~"}[change["change"]]
            detail = (f"({change['row']['provenance']}, {change['row']['exposure']})" if "row" in change else
                      ", ".join(f"{k}: {a} → {b}" for k, (a, b) in change["fields"].items()))
            print_text(f"@{position} {mark} {change['tool_id']} {detail}")
        sys.stdout.flush()

    try:
        watch(consumer, settings.kafka_effective_topic, ctx.args.subject, show, ctx.args.timeout, stop)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    if ctx.as_json:
        print_json({"subject": ctx.args.subject, "updates": seen})
    return 0


def cmd_dev_broker(ctx: Context) -> int:
    broker = DevBroker(ctx.args.port).start()
    stop = StopFlag()
    print_text(f"Kafka-compatible dev broker (Tansu, memory storage) listening on {broker.bootstrap}\n"
               f"export TOOLCAT_KAFKA_BOOTSTRAP={broker.bootstrap}    # Ctrl-C stops it; nothing is kept")
    sys.stdout.flush()
    try:
        while not stop() and broker.process is not None and broker.process.poll() is None:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    print_text("dev broker stopped")
    return 0


def cmd_bench(ctx: Context) -> int:
    from infra.bench import FIGURES, run_bench
    if ctx.args.only and ctx.args.only not in FIGURES:
        from domain.errors import UsageError
        raise UsageError(f"--only takes one of {', '.join(FIGURES)}")
    report = run_bench(ctx.args.events, ctx.args.only, ctx.settings,
                       (lambda m: None) if ctx.as_json else (lambda m: sys.stderr.write(m + "\n")))
    if ctx.as_json:
        print_json(report)
        return 0
    import json as _json
    print_text(_json.dumps(report, indent=2))
    return 0
