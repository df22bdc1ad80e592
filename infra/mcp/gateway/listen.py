"""`subscriptions/listen` for the gateway: how a client of the 2026-07-28 protocol hears
`notifications/tools/list_changed`.

That protocol has no sessions (each request carries its own envelope), so a change cannot be sent to a
session as the handshake versions' `send_tool_list_changed` does: a client opens a listen stream instead,
and the change rides it. The SDK's `ListenHandler` fans one bus out to every stream; the gateway keeps one
bus per subject, so a stream hears of its own subject's set alone. Each stream is registered with the
gateway like a session (its token is looked at again and a revoked one ends the stream)."""
from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from domain.errors import ToolcatError


@dataclass(eq=False)
class Listening:
    """A subject's open listen streams: their bus, how many there are, and the set they were last told of."""

    subject: str
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)
    streams: int = 0
    seen: tuple[str, ...] | None = None


class Listeners:
    """The gateway's listen streams by subject. `serve` is the server's `on_subscriptions_listen`; `tell`
    publishes a change to the subjects it concerns."""

    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway  # infra.mcp.gateway.gateway.Gateway: its callers, sessions and source
        self.by_subject: dict[str, Listening] = {}

    async def serve(self, ctx: Any, params: Any) -> Any:
        """One listen stream of the caller's subject, until the client leaves or its token is revoked."""
        from infra.mcp.gateway.gateway import Caller, _revoked
        asked = self.gateway._need_caller(ctx)
        listening = self.by_subject.setdefault(asked.subject, Listening(asked.subject))
        if listening.seen is None:
            listening.seen = self._seen(asked.subject)
        listening.streams += 1
        key = f"listen:{uuid.uuid4().hex}"
        with anyio.CancelScope() as scope:
            async def end() -> None:
                scope.cancel()
            # Registered as a session without a handle (nothing reaches it but through its stream), so that
            # the gateway's token check ends it as it ends a session.
            self.gateway.opened(key, Caller(subject=asked.subject, token=asked.token, still_valid=asked.still_valid,
                                            end=end))
            try:
                return await ListenHandler(listening.bus)(ctx, params)
            finally:
                self.gateway.closed(key)
                listening.streams -= 1
                if listening.streams == 0:
                    self.by_subject.pop(asked.subject, None)
        raise _revoked()  # ended by the token check

    async def tell(self, subjects: list[str] | None, moved: Callable[[Listening], bool]) -> None:
        """Publish `list_changed` to the streams of `subjects` (None: of every subject whose set `moved`)."""
        for subject, listening in list(self.by_subject.items()):
            if subjects is not None and subject not in subjects or subjects is None and not moved(listening):
                continue
            await listening.bus.publish(ToolsListChanged())

    def _seen(self, subject: str) -> tuple[str, ...] | None:
        try:
            return tuple(self.gateway.source.subject_set(subject).tools)
        except ToolcatError:
            return None
