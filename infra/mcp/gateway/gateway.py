"""The MCP gateway's server: tools/list and tools/call for the subject of the session's token, decided
from memory (a `SetSource`), forwarded through pooled upstream sessions, every call decision recorded.

The transport (streamable HTTP in `toolcat serve`: infra/http/mcp_endpoint.py) authenticates each request
and tells the gateway who asks (`Caller`, from the token, never from the request's content); the gateway
keeps each open session's handle so that a change of its subject's set reaches it as
`notifications/tools/list_changed`, and a revoked token's sessions are ended (`Caller.end`)."""
from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
import mcp_types as types

from domain.errors import ToolcatError
from infra.mcp.gateway.decisions import DecisionLog, decision
from infra.mcp.gateway.listen import Listeners, Listening
from infra.mcp.gateway.metrics import GatewayMetrics
from infra.mcp.gateway.source import (Descriptor, Directory, Resolution, SetSource, SubjectSet, listed, resolve,
                                      route)
from infra.mcp.gateway.upstream import UpstreamPool, answer_size
from infra.settings import Settings

log = logging.getLogger("toolcat.gateway")

# JSON-RPC error codes of the gateway's refusals (docs/mcp.md): a policy refusal, and an upstream failure.
REFUSED = -32003
UPSTREAM_FAILED = -32004
# Listings kept (one per subject with a session); past it, all are built again.
LISTINGS_KEPT = 4096
# How often open sessions' tokens are looked at again (a revoked token's sessions end within a second).
TOKEN_CHECK_SECONDS = 0.25


@dataclass(eq=False)
class Caller:
    """Who a session acts for: the token's name and subject. `still_valid()` asks the token book;
    `end()` ends the session (the transport's way)."""

    subject: str
    token: str
    session_id: str | None = None
    still_valid: Callable[[], bool] = lambda: True
    end: Callable[[], Awaitable[None]] | None = None
    session: Any = None  # mcp.server.session.ServerSession, once a request showed it
    # The tools called so far (route rules' "after"), each once, in the order first called: a rule is armed
    # by the first earlier call that matches, so repeats change no decision; kept as a list they made
    # every call of a long session slower than the one before.
    called: dict[tuple[str, tuple[str, ...]], Descriptor] = field(default_factory=dict)
    seen: tuple[str, ...] | None = None  # the set it was last listed or told of
    ended: bool = False


