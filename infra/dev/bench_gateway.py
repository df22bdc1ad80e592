"""`toolcat bench --only gateway`: what the MCP gateway adds to a call, each figure beside its baseline from
the same run. The upstream is the in-repo echo server (infra/dev/echo_mcp.py, the official SDK over
streamable HTTP); every client is the official SDK's client, as an agent's would be.

- call latency: one session calls `echo` straight at the upstream and `mcp.echo.echo` through the gateway,
  turn about (so both paths share the machine's moments), p50 and p99 of each and what the gateway adds;
- throughput: 8 sessions calling as fast as they are answered for a few seconds, direct then through the
  gateway: calls/s of each and their ratio;
- tools/list of a 1,000-tool set (every page), beside the upstream listing the same 1,000 tools;
- command → `notifications/tools/list_changed` at 200 writes/s: grants of new tools to an agent whose
  session listens, each timed from the write being sent until the first list_changed received after it
  whose following tools/list shows the tool.

The call figures are measured first through the reference, the thinnest proxy on the same SDK with no policy
(infra/dev/thin_proxy.py, `reference_proxy`): what any proxy on this SDK costs, on the same machine and run.
The gateway figures are measured through `toolcat serve` (`/mcp`) and, when a broker is at hand
(TOOLCAT_KAFKA_BOOTSTRAP), through `toolcat gateway --from kafka` fed by that server's changelog."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from infra.dev.demo_gateway import stop
from infra.dev.measures import percentiles, rate
from projections.catchup import gc_paused

SESSIONS = 8
# Threads writing the list_changed bench's grants, each waiting for its answer before its next: with 8, the
# writes/s achieved were 8 over a write's answer time (≈ 60 ms under load: 58–126 of the 200 asked). The
# server commits the writes that queued together (infra/http/writer.py), so more writers reach the rate.
WRITERS = 32


@dataclass
class Sizes:
    """How much each figure measures: the bench's defaults, and smaller ones for the suite."""

    tools: int = 1000
    calls: int = 1000
    lists: int = 200
    seconds: float = 5.0
    writes_per_s: int = 200

    @classmethod
    def small(cls) -> Sizes:
        return cls(tools=30, calls=20, lists=5, seconds=0.5, writes_per_s=20)


@dataclass
class Endpoint:
    """An MCP endpoint the bench's clients connect to, and the name its echo tool has there."""

    url: str
    tool: str
    headers: dict[str, str] = field(default_factory=dict)


@contextmanager
def echo_upstream(tools: int, pids: list[int] | None = None) -> Iterator[str]:
    """The echo server with `tools` tools, in its own process; its URL while the block runs (its process ID
    appended to `pids` when given)."""
    with mcp_process(["infra.dev.echo_mcp", "--tools", str(tools)], "the echo MCP server", pids) as url:
        yield url


@contextmanager
def thin_proxy_of(upstream: str, pids: list[int] | None = None) -> Iterator[str]:
    """The thinnest proxy on the SDK (infra/dev/thin_proxy.py) in front of `upstream`, as echo_upstream."""
    with mcp_process(["infra.dev.thin_proxy", "--upstream", upstream], "the thin MCP proxy", pids) as url:
        yield url


