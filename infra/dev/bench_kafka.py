"""The Kafka figures of `toolcat bench`: relay to Kafka, Kafka → DuckDB, and command-to-visible latency
through Kafka. They use the broker the settings name, else a dev broker started for the run, and the
client library the settings name (`TOOLCAT_KAFKA_CLIENT`, `bench --kafka-client`): the relay is compared
with that library's raw producer and Kafka → DuckDB with its raw consumer, both measured in the same run.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from consumers.kafka_io import KeyValue, partitions_of
from domain.values import ToolSpec
from infra import kafka_clients
from infra.dev.broker import DevBroker
from infra.dev.measures import META, percentiles, rate
from infra.relay import Relay, RelayState
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import gc_paused
from projections.envelope import chain_all
from projections.projector import Projector

if TYPE_CHECKING:
    from infra.dev.bench import Bench


class KafkaFigures:
    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self._broker: DevBroker | None = None

    def close(self) -> None:
        if self._broker:
            self._broker.stop()

    def bootstrap(self) -> str:
        if self.bench.settings.kafka_bootstrap:
            return self.bench.settings.kafka_bootstrap
        if self._broker is None:
            self._broker = DevBroker(log=self.bench.root / "broker.log").start()
        return self._broker.bootstrap

    def kafka_settings(self, name: str) -> Settings:
        return self.bench.store.model_copy(update={"kafka_bootstrap": self.bootstrap(),
                                             "kafka_events_topic": f"bench.{name}.{os.getpid()}",
                                             "kafka_effective_topic": f"bench.{name}.effective.{os.getpid()}",
                                             "kafka_dlq_topic": f"bench.{name}.dlq.{os.getpid()}",
                                             "kafka_group_id": f"bench-{name}-{os.getpid()}",
                                             "kafka_client": self.bench.settings.kafka_client})

    def relay(self) -> None:
        self.bench.bulk_store()
        settings = self.kafka_settings("relay")
        kafka_clients.ensure_topics(settings)
        catalog = open_catalog(self.bench.store)
        payloads, position, head = [], 0, "0" * 64
        while records := catalog.history(after=position, limit=5000):
            chained = chain_all(records, position, head)
            payloads += [(e.originator_id.encode(), e.to_json()) for e in chained]
            position, head = chained[-1].position, chained[-1].hash
        # the same payloads into a scratch topic (the dead-letter one, unused here) by the library alone
        raw_rate, raw_cpu = raw_producer_rate(settings, settings.kafka_dlq_topic, payloads)
        producer = kafka_clients.producer(settings)  # connected before the clock starts, as the raw one
        relay = Relay(catalog, lambda: producer, settings.kafka_events_topic,
                      RelayState(self.bench.root / "relay.json"), page_size=5000,
                      ack_seconds=settings.kafka_ack_seconds)
        started, cpu = time.perf_counter(), time.process_time()
        published = relay.relay_available()
        relay_rate, relay_cpu = rate(published, time.perf_counter() - started), time.process_time() - cpu
        relay.close()
        catalog.close()
        self.relayed_settings = settings
        self.bench.results["relay"] = {"client": settings.kafka_client, "events": published,
                                       "relay_events_per_s": relay_rate, "raw_producer_msgs_per_s": raw_rate,
                                       "relay_vs_raw_producer": round(relay_rate / raw_rate, 3),
                                       "relay_cpu_s": round(relay_cpu, 2), "raw_producer_cpu_s": round(raw_cpu, 2)}

    def kafka_projection(self) -> None:
        from consumers.prefetch import Prefetcher
        from consumers.streaming import StreamProjector
        if not hasattr(self, "relayed_settings"):
            self.relay()
        settings = self.relayed_settings
        raw_rate, raw_cpu = raw_consumer_rate(settings, self.bench.stored)
        con = open_read_model(settings, self.bench.root / "from-kafka.duckdb")
        stream = StreamProjector(kafka_clients.consumer(settings, settings.kafka_group_id),
                                 settings.kafka_events_topic, lambda message, reason: None)
        stream.assign(con)
        projector = Projector(con)

        prefetch: list[Prefetcher] = []  # started after the first batch

        def project_batch() -> int:  # as `project --from kafka` does (consumers/runner.py)
            # The first, untimed batch is one fetch, as the raw consumer's: later ones gather several,
            # fetched and parsed in a thread while the one before is applied.
            if not prefetch:
                messages = stream.consumer.poll(1000)
                if messages:
                    with gc_paused():
                        stream.apply(projector, messages, settle=not stream.is_full(messages))
                    prefetch.append(Prefetcher(stream))
                return len(messages)
            batch = prefetch[0].next(1.0)
            if batch is None:
                projector.settle()
                return 0
            with gc_paused():
                stream.apply_parsed(projector, batch, settle=not batch.full)
            return len(batch.envelopes)
        projected, cpu = steady_rate(project_batch, self.bench.stored, finish=projector.settle)
        if prefetch:
            prefetch[0].close()
        stream.consumer.close()
        con.close()
        self.bench.results["kafka_projection"] = {
            "client": settings.kafka_client, "events": self.bench.stored, "events_per_s": projected,
            "raw_consumer_msgs_per_s": raw_rate, "kafka_to_duckdb_vs_raw_consumer": round(projected / raw_rate, 3),
            # CPU seconds of this process (the client's threads included) over the same timed stretch
            "cpu_s": round(cpu, 2), "raw_consumer_cpu_s": round(raw_cpu, 2)}

    def latency(self, per_second: int = 200, seconds: float = 5.0) -> None:
        """Commands written at `per_second` to the store, relayed and projected as `toolcat relay --follow`
        and `toolcat project --from kafka --follow` do, each in its own process (as deployed: no shared
        interpreter lock); each command's time from written to visible in the Kafka-fed read model."""
        home = Settings(home=self.bench.root / "latency")
        settings = self.kafka_settings("latency").model_copy(update={"home": home.home})
        kafka_clients.ensure_topics(settings)
        writer = open_catalog(settings)
        writer.register_tool("sv.bench.tool", ToolSpec(source="builtin", group="core", tier="default",
                                                       visibility="public"), META)
        writer.create_unit("bench", None, META)
        writer.create_agent("probe", "bench", "stateful", META)
        set_up = writer.recorder.max_notification_id() or 0
        context = multiprocessing.get_context("spawn")  # the parent holds threads and open files
        stop, reports = context.Event(), context.Queue()
        children = [context.Process(target=target, args=(settings, stop, reports), daemon=True)
                    for target in (relay_following, project_following)]
        for child in children:
            child.start()
        stages = Stages()
        collector = threading.Thread(target=stages.collect, args=(reports,), daemon=True)
        collector.start()
        stages.wait_visible(set_up, timeout=60)  # both joined and caught up with the set-up
        written: list[tuple[int, float]] = []
        interval, started = 1.0 / per_second, time.perf_counter()
        for index in range(int(per_second * seconds)):
            target = started + index * interval
            time.sleep(max(0.0, target - time.perf_counter()))
            call = writer.add_grant if index % 2 == 0 else writer.revoke_grant
            result = call("agent:probe", "sv.bench.tool", META)
            written.append((result.position, time.perf_counter()))
        stages.wait_visible(written[-1][0], timeout=30)
        stop.set()
        for child in children:
            child.join(timeout=15)
            if child.is_alive():
                child.kill()
        reports.put(None)
        collector.join(timeout=5)
        writer.close()
        samples = [(seen - done) * 1000 for position, done in written
                   if (seen := stages.first(stages.visible, position)) is not None]
        self.bench.results["latency"] = {"client": settings.kafka_client,
                                         "offered_commands_per_s": per_second, "commands": len(written),
                                         "visible": len(samples), **percentiles(samples or [float("nan")]),
                                         "stages_ms": stages.breakdown(written)}


