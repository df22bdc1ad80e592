"""Times the console's pages of a running `toolcat serve`, for docs/performance.md: each page asked for N
times, one request at a time from one client over loopback (so the time is the server's plus the
loopback's), with its p50, p99 and size.

On the 1,000-agent x 10,000-tool bench catalog (24,082 events):

    python -c "from infra.settings import Settings; from infra.wiring import open_catalog; \
from infra.dev.workload import Shape, Workload; \
Workload(open_catalog(Settings(home='/tmp/bench-console')), Shape.read_latency()).run()"
    toolcat --home /tmp/bench-console project
    toolcat --home /tmp/bench-console serve --port 8791 &
    python -m infra.dev.bench_console http://127.0.0.1:8791 agent:agent797 agent:agent715 ns26.tool_12
"""
from __future__ import annotations

import statistics
import sys
import time
from urllib.parse import quote

import httpx


def percentile_99(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def pages(largest: str, typical: str, tool: str, head: int) -> dict[str, str]:
    """The pages measured: a subject with the bench's largest set (627 tools) and a typical one."""
    def subject(name: str) -> str:
        return "/subjects/" + quote(name, safe="")
    return {
        f"subject now, largest ({largest})": subject(largest),
        f"subject now, typical ({typical})": subject(typical),
        "subject at a past position, largest": f"{subject(largest)}?at={head - 1000}",
        "subject as of today, typical": f"{subject(typical)}?as_of={time.strftime('%Y-%m-%d')}",
        "subject changes, last 2,000 positions, largest": f"{subject(largest)}?from={head - 2000}&to={head}",
        "subject changes, whole history, typical": f"{subject(typical)}?from=0&to={head}",
        "why (explain) now, typical": f"{subject(typical)}/tools/{quote(tool, safe='')}",
        "deprecations": "/deprecations",
        "mcp": "/mcp-servers",
        "gateway denials": "/gateway/denials",
    }


def main(url: str, largest: str, typical: str, tool: str, requests: int = 30) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        head = client.get("/v1/health").json()["position"]
        for name, path in pages(largest, typical, tool, head).items():
            times, size = [], 0
            for _ in range(requests):
                started = time.perf_counter()
                answer = client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                if answer.status_code != 200:
                    raise SystemExit(f"{path}: {answer.status_code}")
                size = len(answer.content)
            print(f"{name:48s} p50 {statistics.median(times):7.1f} ms  p99 {percentile_99(times):7.1f} ms  "
                  f"{size / 1024:6.1f} KB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], *map(int, sys.argv[5:6]))
