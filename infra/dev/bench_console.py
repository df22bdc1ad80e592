"""`toolcat bench --only console`: the console's page budget (issue 32). On the 1,000-agent × 10,000-tool
bench catalog (the workload's `Shape.read_latency`, 24,082 events) every page renders in the server in
≤ 100 ms p99 and weighs ≤ 200 KB.

It builds the catalog in the bench's scratch home, projects it, picks what the pages ask about from the read
model (the agent with the largest set, one of median size, the tool most subjects hold, a past position in
the middle of the subjects' history and the time it was recorded), starts a real `toolcat serve` on it
(anonymous reads from loopback; the periodic chain check off, TOOLCAT_INTEGRITY_SECONDS=0: it is no part of
a page) and asks each page `requests` times, one after another, after one warm-up request (the first read
of a position gathers the console's names, the deprecations are kept per position).

For each page: `render_p99_ms`, the server's own time for the page from its `Server-Timing` header (read,
render; infra/http/web.py), which the budget is checked against; `cpu_ms`, the CPU time the server process
spent per request (psutil: steadier than wall-clock times where the machine is shared); `wall_p99_ms`, the
client's time over loopback (the server's plus HTTP's); `max_bytes`, the largest answer.
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psutil

from infra.dev.measures import percentiles
from infra.dev.workload import Shape, Workload
from infra.http.address import read_address
from infra.http.web import CATALOG_PAGE
from infra.settings import Settings, child_environment
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.projector import Projector
from projections.rows import select_rows

BUDGET_MS, BUDGET_BYTES = 100.0, 200_000
_TIMING = re.compile(r"(\w+);dur=([0-9.]+)")


def _segment(value: str) -> str:
    return quote(value, safe="")


def _iso(value: Any) -> str:
    """A recorded time as `?as_of=` takes it (to the microsecond: the bench writes its history within seconds,
    so a date alone would name all of it)."""
    return value.isoformat(timespec="microseconds")


def choices(settings: Settings) -> dict[str, Any]:
    """What the pages ask about, from the projected read model."""
    con = open_read_model(settings)
    try:
        head = select_rows(con, "SELECT max(position) AS p FROM events")[0]["p"]
        tools = select_rows(con, "SELECT count(*) AS n FROM tools")[0]["n"]
        sizes = select_rows(con, """
            SELECT subject, count(*) AS n FROM effective_tools WHERE subject_kind = 'agent'
            GROUP BY subject ORDER BY n DESC, subject""")
        largest, typical = sizes[0]["subject"], sizes[len(sizes) // 2]["subject"]
        tool = select_rows(con, """
            SELECT tool_id, count(*) AS n FROM effective_tools GROUP BY tool_id ORDER BY n DESC, tool_id LIMIT 1
            """)[0]["tool_id"]
        # A tool the typical agent holds by an explicit grant, inherited from a unit when one is (`why` then
        # walks the unit chain and lists the ways the grant shadows).
        why = select_rows(con, """
            SELECT tool_id FROM effective_tools WHERE subject_kind = 'agent' AND subject = $s
            ORDER BY provenance <> 'explicit', inherited_from IS NULL, tool_id LIMIT 1""", {"s": typical})[0]["tool_id"]
        # The two agents' history: from when both exist to now; a past moment in its middle.
        born = select_rows(con, "SELECT max(valid_from) AS p FROM agent_history WHERE name IN ($a, $b)",
                           {"a": largest, "b": typical})[0]["p"]
        past = born + (head - born) // 2
        times = {r["position"]: r["recorded_at"] for r in select_rows(
            con, "SELECT position, recorded_at FROM events WHERE position IN ($b, $p, $h)",
            {"b": born, "p": past, "h": head})}
    finally:
        con.close()
    return {"head": head, "later_page": max(1, min(60, -(-tools // CATALOG_PAGE))), "largest": f"agent:{largest}", "typical": f"agent:{typical}", "tool": tool,
            "why_tool": why, "past": past, "born_time": _iso(times[born]), "past_time": _iso(times[past]),
            "head_time": _iso(times[head])}


def pages(asked: dict[str, Any]) -> dict[str, str]:
    """The pages measured, by what they show."""
    def subject(name: str) -> str:
        return "/subjects/" + _segment(name)
    largest, typical, tool = subject(asked["largest"]), subject(asked["typical"]), "/tools/" + _segment(asked["tool"])
    family = asked["tool"].split(".")[0]
    return {
        "catalog, first page": "/",
        f"catalog, page {asked['later_page']}": f"/?page={asked['later_page']}",
        "search, everything": "/search",
        "search, ID prefix": f"/search?q={_segment(family)}.tool_2",
        "search, words, no match": "/search?q=send+a+message",
        "tool page, now": tool,
        "tool page, as of a past time": f"{tool}?as_of={_segment(asked['past_time'])}",
        "tool page, at a past position": f"{tool}?at={asked['past']}",
        "subject now, largest set": largest,
        "subject now, typical set": typical,
        "subject at a past position, largest": f"{largest}?at={asked['past']}",
        "subject as of a past time, typical": f"{typical}?as_of={_segment(asked['past_time'])}",
        "subject changes between two times, largest":
            f"{largest}?from={_segment(asked['born_time'])}&to={_segment(asked['head_time'])}",
        "subject changes, whole history, typical": f"{typical}?from=0&to={asked['head']}",
        "why, now, typical": f"{typical}/tools/{_segment(asked['why_tool'])}",
        "why, at a past position, typical": f"{typical}/tools/{_segment(asked['why_tool'])}?at={asked['past']}",
        "deprecations": "/deprecations",
        "MCP servers": "/mcp-servers",
        "gateway denials": "/gateway/denials",
    }


def _measure(client: httpx.Client, path: str, requests: int, server: psutil.Process) -> dict[str, Any]:
    answer = client.get(path)  # warm-up
    if answer.status_code != 200:
        raise RuntimeError(f"{path}: HTTP {answer.status_code}: {answer.text[:300]}")
    walls, renders, size = [], [], 0
    cpu = server.cpu_times()
    for _ in range(requests):
        started = time.perf_counter()
        answer = client.get(path)
        walls.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            raise RuntimeError(f"{path}: HTTP {answer.status_code}")
        timing = dict(_TIMING.findall(answer.headers.get("server-timing", "")))
        renders.append(float(timing["page"]))
        size = max(size, len(answer.content))
    spent = server.cpu_times()
    render, wall = percentiles(renders), percentiles(walls)
    return {"path": path, "render_median_ms": render["median_ms"], "render_p99_ms": render["p99_ms"],
            "cpu_ms": round((spent.user + spent.system - cpu.user - cpu.system) * 1000 / requests, 1),
            "wall_median_ms": wall["median_ms"], "wall_p99_ms": wall["p99_ms"], "max_bytes": size,
            "met": render["p99_ms"] <= BUDGET_MS and size <= BUDGET_BYTES}


def console_figures(root: Path, say: Any, shape: Shape | None = None, requests: int = 50) -> dict[str, Any]:
    """The console's pages on a catalog of `shape` (default the 1k agents × 10k tools one), built in
    root/console, through a real server."""
    settings = Settings(home=root / "console")
    catalog = open_catalog(settings)
    try:
        if not catalog.recorder.max_notification_id():
            Workload(catalog, shape or Shape.read_latency()).run()
        con = open_read_model(settings)
        try:
            catch_up(catalog, Projector(con), page_size=20000)
        finally:
            con.close()
    finally:
        catalog.close()
    asked = choices(settings)
    process = subprocess.Popen([sys.executable, "-m", "infra.cli", "--home", str(settings.home), "serve",
                                "--port", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=child_environment(integrity_seconds="0"))
    try:
        deadline = time.monotonic() + 300
        while (address := read_address(settings.home)) is None or address.pid != process.pid:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("toolcat serve did not start")
            time.sleep(0.1)
        server = psutil.Process(process.pid)
        measured = {}
        with httpx.Client(base_url=address.url, timeout=120, headers={"Accept": "text/html"}) as client:
            while client.get("/v1/ready").status_code != 200:
                time.sleep(0.2)
            for name, path in pages(asked).items():
                measured[name] = _measure(client, path, requests, server)
                say(f"bench: console {name}: " + _line(measured[name]))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    return {"requests": requests, "asked": asked, "budget_ms": BUDGET_MS, "budget_bytes": BUDGET_BYTES,
            "pages": measured, "missed": [name for name, figure in measured.items() if not figure["met"]]}


def _line(figure: dict[str, Any]) -> str:
    return (f"server p50 {figure['render_median_ms']:.1f} p99 {figure['render_p99_ms']:.1f} ms, "
            f"cpu {figure['cpu_ms']:.1f} ms, wall p99 {figure['wall_p99_ms']:.1f} ms, "
            f"{figure['max_bytes'] / 1000:.1f} KB: {'met' if figure['met'] else 'MISSED'}")
