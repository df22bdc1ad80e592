"""`audit verify`: recompute the hash chain from the store and check it against everything that vouches
for it — the hashes the read model recorded when it projected each event, and the seals in the store."""
from __future__ import annotations

from typing import Any

import duckdb

from domain.catalog import Catalog
from domain.errors import IntegrityFailure
from projections.envelope import GENESIS_HASH, Envelope, seal_all
from projections.rows import scalar

PAGE = 5000


def _projected(con: duckdb.DuckDBPyConnection, after: int, upto: int) -> list[tuple[int, str]]:
    return con.execute("SELECT position, hash FROM events WHERE position > ? AND position <= ? "
                       "ORDER BY position", [after, upto]).fetchall()


def _vanished(position: int) -> IntegrityFailure:
    return IntegrityFailure(f"event at position {position} is in the read model but no longer in the "
                            "event store", position=position)


def _seals(catalog: Catalog) -> dict[int, list[dict[str, Any]]]:
    """Every seal in the store, by the position it vouches for."""
    seals: dict[int, list[dict[str, Any]]] = {}
    after = 0
    while records := catalog.history(after=after, limit=PAGE, topics=("Audit.Sealed",)):
        for record in records:
            seals.setdefault(record.state["position"], []).append({**record.state, "at": record.position})
        after = records[-1].position
    return seals


class ChainCheck:
    """Walks the chain once; each check names the first position where something disagrees."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seals: dict[int, list[dict[str, Any]]],
                 contiguous: bool) -> None:
        self.con, self.seals, self.contiguous = con, seals, contiguous
        self.position, self.head, self.count = 0, GENESIS_HASH, 0

    def page(self, envelopes: list[Envelope]) -> None:
        projected = iter(_projected(self.con, self.position, envelopes[-1].position))
        pending = next(projected, None)
        for envelope in envelopes:
            if self.contiguous and envelope.position != self.position + 1:
                raise IntegrityFailure(f"position {self.position + 1} is missing from the event store (a hole "
                                       f"before position {envelope.position})", position=self.position + 1)
            if pending is not None and pending[0] < envelope.position:
                raise _vanished(pending[0])
            if pending is not None and pending[0] == envelope.position:
                if pending[1] != envelope.hash:
                    raise IntegrityFailure(
                        f"event at position {envelope.position} was altered: its hash no longer matches "
                        "the one recorded when it was projected",
                        position=envelope.position, expected=pending[1], actual=envelope.hash)
                pending = next(projected, None)
            self.position, self.head, self.count = envelope.position, envelope.hash, self.count + 1
            self._check_seals()

    def _check_seals(self) -> None:
        for seal in self.seals.pop(self.position, []):
            if seal["hash"] != self.head or seal["events"] != self.count:
                raise IntegrityFailure(
                    f"the seal recorded at position {seal['at']} does not match the history: an event at or "
                    f"before position {self.position} was altered or removed",
                    position=self.position, seal_position=seal["at"])

    def finish(self) -> None:
        if self.seals:
            first = min(self.seals)
            raise IntegrityFailure(f"a seal vouches for position {first}, which is no longer in the event store",
                                   position=first)
        extra = scalar(self.con, "SELECT min(position) FROM events WHERE position > ?", [self.position])
        if extra is not None:
            raise _vanished(extra)


def verify(catalog: Catalog, con: duckdb.DuckDBPyConnection, contiguous: bool = True) -> dict[str, Any]:
    """Recompute the chain; the first disagreement raises IntegrityFailure (exit 5)."""
    seals = _seals(catalog)
    check = ChainCheck(con, seals, contiguous)
    sealed = sum(len(found) for found in seals.values())
    while records := catalog.history(after=check.position, limit=PAGE):
        check.page(seal_all(records, check.position, check.head))
    check.finish()
    return {"ok": True, "events": check.count, "head": check.head, "seals": sealed}
