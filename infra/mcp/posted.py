"""An MCP session over streamable HTTP driven with plain JSON-RPC POSTs: the gateway's upstream calls.

Still the MCP protocol (2025-11-25 and the versions before it): `initialize` once, its session ID and the
protocol version agreed on every request after, each request's answer read from its POST (JSON or an event
stream, progress notifications passed on as they arrive), a courtesy `notifications/cancelled` when the
caller gives up, and a DELETE at the end. Messages are parsed and validated with the SDK's own types.

Why not the SDK's `ClientSession`: a call through it crossed four memory streams and two tasks and built
its request, message and result models twice (`toolcat serve`'s CPU per gateway call: py-spy put a third of
it there). The sync keeps the SDK's client (infra/mcp/sessions.py): it lists once, and hears list_changed."""
from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import httpx2  # the SDK's HTTP client (a dependency of mcp)
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from infra.mcp.sessions import DRAIN_SECONDS

# The version this client asks for: the newest with `initialize` and sessions (the SDK's client asks the same).
ASKED_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]
# How long the courtesy messages (a cancelled request's notice, the closing DELETE) may take.
COURTESY_SECONDS = 1.0

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class PostedSession:
    """One MCP session on `url` over `client` (its connections pooled and kept alive by the caller)."""

    def __init__(self, client: httpx2.AsyncClient, url: str, max_message_bytes: int) -> None:
        self.client, self.url, self.max_message_bytes = client, url, max_message_bytes
        self.headers = {"Accept": "application/json, text/event-stream"}
        self._ids = itertools.count(1)

    async def initialize(self) -> types.InitializeResult:
        result = await self._request("initialize", {
            "protocolVersion": ASKED_VERSION, "capabilities": {},
            "clientInfo": {"name": "toolcat-gateway", "version": "1"}})
        initialized = types.InitializeResult.model_validate(result)
        if initialized.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise MCPError(types.INVALID_REQUEST, f"the server asked for protocol version "
                                                  f"{initialized.protocol_version}, which this client does not speak")
        self.headers["mcp-protocol-version"] = initialized.protocol_version
        await self._notify("notifications/initialized", None)
        return initialized

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None,
                        progress_callback: Progress | None = None) -> types.CallToolResult:
        """The tool's result, validated; an error answer raises `MCPError` (as the SDK's client does)."""
        request_id = next(self._ids)
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if progress_callback is not None:
            params["_meta"] = {"progressToken": request_id}
        result = await self._request("tools/call", params, request_id, progress_callback)
        return types.CallToolResult.model_validate(result)

    async def aclose(self) -> None:
        """End the session on the server (its DELETE; a server that keeps none may refuse it)."""
        if "mcp-session-id" in self.headers:
            with anyio.move_on_after(COURTESY_SECONDS, shield=True):
                try:
                    await self.client.delete(self.url, headers=self.headers)
                except httpx2.HTTPError:
                    pass

    # -- the wire ----------------------------------------------------------------------------------------
    async def _request(self, method: str, params: dict[str, Any], request_id: int | None = None,
                       progress: Progress | None = None) -> dict[str, Any]:
        request_id = next(self._ids) if request_id is None else request_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        try:
            async with self.client.stream("POST", self.url, json=message, headers=self.headers) as response:
                if method == "initialize" and "mcp-session-id" in response.headers:
                    self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
                return await self._answer(response, request_id, progress)
        except anyio.get_cancelled_exc_class():
            if method != "initialize":  # the spec forbids cancelling it
                with anyio.move_on_after(COURTESY_SECONDS, shield=True):
                    await self._notify("notifications/cancelled", {"requestId": request_id,
                                                                   "reason": "the caller cancelled"})
            raise

    async def _notify(self, method: str, params: dict[str, Any] | None) -> None:
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        try:
            answer = await self.client.post(self.url, json=message, headers=self.headers)
        except httpx2.HTTPError:
            if method == "notifications/cancelled":  # a courtesy: the call is over either way
                return
            raise
        if answer.status_code >= 400 and method != "notifications/cancelled":
            raise MCPError(types.INTERNAL_ERROR, f"{method} answered HTTP {answer.status_code}")

    async def _answer(self, response: httpx2.Response, request_id: int, progress: Progress | None) -> dict[str, Any]:
        if response.status_code >= 400:
            raise await _http_error(response, "mcp-session-id" in self.headers)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind == "application/json":
            body = await response.aread()
            if len(body) > self.max_message_bytes:
                raise _too_large(len(body), self.max_message_bytes)
            return _result(types.jsonrpc_message_adapter.validate_json(body), request_id)
        if kind != "text/event-stream":
            raise MCPError(types.INVALID_REQUEST, f"the answer was neither JSON nor an event stream ({kind or 'none'})")
        answer = None
        # The stream is read to its end, which the server reaches right after the answer: the connection then
        # goes back to the pool with no reader left behind (an event stream left mid-way is an async generator
        # that, finalized later, closed the connection under the next request that had it).
        with anyio.CancelScope() as after_answer:
            try:
                async for event in httpx2.EventSource(response, max_event_size=self.max_message_bytes):
                    if event.event != "message" or not event.data or answer is not None:
                        continue
                    message = types.jsonrpc_message_adapter.validate_json(event.data)
                    if isinstance(message, types.JSONRPCNotification):
                        await _notified(message, request_id, progress)
                    elif isinstance(message, types.JSONRPCRequest):
                        await self._decline(message)
                    else:
                        answer = message
                        after_answer.deadline = anyio.current_time() + DRAIN_SECONDS
            except httpx2.SSEError as error:
                raise MCPError(types.INTERNAL_ERROR, f"the event stream failed: {error}") from None
        if answer is None:
            raise MCPError(types.CONNECTION_CLOSED, "the event stream ended without an answer")
        return _result(answer, request_id)

    async def _decline(self, request: types.JSONRPCRequest) -> None:
        """A request of the server's during a call (sampling, elicitation, roots): the gateway's agents are
        not reachable from here, so it is answered as a client without those capabilities answers."""
        refusal = {"jsonrpc": "2.0", "id": request.id,
                   "error": {"code": types.METHOD_NOT_FOUND, "message": f"{request.method} is not supported"}}
        await self.client.post(self.url, json=refusal, headers=self.headers)