@contextmanager
def mcp_process(module_args: list[str], what: str, pids: list[int] | None) -> Iterator[str]:
    """`python -m MODULE ARGS --port 0`, an MCP server that prints `listening on URL` once it accepts."""
    process = subprocess.Popen([sys.executable, "-m", *module_args, "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if pids is not None:
        pids.append(process.pid)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"{what} did not start (exit {process.poll()})")
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(30)


@asynccontextmanager
async def mcp_client(endpoint: Endpoint, on_list_changed: Callable[[], None] | None = None) -> AsyncIterator[Any]:
    """An initialized SDK client session on `endpoint`; `on_list_changed()` is called, as it arrives, for
    each `notifications/tools/list_changed`."""
    import anyio
    import httpx2  # the SDK's HTTP client (a dependency of mcp)
    from mcp import types
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def heard(message: Any) -> None:
        if on_list_changed is not None and isinstance(message, types.ToolListChangedNotification):
            on_list_changed()
        await anyio.lowlevel.checkpoint()
    async with httpx2.AsyncClient(headers=endpoint.headers, timeout=httpx2.Timeout(60)) as http, \
            streamable_http_client(endpoint.url, http_client=http) as (read, write), \
            ClientSession(read, write, message_handler=heard) as session:
        await session.initialize()
        yield session


async def listed(session: Any) -> list[Any]:
    """Every tool the session's server lists, page after page."""
    tools, cursor = [], None
    while True:
        from mcp import types
        answer = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += answer.tools
        cursor = answer.next_cursor
        if not cursor:
            return tools


async def call(session: Any, tool: str) -> None:
    answer = await session.call_tool(tool, {"text": "ping"})
    if answer.is_error:
        raise RuntimeError(f"the call of {tool} failed: {answer.content}")


async def call_latencies(paths: dict[str, Endpoint], calls: int) -> dict[str, list[float]]:
    """`calls` calls on each path, one session per path, turn about; the milliseconds of each."""
    from contextlib import AsyncExitStack
    samples: dict[str, list[float]] = {name: [] for name in paths}
    async with AsyncExitStack() as stack:
        sessions = {name: await stack.enter_async_context(mcp_client(path)) for name, path in paths.items()}
        for name, path in paths.items():  # a first call each, outside the samples (pools and caches warm)
            await call(sessions[name], path.tool)
        for _ in range(calls):
            for name, path in paths.items():
                started = time.perf_counter()
                await call(sessions[name], path.tool)
                samples[name].append((time.perf_counter() - started) * 1000)
    return samples


async def throughput(path: Endpoint, seconds: float, sessions: int = SESSIONS) -> float:
    """Calls/s of `sessions` sessions, each calling as soon as its last call was answered, for `seconds`."""
    import anyio
    from contextlib import AsyncExitStack
    done = [0]
    async with AsyncExitStack() as stack:
        opened = [await stack.enter_async_context(mcp_client(path)) for _ in range(sessions)]
        for session in opened:
            await call(session, path.tool)
        started = time.perf_counter()
        until = started + seconds

        async def caller(session: Any) -> None:
            while time.perf_counter() < until:
                await call(session, path.tool)
                done[0] += 1
        async with anyio.create_task_group() as tasks:
            for session in opened:
                tasks.start_soon(caller, session)
        return rate(done[0], time.perf_counter() - started)


async def list_latencies(path: Endpoint, lists: int) -> tuple[int, list[float]]:
    """(the tools listed, the milliseconds of each of `lists` complete listings)."""
    async with mcp_client(path) as session:
        count = len(await listed(session))
        samples = []
        for _ in range(lists):
            started = time.perf_counter()
            await listed(session)
            samples.append((time.perf_counter() - started) * 1000)
    return count, samples


class LeanClient:
    """A bare MCP client over streamable HTTP: JSON-RPC posted with httpx, the answer's SSE body read whole
    and parsed with orjson, nothing validated. It times the server's tools/list: the SDK's client, given a
    1,000-tool listing, parses the message, serializes it again and validates it into models (≈ 0.2 s of
    its CPU per listing here, cProfile), which is the client's cost, not the server's."""

    def __init__(self, endpoint: Endpoint) -> None:
        from mcp_types import LATEST_PROTOCOL_VERSION
        self.http = httpx.Client(headers={**endpoint.headers, "Accept": "application/json, text/event-stream"},
                                 timeout=60)
        self.url, self._id = endpoint.url, 0
        initialized = self.post("initialize", {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
                                               "clientInfo": {"name": "toolcat-bench", "version": "1"}})
        self.http.headers["mcp-protocol-version"] = initialized["protocolVersion"]  # the one agreed
        self.http.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}).raise_for_status()

    def post(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        import orjson
        self._id += 1
        answer = self.http.post(self.url, json={"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        answer.raise_for_status()
        if "mcp-session-id" in answer.headers:
            self.http.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        body = answer.content
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            body = next(line[5:] for line in reversed(body.splitlines()) if line.startswith(b"data:"))
        message = orjson.loads(body)
        if "error" in message:
            raise RuntimeError(f"{method} failed: {message['error']}")
        return message["result"]  # type: ignore[no-any-return]

    def listed(self) -> int:
        """How many tools the server lists, page after page."""
        return len(self.names())

    def names(self) -> list[str]:
        """The names of the tools the server lists, page after page."""
        names: list[str] = []
        params: dict[str, Any] = {}
        while True:
            page = self.post("tools/list", params)
            names += [tool["name"] for tool in page["tools"]]
            if not page.get("nextCursor"):
                return names
            params = {"cursor": page["nextCursor"]}

    def close(self) -> None:
        self.http.close()


def lean_list_latencies(path: Endpoint, lists: int) -> tuple[int, list[float]]:
    """The lean client's listings, timed with this process's collector off: its own pauses (16–32 ms on the
    bench's heap, a few a run) were counted as the server's, and set the p99 of direct and gateway alike."""
    client = LeanClient(path)
    try:
        count, samples = client.listed(), []
        with gc_paused():
            for _ in range(lists):
                started = time.perf_counter()
                client.listed()
                samples.append((time.perf_counter() - started) * 1000)
        return count, samples
    finally:
        client.close()


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, every thread) process `pid` has used so far."""
    import psutil
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _cpu_ms_per_call(pid: int | None, run: Callable[[], float], seconds: float) -> tuple[float, float | None]:
    """(calls/s of `run()`, the CPU milliseconds process `pid` spent per call meanwhile)."""
    before = cpu_seconds(pid) if pid else 0.0
    calls_per_s = run()
    if not pid or not calls_per_s:
        return calls_per_s, None
    return calls_per_s, round((cpu_seconds(pid) - before) * 1000 / (calls_per_s * seconds), 2)


def call_figures(direct: Endpoint, gateway: Endpoint, sizes: Sizes, gateway_pid: int | None = None,
                 upstream_pid: int | None = None, via: str = "gateway") -> dict[str, Any]:
    """Latency and throughput through the gateway, each beside the direct path's of the same run; with the
    processes' IDs, the CPU time the gateway spent per call of the throughput run beside the echo server's
    per direct call (steadier than latency on a shared machine; a call through the gateway is one server's
    work and one client's). `via` names the middle path in the figures (the reference proxy's: `proxy`)."""
    import anyio
    samples = anyio.run(call_latencies, {"direct": direct, via: gateway}, sizes.calls)
    direct_calls = percentiles(samples["direct"])
    gateway_calls = percentiles(samples[via])
    direct_rate, upstream_cpu_ms = _cpu_ms_per_call(upstream_pid, lambda: anyio.run(throughput, direct, sizes.seconds),
                                                    sizes.seconds)
    gateway_rate, cpu_ms = _cpu_ms_per_call(gateway_pid, lambda: anyio.run(throughput, gateway, sizes.seconds),
                                            sizes.seconds)
    return {
        "call_latency": {"direct": direct_calls, via: gateway_calls,
                         "added_median_ms": round(gateway_calls["median_ms"] - direct_calls["median_ms"], 3),
                         "added_p99_ms": round(gateway_calls["p99_ms"] - direct_calls["p99_ms"], 3)},
        "throughput": {"sessions": SESSIONS, "seconds": sizes.seconds, "direct_calls_per_s": direct_rate,
                       f"{via}_calls_per_s": gateway_rate,
                       "vs_direct": round(gateway_rate / direct_rate, 3) if direct_rate else None,
                       f"{via}_cpu_ms_per_call": cpu_ms, "upstream_cpu_ms_per_direct_call": upstream_cpu_ms}}


def list_figures(direct: Endpoint, gateway: Endpoint, sizes: Sizes, pids: dict[str, int | None] | None = None
                 ) -> dict[str, Any]:
    """tools/list of the whole set, direct and through the gateway: with the lean client (the servers'
    time: the budget's figure) and with the SDK's client (what an agent on the SDK waits, its own parsing
    and validation included). With the processes' IDs (`pids`, by path), `server_cpu_ms`: the CPU time the
    server spent per complete listing of the lean client's (its own share of the time, on a machine whose
    other processes, the client's included, take the cores meanwhile)."""
    import anyio
    figures: dict[str, Any] = {}
    for name, path in (("direct", direct), ("gateway", gateway)):
        pid = (pids or {}).get(name)
        before = cpu_seconds(pid) if pid else 0.0
        count, lean = lean_list_latencies(path, sizes.lists)
        server_cpu_ms = round((cpu_seconds(pid) - before) * 1000 / (len(lean) + 1), 2) if pid else None
        _, sdk = anyio.run(list_latencies, path, max(3, sizes.lists // 10))
        figures[name] = {"tools": count, **percentiles(lean), "server_cpu_ms": server_cpu_ms,
                         "sdk_client": percentiles(sdk)}
    return {"tools_list": figures}


async def list_changed_latencies(path: Endpoint, grant: Callable[[str], None], tools: list[str],
                                 per_second: int, seconds: float, connect: Callable[[], None] | None = None
                                 ) -> dict[str, Any]:
    """Grants of `tools` to the session's subject at `per_second` (WRITERS threads calling `grant(tool)`),
    each timed from being sent until the first `list_changed` received after it whose following tools/list
    shows the tool. (A list started after a notice may show a write whose own notice is still on its way:
    that write is counted from the earlier notice, at most one listing early.) Beside it, as its baseline, each
    write's time to its own answer (`write_answered`): the part spent before the server could tell anyone.
    `connect()`, when given, runs in each writing thread before the clock starts (its client made then).
    The listings that attribute the notices are the lean client's, in a thread: the SDK's client spends up
    to ≈ 0.2 s of this process's CPU on a listing (LeanClient), in the loop that hears the notices, on the
    two cores the servers measured share."""
    import anyio
    from infra.dev.bench_serve import _paced
    arrivals: list[float] = []
    sent: dict[str, float] = {}
    latencies: list[float] = []
    answered: list[float] = []
    with contextlib.closing(LeanClient(path)) as lean:
        async with mcp_client(path, lambda: arrivals.append(time.perf_counter())):
            attributed = set(await anyio.to_thread.run_sync(lean.names))
            finished: list[float] = []

            def writes() -> None:
                def one(index: int) -> None:
                    sent[tools[index]] = started = time.perf_counter()
                    grant(tools[index])
                    answered.append((time.perf_counter() - started) * 1000)
                _paced(per_second, seconds, WRITERS, one, connect)
                finished.append(time.perf_counter())

            async def follow() -> None:
                followed = 0
                while not finished or len(attributed & sent.keys()) < len(sent):
                    if finished and time.perf_counter() - finished[0] > 30:
                        return
                    if len(arrivals) == followed:
                        await anyio.sleep(0.001)
                        continue
                    followed = len(arrivals)
                    notices = arrivals[:followed]
                    for name in await anyio.to_thread.run_sync(lean.names):
                        if name in attributed or name not in sent:
                            continue
                        notice = next((at for at in notices if at >= sent[name]), None)
                        if notice is not None:  # else its own notice is yet to come: counted from that one
                            attributed.add(name)
                            latencies.append((notice - sent[name]) * 1000)
            async with anyio.create_task_group() as group:
                group.start_soon(follow)
                await anyio.to_thread.run_sync(writes)
    return {"writes": len(sent), "seen": len(latencies), "notices": len(arrivals),
            "writes_per_s": rate(len(sent), finished[0] - min(sent.values())) if sent else 0.0,
            **(percentiles(latencies) if latencies else {}),
            "write_answered": percentiles(answered) if answered else {}}


def toolcat_command(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    """`toolcat ARGS --json` on `home`, in a child process; its JSON answer (it must succeed)."""
    from infra.settings import child_environment
    done = subprocess.run([sys.executable, "-m", "infra.cli", "--home", str(home), *args, "--json"],
                          capture_output=True, text=True, env=child_environment(**(env or {})))
    if done.returncode != 0:
        raise RuntimeError(f"toolcat {' '.join(args)} failed ({done.returncode}): {done.stderr[-1000:]}")
    return json.loads(done.stdout) if done.stdout.strip() else None


def given_a_catalog(home: Path, upstream: str, env: dict[str, str] | None = None) -> list[str]:
    """The echo server synced into `home`'s catalog, agent:bench granted all its tools, agent:listener none
    yet; the canonical IDs of the echo tools other than `echo` (what the list_changed writes grant)."""
    for args in (("mcp", "server", "add", "echo", "--url", upstream), ("mcp", "sync", "echo", "--apply"),
                 ("unit", "create", "bench"), ("agent", "create", "bench", "--unit", "bench"),
                 ("agent", "create", "listener", "--unit", "bench"), ("grant", "add", "agent:bench", "mcp.echo.*"),
                 ("grant", "add", "agent:listener", "mcp.echo.echo")):
        toolcat_command(home, *args, env=env)
    return [row["canonical_id"] for row in toolcat_command(
        home, "sql", "SELECT canonical_id FROM tools WHERE canonical_id LIKE 'mcp.echo.echo-%' ORDER BY 1", env=env)]


@contextmanager
def child(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A toolcat child process (its stderr to `log`), stopped with SIGTERM at the end of the block."""
    from infra.settings import child_environment
    with open(log, "ab") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "infra.cli", *args], stdout=subprocess.DEVNULL,
                                   stderr=stderr, env=child_environment(**env))
    try:
        yield process
    finally:
        stop(process)


def wait_until(ready: Callable[[], bool], process: subprocess.Popen[bytes], what: str, log: Path,
               seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(httpx.TransportError):
            if ready():
                return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: {log.read_text()[-2000:] if log.exists() else ''}")
        time.sleep(0.2)


@contextmanager
def served(home: Path, env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """`toolcat serve` on `home`: its base URL once it has caught up, and its process ID."""
    from infra.http.address import read_address
    log = home.parent / f"{home.name}-serve.log"
    with child(["--home", str(home), "serve", "--port", "0"], env, log) as process:
        def ready() -> bool:
            address = read_address(home)
            return address is not None and address.pid == process.pid and \
                httpx.get(address.url + "/v1/ready").status_code == 200
        wait_until(ready, process, "toolcat serve", log)
        address = read_address(home)
        assert address is not None
        yield address.url, process.pid


class GatewayFigures:
    def __init__(self, root: Path, say: Callable[[str], None], sizes: Sizes | None = None,
                 kafka_bootstrap: str | None = None) -> None:
        self.root, self.say, self.sizes = root / "gateway", say, sizes or Sizes()
        self.kafka_bootstrap = kafka_bootstrap

    def run(self) -> dict[str, Any]:
        self.root.mkdir(parents=True, exist_ok=True)
        self.upstream_pids: list[int] = []
        with echo_upstream(self.sizes.tools, self.upstream_pids) as url:
            direct = Endpoint(url, "echo")
            results: dict[str, Any] = {"upstream_tools": self.sizes.tools, "sessions": SESSIONS}
            self.say("bench: the reference, the thinnest proxy on the same SDK…")
            with thin_proxy_of(url, self.upstream_pids) as proxy_url:
                results["reference_proxy"] = call_figures(direct, Endpoint(proxy_url, "echo"), self.sizes,
                                                          self.upstream_pids[-1], self.upstream_pids[0], via="proxy")
            self.say("bench: gateway through toolcat serve (/mcp)…")
            results["serve"] = self._through_serve(direct)
            self.say("bench: gateway through gateway --from kafka…")
            results["kafka"] = self._through_kafka(direct)
        return results

    def _through_serve(self, direct: Endpoint) -> dict[str, Any]:
        from infra.http.auth import create_token
        home = self.root / "serve"
        tools = given_a_catalog(home, direct.url)
        bench, listener = (create_token(home, name, ["call"], subject=f"agent:{name}") for name in ("bench", "listener"))
        admin = create_token(home, "admin", ["read", "write"])
        with served(home, {}) as (base, pid):
            return self._figures(direct, base + "/mcp", bench, listener, base, admin, tools, pid, pid)

    def _through_kafka(self, direct: Endpoint) -> dict[str, Any]:
        """The same figures through `toolcat gateway --from kafka`: a `toolcat serve` with Kafka on publishes
        the changelog, `toolcat relay --follow` the events, and the gateway, in a home of its own holding
        only its tokens, is fed by both."""
        from infra.dev.broker import DevBroker, free_port
        from infra.http.auth import create_token
        broker = None if self.kafka_bootstrap else DevBroker(log=self.root / "broker.log").start()
        try:
            suffix = f"{os.getpid()}"
            env = {"kafka_bootstrap": self.kafka_bootstrap or broker.bootstrap,  # type: ignore[union-attr]
                   "kafka_events_topic": f"bench.gateway.{suffix}",
                   "kafka_effective_topic": f"bench.gateway.effective.{suffix}",
                   "kafka_dlq_topic": f"bench.gateway.dlq.{suffix}", "kafka_group_id": f"bench-gateway-{suffix}"}
            home, gateway_home = self.root / "kafka", self.root / "kafka-gateway"
            tools = given_a_catalog(home, direct.url, env)
            toolcat_command(home, "relay", env=env)
            toolcat_command(home, "project", env=env)  # the changelog of every subject so far
            admin = create_token(home, "admin", ["read", "write"])
            bench, listener = (create_token(gateway_home, name, ["call"], subject=f"agent:{name}")
                               for name in ("bench", "listener"))
            port = free_port()
            gateway_log = self.root / "kafka-gateway.log"
            with served(home, env) as (base, server_pid), \
                    child(["--home", str(home), "relay", "--follow"], env, self.root / "kafka-relay.log"), \
                    child(["--home", str(gateway_home), "gateway", "--from", "kafka", "--port", str(port)], env,
                          gateway_log) as gateway:
                gateway_url = f"http://127.0.0.1:{port}"
                wait_until(lambda: httpx.get(gateway_url + "/v1/health").status_code == 200, gateway,
                           "toolcat gateway --from kafka", gateway_log)
                return self._figures(direct, gateway_url + "/mcp", bench, listener, base, admin, tools, gateway.pid,
                                     server_pid)
        finally:
            if broker is not None:
                broker.stop()

    def _figures(self, direct: Endpoint, mcp_url: str, bench: str, listener: str, base: str, admin: str,
                 tools: list[str], gateway_pid: int, server_pid: int) -> dict[str, Any]:
        """Each figure of the issue's budget through the gateway at `mcp_url` (its process `gateway_pid`),
        beside the direct path's; list_changed from grants written to the server at `base` (its process
        `server_pid`, the gateway's own in `toolcat serve`), with the CPU each process spent per write
        meanwhile (`cpu_ms_per_write`: steadier than the times on a shared machine)."""
        import anyio
        sizes = self.sizes
        gateway = Endpoint(mcp_url, "mcp.echo.echo", {"Authorization": f"Bearer {bench}"})
        figures = {**call_figures(direct, gateway, sizes, gateway_pid, self.upstream_pids[0]),
                   **list_figures(direct, gateway, sizes, {"direct": self.upstream_pids[0], "gateway": gateway_pid})}
        # One client per writing thread, connected before the clock starts (_paced's `prepare`): made inside
        # the timed writes, the 32 clients (an SSL context each, ≈ 19 ms of this process's CPU) were the first
        # writes' answers (≈ 0.6 s) and the p99 of write_answered and of list_changed.
        from infra.dev.bench_serve import _ThreadClients
        template = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {admin}"})

        def grant(tool: str) -> None:
            clients.client.post("/v1/grant/add", json={"subject": "agent:listener", "target": tool}).raise_for_status()
        # as many writes as the rate and time ask, and the echo server has tools to grant
        seconds = min(sizes.seconds, len(tools) / sizes.writes_per_s)
        processes = {"server": server_pid, **({"gateway": gateway_pid} if gateway_pid != server_pid else {})}
        before = {name: cpu_seconds(pid) for name, pid in processes.items()}
        with template, _ThreadClients(template) as clients:
            changed = anyio.run(
                list_changed_latencies, Endpoint(mcp_url, "mcp.echo.echo", {"Authorization": f"Bearer {listener}"}),
                grant, tools[:int(sizes.writes_per_s * seconds)], sizes.writes_per_s, seconds, clients.connect)
        figures["list_changed"] = {**changed, "cpu_ms_per_write": {
            name: round((cpu_seconds(pid) - before[name]) * 1000 / max(1, changed["writes"]), 2)
            for name, pid in processes.items()}}
        return figures
