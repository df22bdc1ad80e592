"""Run a producer of pages in a thread, one page ahead of its consumer.

The catch-up's reading, decoding and chaining is Python that holds the GIL; applying a page is mostly
DuckDB statements, which release it. On two cores the producer's next page is built while the consumer's
statements for the page before run. At most `depth` pages exist at a time (the one the consumer is
applying and the one being built or waiting), so memory stays that of the pages in flight.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_END = object()
# How often a producer waiting for a free page looks whether its consumer has gone.
_POLL_SECONDS = 0.05


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


@contextmanager
def read_ahead(pages: Iterator[T], depth: int = 2) -> Iterator[Iterator[T]]:
    """Iterate `pages` in a thread; the caller iterates the pages it produced, in order. A page counts as
    in flight from the moment its building starts until the caller asks for the next one.

    An error in the producer is raised in the caller, where its page would have come, as itself (an
    IntegrityFailure keeps its position), with a note that the reader raised it. Leaving the block early
    (an error in the caller) stops the producer and waits for it: no thread outlives the catch-up."""
    handoff: queue.SimpleQueue[object] = queue.SimpleQueue()
    free = threading.Semaphore(depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            while True:
                while not free.acquire(timeout=_POLL_SECONDS):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                page = next(pages, _END)
                handoff.put(page)
                if page is _END:
                    return
        except BaseException as error:  # handed to the caller, who decides what it means
            handoff.put(_Failed(error))

    def consume() -> Iterator[T]:
        while (item := handoff.get()) is not _END:
            if isinstance(item, _Failed):
                item.error.add_note("raised while reading ahead the next page of the catch-up")
                raise item.error
            yield item  # type: ignore[misc]
            free.release()  # the caller is done with this page

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
