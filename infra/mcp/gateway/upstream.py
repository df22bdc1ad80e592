"""Upstream MCP sessions, pooled and kept open: one per server entry, opened at its first call (secret
references resolved then, inside the connection: infra/mcp/sessions.py) and shared by every agent's calls
(the SDK's client session multiplexes requests). A session that broke (the server crashed, its stream
closed) is forgotten and opened again at the next call; a changed server entry is opened anew.

Each session lives in a task of the pool's task group: the SDK's context managers must be left in the task
that entered them."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from domain.mcp_servers import Connection
from infra.mcp.sessions import McpUnavailable, Opened, open_session
from infra.settings import Settings

log = logging.getLogger("toolcat.gateway")


@dataclass
class _Held:
    connection: Connection
    ready: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    opened: Opened | None = None
    error: BaseException | None = None
    broken: bool = False


class UpstreamPool:
    def __init__(self, settings: Settings, group: TaskGroup) -> None:
        self.settings, self._group = settings, group
        self._held: dict[str, _Held] = {}
        self._lock = anyio.Lock()

    async def session(self, server: str, connection: Connection) -> Opened:
        """An open session to `server` (opened now when none is, or the held one broke or changed)."""
        held = self._held.get(server)
        if held is None or held.broken or held.connection != connection or (held.ready.is_set() and held.opened is None):
            async with self._lock:
                held = self._held.get(server)
                if held is None or held.broken or held.connection != connection or \
                        (held.ready.is_set() and held.opened is None):
                    if held is not None:
                        held.done.set()
                    held = _Held(connection)
                    self._held[server] = held
                    self._group.start_soon(self._hold, server, held)
        await held.ready.wait()
        if held.opened is None:
            assert held.error is not None
            self._forget(server, held)
            raise held.error
        return held.opened

    def broke(self, server: str, opened: Opened) -> None:
        """A call found the session broken: the next call opens another."""
        held = self._held.get(server)
        if held is not None and held.opened is opened:
            held.broken = True
            held.done.set()
            self._forget(server, held)

    def _forget(self, server: str, held: _Held) -> None:
        if self._held.get(server) is held:
            del self._held[server]

    async def _hold(self, server: str, held: _Held) -> None:
        try:
            async with open_session(server, held.connection, self.settings, posted=True) as opened:
                held.opened = opened
                held.ready.set()
                await held.done.wait()
        except McpUnavailable as error:
            held.error = error
        except Exception as error:  # noqa: BLE001 - e.g. an unresolved secret reference: said to the caller
            held.error = error
        finally:
            held.broken = True
            if held.opened is not None and held.error is not None:
                log.warning("MCP server '%s': the gateway's session ended: %s", server, held.error)
            held.ready.set()
            self._forget(server, held)

    def close(self) -> None:
        for held in list(self._held.values()):
            held.done.set()
        self._held.clear()


def answer_size(result: Any) -> int:
    """The size in bytes of an upstream answer as JSON (what the gateway bounds)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True))
