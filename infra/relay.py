"""The relay: the store's notification log → Kafka `toolcat.events`, from its own tracking position.

The position advances only after the broker acknowledged every envelope of a page, so a crash or a
stopped broker never loses an event; it may publish one twice (up to the two pages in flight), and
consumers ignore repeats by position.
A lock file keeps one relay per home.
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, NamedTuple

from consumers.kafka_io import Producer, Sent
from domain.catalog import Catalog
from domain.errors import Conflict, Unavailable
from infra.kafka_clients import is_broker_error
from infra.progress import Reached
from projections.catchup import history_reader
from projections.canonical import GENESIS_HASH
from projections.envelope_bytes import Published, publish_all

Notify = Callable[[str], None]

# How soon a following relay looks at the store again after it published something. A look is one
# indexed SQLite query (well under a millisecond), while the follow poll (0.2 s) alone would add up to
# 200 ms to every command's way to a Kafka-fed read model.
QUICK_POLL_SECONDS = 0.005
# For this long after it last published, a following relay keeps looking that soon: commands come in
# bursts with short gaps (a writer's pause, another process holding the core), and backing off at the first
# empty look put a 40–80 ms sleep in front of the next command (the p99 of written → read by the relay).
QUICK_WINDOW_SECONDS = 1.0


def next_pause(pause: float, published: int, idle_seconds: float, poll_seconds: float) -> float:
    """How long a following relay waits before its next look: soon while events came within the quick
    window, then twice as long after each empty look, up to `poll_seconds` (an idle relay looks only that
    often)."""
    if published or idle_seconds < QUICK_WINDOW_SECONDS:
        return QUICK_POLL_SECONDS
    return min(pause * 2, max(poll_seconds, QUICK_POLL_SECONDS))


def _stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


class RelayState:
    """Where the relay is: the last published position and its chain hash, in a small file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> tuple[int, str]:
        if not self.path.exists():
            return 0, GENESIS_HASH
        saved = json.loads(self.path.read_text())
        return int(saved["position"]), str(saved["hash"])

    def save(self, position: int, head: str) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"position": position, "hash": head}))
        os.replace(temporary, self.path)


class RelayLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: IO[str] | None = None

    def __enter__(self) -> RelayLock:
        self.handle = open(self.path, "w")  # noqa: SIM115 - held for the relay's lifetime
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            self.handle.close()
            raise Conflict(f"another relay is already running for this home ({self.path})") from error
        return self

    def __exit__(self, *exc: object) -> None:
        if self.handle:
            self.handle.close()


def chain_head(catalog: Catalog, position: int, page: int = 5000) -> tuple[int, str]:
    """The chain head just before `position` (the last event below it and its hash)."""
    read, last, head = history_reader(catalog), 0, GENESIS_HASH
    while last < position - 1:
        records = [r for r in read(last, page) if r.position < position]
        if not records:
            break
        chained = publish_all(records, last, head)
        last, head = chained[-1].position, chained[-1].hash
    return last, head


class _InFlight(NamedTuple):
    """A page sent to the broker, not yet acknowledged."""
    sent: Sent
    position: int
    head: str
    count: int


class Relay:
    def __init__(self, catalog: Catalog, make_producer: Callable[[], Producer], topic: str, state: RelayState,
                 page_size: int = 2000, notify: Notify = _stderr,
                 progress: Callable[[Reached], None] | None = None, ack_seconds: float = 30.0) -> None:
        self.catalog, self.make_producer, self.topic, self.state = catalog, make_producer, topic, state
        self.page_size, self.notify, self.progress = page_size, notify, progress
        self.ack_seconds = ack_seconds
        # the stored rows read directly where the store is a plain SQLite file (as the catch-up reads them)
        self.read = history_reader(catalog)
        self._producer: Producer | None = None
        self._published = 0  # in this run, for progress

    def _send(self, messages: list[Published]) -> Sent:
        if self._producer is None:
            self._producer = self.make_producer()
        return self._producer.send(self.topic, ((m.key, m.value) for m in messages))

    def relay_available(self) -> int:
        """Publish every stored event after the saved position; returns how many were published.

        Pipelined: a page is sent, then the next one read, written and sent while the broker takes the
        first, and only then the first one's acknowledgements awaited and its position saved. The saved
        position so still only ever covers acknowledged events; a crash republishes at most two pages."""
        position, head = self.state.load()
        published, in_flight = 0, None
        while True:
            records = self.read(position, self.page_size)
            sending = None
            if records:
                messages = publish_all(records, position, head)  # each event's JSON written once
                position, head = messages[-1].position, messages[-1].hash
                sending = _InFlight(self._send(messages), position, head, len(messages))
            if in_flight is not None:
                published += self._acknowledged(in_flight, last=sending is None)
            if sending is None:
                return published
            in_flight = sending

    def _acknowledged(self, page: _InFlight, last: bool) -> int:
        """Waits for the broker to take a page (raises Unavailable otherwise), then saves its position."""
        page.sent.wait(self.ack_seconds, last=last)
        self.state.save(page.position, page.head)
        self._published += page.count
        if self.progress:
            self.progress(Reached(page.position, self._published))
        return page.count

    def run(self, follow: bool, retry_seconds: float, poll_seconds: float = 0.2,
            should_stop: Callable[[], bool] = lambda: False) -> int:
        """Relay until caught up (or forever with `follow`), retrying an unreachable broker."""
        total, failing_since, delay, pause = 0, None, 0.5, QUICK_POLL_SECONDS
        last_published = time.monotonic()
        while not should_stop():
            try:
                published = self.relay_available()
                total += published
                if failing_since is not None:
                    self.notify("the broker is reachable again; relaying resumed")
                failing_since, delay = None, 0.5
                if not follow:
                    return total
                now = time.monotonic()
                last_published = now if published else last_published
                pause = next_pause(pause, published, now - last_published, poll_seconds)
                time.sleep(pause)
            except Exception as error:  # the client libraries raise many error types; all mean "not published"
                if not is_broker_error(error):
                    raise
                self._reset_producer()
                failing_since = failing_since or time.monotonic()
                waited = time.monotonic() - failing_since
                if not follow and waited > retry_seconds:
                    raise Unavailable(f"the Kafka broker did not accept events for {waited:.0f}s: {error}; "
                                      f"the relay stopped at position {self.state.load()[0]}") from error
                self.notify(f"the broker is unavailable ({type(error).__name__}: {error}); "
                            f"retrying in {delay:.1f}s from position {self.state.load()[0]}")
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        return total

    def _reset_producer(self) -> None:
        if self._producer is not None:
            try:
                self._producer.close(timeout=1)
            except Exception:  # noqa: BLE001 - a broken producer may fail to close; it is dropped anyway
                pass
        self._producer = None

    def close(self) -> None:
        self._reset_producer()
