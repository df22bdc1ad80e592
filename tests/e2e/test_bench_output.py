"""`toolcat bench` for people and for CI: a table of the budget without --json, and under --strict an exit
code of its own when a measured figure misses its target. The verdict is computed from the figures a run
measured; no test here asserts how fast anything ran."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra.cli.output import Reply, print_json, show, stdout_kept_for_the_answer
from infra.dev.bench_report import BUDGET_MISSED_EXIT, bench_summary
from tests.expected import check_expected
from tests.support import toolcat_environ, toolcat_in_process


def document(**met: bool | None) -> dict[str, Any]:
    """A bench answer whose budget figures are met, missed or not measured as given."""
    values = {True: 120000, False: 9800, None: None}
    return {"machine": {"cores": 2}, "events": 20000, "figures": {},
            "budget": {name: {"value": values[state], "met": state} for name, state in met.items()}}


MIXED = document(catch_up_projection_events_per_s=False, replay_peak_rss_mib=True, relay_vs_raw_producer=None)


def printed(reply: Reply) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show(reply, as_json=False)
    return out.getvalue()


def test_bench_prints_the_budget_as_the_expected_table(request: pytest.FixtureRequest) -> None:
    # given a run that missed one figure, met one and did not measure one
    human, code = bench_summary(MIXED, strict=False)
    # then people get a table of each figure with its result, and without --strict the run succeeds
    assert code == 0
    check_expected(request, "bench/budget_table.txt", printed(Reply(MIXED, human)))


@pytest.mark.parametrize("budget, exit_code", [
    (MIXED, BUDGET_MISSED_EXIT),
    (document(catch_up_projection_events_per_s=True, relay_vs_raw_producer=None), 0),
])
def test_strict_exits_non_zero_only_when_a_measured_figure_missed(budget: dict[str, Any], exit_code: int) -> None:
    # when the run is strict, then a missed figure (and only a missed one) fails it
    assert bench_summary(budget, strict=True)[1] == exit_code


def test_bench_without_json_prints_a_table(home: Path) -> None:
    # when a small bench runs without --json
    with toolcat_environ("bench"):
        run = toolcat_in_process(home, "bench", "--only", "append", "--events", "300", "--strict")
    # then it answers with the budget table (nothing of the budget was measured: nothing missed)
    assert run.code == 0, run.stderr
    assert "figure and target" in run.stdout and "not measured" in run.stdout
    assert "bench: append" in run.stderr  # its progress went to stderr


def test_while_the_bench_works_nothing_but_its_answer_reaches_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    # when, while the bench works, C code and a child process (its stages run in some) write to stdout's
    # file descriptor, as DuckDB's progress bar did
    with stdout_kept_for_the_answer():
        os.write(1, b"drawn by a library\n")
        subprocess.run([sys.executable, "-c", "print('said by a child stage')"], check=True)
    print_json({"figures": {}})
    # then stdout holds the one document, and what they wrote went to stderr
    out, err = capfd.readouterr()
    assert json.loads(out) == {"figures": {}}
    assert "drawn by a library" in err and "said by a child stage" in err


def test_the_cli_figure_times_the_command_line_beside_python_itself(home: Path) -> None:
    from infra.dev.bench_cli import cli_figures
    from infra.settings import Settings
    # when the cli figure is measured once, on the demo's tyrum catalog
    figures = cli_figures(home, Settings(home=home), runs=1)
    # then it gives the help, a resolve and an effective read beside `python -c pass` and importing DuckDB
    names = {"help_s", "resolve_s", "effective_s", "python_s", "import_duckdb_s"}
    assert set(figures) == names | {"cpu", "runs"}
    assert figures["runs"] == 1
    assert all(figures[name] > 0 for name in names)
    # and the CPU seconds of each, which a busy machine changes far less than the wall time
    assert set(figures["cpu"]) == names
    assert all(0 < figures["cpu"][name] <= figures[name] * 2 for name in names)  # two cores at most


def test_the_history_figure_asks_the_documented_history_questions_of_one_tool_and_one_subject(home: Path) -> None:
    from infra.dev.bench_history import history_figures
    from infra.settings import Settings
    from infra.wiring import open_read_model
    # given a small seeded history, projected
    with toolcat_environ("bench"):
        toolcat_in_process(home, "workload", "--events", "2000")
        toolcat_in_process(home, "project")
    open_read_model(Settings(home=home)).close()
    # when the history figure is measured on it
    figures = history_figures(Settings(home=home), lambda line: None)
    # then it asked of a tool held now and of an agent, through the sandbox `toolcat sql` uses, and the
    # questions over time answered rows (a join may find nothing lost)
    assert figures["asked"]["tool_id"] and figures["asked"]["subject"].startswith("agent:")
    assert figures["events"] >= 2000
    assert figures["tool"]["rows"] > 0 and figures["subject"]["rows"] > 0
    assert all(figures[name]["seconds"] > 0 and figures[name]["cpu_seconds"] >= 0
               for name in ("tool", "subject", "tool_join", "subject_join"))


def test_the_console_figure_times_every_page_kind_in_the_server_against_the_budget(tmp_path: Path) -> None:
    from infra.dev.bench import budget
    from infra.dev.bench_console import BUDGET_BYTES, BUDGET_MS, console_figures
    from infra.dev.workload import Shape
    # when the console figure is measured on a small seeded catalog, twice a page, through a real server
    figures = console_figures(tmp_path, lambda line: None, Shape.for_events(2000), requests=2)
    # then every page kind was asked about something that exists (each answered 200, or the figure failed)
    pages = figures["pages"]
    assert {"catalog, first page", "search, ID prefix", "tool page, now", "tool page, as of a past time",
            "subject now, largest set", "subject at a past position, largest", "subject as of a past time, typical",
            "subject changes between two times, largest", "why, now, typical", "deprecations", "MCP servers",
            "gateway denials"} <= set(pages)
    assert figures["asked"]["largest"].startswith("agent:") and 0 < figures["asked"]["past"] < figures["asked"]["head"]
    # and each page's time is the server's own (its Server-Timing header), beside the client's and a size
    for figure in pages.values():
        assert 0 < figure["render_p99_ms"] <= figure["wall_p99_ms"] and figure["max_bytes"] > 0
        assert figure["met"] == (figure["render_p99_ms"] <= BUDGET_MS and figure["max_bytes"] <= BUDGET_BYTES)
    # and the budget has one row a page, met as its figure is
    rows = budget({"console": figures})
    assert {name for name in rows if name.startswith("console ")} == {
        f"console {name}: p99_ms <= 100 and <= 200 KB" for name in pages}
    assert all(rows[f"console {name}: p99_ms <= 100 and <= 200 KB"]["met"] == figure["met"]
               for name, figure in pages.items())


def test_a_console_page_says_how_long_the_server_took_to_render_it(home: Path) -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from infra.http.web import web_router
    from infra.settings import Settings
    from infra.wiring import open_read_model
    # given a projected home and the console's catalog page on it
    with toolcat_environ("bench"):
        toolcat_in_process(home, "workload", "--events", "1000")
        toolcat_in_process(home, "project")
    con = open_read_model(Settings(home=home))
    app = FastAPI()
    app.include_router(web_router(con.cursor))
    # when a page is asked for, and a page that fails (a page number past the last)
    with TestClient(app) as client:
        shown, refused = client.get("/"), client.get("/?page=999")
    con.close()
    # then both say the server's time (wall and the thread's CPU) in a Server-Timing header
    for answer in (shown, refused):
        timing = dict(part.strip().split(";dur=") for part in answer.headers["server-timing"].split(","))
        assert set(timing) == {"page", "cpu"} and float(timing["page"]) > 0
    assert (shown.status_code, refused.status_code) == (200, 400)
