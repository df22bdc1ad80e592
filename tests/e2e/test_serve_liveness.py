"""Liveness that cannot be starved: reads waiting for a position hold no thread, so health, readiness and
metrics answer while a hundred of them wait; one client may hold only so many waits (429 beyond). And at
start the server listens at once: while it catches up, probes answer and reads are refused (503)."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.serving import Served, serving, start_server
from tests.support import ok, run_in_process, run_toolcat, toolcat_env

WAITERS = 100
FAR = {"min_position": 999_999, "timeout": 20}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("liveness") / "home"
    run_in_process(home, [["init"]])
    with serving(home, env={"TOOLCAT_MAX_WAITS_PER_CLIENT": str(WAITERS)}) as server:
        yield server


async def _probe_while_waiting(url: str) -> tuple[list[int], list[httpx.Response]]:
    limits = httpx.Limits(max_connections=WAITERS + 20)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        waits = [asyncio.create_task(client.get("/v1/tools", params=FAR)) for _ in range(WAITERS)]
        await asyncio.sleep(1.0)  # every wait has arrived and is waiting
        # when a probe asks while they wait, it is answered, and the waits are all still waiting
        probes = [await client.get(path) for path in ("/v1/health", "/v1/ready", "/metrics")]
        pending = sum(not wait.done() for wait in waits)
        # and one wait more than the client may hold is refused at once
        extra = await client.get("/v1/tools", params=FAR)
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        # and the waits of a client that went away are given back within a few seconds
        for _ in range(50):
            after = await client.get("/v1/tools", params={"min_position": 999_999, "timeout": 0.1})
            if after.status_code != 429:
                break
            await asyncio.sleep(0.2)
        assert after.status_code == 503, after.text
        return [pending, extra.status_code], [*probes, extra]


def test_probes_answer_while_a_hundred_reads_wait_and_one_more_wait_is_refused(served: Served) -> None:
    (pending, extra_status), answers = asyncio.run(_probe_while_waiting(served.url))
    health, ready, metrics, extra = answers
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert ready.status_code == 200 and metrics.status_code == 200
    assert pending == WAITERS  # the probes did not wait for the waits to end
    assert extra_status == 429 and extra.json()["code"] == "too_many_waits"
    assert extra.headers["retry-after"]


def test_a_wait_that_is_reached_answers_and_one_that_is_not_answers_503(served: Served) -> None:
    with served.client() as client:
        head = client.get("/v1/health").json()["position"]
        assert client.get("/v1/tools", params={"min_position": head}).status_code == 200
        late = client.get("/v1/tools", params={"min_position": head + 1000, "timeout": 0.5})
        assert late.status_code == 503 and late.json()["code"] == "unavailable" and late.headers["retry-after"]


# -- start-up: listening at once, ready once caught up (issue 28, finding 7) ----------------------------
# A history whose catch-up takes seconds (≈ 2–5 s here), so that the server is asked while it runs.
STARTUP_EVENTS = 30_000


def _long_history(home: Path) -> None:
    from infra.dev.workload import Shape, Workload
    from infra.settings import Settings
    from infra.wiring import open_catalog
    catalog = open_catalog(Settings(home=home))
    try:
        Workload(catalog, Shape.for_events(STARTUP_EVENTS)).run(events=STARTUP_EVENTS)
    finally:
        catalog.close()


def test_a_server_catching_up_at_start_answers_probes_and_refuses_reads_until_ready(tmp_path: Path) -> None:
    # Given a home holding a long history and no read model yet
    home = tmp_path / "home"
    _long_history(home)
    # When a server starts on it, and is asked as soon as it has recorded its address
    served = start_server(home, ready=False)
    try:
        with served.client() as client:
            ready, health, read = (client.get(path) for path in ("/v1/ready", "/v1/health", "/v1/tools"))
            # Then it answers at once: alive, not ready, with how far it has to go and when to ask again
            assert health.status_code == 200 and health.json()["status"] == "ok"
            assert ready.status_code == 503 and ready.headers["retry-after"], ready.text
            assert ready.json()["lag"] > 0 and ready.json()["store_head"] == STARTUP_EVENTS
            # And a read is refused at once (503 with Retry-After) rather than held until the catch-up ends
            assert read.status_code == 503 and read.headers["retry-after"], read.text[:300]
            assert read.json()["code"] == "unavailable" and read.json()["details"]["catching_up"] is True
            # And a command-line read asked meanwhile waits for the catch-up and answers
            env = toolcat_env("t", {"TOOLCAT_HOME": str(home)})
            resolved = ok(run_toolcat("resolve", "ns0.tool_0", "--timeout", "60", env=env, timeout=120))
            assert resolved["canonical_id"] == "ns0.tool_0"
            # And once caught up it is ready with no lag, and reads are answered
            deadline = time.monotonic() + 120  # a bound on the wait, not a timing assertion
            while (ready := client.get("/v1/ready")).status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert ready.status_code == 200 and ready.json()["lag"] == 0, ready.text
            assert client.get("/v1/tools", params={"limit": 1}).status_code == 200
    finally:
        assert served.stop() == 0, served.log.read_text()
