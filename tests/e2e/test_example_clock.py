"""The bundled examples carry their own clock (`@ TIME` lines), so the demo's history spans months and
questions by date mean something; only code writing an example history can set it."""
from __future__ import annotations

from pathlib import Path

import pytest

from domain.errors import UsageError
from infra.dev.demo import EXAMPLES, script, script_lines
from infra.dev.example_clock import ExampleClock
from tests.support import ok, run_in_process, toolcat_environ, toolcat_in_process


def test_the_examples_span_months_and_their_clock_only_moves_forward() -> None:
    for name in ("tyrum", "spring-voyage"):
        # given an example file, when its clock lines are read
        commands = script(EXAMPLES / f"{name}.toolcat")
        times = [moment for moment, _ in commands if moment is not None]
        # then the first command has a time, the times span months, and the commands are the same without them
        assert commands[0][0] is not None
        assert times == sorted(times) and times[0][:7] != times[-1][:7]
        assert script_lines(EXAMPLES / f"{name}.toolcat") == [args for _, args in commands]


def test_events_written_under_the_clock_are_recorded_at_its_times(home: Path) -> None:
    clock = ExampleClock()
    clock.set("2026-03-02T09:00:00+00:00")
    # when two commands are written under the example clock
    with clock.recording():
        run_in_process(home, [["init"], ["unit", "create", "eng"]])
    # then their events are recorded one second apart from the clock's time
    with toolcat_environ("clock"):
        rows = ok(toolcat_in_process(home, "sql", "SELECT recorded_at FROM events ORDER BY position", "--json"))
    assert [r["recorded_at"][:19] for r in rows] == ["2026-03-02T09:00:00", "2026-03-02T09:00:01"]
    # and outside it, the wall clock records again
    run_in_process(home, [["unit", "create", "ops"]])
    with toolcat_environ("clock"):
        last = ok(toolcat_in_process(home, "sql", "SELECT max(recorded_at)::VARCHAR AS t FROM events", "--json"))
    assert not last[0]["t"].startswith("2026-03-02")


def test_the_clock_refuses_to_go_back() -> None:
    clock = ExampleClock()
    clock.set("2026-03-02T09:00:00+00:00")
    with pytest.raises(UsageError, match="is not after"):
        clock.set("2026-03-01T09:00:00+00:00")
