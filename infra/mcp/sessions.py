"""Sessions to upstream MCP servers with the official SDK, over stdio or streamable HTTP: built once for
the sync and the gateway.

Every wait is bounded by settings: starting the server and its `initialize` by TOOLCAT_MCP_CONNECT_SECONDS,
each later request by TOOLCAT_MCP_REQUEST_SECONDS. Secret references are resolved here, as the connection
opens, and nowhere else; a failure is a `McpUnavailable` (exit 6) naming the server and what went wrong,
with the server's last lines of stderr, scrubbed of every resolved value."""
from __future__ import annotations

import contextlib
import math
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from domain.errors import ToolcatError, Unavailable
from domain.mcp_servers import Connection
from infra.mcp.secrets import resolve_all
from infra.settings import Settings, scrub

T = TypeVar("T")
_STDERR_SHOWN = 600  # characters of the server's stderr an error repeats


class McpUnavailable(Unavailable):
    """The server could not be started, did not answer in time, or broke the protocol (exit 6)."""

    code = "mcp_unavailable"


@dataclass
class Opened:
    """An initialized session; `call` runs one request within the request timeout."""

    server: str
    session: Any  # mcp.client.session.ClientSession, or infra.mcp.posted.PostedSession
    initialized: Any  # mcp.types.InitializeResult
    settings: Settings
    secrets: set[str]
    stderr: IO[str] | None

    async def call(self, what: str, request: Awaitable[T]) -> T:
        import anyio
        try:
            with anyio.fail_after(self.settings.mcp_request_seconds):
                return await request
        except TimeoutError:
            raise self.failure(f"did not answer {what} within {self.settings.mcp_request_seconds:g} s "
                               "(TOOLCAT_MCP_REQUEST_SECONDS)") from None
        except Exception as error:  # noqa: BLE001 - the SDK's or the transport's, said as one line
            if isinstance(_innermost(error), ToolcatError):
                raise _innermost(error) from None
            raise self.failure(f"failed during {what}: {_reason(error)}") from None

    def failure(self, what: str) -> McpUnavailable:
        return failure(self.server, what, self.stderr, self.secrets)


def failure(server: str, what: str, stderr: IO[str] | None, secrets: set[str]) -> McpUnavailable:
    said = ""
    if stderr is not None:
        stderr.seek(0)
        tail = stderr.read()[-_STDERR_SHOWN:].strip()
        said = f"; its stderr ends: {tail}" if tail else ""
    return McpUnavailable(scrub(f"MCP server '{server}' {what}{said}", secrets), server=server)


def _innermost(error: BaseException) -> BaseException:
    """The first error inside a task group's exception group (or the error itself)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _reason(error: BaseException) -> str:
    """The innermost error, as one line."""
    error = _innermost(error)
    return f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__


@asynccontextmanager
async def _transport(connection: Connection, secrets: dict[str, str], settings: Settings,
                     stderr: IO[str] | None) -> AsyncIterator[tuple[Any, Any]]:
    if connection.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client
        assert connection.command is not None and stderr is not None
        params = StdioServerParameters(command=connection.command, args=connection.args,
                                       env={**connection.env, **secrets})
        async with stdio_client(params, errlog=stderr) as (read, write):
            yield read, write
        return
    from mcp.client.streamable_http import streamable_http_client
    assert connection.url is not None
    async with _http_client(secrets, settings) as client:
        async with streamable_http_client(connection.url, http_client=client) as (read, write):
            yield read, write


def _http_client(secrets: dict[str, str], settings: Settings) -> Any:
    """The HTTP client of a session over streamable HTTP: the resolved headers, the settings' bounds, the
    connections kept alive."""
    import httpx2  # the SDK's HTTP client (a dependency of mcp)
    timeout = httpx2.Timeout(settings.mcp_request_seconds, connect=settings.mcp_connect_seconds)
    return httpx2.AsyncClient(headers=secrets, timeout=timeout, transport=_kept_alive())


@asynccontextmanager
async def _client_session(connection: Connection, secrets: dict[str, str], settings: Settings,
                          stderr: IO[str] | None, heard: Callable[[Any], Awaitable[None]], posted: bool
                          ) -> AsyncIterator[Any]:
    """An SDK `ClientSession`, or with `posted` a `PostedSession` where the server is reached over HTTP."""
    if posted and connection.transport != "stdio":
        from infra.mcp.posted import PostedSession
        assert connection.url is not None
        async with _http_client(secrets, settings) as client:
            session = PostedSession(client, connection.url, _posted_message_bytes(settings))
            try:
                yield session
            finally:
                await session.aclose()
        return
    from mcp.client.session import ClientSession
    async with _transport(connection, secrets, settings, stderr) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=settings.mcp_request_seconds,
                                 message_handler=heard) as session:
            yield session


def _posted_message_bytes(settings: Settings) -> int:
    """The largest message a posted session reads: a guard of memory only, past the gateway's bound on an
    answer (`answer_size`, which says which setting it is) with room for the envelope and JSON's escapes."""
    return 2 * settings.gateway_max_answer_bytes + 65536


