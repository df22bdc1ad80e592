"""Progress of long work on stderr: whole lines every few seconds off a terminal, one line rewritten in
place on a terminal and ended before the answer, nothing for work that ends within a second. A clock the
test controls stands in for time."""
from __future__ import annotations

import io

from infra.progress import Progress, Reached


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def progress(terminal: bool, **options: object) -> tuple[Progress, io.StringIO, Clock]:
    stream, clock = io.StringIO(), Clock()
    return Progress("rebuild", lambda: 20000, stream, terminal=terminal, clock=clock, **options), stream, clock


def test_off_a_terminal_a_whole_line_every_few_seconds() -> None:
    # given a rebuild reporting to a pipe
    report, stream, clock = progress(terminal=False, every=5.0)
    # when batches are applied over twelve seconds
    for second, position in ((0.5, 2000), (2, 5000), (4, 8000), (7.5, 12000), (12.5, 20000)):
        clock.now = 100 + second
        report(Reached(position, position))
    report.finish()
    # then the first second is quiet, then a line at most every five seconds, each ending in a newline
    assert stream.getvalue().splitlines() == [
        "rebuild: position 5000 of 20000 (25%, lag 15000), 5000 events, 1,500 events/s",
        "rebuild: position 12000 of 20000 (60%, lag 8000), 12000 events, 1,333 events/s",
        "rebuild: position 20000 of 20000 (100%, lag 0), 20000 events, 1,440 events/s",
    ]


def test_a_follower_also_reports_every_so_many_events() -> None:
    report, stream, clock = progress(terminal=False, every=60.0, per_events=10_000)
    for second, position in ((2, 1000), (3, 5000), (4, 12000), (5, 13000)):
        clock.now = 100 + second
        report(Reached(position, position))
    assert [line.split(",")[0] for line in stream.getvalue().splitlines()] == [
        "rebuild: position 1000 of 20000 (5%", "rebuild: position 12000 of 20000 (60%"]


def test_on_a_terminal_the_line_is_rewritten_and_ended_before_the_answer() -> None:
    report, stream, clock = progress(terminal=True)
    for second, position in ((1.5, 5000), (3, 20000)):
        clock.now = 100 + second
        report(Reached(position, position))
    report.finish()
    written = stream.getvalue()
    assert written.count("\r") == 2 and written.endswith("\x1b[K\n")


def test_work_that_ends_within_a_second_says_nothing() -> None:
    report, stream, clock = progress(terminal=True)
    clock.now = 100.4
    report(Reached(20000, 20000))
    report.finish()
    assert stream.getvalue() == ""