Report = tuple[str, int, float]  # (stage, position reached, time.perf_counter(): one clock for all processes)


def relay_following(settings: Settings, stop: Any, reports: Any) -> None:
    """`toolcat relay --follow`, reporting when it read each page and when the broker took it."""
    catalog = open_catalog(settings)
    relay = Relay(catalog, lambda: kafka_clients.producer(settings), settings.kafka_events_topic,
                  RelayState(settings.home / "relay-latency.json"), page_size=settings.relay_page_size,
                  notify=lambda _message: None, ack_seconds=settings.kafka_ack_seconds,
                  progress=lambda reached: reports.put(("acknowledged", reached.position, time.perf_counter())))
    read = relay.read

    def timed_read(after: int, limit: int) -> list[Any]:
        records = read(after, limit)
        if records:
            reports.put(("read", records[-1].position, time.perf_counter()))
        return records
    relay.read = timed_read
    try:
        relay.run(True, settings.kafka_retry_seconds, settings.follow_poll_seconds, should_stop=stop.is_set)
    finally:
        relay.close()
        catalog.close()


def project_following(settings: Settings, stop: Any, reports: Any) -> None:
    """`toolcat project --from kafka --follow` (consumers/runner.py), reporting when a poll returned
    each message and when its batch was committed to the read model."""
    from consumers.runner import KafkaProjection
    consumer = kafka_clients.consumer(settings, settings.kafka_group_id)
    poll = consumer.poll

    def timed_poll(timeout_ms: int) -> list[Any]:
        messages = poll(timeout_ms)
        if messages:  # the topic is this run's own and each event is on it once: offset = position - 1
            reports.put(("polled", max(m.offset for m in messages) + 1, time.perf_counter()))
        return messages
    consumer.poll = timed_poll  # type: ignore[method-assign]
    KafkaProjection(consumer=consumer, topic=settings.kafka_events_topic, dead_letter=lambda _m, _r: None,
                    publish_changes=lambda _con: 0,
                    open_read_model=lambda: open_read_model(settings, settings.home / "latency.duckdb"),
                    should_stop=stop.is_set,
                    progress=lambda tracking: reports.put(("visible", tracking.position, time.perf_counter()))
                    ).run(follow=True, idle_seconds=0)


