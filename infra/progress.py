"""Progress of long work (a rebuild, a replay, a read catching up thousands of events, a follower), told
on stderr so it never mixes with the answer on stdout.

On a terminal one line is rewritten in place and ended (a newline) before the answer is printed, so the
two never run together. Anywhere else (a pipe, a file, a CI log) a whole line is written every few
seconds, and for followers every so many events too. Work that ends within a second says nothing."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple, Protocol, TextIO


class Position(Protocol):
    position: int
    events: int


class Reached(NamedTuple):
    """Where work that keeps no `Tracking` is: its last position and the events it handled so far."""
    position: int
    events: int


Head = Callable[[], int | None]


class Progress:
    """A callable taking the work's position after each batch (a `Tracking`). `head` answers the position
    the work is heading for (None: unknown), asked at most once per report; `every` is the seconds between
    lines off a terminal, `per_events` (followers) a count of events that also calls for a line."""

    def __init__(self, what: str, head: Head = lambda: None, stream: TextIO | None = None,
                 every: float = 5.0, per_events: int | None = None, quiet_for: float = 1.0,
                 terminal: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.what, self.head, self.stream = what, head, stream or sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.every, self.per_events, self.clock = every, per_events, clock
        self.started = clock()
        self.quiet_until = self.started + quiet_for
        self.last_line: float | None = None
        self.first: Position | None = None
        self.reported_events = 0
        self.drawn = False

    def __call__(self, reached: Position) -> None:
        now = self.clock()
        if self.first is None:
            self.first = reached
        if now < self.quiet_until or not self._due(now, reached):
            return
        self.last_line, self.reported_events = now, reached.events
        text = self.describe(reached, now)
        if self.terminal:
            self.stream.write(f"\r{text}\x1b[K")
            self.drawn = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _due(self, now: float, reached: Position) -> bool:
        if self.last_line is None:
            return True
        interval = 0.2 if self.terminal else self.every
        many = self.per_events is not None and reached.events - self.reported_events >= self.per_events
        return now - self.last_line >= interval or many

    def describe(self, reached: Position, now: float) -> str:
        """'rebuild: position 12000 of 20000 (60%), 12000 events, 2000 events/s' (with a known head: the lag)."""
        done = reached.events - (self.first.events if self.first else 0)
        rate = done / max(now - self.started, 1e-6)
        head = self.head()
        where = f"position {reached.position}"
        if head:
            where += f" of {head} ({min(1.0, reached.position / head):.0%}, lag {max(0, head - reached.position)})"
        return f"{self.what}: {where}, {reached.events} events, {rate:,.0f} events/s"

    def finish(self) -> None:
        """End the terminal's progress line, so that what is printed next starts on a line of its own."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


@contextmanager
def reporting(what: str, quiet: bool, head: Head = lambda: None, **options: object) -> Iterator[Progress | None]:
    """A `Progress` for the duration of the block (None when `quiet`: machines asked for --json), its line
    ended when the block ends, however it ends."""
    if quiet:
        yield None
        return
    progress = Progress(what, head, **options)  # type: ignore[arg-type]
    try:
        yield progress
    finally:
        progress.finish()
