"""A long-running projector must not lock analysts out (DESIGN.md section 5), tested with real processes.

While `toolcat project --follow` runs and a writer process issues ~40 writes, a reader process keeps
running `toolcat effective` and `toolcat sql`, and an analyst process keeps opening the DuckDB file
read-only (retrying, boundedly, while a writer holds it). Every call must succeed and every answer must
be a whole state: the tracking position, the number of events and the last event position agree, and an
effective set is exactly the one the grants up to its position give. Afterwards the follower catches up
with the store on its own and stops cleanly on SIGTERM.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from infra.cli import main
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.support import PROJECT_ROOT, TOOLCAT

REGISTER = ("--source", "builtin", "--group", "core", "--tier", "default", "--visibility", "public")
QUERY = ("select (select position from tracking) p, (select count(*) from events) n, "
         "(select max(position) from events) m")
WRITES = 40

# Each child gets: home, stop-file path, output path (a JSON list of what it saw).
WRITER = r"""
import contextlib, io, json, sys, time
from infra.cli import main
home, stop, out, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
results = []
for i in range(count):
    args = [["grant", "add", "agent:x", "files.read-all"], ["unit", "create", f"u{i}", "--parent", "eng"],
            ["grant", "revoke", "agent:x", "files.read-all"], ["agent", "create", f"a{i}", "--unit", "eng"]][i % 4]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main([*args, "--home", home, "--json", "--actor", "writer"])
    results.append({"args": args, "code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()})
    time.sleep(0.3)
with open(out, "w") as f:
    json.dump(results, f)
"""

READER = r"""
import json, os, subprocess, sys, time
home, stop, out, toolcat, query = sys.argv[1:6]
results = []
while not os.path.exists(stop):
    for command in (["effective", "agent:x"], ["sql", query]):
        started = time.monotonic()
        done = subprocess.run([toolcat, *command, "--json"], capture_output=True, text=True, timeout=60)
        results.append({"command": command[0], "code": done.returncode, "stdout": done.stdout,
                        "stderr": done.stderr, "seconds": time.monotonic() - started})
with open(out, "w") as f:
    json.dump(results, f)
"""

ANALYST = r"""
import json, os, sys, time
import duckdb
home, stop, out, query = sys.argv[1:5]
path = os.path.join(home, "catalog.duckdb")
results = []
while not os.path.exists(stop):
    retries, con, problem = 0, None, None
    deadline = time.monotonic() + 15
    while con is None:
        try:
            con = duckdb.connect(path, read_only=True)
        except duckdb.IOException as error:
            if "lock" not in str(error).lower() or time.monotonic() > deadline:
                problem = repr(error)
                break
            retries += 1
            time.sleep(0.02)
    if con is None:
        results.append({"error": problem, "retries": retries})
        continue
    try:
        p, n, m = con.execute(query).fetchone()
        results.append({"p": p, "n": n, "m": m, "retries": retries})
    except Exception as error:
        results.append({"error": repr(error), "retries": retries})
    finally:
        con.close()
    time.sleep(0.05)
with open(out, "w") as f:
    json.dump(results, f)
"""


def in_process(home: Path, *args: str, write: bool = True) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*args, "--home", str(home), "--json", *(["--actor", "setup"] if write else [])]) == 0, args
    return json.loads(out.getvalue())


def store_head(home: Path) -> int:
    catalog = open_catalog(Settings(home=home, event_store_url=None))
    try:
        return catalog.recorder.max_notification_id() or 0
    finally:
        catalog.close()


def tracking_position(home: Path) -> int | None:
    """The read model's tracking position, read-only; None while a writer holds the file."""
    try:
        con = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
    except duckdb.IOException:
        return None
    try:
        return con.execute("select position from tracking").fetchone()[0]
    finally:
        con.close()


def spawn(body: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", body, *args], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str], name: str, timeout: float) -> None:
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"the {name} process did not finish within {timeout} s") from None
    assert process.returncode == 0, f"the {name} process failed ({process.returncode}):\n{stderr}"


def expected_tools(grants: list[tuple[int, int, str]], position: int) -> list[str]:
    """The effective set of agent:x at `position`: the last grant write at or before it decides."""
    last = [verb for _first, end, verb in grants if end <= position]
    return ["files.read-all"] if last and last[-1] == "add" else []


def test_readers_and_analysts_are_never_locked_out_nor_see_a_torn_state(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("TOOLCAT_"):
            monkeypatch.delenv(key)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCAT_")}
    env.update(TOOLCAT_HOME=str(home), TOOLCAT_ACTOR="reader")

    # given a catalog with agent:x, projected once
    in_process(home, "init")
    in_process(home, "tool", "register", "files.read-all", *REGISTER)
    in_process(home, "unit", "create", "eng")
    start = in_process(home, "agent", "create", "x", "--unit", "eng")["position"]
    assert in_process(home, "effective", "agent:x", write=False)["position"] == start

    stop = tmp_path / "stop"
    outputs = {name: tmp_path / f"{name}.json" for name in ("writer", "reader", "analyst")}
    follower = subprocess.Popen([TOOLCAT, "project", "--follow", "--json"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # when a writer, a reader and an analyst work at the same time as the follower
        reader = spawn(READER, str(home), str(stop), str(outputs["reader"]), TOOLCAT, QUERY, env=env)
        analyst = spawn(ANALYST, str(home), str(stop), str(outputs["analyst"]), QUERY, env=env)
        writer = spawn(WRITER, str(home), str(stop), str(outputs["writer"]), str(WRITES), env=env)
        try:
            finish(writer, "writer", timeout=40)
        finally:
            stop.touch()
            finish(reader, "reader", timeout=40)
            finish(analyst, "analyst", timeout=40)

        # then every write succeeded
        writes = json.loads(outputs["writer"].read_text())
        assert [w["code"] for w in writes] == [0] * WRITES, [w for w in writes if w["code"]]
        answers = [json.loads(w["stdout"]) for w in writes]
        grants = [(a["events"][0]["position"], a["position"], w["args"][1]) for w, a in zip(writes, answers)
                  if w["args"][0] == "grant"]
        spans = [(a["events"][0]["position"], a["position"]) for a in answers]
        head = store_head(home)
        assert head == answers[-1]["position"]

        # and every reader call succeeded, with a whole state
        reads = json.loads(outputs["reader"].read_text())
        failed = [r for r in reads if r["code"] != 0]
        assert not failed, failed
        assert {r["command"] for r in reads} == {"effective", "sql"}
        positions = []
        for read in reads:
            document = json.loads(read["stdout"])
            if read["command"] == "sql":
                (row,) = document
                assert row["p"] == row["n"] == row["m"], row
                positions.append(row["p"])
            else:
                assert document["subject"] == "agent:x"
                # `position` is the subject's last change; the state read is `read_model_position`
                position = document["read_model_position"]
                assert document["position"] <= position
                assert start <= position <= head
                assert not any(first <= position < end for first, end in spans), \
                    f"position {position} lies inside one write's events"
                assert [t["tool_id"] for t in document["tools"]] == expected_tools(grants, position), document
                positions.append(position)
        # a read sees every write finished before it: answers never go back in time
        assert positions == sorted(positions)
        assert positions[-1] > start

        # and every analyst query ran, read-only, on a whole state
        looks = json.loads(outputs["analyst"].read_text())
        broken = [look for look in looks if "error" in look]
        assert not broken, broken
        assert looks, "the analyst never got to look"
        for look in looks:
            assert look["p"] == look["n"] == look["m"], look
        assert [look["p"] for look in looks] == sorted(look["p"] for look in looks)

        # when nobody reads any more, the follower alone brings the read model to the store head
        head = in_process(home, "grant", "add", "agent:x", "files.read-all")["position"]
        deadline = time.monotonic() + 20
        while tracking_position(home) != head:
            assert follower.poll() is None, follower.communicate()
            assert time.monotonic() < deadline, f"the follower stayed at {tracking_position(home)}, not {head}"
            time.sleep(0.1)
    finally:
        # and it stops cleanly on SIGTERM
        if follower.poll() is None:
            follower.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = follower.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            follower.kill()
            stdout, stderr = follower.communicate()
            raise AssertionError(f"the follower ignored SIGTERM:\n{stderr}") from None
    assert follower.returncode == 0, stderr
    stopped = json.loads(stdout)
    assert stopped["position"] == head
    assert stopped["source"] == "store"