def _result(message: Any, request_id: int) -> dict[str, Any]:
    if isinstance(message, types.JSONRPCError):
        raise MCPError.from_jsonrpc_error(message)
    if not isinstance(message, types.JSONRPCResponse) or message.id != request_id:
        raise MCPError(types.INVALID_REQUEST, "the answer was not the response to the request")
    return message.result


async def _notified(message: types.JSONRPCNotification, request_id: int, progress: Progress | None) -> None:
    """A notification sent on the request's stream: its progress passed on (others are not the gateway's)."""
    if message.method == "notifications/progress" and progress is not None:
        params = types.ProgressNotificationParams.model_validate(message.params or {})
        if params.progress_token == request_id:
            await progress(params.progress, params.total, params.message)


async def _http_error(response: httpx2.Response, in_session: bool) -> MCPError:
    """An HTTP error status as the MCP error it stands for: the server's own JSON-RPC error when its body
    is one, a session the server no longer knows (404), or the status."""
    if response.headers.get("content-type", "").lower().startswith("application/json"):
        try:
            message = types.jsonrpc_message_adapter.validate_json(await response.aread())
            if isinstance(message, types.JSONRPCError):
                return MCPError.from_jsonrpc_error(message)
        except (httpx2.HTTPError, ValueError):
            pass
    if response.status_code == 404 and in_session:
        return MCPError(types.INVALID_REQUEST, "Session terminated")
    return MCPError(types.INTERNAL_ERROR, f"HTTP {response.status_code}")


def _too_large(size: int, limit: int) -> MCPError:
    return MCPError(types.INTERNAL_ERROR, f"the answer of {size} bytes is over {limit}")
