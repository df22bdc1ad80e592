"""Drift while serving: every TOOLCAT_MCP_SYNC_SECONDS `toolcat serve` reads each registered MCP server's
tools/list and plans it as `toolcat mcp sync NAME` would (infra/mcp/sync.py), on a thread of its own.
Shown as the `toolcat_mcp_drift` metric, under `mcp` in `/v1/health` and on the web page.

A drift found is held as a proposal, as `mcp sync NAME` (without --apply) holds one, and that is all the
check writes: applying stays a human step (`toolcat apply ID`). While the same upstream inventory
(its tools hash) still differs and its proposal is still open, later checks plan without holding again,
so an idle drift does not fill the store with proposals. A server that cannot be reached is an `error`
entry, never a failure of the server; the next check tries again.

Periodic only: listening for a server's `notifications/tools/list_changed` needs a session held open per
server, which this does not do yet."""
from __future__ import annotations

import argparse
import asyncio
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


class DriftWatch:
    def __init__(self, state: ServerState) -> None:
        self.state, self.every = state, state.settings.mcp_sync_seconds
        self.found: dict[str, dict[str, Any]] = {}  # server name → its last check (replaced whole, never edited)
        self._held: dict[str, tuple[str, str]] = {}  # server name → (tools hash, proposal id) held for it
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
            while True:
                await self._check_all()
                await asyncio.sleep(self.every)
        except asyncio.CancelledError:
            return

    async def _check_all(self) -> None:
        try:
            names = await self._on_writer(self._server_names)
        except Exception as error:  # noqa: BLE001 - the catalog unreadable now: say so, try at the next check
            log.warning("MCP drift check: cannot list the MCP servers: %s", error)
            return
        for gone in set(self.found) - set(names):
            del self.found[gone]
            self.state.metrics.forget_mcp_server(gone)
        for name in names:
            self._note(name, await self._check(name))

    async def _check(self, name: str) -> dict[str, Any]:
        from infra.mcp.sync import read_inventory_async
        checked_at = datetime.now(timezone.utc).isoformat()
        try:
            connection, tier = await self._on_writer(lambda ctx: self._entry(ctx, name))
            inventory = await read_inventory_async(name, connection, self.state.settings, io.StringIO())
            document = await self._on_writer(lambda ctx: self._plan(ctx, name, tier, inventory))
        except ToolcatError as error:  # unreachable, too slow, broke the protocol, removed meanwhile
            return {"name": name, "state": "error", "checked_at": checked_at, "error": error.message}
        except Exception as error:  # noqa: BLE001 - whatever else: shown, never the server's failure
            log.exception("MCP drift check of %s failed", name)
            return {"name": name, "state": "error", "checked_at": checked_at, "error": f"{type(error).__name__}: {error}"}
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
    def _server_names(ctx: Context) -> list[str]:
        return [row[0] for row in run(ctx.read_model(), "SELECT name FROM mcp_servers ORDER BY name")]

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


def _is_open(ctx: Context, proposal_id: str) -> bool:
    return not run(ctx.read_model(), "SELECT 1 FROM proposal_outcomes WHERE proposal_id = ?", [proposal_id])

