"""The failure `toolcat serve` exists to end: readers beside a writer. For 12 s writes stream into a served
home while a reader loop asks the server for an effective set and another process, plain `duckdb`, opens
`snapshot.duckdb` read-only again and again: no read fails and none meets a lock; each HTTP read sees every
write answered before it, and the snapshot moves on. The lag and latency of both are reported (never
asserted on time)."""
from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from tests.serving import serving, tokens
from tests.support import run_in_process, run_python_child

STORY = [["init", "--policy", "tyrum"], ["unit", "create", "eng"], ["agent", "create", "triage", "--unit", "eng"]]
SECONDS = 12.0
# A separate process opening the snapshot every 0.1 s: what it saw, one JSON document at the end.
SNAPSHOT_READER = """
import json, sys, time
import duckdb
path, seconds = sys.argv[1], float(sys.argv[2])
seen, failures, deadline = [], [], time.monotonic() + seconds
while time.monotonic() < deadline:
    try:
        with duckdb.connect(path, read_only=True) as con:
            position = con.execute("SELECT position FROM tracking").fetchone()[0]
            events = con.execute("SELECT count(*) FROM events").fetchone()[0]
        seen.append([time.time(), position, events])
    except Exception as error:
        failures.append(repr(error))
    time.sleep(0.1)
print(json.dumps({"seen": seen, "failures": failures}))
"""


def _snapshot_lag(seen: list[list[float]], answered: list[tuple[float, int]]) -> dict[str, Any]:
    """Per snapshot read: how many events behind the last write answered before it the snapshot was."""
    behind = [max((p for t, p in answered if t <= when), default=0) - position for when, position, _ in seen]
    return {"reads": len(seen), "events_behind_median": statistics.median(behind) if behind else None,
            "events_behind_max": max(behind, default=None)}


def test_readers_over_http_never_fail_while_writes_stream(home: Path, record_property: Any) -> None:
    run_in_process(home, STORY)
    keys = tokens(home, admin="read,write")
    answered = [0]  # the last position a write answered
    answered_at: list[tuple[float, int]] = []
    stop = threading.Event()
    with serving(home, env={"TOOLCAT_SNAPSHOT_SECONDS": "0.5"}) as served:
        def stream_writes() -> None:
            with served.client(keys["admin"]) as client:
                for index in range(1_000_000):
                    if stop.is_set():
                        return
                    tool = f"acme.tool{index}"
                    client.post("/v1/tool/register", json={"id": tool, "source": "plugin", "plugin": "acme",
                                                           "group": "extension", "tier": "advanced",
                                                           "visibility": "public"}).raise_for_status()
                    granted = client.post("/v1/grant/add", json={"subject": "agent:triage", "target": tool})
                    answered[0] = granted.raise_for_status().json()["position"]
                    answered_at.append((time.time(), answered[0]))
        snapshot_reads: list[Any] = []
        snapshot_reader = threading.Thread(target=lambda: snapshot_reads.append(run_python_child(
            SNAPSHOT_READER, str(home / "snapshot.duckdb"), str(SECONDS), timeout=SECONDS + 120)))
        writer = threading.Thread(target=stream_writes)
        writer.start()
        snapshot_reader.start()
        reads, failures, lock_errors, behind, latencies = 0, [], 0, 0, []
        with served.client(keys["admin"]) as reader:
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline and writer.is_alive():
                before = answered[0]
                started = time.perf_counter()
                response = reader.get("/v1/subjects/agent:triage/effective")
                latencies.append((time.perf_counter() - started) * 1000)
                reads += 1
                if response.status_code != 200:
                    failures.append(response.text)
                    lock_errors += "lock" in response.text.lower()
                elif response.json()["position"] < before:
                    behind += 1
            metrics = reader.get("/metrics").text
        stop.set()
        writer.join()
        snapshot_reader.join()
    child = snapshot_reads[0]
    assert child.returncode == 0, child.stderr
    snapshots = json.loads(child.stdout)
    lag = [line for line in metrics.splitlines() if line.startswith("toolcat_projection_lag")]
    report = {"reads": reads, "writes": answered[0], "failed": len(failures), "lock_errors": lock_errors,
              "behind_an_answered_write": behind, "read_ms_median": round(statistics.median(latencies), 2),
              "read_ms_max": round(max(latencies), 2), "lag_at_end": lag,
              "snapshot": {**_snapshot_lag(snapshots["seen"], answered_at), "failed": len(snapshots["failures"])}}
    record_property("serve_readers", report)
    print(f"\nreaders beside a writer for {SECONDS:.0f}s: {report}")
    assert reads > 10 and answered[0] > 10, report
    assert failures == [] and lock_errors == 0, report
    assert behind == 0, report
    assert snapshots["failures"] == [], snapshots["failures"][:5]
    # Each snapshot is one whole read model (every event up to its position), and it moved on meanwhile.
    assert all(events == position for _, position, events in snapshots["seen"]), snapshots["seen"][:5]
    assert len({position for _, position, _ in snapshots["seen"]}) > 1, report
