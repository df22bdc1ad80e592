"""The console's page budget (issue 32): on the 1,000-agent × 10,000-tool bench catalog (the workload's
`Shape.read_latency`, as `toolcat bench --only read_latency` builds it) every page of the search and tool
pages renders in ≤ 100 ms p99 and weighs ≤ 200 KB.

    python -m infra.dev.bench_console_tools --home /tmp/console-bench [--requests 200] [--json]

Builds the catalog in `--home` when it holds none (≈ 10 s), starts a real `toolcat serve` on it (anonymous
reads from loopback), and asks each page `--requests` times, one after another, after one warm-up request
each (the first read of a position gathers the console's names). Each time is measured by the client over
loopback, so it bounds the server's rendering from above; `cpu_ms` is the CPU time the server process spent
per request, which a machine shared with other work does not inflate as it does the wall-clock times. The
server's periodic chain check is off (TOOLCAT_INTEGRITY_SECONDS=0): it is no part of a page.
"""
from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from infra.dev.measures import percentiles
from infra.dev.workload import Shape, Workload
from infra.http.address import read_address
from infra.settings import Settings, child_environment
from infra.wiring import open_catalog

BUDGET_MS, BUDGET_BYTES = 100.0, 200_000


def pages(client: httpx.Client) -> dict[str, str]:
    """The pages measured, by what they show (a tool with grants, and a position in the middle)."""
    tool = client.get("/v1/tools", params={"limit": 1, "family": "ns17"}).json()["tools"][0]["canonical_id"]
    head = client.get("/v1/ready").json().get("position") or 0
    return {
        "catalog, first page": "/",
        "catalog, page 60": "/?page=60",
        "search, everything": "/search",
        "search, ID prefix": "/search?q=ns17.tool_2",
        "search, words, no match": "/search?q=send+a+message",
        "search, filters, page 100": "/search?tier=advanced&source=connector&page=100",
        "tool page, now": f"/tools/{tool}",
        "tool page, as of today": f"/tools/{tool}?as_of={time.strftime('%Y-%m-%d', time.gmtime())}",
        "tool page, at a past position": f"/tools/{tool}?at={head // 2}",
    }


def ensure_catalog(home: Path) -> None:
    if (home / "events.sqlite").exists():
        return
    catalog = open_catalog(Settings(home=home))
    try:
        Workload(catalog, Shape.read_latency()).run()
    finally:
        catalog.close()


def measure(url: str, path: str, requests: int, server: psutil.Process) -> dict[str, Any]:
    samples, size = [], 0
    with httpx.Client(base_url=url, timeout=120, headers={"Accept": "text/html"}) as client:
        answer = client.get(path)  # warm-up
        if answer.status_code != 200:
            raise RuntimeError(f"{path}: HTTP {answer.status_code}: {answer.text[:300]}")
        cpu = server.cpu_times()
        for _ in range(requests):
            started = time.perf_counter()
            answer = client.get(path)
            samples.append((time.perf_counter() - started) * 1000)
            size = max(size, len(answer.content))
        spent = server.cpu_times()
    cpu_ms = (spent.user + spent.system - cpu.user - cpu.system) * 1000 / requests
    figures = percentiles(samples)
    return {"path": path, **figures, "cpu_ms": round(cpu_ms, 1), "max_bytes": size,
            "met": figures["p99_ms"] <= BUDGET_MS and size <= BUDGET_BYTES}


def run(home: Path, requests: int) -> dict[str, Any]:
    ensure_catalog(home)
    process = subprocess.Popen([sys.executable, "-m", "infra.cli", "--home", str(home), "serve", "--port", "0"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=child_environment(integrity_seconds="0"))
    try:
        deadline = time.monotonic() + 600
        while (address := read_address(home)) is None or address.pid != process.pid:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("toolcat serve did not start")
            time.sleep(0.1)
        with httpx.Client(base_url=address.url, timeout=120) as client:
            while client.get("/v1/ready").status_code != 200:
                time.sleep(0.2)
            asked = pages(client)
        server = psutil.Process(process.pid)
        return {"requests": requests, "pages": {name: measure(address.url, path, requests, server)
                                                for name, path in asked.items()}}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m infra.dev.bench_console_tools", description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="the bench catalog's home (built when empty)")
    parser.add_argument("--requests", type=int, default=200, help="requests per page (default 200)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.home, args.requests)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, figure in result["pages"].items():
        print(f"{name:32} p50 {figure['median_ms']:7.1f} ms  p99 {figure['p99_ms']:7.1f} ms  "
              f"cpu {figure['cpu_ms']:6.1f} ms  {figure['max_bytes'] / 1000:6.1f} KB  {'met' if figure['met'] else 'MISSED'}  {figure['path']}")


if __name__ == "__main__":
    main()
