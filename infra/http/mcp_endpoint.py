"""`/mcp` of `toolcat serve`: the MCP gateway over streamable HTTP (the official SDK's session manager).

Every request is authenticated here, before the SDK sees it: a bearer token with the `call` scope bound to
a subject (`toolcat token create NAME --subject agent:A --scope call`); no token or an unknown one → 401
with `WWW-Authenticate`; a token without the scope or a subject → 403. The SDK binds each session to the
token that opened it (a request of the session with another token is answered 404, as if the session did
not exist), and the gateway acts for the token's subject alone. A session whose token is revoked, replaced
or expired is ended by the gateway within a second: the same DELETE a client sends to end it."""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Message, Receive, Scope, Send

from domain.errors import Unavailable
from infra.freshness import Freshness
from infra.http.auth import Principal, TokenBook
from infra.http.hosts import HostCheck
from infra.http.limits import SizeLimits
from infra.http.metrics import ServerMetrics, timed
from infra.http.problems import Forbidden, Unauthenticated, problem
from infra.http.state import ServerState
from infra.mcp.gateway.decisions import DecisionLog, kafka_publisher
from infra.mcp.gateway.gateway import Caller, Gateway
from infra.mcp.gateway.metrics import GatewayMetrics
from infra.mcp.gateway.read_model import ReadModelSets

SESSION_HEADER = "mcp-session-id"
_PRINCIPAL = "toolcat_principal"
_CHALLENGE = 'Bearer realm="toolcat", scope="call"'


class McpEndpoint:
    """The ASGI app at /mcp, and the lifetime of what it holds (`running`)."""

    # Whether the sets are there to be served: False from start until the server's first catch-up ends (a
    # session opened before would find its subject missing, not yet projected).
    caught_up = True

    def __init__(self, state: ServerState, tokens: TokenBook) -> None:
        self.state, self.tokens = state, tokens
        # (A Kafka-fed server has no start-up catch-up with the store: it serves what it has applied.)
        self.caught_up = state.source != "store"
        state.on_caught_up.append(self._caught_up)
        self.sets = ReadModelSets(lambda: state.read_model(Freshness(min_position=0)), lambda: state.position)
        state.on_changes.append(self.sets.changed)
        self.decisions = DecisionLog(state.writer_cursor, kafka_publisher(state.settings))
        state.side_writes = lambda: self.decisions.written  # snapshots (user SQL) hold the decisions too
        self.gateway = Gateway(self.sets, state.settings, self.decisions, self._caller_of,
                               GatewayMetrics(state.metrics.registry))
        self.manager = StreamableHTTPSessionManager(app=self.gateway.server, session_idle_timeout=30 * 60)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        import anyio
        self.decisions.start()
        try:
            async with self.manager.run(), anyio.create_task_group() as group:
                await group.start(self.gateway.run)
                try:
                    yield
                finally:
                    group.cancel_scope.cancel()
        finally:
            self.decisions.stop()

    def _caught_up(self) -> None:
        self.caught_up = True

    # -- a request ---------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        principal = self._principal(headers.get("authorization"))
        if not isinstance(principal, Principal):
            await principal(scope, receive, send)
            return
        if not self.caught_up:
            refused = Unavailable("the gateway is starting: the read model is catching up with the store")
            await problem(refused, "/mcp")(scope, receive, send)  # 503 with Retry-After
            return
        scope["user"] = _user(principal)
        scope.setdefault("state", {})[_PRINCIPAL] = principal
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            send = self._opening(send, principal)
        await self.manager.handle_request(scope, receive, send)
        if session_id is not None and scope["method"] == "DELETE":
            self.gateway.closed(session_id)

    def _principal(self, authorization: str | None) -> Any:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return _refused(Unauthenticated("a bearer token is required (Authorization: Bearer TOKEN): a token "
                                            "with the call scope bound to a subject, made by 'toolcat token create "
                                            "NAME --subject agent:A --scope call'"), 401, "")
        principal = self.tokens.principal(token.strip())
        if principal is None or not self.tokens.still_valid(principal):
            return _refused(Unauthenticated("the bearer token is not one this server knows (or it expired or was "
                                            "revoked)"), 401, ', error="invalid_token"')
        if "call" not in principal.scopes or principal.subject is None:
            return _refused(Forbidden(f"the token of '{principal.name}' cannot open an MCP session: it needs the "
                                      "call scope and a subject (toolcat token create NAME --subject agent:A "
                                      "--scope call)", token=principal.name, scope="call"), 403,
                            ', error="insufficient_scope"')
        return principal

    def _opening(self, send: Send, principal: Principal) -> Send:
        """`send`, noting the session the response opens (its Mcp-Session-Id header) for the gateway."""
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", []):
                    if key.decode("latin-1").lower() == SESSION_HEADER:
                        session_id = value.decode("latin-1")
                        self.gateway.opened(session_id, self._caller(principal, session_id))
            await send(message)
        return sending

    def _caller(self, principal: Principal, session_id: str | None) -> Caller:
        assert principal.subject is not None
        return Caller(subject=principal.subject, token=principal.name, session_id=session_id,
                      still_valid=lambda: self.tokens.still_valid(principal),
                      end=(lambda: self._end(session_id, principal)) if session_id else None)

    def _caller_of(self, ctx: Any) -> Caller | None:
        """(The gateway, for a request of a session) who asks: the principal this request authenticated."""
        request = ctx.request
        principal = request.scope.get("state", {}).get(_PRINCIPAL) if request is not None else None
        if not isinstance(principal, Principal):
            return None
        return self._caller(principal, request.headers.get(SESSION_HEADER))

    async def _end(self, session_id: str, principal: Principal) -> None:
        """End the session as a client's DELETE ends it (the SDK's own way: its streams close)."""
        scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "DELETE",
                        "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
                        "root_path": "", "headers": [(SESSION_HEADER.encode(), session_id.encode())],
                        "client": None, "server": None, "user": _user(principal)}

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            del message
        await self.manager.handle_request(scope, receive, send)


class McpFront:
    """ASGI middleware, the outermost of `toolcat serve`'s own: hands `/mcp` (GET, POST, DELETE) straight
    to the endpoint with the checks every request gets (Host and Origin, size limits, the request's
    latency under route `/mcp`), past FastAPI's routing, which tried each of the other routes before
    `/mcp` on every call (a tenth of the gateway's CPU per call in py-spy). Anything else (HEAD, another
    path, lifespan) goes on to the application as before."""

    METHODS = frozenset({"GET", "POST", "DELETE"})

    def __init__(self, app: Any, endpoint: McpEndpoint, names: frozenset[str], metrics: ServerMetrics) -> None:
        self.app, self.metrics = app, metrics
        self.endpoint = HostCheck(SizeLimits(endpoint), names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp" or scope["method"] not in self.METHODS:
            await self.app(scope, receive, send)
            return
        await timed(self.metrics, self.endpoint, scope, receive, send, lambda: "/mcp")


def _user(principal: Principal) -> AuthenticatedUser:
    """What the SDK binds a session to: the token's name and subject (the token itself stays here)."""
    return AuthenticatedUser(AccessToken(token=principal.key or principal.name, client_id=principal.name,
                                         scopes=sorted(principal.scopes), subject=principal.subject))


def _refused(error: Any, status: int, challenge: str) -> Any:
    return problem(error, "/mcp", headers={"WWW-Authenticate": _CHALLENGE + challenge}, status=status)
