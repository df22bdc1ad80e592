"""`toolcat bench --only serve`: a real `toolcat serve` on loopback, under a bounded load that stops by itself.

- command → visible through the server at 200 writes/s: each write's time from being sent to its change
  arriving on the subject's watch stream (p50, p99), and, as `write_answered`, to the write's own answer
  (the part of it spent before the follower can apply the write), and as `cpu_ms_per_write` the CPU time a
  write cost the server process and the bench's own (steadier than latency where the machine is shared);
- effective-set reads over HTTP at 500 requests/s on the 1k agents × 10k tools catalog (p50, p99);
- snapshot lag, during the same writes to a second server publishing at most every SNAPSHOT_SECONDS: from a
  write's answer until a `snapshot.duckdb` opened by a plain DuckDB client holds it (with command → visible
  measured again meanwhile).
"""
from __future__ import annotations

import gc
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import httpx
import psutil

from infra.dev.measures import percentiles, rate
from infra.dev.workload import Shape, Workload
from infra.http.address import read_address
from infra.http.auth import create_token
from infra.settings import Settings, child_environment
from infra.wiring import open_catalog
from projections.connection import connect


def _paced(per_second: float, seconds: float, threads: int, action: Any, prepare: Any = None) -> float:
    """Run `action(index)` at `per_second` in all over `threads` threads for `seconds` (given up after three
    times that when the server cannot keep up); the rate achieved. `prepare()`, when given, runs in each
    thread before the clock starts (a client connecting: a service keeps its connections open, and the
    eight handshakes at once were the worst latencies of the first tenth of a second)."""
    count, done, clock, failed = int(per_second * seconds), [], {}, []
    ready = threading.Barrier(threads, action=lambda: clock.setdefault("started", time.perf_counter()))

    def worker(offset: int) -> None:
        try:
            if prepare is not None:
                prepare()
            ready.wait()
        except threading.BrokenBarrierError:  # another thread's prepare failed: no load is run
            return
        except Exception as error:
            failed.append(error)
            ready.abort()
            return
        started = clock["started"]
        for index in range(offset, count, threads):
            if time.perf_counter() - started > 3 * seconds:
                return
            time.sleep(max(0.0, started + index / per_second - time.perf_counter()))
            action(index)
            done.append(index)
    workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failed:
        raise failed[0]
    return rate(len(done), time.perf_counter() - clock["started"])


class _ThreadClients:
    """One HTTP client of the server per load thread (as `client`, with its headers), connected by `connect`
    (_paced's `prepare`) before the clock starts; all closed at the end of the block."""

    def __init__(self, client: httpx.Client) -> None:
        self.base_url, self.headers, self._local = client.base_url, client.headers, threading.local()
        self._opened: list[httpx.Client] = []

    def __enter__(self) -> _ThreadClients:
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self._opened:
            client.close()

    def connect(self) -> None:
        self._local.client = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=60)
        self._opened.append(self._local.client)
        self._local.client.get("/v1/health").raise_for_status()

    @property
    def client(self) -> httpx.Client:
        return self._local.client


# How often the benchmarked server publishes its snapshot (the default, 30 s, is longer than the load).
SNAPSHOT_SECONDS = 1.0


