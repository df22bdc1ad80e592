"""`audit verify`: recompute the hash chain from the store and compare it with what was projected."""
from __future__ import annotations

from typing import Any

import duckdb

from domain.catalog import Catalog
from domain.errors import IntegrityFailure
from projections.envelope import GENESIS_HASH, seal_all
from projections.rows import scalar

PAGE = 5000


def _projected(con: duckdb.DuckDBPyConnection, after: int, upto: int) -> list[tuple[int, str]]:
    return con.execute("SELECT position, hash FROM events WHERE position > ? AND position <= ? "
                       "ORDER BY position", [after, upto]).fetchall()


def _vanished(position: int) -> IntegrityFailure:
    return IntegrityFailure(f"event at position {position} is in the read model but no longer in the "
                            "event store", position=position)


def verify(catalog: Catalog, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Walk the whole store; the first position where store and read model disagree exits 5."""
    position, head, count = 0, GENESIS_HASH, 0
    while records := catalog.history(after=position, limit=PAGE):
        envelopes = seal_all(records, position, head)
        projected = iter(_projected(con, position, envelopes[-1].position))
        pending = next(projected, None)
        for envelope in envelopes:
            if pending is not None and pending[0] < envelope.position:
                raise _vanished(pending[0])
            if pending is not None and pending[0] == envelope.position:
                if pending[1] != envelope.hash:
                    raise IntegrityFailure(
                        f"event at position {envelope.position} was altered: its hash no longer matches "
                        "the one recorded when it was projected",
                        position=envelope.position, expected=pending[1], actual=envelope.hash)
                pending = next(projected, None)
            position, head, count = envelope.position, envelope.hash, count + 1
    extra = scalar(con, "SELECT min(position) FROM events WHERE position > ?", [position])
    if extra is not None:
        raise _vanished(extra)
    return {"ok": True, "events": count, "head": head}
