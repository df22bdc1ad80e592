"""Finding 7 of issue 28: while the server catches up at start, `/v1/ready` says so at once (503 with
`Retry-After`, its position and how many stored events it has still to apply), and 200 once caught up;
reads that need more than is applied are refused at once meanwhile, not held until the catch-up ends.
(tests/e2e/test_serve_liveness.py asks a real server during a catch-up of seconds.)"""
from __future__ import annotations

import time

import anyio
import httpx
import pytest
from fastapi import FastAPI

from domain.errors import Unavailable
from infra.freshness import Freshness

from infra.http import operators
from infra.http.metrics import ServerMetrics
from infra.http.state import ServerState
from infra.settings import Settings
from tests.support import run_in_process


def _ready(state: ServerState) -> httpx.Response:
    app = FastAPI()
    app.state.server = state
    app.include_router(operators.router)

    async def ask() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
            return await client.get("/v1/ready")
    return anyio.run(ask)


def test_ready_answers_503_with_position_and_lag_until_caught_up(sqlite_settings: Settings) -> None:
    # Given a store holding events, and a server's state made but whose catch-up has not run
    run_in_process(sqlite_settings.home, [["unit", "create", "u"], ["agent", "create", "a", "--unit", "u"]])
    state = ServerState(sqlite_settings.model_copy(update={"follow_poll_seconds": 0.05}), "store", ServerMetrics())
    try:
        # When a probe asks whether it is ready
        behind = _ready(state)
        # Then it is told no at once, with how far it has to go and when to ask again
        head = state.store_head()
        assert behind.status_code == 503 and behind.headers["Retry-After"]
        assert behind.json() == {"ready": False, "position": state.position, "store_head": head,
                                 "lag": head - state.position}
        assert behind.json()["lag"] > 0
        # And once the follower has caught up, ready with no lag
        state.start()
        deadline = time.monotonic() + 60  # a bound on the wait, not a timing assertion
        while state.position < head and time.monotonic() < deadline:
            time.sleep(0.05)
        caught_up = _ready(state)
        assert caught_up.status_code == 200 and caught_up.json()["lag"] == 0
    finally:
        state.stop()


def test_reads_are_refused_at_once_while_catching_up_at_start_and_answered_after(sqlite_settings: Settings) -> None:
    # Given a store holding events, and a server's state whose first catch-up has not run
    run_in_process(sqlite_settings.home, [["unit", "create", "u"]])
    state = ServerState(sqlite_settings.model_copy(update={"follow_poll_seconds": 0.05}), "store", ServerMetrics())
    try:
        # When a read asks for the store's head (by default), or a position not applied yet, with time to wait
        for freshness in (Freshness(timeout=60), Freshness(min_position=state.store_head(), timeout=60)):
            with pytest.raises(Unavailable) as refused:
                with state.read_model(freshness):
                    pass
            # Then it is refused as the server starting, with how far the catch-up has to go (not a timeout)
            assert refused.value.details == {"catching_up": True, "position": state.position,
                                             "store_head": state.store_head(), "lag": state.store_head()}
        # And what is applied already can be read
        with state.read_model(Freshness(min_position=state.position)) as con:
            assert con.execute("SELECT 1").fetchone() == (1,)
        # And once caught up, the same read is answered
        state.start()
        assert state.caught_up.wait(60)
        with state.read_model(Freshness(timeout=60)) as con:
            assert con.execute("SELECT 1").fetchone() == (1,)
    finally:
        state.stop()
