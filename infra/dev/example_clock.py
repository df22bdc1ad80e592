"""The clock of the bundled example histories: a line `@ 2026-01-05T09:00:00+00:00` in an example file
sets the time at which the following commands are recorded, each event one second after the one before,
so the demo's history spans months, as a real catalog's does. Times only move forward."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timedelta

from domain.base import RECORDING_CLOCK
from domain.errors import UsageError

DIRECTIVE = "@"
STEP = timedelta(seconds=1)


class ExampleClock:
    def __init__(self) -> None:
        self.now: datetime | None = None

    def set(self, text: str) -> None:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            raise UsageError(f"example clock time {text!r} has no UTC offset")
        if self.now is not None and moment <= self.now:
            raise UsageError(f"example clock time {text} is not after {self.now.isoformat()}")
        self.now = moment - STEP

    def __call__(self) -> datetime:
        assert self.now is not None
        self.now += STEP
        return self.now

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Events triggered inside the block are recorded at this clock's times (once it has been set)."""
        token = RECORDING_CLOCK.set(self if self.now is not None else None)
        try:
            yield
        finally:
            RECORDING_CLOCK.reset(token)
