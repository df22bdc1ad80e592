"""Bring the read model up to date from the event store, page by page."""
from __future__ import annotations

from collections.abc import Callable

from domain.catalog import Catalog
from projections.envelope import chain_all
from projections.projector import Projector, Tracking

PAGE_SIZE = 2000


def catch_up(catalog: Catalog, projector: Projector, page_size: int = PAGE_SIZE,
             until: int | None = None, progress: Callable[[Tracking], None] | None = None) -> Tracking:
    """Project every stored event after the tracking position (up to `until`), one page per batch."""
    tracking = projector.tracking()
    while until is None or tracking.position < until:
        records = catalog.history(after=tracking.position, limit=page_size)
        if until is not None:
            records = [r for r in records if r.position <= until]
        if not records:
            break
        tracking = projector.apply(chain_all(records, tracking.position, tracking.hash), chained_here=True)
        if progress:
            progress(tracking)
    return tracking