# How long closing an answered POST's event stream may read on to the end of its body (the server ends it
# right after the answer) so that its connection is kept for the next request.
DRAIN_SECONDS = 0.05


def _kept_alive() -> Any:
    """The SDK client's HTTP transport, keeping connections open across requests. The SDK closes a POST's
    event stream as soon as the answer arrived, before the body's last chunk: the connection is then closed
    and the next request opens another (the gateway's upstream calls spent a fifth of its CPU connecting and
    closing). Reading that chunk first lets the connection go back to the pool."""
    import httpx2

    class Drained(httpx2.AsyncByteStream):
        def __init__(self, stream: Any) -> None:
            self.stream, self.ended = stream, False

        async def __aiter__(self) -> Any:
            async for chunk in self.stream:
                yield chunk
            self.ended = True

        async def aclose(self) -> None:
            # Only a body left before its end is drained: httpx closes a body read to its end too, and
            # reading it again waited the whole DRAIN_SECONDS for bytes that never come (50 ms a call).
            import anyio
            try:
                if not self.ended:
                    with anyio.move_on_after(DRAIN_SECONDS):
                        async for _ in self.stream:
                            pass
            finally:
                await self.stream.aclose()

    class KeptAlive(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            response = await super().handle_async_request(request)
            if request.method == "POST" and response.headers.get("content-type", "").startswith("text/event-stream"):
                response.stream = Drained(response.stream)
            return response
    # Without TCP_NODELAY a request's body waits behind its headers for the server's delayed ACK (40 ms) on
    # a connection past its first exchanges: a kept connection made each call 40 ms slower than a new one.
    return KeptAlive(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])


@asynccontextmanager
async def open_session(server: str, connection: Connection, settings: Settings,
                       on_tools_changed: Callable[[], None] | None = None, posted: bool = False
                       ) -> AsyncIterator[Opened]:
    """A started, initialized session to `server`; closed (its process stopped) on exit.
    `on_tools_changed()`: called when the server sends `notifications/tools/list_changed`.
    `posted`: over HTTP, a `PostedSession` (infra/mcp/posted.py: calls only, no server notifications)."""
    import anyio
    from mcp import types

    async def heard(message: Any) -> None:
        if on_tools_changed is not None and isinstance(message, types.ToolListChangedNotification):
            on_tools_changed()
        await anyio.lowlevel.checkpoint()
    refs = connection.env_refs if connection.transport == "stdio" else connection.header_refs
    resolved = resolve_all(refs)
    secrets = {v for v in resolved.values() if v}
    connect = settings.mcp_connect_seconds
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") if connection.transport == "stdio" \
            else contextlib.nullcontext() as stderr:
        opened: Opened | None = None
        failed: BaseException | None = None
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + connect
            try:
                async with _client_session(connection, resolved, settings, stderr, heard, posted) as session:
                    initialized = await session.initialize()
                    scope.deadline = math.inf  # connected: later requests have their own bound
                    opened = Opened(server, session, initialized, settings, secrets, stderr)
                    yield opened
            except Exception as error:  # noqa: BLE001 - whatever the transport raised, said as one line
                if isinstance(_innermost(error), ToolcatError):  # the caller's own refusal, or a timeout's
                    raise _innermost(error) from None
                failed = error
        if scope.cancelled_caught and opened is None:
            raise failure(server, f"did not start and initialize within {connect:g} s "
                                  "(TOOLCAT_MCP_CONNECT_SECONDS)", stderr, secrets)
        if failed is not None:
            stage = "failed while connecting" if opened is None else "failed"
            raise failure(server, f"{stage}: {_reason(failed)}", stderr, secrets) from None

