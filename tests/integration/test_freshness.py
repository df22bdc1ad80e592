"""Freshness of reads across processes: a read sees every write that finished before it (read-your-writes),
`--min-position N` answers at N or later, waiting for a write still to come, and gives up with exit 6
when N never arrives within `--timeout`.

Every command is a real `toolcat` process on the same home (SQLite store, DuckDB read model).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from infra.cli import main
from tests.support import TOOLCAT, ok

REGISTER = ("--source", "builtin", "--group", "core", "--tier", "default", "--visibility", "public")


@pytest.fixture
def agent(home: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Given a catalog with two tools, a unit and agent:x (written in-process, for speed, and never read
    yet); returns the head position."""
    for key in list(os.environ):
        if key.startswith("TOOLCAT_"):
            monkeypatch.delenv(key)
    answers = []
    for args in (["init"], ["tool", "register", "files.read-all", *REGISTER],
                 ["tool", "register", "files.write-all", *REGISTER], ["unit", "create", "eng"],
                 ["agent", "create", "x", "--unit", "eng"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*args, "--home", str(home), "--json", "--actor", "setup"]) == 0, args
        answers.append(json.loads(out.getvalue()))
    return answers[-1]["position"]


def tool_ids(document: dict[str, Any]) -> list[str]:
    return [t["tool_id"] for t in document["tools"]]


def test_min_position_answers_at_or_after_the_write(agent: int, toolcat: Any) -> None:
    # the write has not been read by anyone yet: the read model is behind it
    n = ok(toolcat("grant", "add", "agent:x", "files.read-all"))["position"]
    assert n > agent

    answer = ok(toolcat("effective", "agent:x", "--min-position", str(n)))
    assert answer["position"] >= n
    assert tool_ids(answer) == ["files.read-all"]

    # an older position is answered at once, by the current read model
    older = ok(toolcat("effective", "agent:x", "--min-position", str(agent)))
    assert older["position"] >= n
    assert older == answer


def test_min_position_beyond_the_head_gives_up_with_exit_6(agent: int, toolcat: Any) -> None:
    # (pytest-timeout catches a command that never gives up; no timing assertion)
    late = toolcat("effective", "agent:x", "--min-position", str(agent + 50), "--timeout", "1")

    assert late.code == 6, f"exit {late.code}\nstdout: {late.stdout}\nstderr: {late.stderr}"
    assert late.stdout.strip() == ""
    error = late.error
    assert error["code"] == "unavailable"
    assert str(agent + 50) in error["message"]
    assert error["details"] == {"reached": agent, "wanted": agent + 50}
    # nothing was written, and the read model is still usable at the head
    assert ok(toolcat("effective", "agent:x"))["position"] == agent


def test_min_position_waits_for_a_write_still_to_come(agent: int, home: Path, toolcat: Any) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCAT_")}
    env.update(TOOLCAT_HOME=str(home), TOOLCAT_ACTOR="reader")
    # a reader asks for a position the store has not reached yet
    reader = subprocess.Popen([TOOLCAT, "effective", "agent:x", "--min-position", str(agent + 1),
                               "--timeout", "20", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        assert reader.poll() is None, "the reader did not wait for the position"
        written = ok(toolcat("grant", "add", "agent:x", "files.write-all"))["position"]
        assert written > agent
        stdout, stderr = reader.communicate(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert reader.returncode == 0, stderr
    answer = json.loads(stdout)
    assert answer["position"] >= written
    assert tool_ids(answer) == ["files.write-all"]


def test_a_read_in_another_process_sees_the_write_before_it(agent: int, installed_toolcat: Any) -> None:
    toolcat = installed_toolcat  # each command its own process, as operators run them
    expected: set[str] = set()
    for round_number in range(4):
        target = ("files.read-all", "files.write-all")[round_number % 2]
        verb = "add" if target not in expected else "revoke"
        written = ok(toolcat("grant", verb, "agent:x", target))["position"]
        expected ^= {target}

        # no --min-position: the read itself catches up with every write that finished before it
        answer = ok(toolcat("effective", "agent:x"))
        assert answer["position"] == written
        assert tool_ids(answer) == sorted(expected)
    assert expected == set()  # added, added, revoked, revoked
    written = ok(toolcat("grant", "add", "agent:x", "files.read-all"))["position"]
    rows = ok(toolcat("sql", "select max(position) as m, count(*) as n from events"))
    assert rows == [{"m": written, "n": written}]
