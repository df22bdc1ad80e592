"""The next Kafka batch polled and parsed in a thread while the current one is applied.

DuckDB lets go of the interpreter lock while it runs a batch's SQL, so the next batch's fetch and its
envelope checks (orjson, SHA-256) then cost no wall time. The polls parsed meanwhile are taken together
as the next batch; at most about a batch waits, so memory stays bounded. The thread alone touches the
consumer (kafka-python's is not thread-safe): applied offsets are handed to it and committed before a
later poll.
"""
from __future__ import annotations

import threading
import time

from consumers.streaming import Parsed, StreamProjector

_CLOSE_SECONDS = 10.0  # a poll in progress ends within its timeout; past this the thread is left to die
# The group's offsets are for lag monitoring only (the read model holds the ones that count): a
# follower's many small batches send them at most this often, not after each (each is a request the
# polling thread encodes and answers in Python, beside the batches' own work); all on close.
COMMIT_SECONDS = 1.0


class Prefetcher:
    def __init__(self, stream: StreamProjector, timeout_ms: int = 500) -> None:
        self.stream, self.timeout_ms = stream, timeout_ms
        self._ready = threading.Condition()
        self._batches: list[Parsed] = []  # polled and parsed, not yet taken
        self._failure: BaseException | None = None
        self._stop = threading.Event()
        self._to_commit: dict[int, int] = {}
        self._commit_after = 0.0  # time.monotonic() before which the group's offsets wait
        stream.commit_offsets = self._commit_later
        self._thread = threading.Thread(target=self._run, name="kafka-prefetch", daemon=True)
        self._thread.start()

    def next(self, timeout: float) -> Parsed | None:
        """Everything polled since the last call, as one batch (a follower's next batch holds what came
        while the last one was applied, not only what its first poll brought); None when nothing came
        within `timeout` seconds. Raises what the polling thread raised (a failed consumer)."""
        with self._ready:
            self._ready.wait_for(lambda: self._batches or self._failure, timeout)
            if self._failure is not None:
                raise self._failure
            batches, self._batches = self._batches, []
            self._ready.notify_all()
        return merged(batches) if batches else None

    def close(self) -> None:
        """Stops the thread (what it fetched and nobody applied is dropped: the read model's offsets say
        where the next run starts) and commits the offsets still waiting."""
        self._stop.set()
        with self._ready:
            self._ready.notify_all()
        self._thread.join(timeout=_CLOSE_SECONDS)
        if not self._thread.is_alive():
            self._commit_waiting()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if time.monotonic() >= self._commit_after:
                    self._commit_waiting()
                messages = self.stream.poll(self.timeout_ms)
                if messages:
                    self._hand_over(self.stream.parse(messages))
        except BaseException as error:  # noqa: BLE001 - raised again in the applying thread
            with self._ready:
                self._failure = error
                self._ready.notify_all()

    def _hand_over(self, parsed: Parsed) -> None:
        """Adds a parsed poll to what waits, once less than a batch waits (memory stays bounded)."""
        with self._ready:
            self._ready.wait_for(lambda: self._stop.is_set() or self._waiting() < self.stream.batch_events)
            self._batches.append(parsed)
            self._ready.notify_all()

    def _waiting(self) -> int:
        return sum(len(batch.envelopes) for batch in self._batches)

    def _commit_later(self, offsets: dict[int, int]) -> None:
        with self._ready:
            for partition, offset in offsets.items():
                self._to_commit[partition] = max(offset, self._to_commit.get(partition, 0))

    def _commit_waiting(self) -> None:
        with self._ready:
            offsets, self._to_commit = self._to_commit, {}
        if offsets:
            self.stream.commit(offsets)
            self._commit_after = time.monotonic() + COMMIT_SECONDS


def merged(batches: list[Parsed]) -> Parsed:
    """Consecutive parsed polls as one batch, up to the first bad message (nothing after it counts)."""
    if len(batches) == 1:
        return batches[0]
    envelopes, offsets = [], {}
    for batch in batches:
        envelopes += batch.envelopes
        for partition, offset in batch.offsets.items():
            offsets[partition] = max(offset, offsets.get(partition, 0))
        if batch.corrupt is not None:
            break
    envelopes.sort(key=lambda e: e.position)  # in order already for one partition; merged for several
    # Behind or not as of its last poll: a burst's last poll, caught up, settles the sets of all of it.
    return Parsed(envelopes, offsets, batch.corrupt, batch.full)
