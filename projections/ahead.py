"""Run a producer of pages in a thread, a bounded number of pages ahead of its consumer.

The catch-up's reading, decoding and chaining is Python that holds the GIL; applying a page is mostly
DuckDB statements, which release it. On two cores the producer's next page is built while the consumer's
statements for the page before run. The queue bounds memory: `depth` pages wait, one more is being built.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_END = object()
# How often a producer blocked on a full queue looks whether its consumer has gone.
_POLL_SECONDS = 0.05


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


@contextmanager
def read_ahead(pages: Iterator[T], depth: int = 1) -> Iterator[Iterator[T]]:
    """Iterate `pages` in a thread; the caller iterates the pages it produced, in order. An error in the
    producer is raised in the caller, where its page would have come, as itself (an IntegrityFailure keeps
    its position), noted as raised by the reader. Leaving the block early (an error in the caller) stops
    the producer and waits for it, so no thread outlives the catch-up."""
    handoff: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: object) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for page in pages:
                if not offer(page):
                    return
            offer(_END)
        except BaseException as error:  # handed to the caller, who decides what it means
            offer(_Failed(error))

    def consume() -> Iterator[T]:
        while (item := handoff.get()) is not _END:
            if isinstance(item, _Failed):
                item.error.add_note("raised while reading ahead the next page of the catch-up")
                raise item.error
            yield item  # type: ignore[misc]

    producer = threading.Thread(target=produce, name="toolcat-read-ahead", daemon=True)
    producer.start()
    try:
        yield consume()
    finally:
        stop.set()
        producer.join()
        close = getattr(pages, "close", None)
        if close is not None:
            close()  # the generator's own cleanup, now that its thread is done with it
