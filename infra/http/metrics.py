"""What an operator scrapes at `GET /metrics` (Prometheus text format): projection lag in events and
seconds, batch duration, events applied (and per second), and request latency by route."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class ServerMetrics:
    """One registry per server (several servers in one process, as in tests, do not collide)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.lag_events = Gauge("toolcat_projection_lag_events", "stored events not yet applied", registry=r)
        self.lag_seconds = Gauge("toolcat_projection_lag_seconds",
                                 "age of the oldest stored event not yet applied (0 when caught up)", registry=r)
        self.position = Gauge("toolcat_read_model_position", "last applied event position", registry=r)
        self.batch_seconds = Histogram("toolcat_batch_duration_seconds", "time to apply one batch",
                                       buckets=_LATENCY_BUCKETS, registry=r)
        self.events = Counter("toolcat_events_applied", "events applied to the read model", registry=r)
        self.events_per_second = Gauge("toolcat_events_per_second", "events per second of the last batch",
                                       registry=r)
        self.visible_seconds = Histogram("toolcat_event_visible_seconds",
                                         "from an event's recording to its batch being readable",
                                         buckets=_LATENCY_BUCKETS, registry=r)
        self.snapshot_lag = Gauge("toolcat_snapshot_lag_events",
                                  "events applied to the read model that snapshot.duckdb does not hold yet",
                                  registry=r)
        self.snapshot_published = Gauge("toolcat_snapshot_published_timestamp_seconds",
                                        "when snapshot.duckdb was last published (Unix time)", registry=r)
        self.write_group = Histogram("toolcat_write_group_commands", "write commands recorded by one store commit",
                                     buckets=(1, 2, 4, 8, 16, 32), registry=r)
        self.mcp_drift = Gauge("toolcat_mcp_drift", "1 when the MCP server's tools/list differs from the catalog "
                               "at its last check (TOOLCAT_MCP_SYNC_SECONDS)", ["server"], registry=r)
        self.mcp_check_failed = Gauge("toolcat_mcp_check_failed", "1 when the last drift check could not read "
                                      "the MCP server's tools/list", ["server"], registry=r)
        self.mcp_checked = Gauge("toolcat_mcp_checked_timestamp_seconds", "when the MCP server was last "
                                 "checked for drift (Unix time)", ["server"], registry=r)
        self.requests = Histogram("toolcat_http_request_duration_seconds", "request latency by route",
                                  ["method", "route", "status"], buckets=_LATENCY_BUCKETS, registry=r)

    def watch_lag(self, lag: Callable[[], tuple[int, float]]) -> None:
        """`lag` (events, seconds) is computed when scraped."""
        self.lag_events.set_function(lambda: lag()[0])
        self.lag_seconds.set_function(lambda: lag()[1])

    def batch(self, events: int, seconds: float, position: int, recorded_at: float | None) -> None:
        self.position.set(position)
        if events:
            self.batch_seconds.observe(seconds)
            self.events.inc(events)
            self.events_per_second.set(events / seconds if seconds > 0 else 0)
        if recorded_at is not None:
            self.visible_seconds.observe(max(0.0, time.time() - recorded_at))


    def mcp_check(self, server: str, state: str) -> None:
        """A drift check of `server` ended: "in_sync", "drift" or "error" (drift then keeps its last value)."""
        self.mcp_checked.labels(server).set(time.time())
        self.mcp_check_failed.labels(server).set(state == "error")
        if state != "error":
            self.mcp_drift.labels(server).set(state == "drift")

    def forget_mcp_server(self, server: str) -> None:
        for gauge in (self.mcp_drift, self.mcp_check_failed, self.mcp_checked):
            with contextlib.suppress(KeyError):
                gauge.remove(server)


class RequestTimer:
    """ASGI middleware: each HTTP request's latency under its route's path template."""

    def __init__(self, app: Any, metrics: ServerMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await timed(self.metrics, self.app, scope, receive, send,
                    lambda: getattr(scope.get("route"), "path", "unmatched"))


async def timed(metrics: ServerMetrics, app: Any, scope: dict[str, Any], receive: Any, send: Any,
                route: Any) -> None:
    """Run the ASGI `app` on an HTTP request, then observe its latency under `route()` (asked at the end:
    routing names it on the way) and the status it answered (500 when it answered none)."""
    started, status = time.perf_counter(), [500]

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        await send(message)
    try:
        await app(scope, receive, sending)
    finally:
        metrics.requests.labels(scope["method"], route(), str(status[0])).observe(time.perf_counter() - started)