class Gateway:
    def __init__(self, source: SetSource, settings: Settings, decisions: DecisionLog,
                 caller_of: Callable[[Any], Caller], metrics: GatewayMetrics | None = None) -> None:
        self.source, self.settings, self.decisions, self.metrics = source, settings, decisions, metrics
        self._caller_of = caller_of
        self._callers: dict[str, Caller] = {}  # session key → caller (the sessions open now)
        self._sessions: weakref.WeakKeyDictionary[Any, Caller] = weakref.WeakKeyDictionary()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listed: dict[str, tuple[SubjectSet, Directory, list[dict[str, Any]]]] = {}
        self.pool: UpstreamPool | None = None
        self.listeners = Listeners(self)  # the 2026-07-28 protocol's listen streams (no sessions there)
        self.server: Server[Any] = Server("toolcat", version="1", instructions=(
            "The tools of your subject's effective set in the toolcat catalog; each call is decided and recorded."),
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_subscriptions_listen=self.listeners.serve)
        self.server.middleware.append(self._attach)
        if metrics is not None:
            metrics.watch_sessions(lambda: self.open_sessions)

    @property
    def open_sessions(self) -> int:
        """How many MCP sessions are open now (a replica's health says it)."""
        return len(self._sessions)

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    # -- lifetime ----------------------------------------------------------------------------------------
    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled: hold the upstream pool, pass set changes to the sessions, end revoked ones."""
        async with anyio.create_task_group() as group:
            self.pool = UpstreamPool(self.settings, group)
            self._loop = asyncio.get_running_loop()  # `toolcat serve` runs anyio on asyncio (uvicorn)
            send, receive = anyio.create_memory_object_stream[tuple[int, list[str] | None]](10_000)
            unsubscribe = self.source.subscribe(lambda position, subjects: self._from_thread(send, position, subjects))
            try:
                group.start_soon(self._tell_changes, receive)
                group.start_soon(self._check_tokens)
                task_status.started()
                await anyio.sleep_forever()
            finally:
                unsubscribe()
                self.pool.close()
                group.cancel_scope.cancel()

    def _from_thread(self, send: Any, position: int, subjects: list[str] | None) -> None:
        """(The source's thread) hand the change to the event loop without waiting for it: the follower
        announces its batch right after (anyio's from_thread would hold it until the loop ran this)."""
        def put() -> None:
            try:
                send.send_nowait((position, subjects))
            except anyio.WouldBlock:  # 10,000 changes not yet told: tell every session instead
                with contextlib.suppress(anyio.WouldBlock):
                    send.send_nowait((position, None))
            except anyio.ClosedResourceError:  # stopping
                pass
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to tell
                loop.call_soon_threadsafe(put)

    async def _tell_changes(self, receive: Any) -> None:
        async with receive:
            async for _position, subjects in receive:
                now: dict[str, tuple[str, ...] | None] = {}
                # Every session told at once: one whose client reads slowly (up to 5 s) holds up no other.
                async with anyio.create_task_group() as telling:
                    for key, caller in list(self._callers.items()):
                        if caller.session is None or subjects is not None and caller.subject not in subjects:
                            continue
                        if subjects is None and not self._moved(caller, now):
                            continue
                        telling.start_soon(self._tell, key, caller)
                    await self.listeners.tell(subjects, lambda listening: self._moved(listening, now))

    async def _tell(self, key: str, caller: Caller) -> None:
        with anyio.move_on_after(5):
            try:
                await caller.session.send_tool_list_changed()
            except Exception as error:  # noqa: BLE001 - a session gone (idle, disconnected)
                log.debug("list_changed to a session of %s failed: %s", caller.subject, error)
                self.closed(key)

    def _moved(self, caller: Caller | Listening, now: dict[str, tuple[str, ...] | None]) -> bool:
        """After a batch that may have changed any set (a Kafka-fed server says no more): whether the
        caller's subject's set differs from the one it was last told of (read once per subject)."""
        if caller.subject not in now:
            try:
                now[caller.subject] = self.source.subject_set(caller.subject).tools
            except ToolcatError:  # gone or not readable now: tell it, its next list says why
                now[caller.subject] = None
        moved = caller.seen is None or now[caller.subject] != caller.seen
        caller.seen = now[caller.subject]
        return moved

    async def _check_tokens(self) -> None:
        while True:
            await anyio.sleep(TOKEN_CHECK_SECONDS)
            valid: dict[str, bool] = {}  # asked once per token and look, however many sessions it holds
            for key, caller in list(self._callers.items()):
                if caller.token not in valid:
                    valid[caller.token] = caller.still_valid()
                if not valid[caller.token]:
                    await self.end(key)

    async def end(self, key: str) -> None:
        caller = self._callers.pop(key, None)
        if caller is not None and not caller.ended:
            caller.ended = True
            if caller.end is not None:
                await caller.end()

    def opened(self, key: str, caller: Caller) -> None:
        """The transport opened a session for `caller` (key: its session id)."""
        self._callers[key] = caller

    def closed(self, key: str) -> None:
        self._callers.pop(key, None)

    # -- requests ----------------------------------------------------------------------------------------
    async def _attach(self, ctx: Any, call_next: Any) -> Any:
        """(Middleware of every request) remember the session's handle beside its caller."""
        caller = self._caller(ctx)
        if caller is not None and caller.session is None:
            caller.session = ctx.session
        return await call_next(ctx)

    def _caller(self, ctx: Any) -> Caller | None:
        """The caller of the session this request belongs to: the one the transport registered when the
        session opened (kept by session handle once seen), else who the request itself authenticated as
        (the opening `initialize`)."""
        found = self._sessions.get(ctx.session)
        if found is None:
            asked = self._caller_of(ctx)
            found = self._callers.get(asked.session_id) if asked is not None and asked.session_id else None
            if found is None:
                return asked
            self._sessions[ctx.session] = found
        return found

    def _need_caller(self, ctx: Any) -> Caller:
        caller = self._caller(ctx)
        if caller is None or caller.ended or not caller.still_valid():
            raise _revoked()
        return caller

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        caller = self._need_caller(ctx)
        try:
            subject_set = self.source.subject_set(caller.subject)
            tools = self._listing(subject_set, self.source.directory())
        except ToolcatError as error:
            raise MCPError(REFUSED, error.message, {"reason": error.code}) from None
        caller.seen = subject_set.tools
        start = _offset(params.cursor if params is not None else None)
        page = tools[start:start + self.settings.gateway_page_size]
        following = start + len(page)
        # The page as its wire form (the SDK validates a result whatever it is given: a dict spares it the
        # dump of 1,000 models it would otherwise make first, a sixth of a large listing's time).
        # The 2026-07-28 wire requires the three envelope fields a ListToolsResult model defaults (a set is
        # private to its subject and changes with any batch: never cached); older wires sieve them out.
        listing: dict[str, Any] = {"tools": page, "_meta": {"toolcat/position": subject_set.position},
                                   "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
        if following < len(tools):
            listing["nextCursor"] = _cursor(following)
        return listing  # type: ignore[return-value]

    def _listing(self, subject_set: SubjectSet, directory: Directory) -> list[dict[str, Any]]:
        """The subject's listing, built once per (set, directory): both are replaced, never changed, when a
        batch changes them, so the same pair lists the same tools; each tool's wire form is its
        descriptor's, built once (`Descriptor.listed`)."""
        kept = self._listed.get(subject_set.subject)
        if kept is not None and kept[0] is subject_set and kept[1] is directory:
            return kept[2]
        tools = [tool.listed() for tool in listed(directory, subject_set)]
        if len(self._listed) >= LISTINGS_KEPT:
            self._listed.clear()
        self._listed[subject_set.subject] = (subject_set, directory, tools)
        return tools

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        started = time.perf_counter()
        caller = self._caller(ctx)
        if caller is None:  # the transport authenticated nobody: never reached over HTTP or stdio
            raise MCPError(REFUSED, "the session has no token", {"reason": "no_token"})
        asked = params.name
        record = {"subject": caller.subject, "token": caller.token, "session_id": caller.session_id, "asked": asked}
        if self.settings.gateway_record_arguments:
            record["arguments"] = params.arguments
        if caller.ended or not caller.still_valid():  # revoked between its checks: refused, on record
            self._decided(record, started, allowed=False, reason="token_revoked", set_position=0)
            raise _revoked()
        try:
            subject_set = self.source.subject_set(caller.subject)
            directory = self.source.directory()
            scopes = self.source.scopes(caller.subject)
        except ToolcatError as error:
            self._decided(record, started, allowed=False, reason=error.code, set_position=0)
            raise MCPError(REFUSED, error.message, {"reason": error.code}) from None
        resolution = resolve(directory, subject_set, asked)
        record.update(canonical_id=resolution.canonical_id, set_position=resolution.position,
                      server=resolution.tool.backing_server if resolution.tool else None)
        if not resolution.forwarded:
            self._decided(record, started, allowed=False, reason=resolution.reason,
                          evidence=_alias_evidence(resolution))
            raise MCPError(REFUSED, _refusal(resolution), _error_data(resolution))
        tool = resolution.tool
        assert tool is not None and tool.backing_server is not None and tool.upstream_name is not None
        decided = route(directory, scopes, tool, caller.called.values())
        evidence = {**decided, **_alias_evidence(resolution)}
        if decided["decision"] == "deny":
            self._decided(record, started, allowed=False, reason=decided["reason_code"],
                          matched_rule=decided["matched_route_rule_id"], evidence=evidence)
            raise MCPError(REFUSED, f"'{asked}' is denied by route rule '{decided['matched_route_rule_id']}'",
                           {**_error_data(resolution), "reason": decided["reason_code"], "route": decided})
        caller.called.setdefault((tool.tool_key, tool.classes), tool)
        server = tool.backing_server
        try:
            result = await self._forward(ctx, server, directory.servers[server], tool.upstream_name,
                                         params.arguments)
        except (ToolcatError, MCPError) as error:
            said = error.message
            self._decided(record, started, allowed=True, reason="upstream_failed", evidence=evidence,
                          upstream_error=said)
            raise MCPError(UPSTREAM_FAILED, said, {**_error_data(resolution), "reason": "upstream_failed",
                                                   "server": server}) from None
        except anyio.get_cancelled_exc_class():  # the agent cancelled: so is the upstream call; on record
            self._decided(record, started, allowed=True, reason="cancelled", evidence=evidence,
                          upstream_error="cancelled by the client")
            raise
        meta = dict(result.meta or {})
        meta["toolcat"] = {"canonical_id": tool.tool_id, "asked": asked, "position": resolution.position,
                           **({"deprecated": True, "sunset": resolution.sunset,
                               "sunset_release": resolution.sunset_release}
                              if resolution.outcome == "deprecated" else {})}
        answered = result.model_copy(update={"meta": meta})
        self._decided(record, started, allowed=True, reason=resolution.reason, evidence=evidence,
                      result=answered.model_dump(mode="json", by_alias=True, exclude_none=True)
                      if self.settings.gateway_record_arguments else None)
        return answered

    async def _forward(self, ctx: Any, server: str, connection: Any, name: str,
                       arguments: dict[str, Any] | None) -> types.CallToolResult:
        assert self.pool is not None
        opened = await self.pool.session(server, connection)
        token = _progress_token(ctx)

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if token is not None:
                await ctx.session.send_progress_notification(token, value, total, message,
                                                             related_request_id=str(ctx.request_id))
        try:
            result = await opened.call(f"tools/call {name}", opened.session.call_tool(
                name, arguments, progress_callback=progress if token is not None else None))
        except MCPError as error:  # the server answered with an error: its own words, naming it
            raise MCPError(UPSTREAM_FAILED, f"MCP server '{server}' refused tools/call {name}: {error.message}",
                           None) from None
        except ToolcatError:
            self.pool.broke(server, opened)
            raise
        size = answer_size(result)
        if size > self.settings.gateway_max_answer_bytes:
            raise MCPError(UPSTREAM_FAILED, f"MCP server '{server}' answered tools/call {name} with {size} bytes, "
                                            f"more than {self.settings.gateway_max_answer_bytes} "
                                            "(TOOLCAT_GATEWAY_MAX_ANSWER_BYTES)", None)
        return result

    def _decided(self, record: dict[str, Any], started: float, **fields: Any) -> None:
        seconds = time.perf_counter() - started
        self.decisions.record(decision(**record, **fields, latency_ms=seconds * 1000))
        if self.metrics is not None:
            self.metrics.decided(fields["allowed"], fields["reason"], seconds,
                                 record.get("server") if fields["reason"] == "upstream_failed" else None)


def _revoked() -> MCPError:
    return MCPError(REFUSED, "the session's token is no longer valid (revoked, replaced or expired)",
                    {"reason": "token_revoked"})


def _refusal(resolution: Resolution) -> str:
    asked, canonical = resolution.asked, resolution.canonical_id
    if resolution.outcome == "retired":
        return f"'{asked}' was retired; use '{canonical}' instead"
    if resolution.outcome == "not_served":
        return f"'{canonical}' is not served by this gateway (no MCP server backs it)"
    if resolution.outcome == "disabled":
        return f"'{canonical}' is in your set but not enabled ({resolution.exposure})"
    if resolution.outcome == "unknown":
        return f"'{asked}' is not a tool of your set"
    return f"'{asked}' is not a tool of your set" + (f" ('{canonical}')" if canonical and canonical != asked else "")


def _error_data(resolution: Resolution) -> dict[str, Any]:
    data: dict[str, Any] = {"reason": resolution.reason, "asked": resolution.asked,
                            "canonical_id": resolution.canonical_id, "position": resolution.position}
    if resolution.exposure is not None:
        data["exposure"] = resolution.exposure
    return data


def _alias_evidence(resolution: Resolution) -> dict[str, Any]:
    if resolution.outcome in ("alias", "deprecated", "retired"):
        return {"alias": resolution.asked, "alias_outcome": resolution.outcome, "sunset": resolution.sunset,
                "sunset_release": resolution.sunset_release}
    return {}


def _progress_token(ctx: Any) -> str | int | None:
    meta = ctx.meta or {}
    return meta.get("progress_token", meta.get("progressToken"))


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        kind, _, number = text.partition(":")
        if kind == "o" and number.isdigit():
            return int(number)
    except (ValueError, UnicodeError):
        pass
    raise MCPError(types.INVALID_PARAMS, "tools/list: the cursor is not one this gateway gave", None)
