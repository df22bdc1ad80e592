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

The gateway figures are measured through `toolcat serve` (`/mcp`) and, when a broker is at hand
(TOOLCAT_KAFKA_BOOTSTRAP), through `toolcat gateway --from kafka` fed by that server's changelog."""
from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.dev.measures import percentiles, rate

SESSIONS = 8


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
def echo_upstream(tools: int) -> Iterator[str]:
    """The echo server with `tools` tools, in its own process; its URL while the block runs."""
    process = subprocess.Popen([sys.executable, "-m", "infra.dev.echo_mcp", "--port", "0", "--tools", str(tools)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"the echo MCP server did not start (exit {process.poll()})")
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
        answer = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
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


def call_figures(direct: Endpoint, gateway: Endpoint, sizes: Sizes) -> dict[str, Any]:
    """Latency and throughput through the gateway, each beside the direct path's of the same run."""
    import anyio
    samples = anyio.run(call_latencies, {"direct": direct, "gateway": gateway}, sizes.calls)
    direct_calls = percentiles(samples["direct"])
    gateway_calls = percentiles(samples["gateway"])
    direct_rate = anyio.run(throughput, direct, sizes.seconds)
    gateway_rate = anyio.run(throughput, gateway, sizes.seconds)
    return {
        "call_latency": {"direct": direct_calls, "gateway": gateway_calls,
                         "added_median_ms": round(gateway_calls["median_ms"] - direct_calls["median_ms"], 3),
                         "added_p99_ms": round(gateway_calls["p99_ms"] - direct_calls["p99_ms"], 3)},
        "throughput": {"sessions": SESSIONS, "seconds": sizes.seconds, "direct_calls_per_s": direct_rate,
                       "gateway_calls_per_s": gateway_rate,
                       "vs_direct": round(gateway_rate / direct_rate, 3) if direct_rate else None}}


def list_figures(direct: Endpoint, gateway: Endpoint, sizes: Sizes) -> dict[str, Any]:
    import anyio
    direct_count, direct_samples = anyio.run(list_latencies, direct, sizes.lists)
    gateway_count, gateway_samples = anyio.run(list_latencies, gateway, sizes.lists)
    return {"tools_list": {"direct": {"tools": direct_count, **percentiles(direct_samples)},
                           "gateway": {"tools": gateway_count, **percentiles(gateway_samples)}}}


class GatewayFigures:
    def __init__(self, root: Path, say: Callable[[str], None], sizes: Sizes | None = None,
                 kafka_bootstrap: str | None = None) -> None:
        self.root, self.say, self.sizes = root / "gateway", say, sizes or Sizes()
        self.kafka_bootstrap = kafka_bootstrap

    def run(self) -> dict[str, Any]:
        import anyio
        sizes = self.sizes
        with echo_upstream(sizes.tools) as url:
            direct = Endpoint(url, "echo")
            samples = anyio.run(call_latencies, {"direct": direct}, sizes.calls)["direct"]
            count, lists = anyio.run(list_latencies, direct, sizes.lists)
            return {"upstream_tools": sizes.tools,
                    "direct": {"call_latency": percentiles(samples),
                               "calls_per_s": anyio.run(throughput, direct, sizes.seconds),
                               "sessions": SESSIONS,
                               "tools_list": {"tools": count, **percentiles(lists)}}}
