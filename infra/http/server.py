"""Running `toolcat serve`: bind the socket, take the home's read model, record the address, serve until
SIGTERM (or Ctrl-C), then drain in-flight requests, finish the current batch and leave nothing behind.

Nothing between binding and serving waits for the catch-up with the store: it runs in the follower
while the server answers (/v1/health 200, /v1/ready 503 with the lag, reads 503 with Retry-After);
before, a connection made meanwhile waited in the listen queue until the catch-up was done."""
from __future__ import annotations

import gc
import os
import secrets
import signal
import socket
from collections.abc import Callable
from typing import Any

import uvicorn

from domain.errors import Conflict, UsageError
from infra.http.address import ServerAddress, forget_address, live_address, record_address
from infra.http.answers import AnswerRead
from infra.http.app import create_app
from infra.http.auth import TokenBook, is_loopback, tokens_configured
from infra.http.integrity import IntegrityWatch
from infra.http.mcp_drift import DriftWatch
from infra.http.metrics import ServerMetrics
from infra.http.snapshots import SnapshotPublisher
from infra.http.state import ServerState
from infra.settings import Settings

# In-flight requests get this long to finish once asked to stop.
GRACEFUL_SECONDS = 30


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on the
    # connections of a socket that says it is TCP. With Nagle on, an answer written in two pieces (its
    # head, then its body; an SSE event after the last) waits for the client's delayed ACK: ≈ 40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted connections (Linux)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}", host=host, port=port) from error
    sock.listen(2048)
    return sock


def _check_can_serve(settings: Settings, host: str) -> None:
    if not is_loopback(host) and not tokens_configured(settings.home):
        raise UsageError(f"refusing to serve on {host} without tokens: anonymous reads are for loopback only; "
                         "create one with 'toolcat token create NAME --scope read'", host=host)
    running = live_address(settings.home)
    if running is not None:
        raise Conflict(f"a server already serves this home at {running.url} (pid {running.pid})",
                       url=running.url, pid=running.pid)


def settle_heap() -> None:
    """What start-up made (the catalog's aggregates, the read model's catch-up, the framework) stays: frozen,
    the collector's full passes while serving no longer walk it (≈ 30–45 ms each before)."""
    gc.collect()
    gc.freeze()


def unsettle_heap() -> None:
    """After serving: frozen objects are never finalized (DuckDB's bindings would report them leaked at exit)."""
    gc.unfreeze()


def serve(settings: Settings, host: str, port: int, source: str, say: Callable[[str], None],
          answer_read: AnswerRead) -> dict[str, Any]:
    """Serve until stopped; reads are answered by `answer_read` (the command line's, handed over by the
    command that starts the server: infra/http never imports the command line)."""
    _check_can_serve(settings, host)
    # The address it listens on is a name the server serves (Host and Origin: infra/http/hosts.py).
    settings = settings.model_copy(update={"allowed_hosts": [*settings.allowed_hosts, host]})
    sock = bind(host, port)
    try:
        state = ServerState(settings, source, ServerMetrics())
    except BaseException:
        sock.close()
        raise
    address = ServerAddress(pid=os.getpid(), host=host, port=sock.getsockname()[1], token=secrets.token_urlsafe(32))
    publisher = SnapshotPublisher(state)
    state.mcp_drift = DriftWatch(state)
    state.integrity = IntegrityWatch(state)  # (before the start: it waits for the catch-up)
    book = TokenBook(settings.home, address.token)
    app = create_app(state, book, publisher, answer_read)
    # http="httptools": parse HTTP in C (uvicorn's default picks it only when installed; it is a dependency,
    # so a missing one fails loudly instead of silently serving at h11's pace).
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                           timeout_graceful_shutdown=GRACEFUL_SECONDS, http="httptools"))
    # uvicorn raises the stopping signal again once it has shut down: by then it has done its work, so the
    # handlers it puts back (these) only note it, and the command finishes and exits 0.
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    # Once caught up (the follower runs these, after create_app's: the kept answers warmed): the first
    # snapshot, the integrity checks (they compare with it), then the heap frozen. Until then the server
    # answers probes, and refuses reads (503).
    state.on_caught_up += [publisher.start, state.integrity.start, settle_heap]
    # FastAPI builds a router's routes (a pydantic adapter per parameter and body) at the first request that
    # reaches it: the first write held the event loop 60 ms idle and ≈ 0.5 s at 200 writes/s, every write and
    # list_changed queued behind it. The OpenAPI document builds them all (and is kept), before the heap is
    # frozen.
    app.openapi()
    state.start()
    try:
        state.mcp_drift.start()  # (its first look waits for the catch-up)
        record_address(settings.home, address)
        say(f"serving {settings.home} at {address.url} (from the {source}); OpenAPI at {address.url}/openapi.json")
        server.run(sockets=[sock])
    finally:
        forget_address(settings.home, address.pid)
        book.write_used()  # the uses of the last minute
        state.stop_following()  # first: it may be starting what is stopped next (its caught-up hooks)
        publisher.stop()
        state.mcp_drift.stop()  # before the writer stops: a check may be waiting for it
        state.integrity.stop()
        state.stop()
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        unsettle_heap()
    return {"url": address.url, "position": state.position, "source": source}