class ServeFigures:
    def __init__(self, root: Path, say: Any) -> None:
        self.home, self.say = root / "serve", say

    def run(self, seconds: float = 5.0) -> dict[str, Any]:
        """Two servers on the same home, one after the other: the first as it runs by default (a snapshot
        at most every 30 s), for the reads and command → visible; the second publishing a snapshot every
        SNAPSHOT_SECONDS while a client opens it every 50 ms, for the snapshot lag. Measured together, the
        latencies of the first were those of a machine busy copying the read model every second and opening
        it twenty times a second (the client's opens alone are about a core here), not the server's."""
        shape = Shape.read_latency()
        catalog = open_catalog(Settings(home=self.home))
        Workload(catalog, shape).run()
        catalog.close()
        # The load generator's heap (building the catalog's history above, the libraries) stays: frozen, the
        # collector's full passes during the load no longer walk it. One took ≈ 30–40 ms, time the requests
        # in flight then were counted as the server's.
        gc.collect()
        gc.freeze()
        try:
            token = create_token(self.home, "bench", ["read", "write"])
            with self._server({}, token) as (client, server):
                agents = [f"agent:agent{i}" for i in range(shape.agents)]
                reads = self._reads(client, agents, seconds)
                visible = self._command_to_visible(client, server, token, seconds, "bench-visible")
            with self._server({"snapshot_seconds": str(SNAPSHOT_SECONDS)}, token) as (client, server):
                snapshotting = self._command_to_visible(client, server, token, seconds, "bench-snapshot",
                                                        _SnapshotWatch(self.home / "snapshot.duckdb"))
        finally:
            gc.unfreeze()  # frozen objects are never finalized: DuckDB's bindings would report them leaked at exit
        return {"agents": shape.agents, "command_to_visible": visible, "effective_reads": reads,
                "snapshot_lag": snapshotting.pop("snapshot_lag"),
                "command_to_visible_while_snapshotting": snapshotting}

    @contextmanager
    def _server(self, settings: dict[str, str], token: str) -> Iterator[tuple[httpx.Client, psutil.Process]]:
        """A `toolcat serve` of the home with these settings: a client of it (with `token`) once it is ready,
        and its process; stopped (SIGTERM) at the end of the block."""
        process = subprocess.Popen([sys.executable, "-m", "infra.cli", "--home", str(self.home), "serve", "--port", "0"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=child_environment(**settings))
        try:
            with httpx.Client(base_url=self._address(process), headers={"Authorization": f"Bearer {token}"},
                              timeout=60) as client:
                self._ready(client, process)
                yield client, psutil.Process(process.pid)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(120)

    def _address(self, process: subprocess.Popen[bytes]) -> str:
        deadline = time.monotonic() + 300
        while (address := read_address(self.home)) is None or address.pid != process.pid:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("toolcat serve did not start")
            time.sleep(0.1)
        return address.url

    def _ready(self, client: httpx.Client, process: subprocess.Popen[bytes]) -> None:
        """Until the server has caught up and its start-up work is done (the first integrity check, which
        walks the whole chain, has answered): the figures are of a server in its steady state. A server whose
        follower keeps failing (it retries, and is never ready) or that exited ends the bench with its
        reason, not a wait without end."""
        deadline = time.monotonic() + 300
        while client.get("/v1/ready").status_code != 200 or \
                client.get("/v1/health").json().get("integrity", {}).get("verdict") == "pending":
            exited = process.poll() is not None
            if exited or time.monotonic() > deadline:
                failure = "it exited" if exited else client.get("/v1/health").json().get(
                    "failure", "it did not catch up in 300 s")
                raise RuntimeError(f"toolcat serve never became ready: {failure}")
            time.sleep(0.2)

    def _reads(self, client: httpx.Client, agents: list[str], seconds: float, per_second: int = 500) -> dict[str, Any]:
        pick, samples = random.Random(5), []
        subjects = [pick.choice(agents) for _ in range(int(per_second * seconds))]
        clients = _ThreadClients(client)

        def read(index: int) -> None:
            started = time.perf_counter()
            clients.client.get(f"/v1/subjects/{subjects[index]}/effective").raise_for_status()
            samples.append((time.perf_counter() - started) * 1000)
        with clients:
            achieved = _paced(per_second, seconds, 8, read, clients.connect)
        return {"requests_per_s": achieved, **percentiles(samples)}

    def _command_to_visible(self, client: httpx.Client, server: psutil.Process, token: str, seconds: float,
                            unit: str, snapshots: _SnapshotWatch | None = None, per_second: int = 200
                            ) -> dict[str, Any]:
        """Grants to a new unit at `per_second` from 8 threads, each timed from being sent until the unit's
        watch stream shows it; with `snapshots`, how long after its answer a snapshot held it too. Also the
        CPU time a write cost the server and this process (the load's client, and the snapshot opener)."""
        url, subject = str(client.base_url), f"unit:{unit}"
        tools = [row["canonical_id"] for row in client.post("/v1/sql", json={
            "query": f"SELECT canonical_id FROM tools ORDER BY canonical_id LIMIT {int(per_second * seconds)}"}).json()]
        sent: dict[str, float] = {}
        answered: list[tuple[float, int]] = []  # (when, position) of each write's answer
        answer_ms: list[float] = []  # each write's time from being sent to its answer
        latencies: list[float] = []
        listening, done = threading.Event(), threading.Event()
        failed: list[str] = []

        def watch() -> None:
            try:
                follow()
            except httpx.TransportError:  # the stream ends when the server stops; what arrived is counted
                pass
            except httpx.HTTPStatusError as error:
                failed.append(str(error))

        def follow() -> None:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as watcher, \
                    watcher.stream("GET", f"/v1/subjects/{subject}/watch") as stream:
                listening.set()
                stream.raise_for_status()
                for line in stream.iter_lines():
                    if line.startswith("data:"):
                        arrived = time.perf_counter()
                        for change in json.loads(line[5:]).get("changes", []):  # caught-up: none
                            if change["tool_id"] in sent:
                                latencies.append((arrived - sent[change["tool_id"]]) * 1000)
                    if done.is_set() and len(latencies) >= len(sent):
                        return
        client.post("/v1/unit/create", json={"unit": unit}).raise_for_status()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        listening.wait(30)
        clients = _ThreadClients(client)

        def grant(index: int) -> None:
            sent[tools[index]] = started = time.perf_counter()
            answer = clients.client.post("/v1/grant/add", json={"subject": subject, "target": tools[index]})
            if answer.status_code == 200:
                answered.append((now := time.perf_counter(), answer.json()["position"]))
                answer_ms.append((now - started) * 1000)
        if snapshots is not None:
            snapshots.start()
        cpu = _CpuTimes(server)
        with clients:
            achieved = _paced(per_second, seconds, 8, grant, clients.connect)
        done.set()
        watcher.join(30)
        cpu_ms_per_write = cpu.per_event_ms(len(answered))
        if failed or not latencies:
            raise RuntimeError(f"the watch stream saw none of the writes: {failed or 'no change arrived'}")
        figures = {"writes_per_s": achieved, "seen": len(latencies), **percentiles(latencies),
                   "write_answered": percentiles(answer_ms) if answer_ms else {}, "cpu_ms_per_write": cpu_ms_per_write}
        if snapshots is not None:
            snapshots.until(max((p for _, p in answered), default=0), timeout=SNAPSHOT_SECONDS * 10 + 30)
            figures["snapshot_lag"] = {"snapshot_seconds": SNAPSHOT_SECONDS, **snapshots.lag(answered)}
        return figures


class _CpuTimes:
    """The CPU time (user and system, every thread) the server process and this one spend from now on."""

    def __init__(self, server: psutil.Process) -> None:
        self.server = server
        self._started = self._server_seconds(), time.process_time()

    def _server_seconds(self) -> float:
        times = self.server.cpu_times()
        return times.user + times.system

    def per_event_ms(self, events: int) -> dict[str, float | None]:
        server, client = self._server_seconds() - self._started[0], time.process_time() - self._started[1]
        return {"server": round(server * 1000 / events, 2) if events else None,
                "client": round(client * 1000 / events, 2) if events else None}


class _SnapshotWatch:
    """Opens the snapshot read-only every 50 ms, as an outside DuckDB client does, noting when each
    position first appeared."""

    def __init__(self, path: Path) -> None:
        self.path, self.seen = path, [(time.perf_counter(), 0)]
        self.failures, self._stop, self._target = 0, threading.Event(), 0
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            try:
                with connect(str(self.path), read_only=True) as con:
                    position = con.execute("SELECT position FROM tracking").fetchone()[0]
            except duckdb.Error:
                self.failures += 1
                continue
            if position > self.seen[-1][1]:
                self.seen.append((time.perf_counter(), position))

    def until(self, position: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.seen[-1][1] < position and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop.set()
        self._thread.join()

    def lag(self, answered: list[tuple[float, int]]) -> dict[str, Any]:
        """Per write: milliseconds from its answer until a snapshot held its position."""
        lags = [max(0.0, next(t for t, p in self.seen if p >= position) - when) * 1000
                for when, position in answered if self.seen[-1][1] >= position]
        return {"writes": len(answered), "never_seen": len(answered) - len(lags), "failed_opens": self.failures,
                **(percentiles(lags) if lags else {})}
