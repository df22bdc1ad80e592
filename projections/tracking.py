"""How far the read model got: the tracking row (the last applied position and hash) and the position
the effective sets are valid through (projections/effective/maintenance.py).

Apart from the projector so that a read that only asks how fresh the read model is (every command does,
infra/freshness.py) loads neither the projector's parts nor the domain's events.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb

from projections.canonical import GENESIS_HASH
from projections.rows import run

PROJECTION = "catalog"


@dataclass(frozen=True)
class Tracking:
    position: int
    hash: str
    events: int


def read_tracking(con: duckdb.DuckDBPyConnection) -> Tracking:
    return read_state(con)[0]


def read_state(con: duckdb.DuckDBPyConnection) -> tuple[Tracking, int]:
    """The tracking row and the position the effective sets are valid through, in one statement."""
    position, head, events, valid = run(con, """
        SELECT t.position, t.hash, t.events, (SELECT coalesce(max(position), 0) FROM effective_valid)
        FROM (SELECT 1) LEFT JOIN tracking t ON t.projection = ?""", [PROJECTION])[0]
    return (Tracking(position, head, events) if position is not None else Tracking(0, GENESIS_HASH, 0)), valid
