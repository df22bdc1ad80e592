"""The failure `toolcat serve` exists to end: readers beside a writer. For 30 s writes stream into a served
home while a reader loop asks the server for an effective set: no read fails and none meets a lock; each
read sees every write answered before it. The lag and latency are reported (never asserted on time)."""
from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

from tests.serving import serving, tokens
from tests.support import run_in_process

STORY = [["init", "--policy", "tyrum"], ["unit", "create", "eng"], ["agent", "create", "triage", "--unit", "eng"]]
SECONDS = 30.0


def test_readers_over_http_never_fail_while_writes_stream(home: Path, record_property: Any) -> None:
    run_in_process(home, STORY)
    keys = tokens(home, admin="read,write")
    answered = [0]  # the last position a write answered
    stop = threading.Event()
    with serving(home) as served:
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
        writer = threading.Thread(target=stream_writes)
        writer.start()
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
    lag = [line for line in metrics.splitlines() if line.startswith("toolcat_projection_lag")]
    report = {"reads": reads, "writes": answered[0], "failed": len(failures), "lock_errors": lock_errors,
              "behind_an_answered_write": behind, "read_ms_median": round(statistics.median(latencies), 2),
              "read_ms_max": round(max(latencies), 2), "lag_at_end": lag}
    record_property("serve_readers", report)
    print(f"\nreaders beside a writer for {SECONDS:.0f}s: {report}")
    assert reads > 10 and answered[0] > 10, report
    assert failures == [] and lock_errors == 0, report
    assert behind == 0, report
