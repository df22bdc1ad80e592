"""`audit replay`: rebuild the history into a scratch read model and compare fingerprints."""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from domain.catalog import Catalog
from projections.catchup import PAGE_SIZE, catch_up
from projections.connection import connect
from projections.fingerprint import fingerprint
from projections.migrate import migrate
from projections.projector import Projector
from projections.tracking import Tracking, read_tracking
from projections.verify import rebuild_disagreements


def replay(catalog: Catalog, live: duckdb.DuckDBPyConnection, until: int | None = None,
           progress: Callable[[Tracking], None] | None = None, page_size: int = PAGE_SIZE,
           memory_limit: str = "512MB", deep: bool = False) -> dict[str, Any]:
    """Replay the store up to `until` (default: where the live read model is) into a scratch file."""
    target = read_tracking(live).position if until is None else min(until, read_tracking(live).position)
    with tempfile.TemporaryDirectory(prefix="toolcat-replay-") as scratch_dir:
        # A replay must fit the audit budget (1 GiB RSS) whatever the history's size: DuckDB spills to
        # disk beyond `memory_limit` (the setting duckdb_memory_limit) instead of growing towards its
        # default of 80 % of the machine's memory, and not preserving insertion order lets its
        # aggregations and inserts spill too.
        scratch = connect(str(Path(scratch_dir) / "replay.duckdb"),
                          config={"memory_limit": memory_limit, "preserve_insertion_order": False})
        try:
            migrate(scratch)
            reached = catch_up(catalog, Projector(scratch), page_size=page_size, until=target,
                               progress=progress)
            replayed = fingerprint(scratch, reached.position, deep)
            # what vouched for the history (the live model's recorded hashes, the seals), as a rebuild checks
            found = rebuild_disagreements(scratch, live, target)
        finally:
            scratch.close()
    # A store that holds less than the read model has seen can never match it.
    live_print = fingerprint(live, target, deep)
    return {"position": target, "replayed_position": reached.position, "fingerprint": replayed,
            "live_fingerprint": live_print, **found,
            "matches": replayed == live_print and reached.position == target and not (found["altered"] or found["seals"])}
