"""`toolcat gateway --from kafka --port P`: the MCP endpoint alone, fed by Kafka, with no DuckDB.

The same endpoint as `/mcp` of `toolcat serve` (mcp_endpoint.py: tokens bound to a subject, tools/list,
tools/call, list_changed, revoked tokens' sessions ended) over a `KafkaSets` source: subjects' sets from
`toolcat.effective-tools`, descriptors and policy from `toolcat.events`, both read from their beginning at
start. Replicas are interchangeable (each reads everything; no consumer group), so N of them run behind any
load balancer. Tokens are the home's token file (digests only), shared by the replicas; the home holds no
read model. Decisions go to Kafka `toolcat.decisions` (there is no table here to hold them).

Besides `/mcp` it answers `GET /metrics` (the gateway's calls, latency, sessions and upstream errors) and
`GET /v1/health` (the position its directory reached, its open sessions) for a load balancer's checks: 503
`failing`, naming the message, once an event it cannot read stopped its feed (from then on it refuses every
listing and call rather than serve sets it no longer follows); `degraded`, with the subjects, while a
subject's latest changelog message cannot be read (that subject alone is refused)."""
from __future__ import annotations

import contextlib
import secrets
import signal
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from domain.errors import UsageError
from infra import kafka_clients
from infra.http.auth import TokenBook, tokens_configured
from infra.http.hosts import HostCheck, served_names
from infra.http.mcp_endpoint import McpEndpoint
from infra.http.server import bind, settle_heap, unsettle_heap
from infra.mcp.gateway.decisions import DecisionLog, as_message
from infra.mcp.gateway.gateway import Gateway
from infra.mcp.gateway.kafka_sets import KafkaFeed, KafkaSets
from infra.mcp.gateway.metrics import GatewayMetrics
from infra.settings import Settings

# How long start-up waits to read both topics' history before it gives up (exit 6).
CATCH_UP_SECONDS = 300.0


class KafkaMcpEndpoint(McpEndpoint):
    """McpEndpoint's request handling and session lifetime, over a Kafka-fed source instead of a server's
    read model (its __init__ is the only part that knows the server's state)."""

    def __init__(self, sets: KafkaSets, settings: Settings, tokens: TokenBook) -> None:
        self.tokens, self.sets = tokens, sets
        self.decisions = DecisionLog(None, _publisher(settings))
        self.registry = CollectorRegistry()  # what its /metrics shows
        self.gateway = Gateway(sets, settings, self.decisions, self._caller_of, GatewayMetrics(self.registry))
        self.manager = StreamableHTTPSessionManager(app=self.gateway.server, session_idle_timeout=30 * 60)


def _publisher(settings: Settings) -> Callable[[list[dict[str, Any]]], None]:
    producer = kafka_clients.producer(settings)
    return lambda rows: producer.publish(settings.kafka_decisions_topic, [as_message(row) for row in rows])


def create_gateway_app(endpoint: KafkaMcpEndpoint, sets: KafkaSets) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with endpoint.running():
            yield

    async def health(request: Request) -> JSONResponse:
        document = {"status": "ok", "source": "kafka", "position": sets.position,
                    "sessions": endpoint.gateway.open_sessions}
        if sets.failure is not None:  # out of the load balancer: its sets are no longer kept up to date
            return JSONResponse({**document, "status": "failing", "failure": sets.failure}, status_code=503)
        if sets.unreadable:  # every replica reads the same topic: taking this one out would help nobody
            return JSONResponse({**document, "status": "degraded", "unreadable": dict(sets.unreadable)})
        return JSONResponse(document)
    async def metrics(request: Request) -> Response:
        return Response(generate_latest(endpoint.registry), media_type=CONTENT_TYPE_LATEST)
    return Starlette(routes=[Route("/v1/health", health, methods=["GET"]), Route("/metrics", metrics, methods=["GET"]),
                             Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])], lifespan=lifespan)


def serve_gateway(settings: Settings, host: str, port: int, say: Callable[[str], None]) -> dict[str, Any]:
    """Read both topics' history, then serve MCP until stopped (SIGTERM or Ctrl-C)."""
    if not settings.kafka_bootstrap:
        raise UsageError("gateway --from kafka needs a broker: set TOOLCAT_KAFKA_BOOTSTRAP")
    if not tokens_configured(settings.home):
        raise UsageError(f"no tokens in {settings.home}: an MCP session needs a token bound to a subject "
                         "('toolcat token create NAME --subject agent:A --scope call'); the replicas share "
                         "the home's token file", home=str(settings.home))
    sock = bind(host, port)
    sets = KafkaSets()
    feed = KafkaFeed(sets, kafka_clients.consumer(settings, None), kafka_clients.consumer(settings, None),
                     settings.kafka_events_topic, settings.kafka_effective_topic)
    try:
        feed.start(CATCH_UP_SECONDS)
        # As `toolcat serve` does once caught up: the sets and descriptors read stay out of the collector's
        # full passes (a 1,000-tool listing spent 28-33 ms of CPU with them walked, 8-9 ms without).
        settle_heap()
        endpoint = KafkaMcpEndpoint(sets, settings, TokenBook(settings.home, secrets.token_urlsafe(32)))
        url = f"http://{host}:{sock.getsockname()[1]}"
        say(f"gateway at {url}/mcp fed by {settings.kafka_effective_topic} and {settings.kafka_events_topic} "
            f"(position {sets.position})")
        # Host and Origin checked as `toolcat serve` checks them (infra/http/hosts.py).
        app = HostCheck(create_gateway_app(endpoint, sets), served_names([*settings.allowed_hosts, host]))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning",
                                               access_log=False, lifespan="on", http="httptools"))
        # uvicorn raises the stopping signal again once it has shut down (server.py): noted, not obeyed.
        previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            server.run(sockets=[sock])
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        feed.stop()
        sock.close()
        unsettle_heap()
    return {"url": f"{url}/mcp", "position": sets.position, "source": "kafka"}
