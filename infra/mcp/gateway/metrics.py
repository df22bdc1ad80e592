"""The gateway's figures for an operator's scrape (`GET /metrics`, Prometheus text format): tools/call
decisions by outcome and reason code, their latency, the MCP sessions open, and upstream failures by
server. Registered in the registry of whoever serves /metrics (`toolcat serve`'s, or the Kafka-fed
gateway's own)."""
from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# From a sub-millisecond refusal to an upstream's slow answer (TOOLCAT_MCP_REQUEST_SECONDS is 30 by default).
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0)


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter("toolcat_gateway_calls", "tools/call decisions, by decision (allowed, denied) and "
                             "reason code (docs/mcp.md)", ["decision", "reason"], registry=registry)
        self.latency = Histogram("toolcat_gateway_call_duration_seconds", "from a tools/call request to its "
                                 "answer (the upstream's time included), by decision", ["decision"],
                                 buckets=_BUCKETS, registry=registry)
        self.sessions = Gauge("toolcat_gateway_open_sessions", "MCP sessions open on the gateway", registry=registry)
        self.upstream_errors = Counter("toolcat_gateway_upstream_errors", "calls an upstream MCP server failed "
                                       "(down, slow, crashed, garbage or too large an answer), by server",
                                       ["server"], registry=registry)

    def watch_sessions(self, count: Callable[[], int]) -> None:
        """`count()` is asked when scraped."""
        self.sessions.set_function(count)

    def decided(self, allowed: bool, reason: str, seconds: float, failed_server: str | None) -> None:
        """One decision; `failed_server`: the upstream that failed the call, if one did."""
        decision = "allowed" if allowed else "denied"
        self.calls.labels(decision, reason).inc()
        self.latency.labels(decision).observe(seconds)
        if failed_server is not None:
            self.upstream_errors.labels(failed_server).inc()
