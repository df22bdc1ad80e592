"""`toolcat bench`: the performance figures of the design's budget, each against a baseline measured in
the same run. Timing lives here, never in tests."""
from __future__ import annotations

import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from domain.base import Meta
from domain.values import ToolSpec
from infra import kafka_clients
from infra.broker import DevBroker
from infra.relay import Relay, RelayState
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from infra.workload import Shape, Workload
from projections.catchup import catch_up
from projections.envelope import seal_all
from projections.projector import Projector, event_row
from projections.queries import current_effective
from projections.rows import insert_rows, select_rows

META = Meta(actor="bench")
FIGURES = ("append", "projection", "baselines", "relay", "kafka_projection", "latency", "read_latency", "replay")


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {"median_ms": round(statistics.median(ordered), 3),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3), "samples": len(ordered)}


class Bench:
    def __init__(self, events: int, settings: Settings, say: Callable[[str], None]) -> None:
        self.events, self.settings, self.say = events, settings, say
        self.root = Path(tempfile.mkdtemp(prefix="toolcat-bench-"))
        self.store = Settings(home=self.root / "bulk", kafka_bootstrap=settings.kafka_bootstrap)
        self._store_ready = False
        self._broker: DevBroker | None = None
        self.results: dict[str, Any] = {}

    # -- shared fixtures ------------------------------------------------------------------------------
    def bulk_store(self) -> None:
        if self._store_ready:
            return
        catalog = open_catalog(self.store)
        started = time.perf_counter()
        written = Workload(catalog, Shape.for_events(self.events)).run()
        self.results.setdefault("append", {})["bulk"] = {"events": written,
                                                          "events_per_s": rate(written, time.perf_counter() - started)}
        self.stored = written
        catalog.close()
        self._store_ready = True

    def bootstrap(self) -> str:
        if self.settings.kafka_bootstrap:
            return self.settings.kafka_bootstrap
        if self._broker is None:
            self._broker = DevBroker(log=self.root / "broker.log").start()
        return self._broker.bootstrap

    def kafka_settings(self, name: str) -> Settings:
        return self.store.model_copy(update={"kafka_bootstrap": self.bootstrap(),
                                             "kafka_events_topic": f"bench.{name}.{os.getpid()}",
                                             "kafka_effective_topic": f"bench.{name}.effective.{os.getpid()}",
                                             "kafka_dlq_topic": f"bench.{name}.dlq.{os.getpid()}",
                                             "kafka_group_id": f"bench-{name}-{os.getpid()}"})

    def close(self) -> None:
        if self._broker:
            self._broker.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- figures --------------------------------------------------------------------------------------
    def append(self) -> None:
        catalog = open_catalog(Settings(home=self.root / "commands"))
        commands = min(300, max(50, self.events // 50))
        spec = ToolSpec(source="builtin", group="core", tier="default", visibility="public")
        started, written = time.perf_counter(), 0
        for index in range(commands):
            written += len(catalog.register_tool(f"bench.tool{index}", spec, META).events)
        elapsed = time.perf_counter() - started
        self.results.setdefault("append", {})["per_command"] = {
            "commands": commands, "commands_per_s": rate(commands, elapsed), "events_per_s": rate(written, elapsed)}
        catalog.close()
        self.bulk_store()

    def projection(self) -> None:
        self.bulk_store()
        catalog, con = open_catalog(self.store), open_read_model(self.store)
        started = time.perf_counter()
        tracking = catch_up(catalog, Projector(con), page_size=20000)
        elapsed = time.perf_counter() - started
        rows = select_rows(con, "SELECT count(*) AS n, count(DISTINCT subject) AS s FROM effective_tools")[0]
        self.results["projection"] = {"events": tracking.events, "events_per_s": rate(tracking.events, elapsed),
                                      "effective_rows": rows["n"], "subjects": rows["s"], "page_size": 20000}
        con.close()
        catalog.close()

    def baselines(self) -> None:
        self.bulk_store()
        catalog = open_catalog(self.store)
        started, position, count, envelopes = time.perf_counter(), 0, 0, []
        while notifications := catalog.recorder.select_notifications(start=position + 1, limit=5000):
            count += len(notifications)
            position = notifications[-1].id
        read_rate = rate(count, time.perf_counter() - started)
        position, head = 0, "0" * 64
        while records := catalog.history(after=position, limit=5000):
            envelopes += seal_all(records, position, head)
            position, head = envelopes[-1].position, envelopes[-1].hash
        rows = [event_row(e) for e in envelopes]
        con = open_read_model(self.store, self.root / "raw-insert.duckdb")
        started = time.perf_counter()
        for start in range(0, len(rows), 20000):
            insert_rows(con, "events", rows[start:start + 20000])
        insert_rate = rate(len(rows), time.perf_counter() - started)
        con.close()
        sample = envelopes[:min(500, len(envelopes))]
        con = open_read_model(self.store, self.root / "naive.duckdb")
        projector, started = Projector(con), time.perf_counter()
        for envelope in sample:
            projector.apply([envelope])
        naive_rate = rate(len(sample), time.perf_counter() - started)
        con.close()
        catalog.close()
        projected = self.results.get("projection", {}).get("events_per_s")
        self.results["baselines"] = {
            "raw_select_notifications_per_s": read_rate, "raw_arrow_insert_rows_per_s": insert_rate,
            "naive_one_transaction_per_event_per_s": naive_rate, "naive_sample_events": len(sample),
            "projection_vs_raw_read": round(projected / read_rate, 3) if projected else None,
            "projection_vs_raw_insert": round(projected / insert_rate, 3) if projected else None,
            "projection_vs_naive": round(projected / naive_rate, 1) if projected else None}

    def relay(self) -> None:
        self.bulk_store()
        settings = self.kafka_settings("relay")
        kafka_clients.ensure_topics(settings)
        catalog = open_catalog(self.store)
        payloads, position, head = [], 0, "0" * 64
        while records := catalog.history(after=position, limit=5000):
            sealed = seal_all(records, position, head)
            payloads += [(e.originator_id.encode(), e.to_json()) for e in sealed]
            position, head = sealed[-1].position, sealed[-1].hash
        producer = kafka_clients.producer(settings)
        started = time.perf_counter()
        for key, value in payloads:
            producer.send(settings.kafka_dlq_topic, key=key, value=value)
        producer.flush()
        raw_rate = rate(len(payloads), time.perf_counter() - started)
        producer.close()
        relay = Relay(catalog, lambda: kafka_clients.producer(settings), settings.kafka_events_topic,
                      RelayState(self.root / "relay.json"), page_size=5000)
        started = time.perf_counter()
        published = relay.relay_available()
        relay_rate = rate(published, time.perf_counter() - started)
        relay.close()
        catalog.close()
        self.relayed_settings = settings
        self.results["relay"] = {"events": published, "relay_events_per_s": relay_rate,
                                 "raw_producer_msgs_per_s": raw_rate,
                                 "relay_vs_raw_producer": round(relay_rate / raw_rate, 3)}

    def kafka_projection(self) -> None:
        from consumers.streaming import StreamProjector
        if not hasattr(self, "relayed_settings"):
            self.relay()
        settings = self.relayed_settings
        con = open_read_model(settings, self.root / "from-kafka.duckdb")
        stream = StreamProjector(kafka_clients.consumer(settings, settings.kafka_group_id),
                                 settings.kafka_events_topic, lambda message, reason: None)
        stream.assign(con)
        projector, started, tracking = Projector(con), time.perf_counter(), Projector(con).tracking()
        deadline = started + 600
        while tracking.events < self.stored and time.perf_counter() < deadline:
            messages = stream.poll(timeout_ms=1000)
            if messages:
                tracking = stream.apply(projector, messages)
        elapsed = time.perf_counter() - started
        stream.consumer.close()
        con.close()
        self.results["kafka_projection"] = {"events": tracking.events, "events_per_s": rate(tracking.events, elapsed)}

    def latency(self, per_second: int = 200, seconds: float = 5.0) -> None:
        home = Settings(home=self.root / "latency")
        settings = self.kafka_settings("latency").model_copy(update={"home": home.home})
        kafka_clients.ensure_topics(settings)
        writer = open_catalog(settings)
        writer.register_tool("sv.bench.tool", ToolSpec(source="builtin", group="core", tier="default",
                                                       visibility="public"), META)
        writer.create_unit("bench", None, META)
        writer.create_agent("probe", "bench", "stateful", META)
        visible: list[tuple[int, float]] = []
        stop = threading.Event()
        threads = [threading.Thread(target=self._relay_loop, args=(settings, stop), daemon=True),
                   threading.Thread(target=self._project_loop, args=(settings, stop, visible), daemon=True)]
        for thread in threads:
            thread.start()
        time.sleep(2.0)  # let the consumer join and catch up with the set-up
        written: list[tuple[int, float]] = []
        interval, started = 1.0 / per_second, time.perf_counter()
        for index in range(int(per_second * seconds)):
            target = started + index * interval
            time.sleep(max(0.0, target - time.perf_counter()))
            call = writer.add_grant if index % 2 == 0 else writer.revoke_grant
            result = call("agent:probe", "sv.bench.tool", META)
            written.append((result.position, time.perf_counter()))
        deadline = time.perf_counter() + 30
        while (not visible or visible[-1][0] < written[-1][0]) and time.perf_counter() < deadline:
            time.sleep(0.05)
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        writer.close()
        samples = []
        for position, done in written:
            seen = next((when for reached, when in visible if reached >= position), None)
            if seen is not None:
                samples.append((seen - done) * 1000)
        self.results["latency"] = {"offered_commands_per_s": per_second, "commands": len(written),
                                   "visible": len(samples), **percentiles(samples or [float("nan")])}

    def _relay_loop(self, settings: Settings, stop: threading.Event) -> None:
        catalog = open_catalog(settings)
        relay = Relay(catalog, lambda: kafka_clients.producer(settings), settings.kafka_events_topic,
                      RelayState(settings.home / "relay-latency.json"), page_size=1000)
        while not stop.is_set():
            if not relay.relay_available():
                time.sleep(0.002)
        relay.close()
        catalog.close()

    def _project_loop(self, settings: Settings, stop: threading.Event, visible: list[tuple[int, float]]) -> None:
        from consumers.streaming import StreamProjector
        con = open_read_model(settings, settings.home / "latency.duckdb")
        stream = StreamProjector(kafka_clients.consumer(settings, settings.kafka_group_id),
                                 settings.kafka_events_topic, lambda message, reason: None)
        stream.assign(con)
        projector = Projector(con)
        while not stop.is_set():
            messages = stream.poll(timeout_ms=20)
            if messages:
                tracking = stream.apply(projector, messages)
                visible.append((tracking.position, time.perf_counter()))
        stream.consumer.close()
        con.close()

    def read_latency(self, reads: int = 2000) -> None:
        settings = Settings(home=self.root / "read-latency")
        catalog = open_catalog(settings)
        shape = Shape.read_latency()
        Workload(catalog, shape).run()
        con = open_read_model(settings)
        catch_up(catalog, Projector(con), page_size=20000)
        agents = [f"agent{i}" for i in range(shape.agents)]
        pick, samples = random.Random(3), []
        for _ in range(reads):
            agent = pick.choice(agents)
            started = time.perf_counter()
            current_effective(con, f"agent:{agent}")  # what `toolcat effective` serves
            samples.append((time.perf_counter() - started) * 1000)
        rows = select_rows(con, "SELECT count(*) AS n FROM effective_tools WHERE subject_kind = 'agent'")[0]["n"]
        con.close()
        catalog.close()
        self.results["read_latency"] = {"agents": shape.agents,
                                        "tools": shape.connectors * shape.tools_per_connector + shape.platform_tools,
                                        "avg_tools_per_agent": round(rows / shape.agents, 1), **percentiles(samples)}

    def replay(self) -> None:
        self.bulk_store()
        if "projection" not in self.results:
            self.projection()
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "infra.cli", "audit", "replay", "--home", str(self.store.home),
                               "--json"], capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        answer = json.loads(done.stdout) if done.stdout.strip() else {"error": done.stderr[-500:]}
        self.results["replay"] = {"events": self.stored, "seconds": round(elapsed, 2),
                                  "peak_rss_mib": round(peak_kib / 1024, 1), "matches": answer.get("matches"),
                                  "events_per_s": rate(self.stored, elapsed)}


def budget(results: dict[str, Any]) -> dict[str, Any]:
    """Each figure of the design's budget next to its target."""
    def get(*path: str) -> Any:
        value: Any = results
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    checks = {
        "catch_up_projection_events_per_s >= 100000": get("projection", "events_per_s"),
        "relay_vs_raw_producer >= 0.8": get("relay", "relay_vs_raw_producer"),
        "kafka_to_duckdb_events_per_s >= 50000": get("kafka_projection", "events_per_s"),
        "command_to_visible_p99_ms <= 250": get("latency", "p99_ms"),
        "replay_1m_seconds <= 30 (scaled)": get("replay", "seconds"),
        "replay_peak_rss_mib <= 1024": get("replay", "peak_rss_mib"),
        "effective_read_p99_ms <= 5": get("read_latency", "p99_ms"),
    }
    targets = {"catch_up_projection_events_per_s >= 100000": lambda v: v >= 100000,
               "relay_vs_raw_producer >= 0.8": lambda v: v >= 0.8,
               "kafka_to_duckdb_events_per_s >= 50000": lambda v: v >= 50000,
               "command_to_visible_p99_ms <= 250": lambda v: v <= 250,
               "replay_1m_seconds <= 30 (scaled)": lambda v: v * 1_000_000 / max(1, get("replay", "events")) <= 30,
               "replay_peak_rss_mib <= 1024": lambda v: v <= 1024,
               "effective_read_p99_ms <= 5": lambda v: v <= 5}
    return {name: {"value": value, "met": None if value is None else bool(targets[name](value))}
            for name, value in checks.items()}


def run_bench(events: int, only: str | None, settings: Settings, say: Callable[[str], None]) -> dict[str, Any]:
    bench = Bench(events, settings, say)
    try:
        for name in FIGURES if only is None else (only,):
            say(f"bench: {name}…")
            started = time.perf_counter()
            getattr(bench, name)()
            say(f"bench: {name} done in {time.perf_counter() - started:.1f}s")
    finally:
        bench.close()
    return {"machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                        "platform": platform.platform()},
            "events": events, "figures": bench.results, "budget": budget(bench.results)}
