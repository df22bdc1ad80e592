"""Read freshness: how fresh the read model a read answers from must be, and how it gets there.

The policy, "catch up on read": a read sees every write that finished before it. A read model that is
already current is opened read-only, so concurrent readers never queue behind each other; only a read
that finds it behind takes the write lock and catches up with the store in process. With a minimum
position (`--min-position N`) the read waits instead, bounded by a timeout, until the read model has
reached N (catching up meanwhile) and answers from there.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from domain.errors import Unavailable
from infra.settings import Settings
from infra.wiring import open_read_model, store_head
from projections.tracking import Tracking, read_state, read_tracking

if TYPE_CHECKING:  # a read whose read model is current loads neither the domain nor the projector
    from domain.catalog import Catalog


@dataclass(frozen=True)
class Freshness:
    """What a read asks for: the store's head (min_position None) or at least `min_position`, waiting at
    most `timeout` seconds for it."""
    min_position: int | None = None
    timeout: float = 10.0


def fresh_read_model(settings: Settings, catalog: Callable[[], Catalog], freshness: Freshness,
                     progress: Callable[[Tracking], None] | None = None) -> duckdb.DuckDBPyConnection:
    """A connection to a read model as fresh as asked; `catalog` is called only when the store is needed;
    `progress` hears of each batch a catch-up applies."""
    wanted = freshness.min_position
    con = _current_read_only(settings, wanted)
    if con is not None:
        return con
    from projections.catchup import catch_up  # only a read model that is behind needs the projector
    from projections.projector import Projector
    con = open_read_model(settings)
    try:
        if wanted is None or read_tracking(con).position < wanted:
            catch_up(catalog(), Projector(con), progress=progress)
        if wanted is not None:
            _wait_for(con, catalog, wanted, freshness.timeout)
    except BaseException:
        con.close()
        raise
    return con


def existing_read_model(settings: Settings) -> duckdb.DuckDBPyConnection | None:
    """The read model as it stands, opened read-only without catching up; None when there is none (no
    file, or one never migrated)."""
    if not settings.read_model_path.exists():
        return None
    con = open_read_model(settings, read_only=True)
    try:
        read_tracking(con)
    except duckdb.Error:  # not migrated yet: it holds nothing
        con.close()
        return None
    return con


def _current_read_only(settings: Settings, wanted: int | None) -> duckdb.DuckDBPyConnection | None:
    """The read model opened read-only when it already holds what is wanted, else None."""
    if not settings.read_model_path.exists():
        return None
    try:
        con = open_read_model(settings, read_only=True)
    except Unavailable:
        return None
    try:
        # Sets still to refresh (a catch-up that crashed) make the model behind: the write path repairs it.
        tracking, valid_through = read_state(con)
        reached = min(tracking.position, valid_through)
        target = wanted if wanted is not None else store_head(settings)
    except duckdb.Error:  # not migrated yet
        reached, target = -1, 0
    if reached >= target:
        return con
    con.close()
    return None


def _wait_for(con: duckdb.DuckDBPyConnection, catalog: Callable[[], Catalog], wanted: int, timeout: float
              ) -> None:
    from projections.catchup import catch_up
    from projections.projector import Projector
    deadline = time.monotonic() + timeout
    while (reached := read_tracking(con).position) < wanted:
        if time.monotonic() > deadline:
            raise not_reached(reached, wanted)
        time.sleep(0.1)
        catch_up(catalog(), Projector(con))


def not_reached(reached: int, wanted: int) -> Unavailable:
    """A read that asked for a position the read model did not reach in time."""
    return Unavailable(f"the read model reached position {reached}, not {wanted}, before the timeout",
                       reached=reached, wanted=wanted)