class Stages:
    """When each stage of command → visible reached a position: (position, perf_counter) in order."""

    def __init__(self) -> None:
        self.read: list[tuple[int, float]] = []          # the relay read it from the store
        self.acknowledged: list[tuple[int, float]] = []  # the broker acknowledged it to the relay
        self.polled: list[tuple[int, float]] = []        # the projector's consumer fetched it
        self.visible: list[tuple[int, float]] = []       # its batch was committed to the read model

    def collect(self, reports: Any) -> None:
        """Files each report of the child processes under its stage, until a None."""
        while (report := reports.get()) is not None:
            stage, position, when = report
            getattr(self, stage).append((position, when))

    def wait_visible(self, position: int, timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while (not self.visible or self.visible[-1][0] < position) and time.perf_counter() < deadline:
            time.sleep(0.02)

    @staticmethod
    def first(reached: list[tuple[int, float]], position: int) -> float | None:
        return next((when for at, when in reached if at >= position), None)

    def breakdown(self, written: list[tuple[int, float]]) -> dict[str, dict[str, float]]:
        """Median and p99 of each stage's share: written → read → acknowledged → polled → visible."""
        names = ("to_relay_read", "to_acknowledged", "to_polled", "to_visible")
        shares: dict[str, list[float]] = {name: [] for name in names}
        for position, done in written:
            times = [done, *(self.first(stage, position) for stage in
                             (self.read, self.acknowledged, self.polled, self.visible))]
            if None in times:
                continue
            for name, before, after in zip(names, times, times[1:]):
                shares[name].append((after - before) * 1000)  # type: ignore[operator]
        return {name: {k: v for k, v in percentiles(values or [float("nan")]).items() if k != "samples"}
                for name, values in shares.items()}


def steady_rate(read_batch: Callable[[], int], total: int, limit_seconds: float = 600.0,
                finish: Callable[[], None] = lambda: None) -> tuple[float, float]:
    """Messages per second after the first batch, so connecting and the first fetch are not timed; the
    same for the raw consumer and the projector. `read_batch` handles one poll, returns how many it read;
    `finish` (timed) completes the work once all are read. Returns (rate, CPU seconds of the timed part)."""
    deadline = time.perf_counter() + limit_seconds
    first = 0
    while not first and time.perf_counter() < deadline:
        first = read_batch()
    started, cpu, done = time.perf_counter(), time.process_time(), first
    while done < total and time.perf_counter() < deadline:
        done += read_batch()
    finish()
    return rate(done - first, time.perf_counter() - started), time.process_time() - cpu


def raw_consumer_rate(settings: Settings, total: int) -> tuple[float, float]:
    """The client library alone (no envelope, no projector) reading the events topic into nothing."""
    consumer = kafka_clients.consumer(settings, None)
    try:
        topic = settings.kafka_events_topic
        consumer.assign(topic, partitions_of(consumer, topic, 10), {})
        library = consumer.client
        if settings.kafka_client != "confluent":
            return steady_rate(lambda: sum(len(batch) for batch in library.poll(timeout_ms=1000).values()), total)

        def read_fetched() -> int:  # consume(n, timeout) alone would wait out its timeout for n messages
            first = library.poll(1.0)
            return 0 if first is None else 1 + len(library.consume(kafka_clients.POLL_RECORDS - 1, 0))
        return steady_rate(read_fetched, total)
    finally:
        consumer.close()


def raw_producer_rate(settings: Settings, topic: str, payloads: list[KeyValue]) -> tuple[float, float]:
    """The client library alone producing `payloads` to `topic` and waiting until the broker has them all."""
    producer = kafka_clients.producer(settings)
    library = producer.client
    try:
        started, cpu = time.perf_counter(), time.process_time()
        if settings.kafka_client == "confluent":
            for key, value in payloads:
                while True:
                    try:
                        library.produce(topic, value, key)
                        break
                    except BufferError:  # the local queue is full: let acknowledgements drain it
                        library.poll(0.05)
        else:
            for key, value in payloads:
                library.send(topic, key=key, value=value)
        library.flush(60)
        return rate(len(payloads), time.perf_counter() - started), time.process_time() - cpu
    finally:
        producer.close()
