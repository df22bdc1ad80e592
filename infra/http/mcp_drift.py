"""Drift while serving: `toolcat serve` holds a session to each registered MCP server (on a thread of its
own) and reads its tools/list when the server sends `notifications/tools/list_changed` and every
TOOLCAT_MCP_SYNC_SECONDS (0: none of this), planning it as `toolcat mcp sync NAME` would
(infra/mcp/sync.py); the server list is looked at again as often, and a changed entry's session opened
again. Shown as the `toolcat_mcp_drift` metric, under `mcp` in `/v1/health` and on the web page.

A drift found is held as a proposal, as `mcp sync NAME` (without --apply) holds one, and that is all the
check writes: applying stays a human step (`toolcat apply ID`). While the same upstream inventory
(its tools hash) still differs and its proposal is still open, later checks plan without holding again,
so an idle drift does not fill the store with proposals. A server that cannot be reached is an `error`
entry, never a failure of the server; a session is opened again N seconds later."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

from domain.base import Meta
from domain.errors import ToolcatError
from infra.context import Context
from infra.http.state import ServerState
from projections.rows import run

log = logging.getLogger("toolcat.serve")
T = TypeVar("T")
# How often the check looks whether the server's catch-up at start has ended (polled: a stop cancels it).
_STARTING_POLL_SECONDS = 0.1


class DriftWatch:
    def __init__(self, state: ServerState) -> None:
        self.state, self.every = state, state.settings.mcp_sync_seconds
        self.found: dict[str, dict[str, Any]] = {}  # server name → its last check (replaced whole, never edited)
        self._held: dict[str, tuple[str, str]] = {}  # server name → (tools hash, proposal id) held for it
        self._watching: dict[str, tuple[int, asyncio.Task[None]]] = {}  # server name → (entry's position, task)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolcat-mcp-drift", daemon=True)

    @property
    def on(self) -> bool:
        return self.every > 0

    def start(self) -> None:
        if self.on:
            self._thread.start()
            self._started.wait()

    def stop(self) -> None:
        """Cancel the check under way (its server process is stopped by the SDK's client) and wait for it."""
        if self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        if self._thread.is_alive():
            self._thread.join()

    def report(self) -> dict[str, Any] | None:
        """What `/v1/health` shows under `mcp` (None: the check is off)."""
        if not self.on:
            return None
        found = dict(self.found)  # (the check's thread may replace an entry meanwhile)
        return {"every_seconds": self.every, "servers": [found[name] for name in sorted(found)]}

    # -- the thread ---------------------------------------------------------------------------------------
    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        self._started.set()
        try:
            while not self.state.caught_up.is_set():  # the servers are read from the caught-up catalog
                await asyncio.sleep(_STARTING_POLL_SECONDS)
            while True:
                await self._follow_entries()
                await asyncio.sleep(self.every)
        except asyncio.CancelledError:
            watching = [task for _, task in self._watching.values()]
            for task in watching:
                task.cancel()
            await asyncio.gather(*watching, return_exceptions=True)  # their sessions closed, processes stopped

    async def _follow_entries(self) -> None:
        """A session per registered server: opened for one added, opened again for one changed."""
        try:
            entries = await self._on_writer(self._entries)
        except Exception as error:  # noqa: BLE001 - the catalog unreadable now: say so, look again later
            log.warning("MCP drift check: cannot list the MCP servers: %s", error)
            return
        for name in set(self._watching) - entries.keys():
            self._watching.pop(name)[1].cancel()
            self.found.pop(name, None)
            self.state.metrics.forget_mcp_server(name)
        for name, version in entries.items():
            known = self._watching.get(name)
            if known is not None and known[0] == version and not known[1].done():
                continue
            if known is not None:
                known[1].cancel()
            self._watching[name] = (version, asyncio.create_task(self._watch(name), name=f"mcp-drift-{name}"))

    async def _watch(self, name: str) -> None:
        """Check at once, then on each `notifications/tools/list_changed` and every N seconds, on one held
        session; a session that failed is an error entry, opened again N seconds later."""
        from infra.mcp.sessions import open_session
        while True:
            changed = asyncio.Event()
            try:
                connection, tier = await self._on_writer(lambda ctx: self._entry(ctx, name))
                async with open_session(name, connection, self.state.settings, on_tools_changed=changed.set) as opened:
                    while True:
                        changed.clear()
                        self._note(name, await self._check(name, tier, opened))
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(changed.wait(), self.every)
            except ToolcatError as error:  # unreachable, too slow, broke the protocol, removed meanwhile
                self._note(name, _error(name, error.message))
            except Exception as error:  # noqa: BLE001 - whatever else: shown, never the server's failure
                log.exception("MCP drift check of %s failed", name)
                self._note(name, _error(name, f"{type(error).__name__}: {error}"))
            await asyncio.sleep(self.every)

    async def _check(self, name: str, tier: str, opened: Any) -> dict[str, Any]:
        """One check on the open session (a failure to list ends the session: the caller opens another)."""
        from infra.mcp.sync import list_inventory
        checked_at = _now()
        inventory = await list_inventory(name, opened, self.state.settings, io.StringIO())
        try:
            document = await self._on_writer(lambda ctx: self._plan(ctx, name, tier, inventory))
        except ToolcatError as error:  # a rule the plan cannot get past, the server removed meanwhile
            return _error(name, error.message, checked_at)
        drift = document["drift"]
        return {"name": name, "state": "drift" if drift else "in_sync", "checked_at": checked_at,
                "proposal_id": document["proposal_id"] if drift else None, "commands": len(document["commands"]),
                "violations": len(document["violations"]), "tools_hash": document["server"]["tools_hash"]}

    def _note(self, name: str, found: dict[str, Any]) -> None:
        self.found[name] = found
        self.state.metrics.mcp_check(name, found["state"])

    # -- on the server's writer (the one thread that runs commands on its catalog) --------------------------
    async def _on_writer(self, call: Callable[[Context], T]) -> T:
        def run_there() -> T:
            ctx = Context(self.state.settings, argparse.Namespace(json=True, kind="write"), backend=self.state)
            try:
                return call(ctx)
            finally:
                ctx.close()
        return await asyncio.wrap_future(self.state.writer.submit(run_there))

    @staticmethod
    def _entries(ctx: Context) -> dict[str, int]:
        """Each registered server, by the position of its last add or change."""
        return dict(run(ctx.read_model(), "SELECT name, valid_from FROM mcp_servers ORDER BY name"))

    @staticmethod
    def _entry(ctx: Context, name: str) -> tuple[Any, str]:
        server = ctx.catalog.mcp_server(name)
        return server.connection, server.tier

    def _plan(self, ctx: Context, name: str, tier: str, inventory: Any) -> dict[str, Any]:
        """The sync's plan; held as a proposal unless one for this inventory is held and still open."""
        from infra.mcp.sync import planned
        tools_hash = inventory.tools_hash()
        held = self._held.get(name)
        kept = held if held and held[0] == tools_hash and _is_open(ctx, held[1]) else None
        meta = Meta(actor=ctx.settings.default_actor(), reason=f"MCP drift of '{name}' seen by toolcat serve")
        document = planned(ctx, name, tier, inventory, "check" if kept else "plan", meta)
        if kept and document["drift"]:
            document["proposal_id"] = kept[1]
        elif document["proposal_id"]:
            self._held[name] = (tools_hash, document["proposal_id"])
        return document


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _error(name: str, message: str, checked_at: str | None = None) -> dict[str, Any]:
    return {"name": name, "state": "error", "checked_at": checked_at or _now(), "error": message}


def _is_open(ctx: Context, proposal_id: str) -> bool:
    return not run(ctx.read_model(), "SELECT 1 FROM proposal_outcomes WHERE proposal_id = ?", [proposal_id])

