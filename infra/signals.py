"""Stopping a long-running command cleanly."""
from __future__ import annotations

import signal
from typing import Any


class StopFlag:
    """Set by SIGTERM (Ctrl-C raises KeyboardInterrupt as usual), so a following loop finishes its batch and
    exits cleanly. Create it in the main thread: only that thread may install a signal handler."""

    def __init__(self) -> None:
        self.stopped = False
        signal.signal(signal.SIGTERM, self._stop)

    def _stop(self, *_: Any) -> None:
        self.stopped = True

    def __call__(self) -> bool:
        return self.stopped
