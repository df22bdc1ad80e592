"""Bring the read model up to date from the event store, page by page."""
from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

from domain.catalog import Catalog, HistoryRecord
from projections.ahead import read_ahead
from projections.envelope import chain_all
from projections.heap import release_free_memory
from projections.projector import Page, Projector, event_rows, upcast_all
from projections.tracking import Tracking
from projections.stored_rows import read_rows

Reader = Callable[[int, int], list[HistoryRecord]]

# Large pages: a batch's fixed cost (its transaction, its Arrow inserts, its dirty-subject queries) is
# spread over many events. Two pages are in memory at a time: the one applied and the one built ahead.
PAGE_SIZE = 20_000


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while catching up: envelopes and rows hold no cycles, and its
    passes over the many young objects of a page cost about a quarter of the time. Objects alive before
    are frozen, so the collections after it do not walk them again either."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def catch_up(catalog: Catalog, projector: Projector, page_size: int = PAGE_SIZE,
             until: int | None = None, progress: Callable[[Tracking], None] | None = None) -> Tracking:
    """Project every stored event after the tracking position (up to `until`), one page per batch.

    Pages are read, decoded, chained and upcast by a thread one page ahead (projections/ahead.py): that
    Python work overlaps DuckDB's statements for the page before, which run without the GIL.

    The effective sets are refreshed once: with the page when there is only one, else on their own after
    the last page (and so when an earlier catch-up stopped before refreshing them)."""
    with gc_paused():
        return _catch_up(catalog, projector, page_size, until, progress)


def _catch_up(catalog: Catalog, projector: Projector, page_size: int, until: int | None,
              progress: Callable[[Tracking], None] | None) -> Tracking:
    tracking = projector.tracking()
    pages = chained_pages(history_reader(catalog), tracking, page_size, until)
    applied, settled = 0, False
    # A follower's pass up to a head less than a page away is one page: nothing to overlap it with, so
    # no thread to start and hand it over (a thread and its GIL hand-offs per pass of a server).
    one_page = until is not None and until - tracking.position <= page_size
    with (nullcontext(pages) if one_page else read_ahead(pages)) as ahead:
        for page in ahead:
            # A catch-up of one page (a follower's) refreshes the sets in its transaction; a longer one
            # refreshes them after its last page is released: the set-based refresh is its memory peak.
            settled = page.last and applied == 0
            # The tracking this loop read or wrote last is current: nothing else applies on this connection
            # meanwhile (saves a follower's small pass a statement).
            tracking = projector.apply_page(page, settle=settled, tracking=tracking)
            applied += 1
            del page
            if progress:
                progress(tracking)
    if applied > 1:
        release_free_memory()
    if not settled:  # a page settled in its transaction left nothing dirty (two statements saved)
        projector.settle()
    return tracking


def chained_pages(read: Reader, tracking: Tracking, page_size: int, until: int | None) -> Iterator[Page]:
    """The stored events after `tracking`, a page at a time, chained, upcast and with their `events` rows
    built (all the Python a page needs before its handlers).
    Each page knows whether it is the last: one event past it is read before it is handed over (not the
    whole next page, which would be a third page in memory)."""
    position, head = tracking.position, tracking.hash
    records = _page(read, position, page_size, until)
    while records:
        envelopes = chain_all(records, position, head)
        position, head = envelopes[-1].position, envelopes[-1].hash
        last = len(records) < page_size or not _page(read, position, 1, until)
        del records  # built into the envelopes: not kept while the page is applied
        yield Page(envelopes, event_rows(envelopes), upcast_all(envelopes), last=last)
        records = [] if last else _page(read, position, page_size, until)


def history_reader(catalog: Catalog) -> Reader:
    """The stored rows read directly from a plain SQLite store (projections/stored_rows.py), else through
    the store's mapper (PostgreSQL, or a store the fast path cannot decode itself)."""
    store = catalog.plain_sqlite_store()
    if store is None:
        return lambda after, limit: catalog.history(after=after, limit=limit)
    path, table = store
    return lambda after, limit: read_rows(path, table, after, limit, catalog.decode_state)


def _page(read: Reader, after: int, page_size: int, until: int | None) -> list[HistoryRecord]:
    if until is not None and after >= until:
        return []
    records = read(after, page_size)
    return records if until is None else [r for r in records if r.position <= until]
