"""End to end: writes sent to a `toolcat serve` process at the same time, as a busy service sends them.
Each is answered as if it had been sent alone: none is refused as a conflict with another of the server's
own writes (they change the same subject), none fails, none is applied twice, and each is visible at the
position its answer names."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.serving import Served, serving, tokens
from tests.support import run_in_process

CLIENTS = 8
TOOLS = [f"tool.crowd.t{index}" for index in range(48)]
STORY = [["init", "--policy", "tyrum"], ["unit", "create", "crowd"],
         *(["tool", "register", name, "--source", "builtin", "--group", "core", "--tier", "default",
            "--visibility", "public"] for name in TOOLS)]


def _together(served: Served, token: str, path: str, bodies: list[dict[str, Any]],
              headers: dict[str, str] | None = None) -> list[tuple[int, Any]]:
    """POST every body at once from CLIENTS clients (each its own connection); (status, answer) in order."""
    clients = [served.client(token) for _ in range(CLIENTS)]
    try:
        def send(index: int) -> tuple[int, Any]:
            answer = clients[index % CLIENTS].post(path, json=bodies[index], headers=headers)
            return answer.status_code, answer.json()
        with ThreadPoolExecutor(CLIENTS) as pool:
            return list(pool.map(send, range(len(bodies))))
    finally:
        for client in clients:
            client.close()


def test_writes_to_one_subject_sent_together_each_succeed_once_and_are_visible_at_their_position(
        home: Path) -> None:
    run_in_process(home, STORY)
    keys = tokens(home, admin="read,write")
    with serving(home) as served, served.client(keys["admin"]) as admin:
        answers = _together(served, keys["admin"], "/v1/grant/add",
                            [{"subject": "unit:crowd", "target": name} for name in TOOLS])
        assert [status for status, _ in answers] == [200] * len(TOOLS), answers
        positions = [answer["position"] for _, answer in answers]
        assert len(set(positions)) == len(TOOLS)
        # Each grant is visible as of the position its answer names, and the set holds each tool once.
        for name, position in zip(TOOLS, positions):
            seen = admin.get("/v1/subjects/unit:crowd/effective", params={"min_position": position}).json()
            assert name in {tool["tool_id"] for tool in seen["tools"]}
        current = admin.get("/v1/subjects/unit:crowd/effective").json()
        assert sorted(tool["tool_id"] for tool in current["tools"]) == sorted(TOOLS)
        added = admin.post("/v1/sql", json={"query": "SELECT count(*) AS n FROM events "
                                                     "WHERE type = 'Grants.Added'"}).json()
        assert added == [{"n": len(TOOLS)}]


def test_one_idempotency_key_sent_together_writes_once_and_answers_each_as_the_first(home: Path) -> None:
    run_in_process(home, STORY)
    keys = tokens(home, admin="read,write")
    with serving(home) as served:
        answers = _together(served, keys["admin"], "/v1/grant/add",
                            [{"subject": "unit:crowd", "target": TOOLS[0]}] * 16, headers={"Idempotency-Key": "k1"})
        assert {status for status, _ in answers} == {200}, answers
        assert len({answer["position"] for _, answer in answers}) == 1
        with served.client(keys["admin"]) as admin:
            added = admin.post("/v1/sql", json={"query": "SELECT count(*) AS n FROM events "
                                                         "WHERE type = 'Grants.Added'"}).json()
        assert added == [{"n": 1}]
