"""The next Kafka batch polled and parsed in a thread while the current one is applied.

DuckDB lets go of the interpreter lock while it runs a batch's SQL, so the next batch's fetch and its
envelope checks (orjson, SHA-256) then cost no wall time. One batch waits ahead at most: memory stays
bounded. The thread alone touches the consumer (kafka-python's is not thread-safe): applied offsets are
handed to it and committed before its next poll.
"""
from __future__ import annotations

import queue
import threading

from consumers.streaming import Parsed, StreamProjector

_CLOSE_SECONDS = 10.0  # a poll in progress ends within its timeout; past this the thread is left to die


class Prefetcher:
    def __init__(self, stream: StreamProjector, timeout_ms: int = 500) -> None:
        self.stream, self.timeout_ms = stream, timeout_ms
        self._ready: queue.Queue[Parsed | BaseException] = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._to_commit: dict[int, int] = {}
        stream.commit_offsets = self._commit_later
        self._thread = threading.Thread(target=self._run, name="kafka-prefetch", daemon=True)
        self._thread.start()

    def next(self, timeout: float) -> Parsed | None:
        """The next batch, parsed; None when none came within `timeout` seconds. Raises what the polling
        thread raised (a failed consumer)."""
        try:
            batch = self._ready.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(batch, BaseException):
            raise batch
        return batch

    def close(self) -> None:
        """Stops the thread (a batch it fetched but nobody applied is dropped: the read model's offsets
        say where the next run starts) and commits the offsets still waiting."""
        self._stop.set()
        self._thread.join(timeout=_CLOSE_SECONDS)
        if not self._thread.is_alive():
            self._commit_waiting()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._commit_waiting()
                messages = self.stream.poll(self.timeout_ms)
                if messages:
                    self._hand_over(self.stream.parse(messages))
        except BaseException as error:  # noqa: BLE001 - raised again in the applying thread
            self._hand_over(error)

    def _hand_over(self, item: Parsed | BaseException) -> None:
        while not self._stop.is_set():
            try:
                self._ready.put(item, timeout=0.1)
                return
            except queue.Full:  # the batch before is still being applied
                continue

    def _commit_later(self, offsets: dict[int, int]) -> None:
        with self._lock:
            for partition, offset in offsets.items():
                self._to_commit[partition] = max(offset, self._to_commit.get(partition, 0))

    def _commit_waiting(self) -> None:
        with self._lock:
            offsets, self._to_commit = self._to_commit, {}
        if offsets:
            self.stream.commit(offsets)
