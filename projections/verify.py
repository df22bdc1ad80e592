"""`audit verify`: recompute the hash chain from the store and check it against everything that vouches
for it — the hashes the read model recorded when it projected each event, the seals in the store, and a
head the auditor kept outside the store.

The chain alone only proves the store agrees with itself: whoever rewrites one event can rewrite every
hash after it. So the answer says what the chain was compared with, and a chain compared with nothing is
"unverified", never "ok".
"""
from __future__ import annotations

import re
from typing import Any

import duckdb

from domain.catalog import Catalog
from domain.errors import IntegrityFailure, UsageError
from projections.catchup import history_reader
from projections.canonical import GENESIS_HASH
from projections.envelope import Envelope, chain_all
from projections.rows import scalar

PAGE = 5000
VERIFIED, UNVERIFIED = "verified", "unverified"
# The witnesses an answer names as absent when they vouched for nothing.
WITNESSES = ("read_model", "seals")
_HASH = re.compile(r"[0-9a-f]{64}")


def _projected(con: duckdb.DuckDBPyConnection | None, after: int, upto: int) -> list[tuple[int, str]]:
    if con is None:
        return []
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


def checked_head(value: str) -> str:
    """A head hash as `--expect-head` takes it: 64 hex digits (upper case accepted)."""
    head = value.strip().lower()
    if not _HASH.fullmatch(head):
        raise UsageError(f"--expect-head {value!r} is not a chain head: 64 hexadecimal digits, as "
                         "`audit seal` prints it", expect_head=value)
    return head


class ChainCheck:
    """Walks the chain once; each check names the first position where something disagrees."""

    def __init__(self, con: duckdb.DuckDBPyConnection | None, seals: dict[int, list[dict[str, Any]]],
                 contiguous: bool, expect_head: str | None = None) -> None:
        self.con, self.seals, self.contiguous, self.expect_head = con, seals, contiguous, expect_head
        self.position, self.head, self.count = 0, GENESIS_HASH, 0
        self.compared = 0  # events whose hash the read model had recorded
        self.expected_at: int | None = None  # where the head kept outside the store was found

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
                self.compared += 1
                pending = next(projected, None)
            self.position, self.head, self.count = envelope.position, envelope.hash, self.count + 1
            if envelope.hash == self.expect_head:
                self.expected_at = envelope.position
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
        if self.con is not None:
            extra = scalar(self.con, "SELECT min(position) FROM events WHERE position > ?", [self.position])
            if extra is not None:
                raise _vanished(extra)
        if self.expect_head is not None and self.expected_at is None:
            raise IntegrityFailure(
                f"the head kept outside the store ({self.expect_head}) is not in the history: an event at or "
                "before the position it was taken at was altered or removed, or this is another store",
                expected_head=self.expect_head, head=self.head, position=self.position)


def verify(catalog: Catalog, con: duckdb.DuckDBPyConnection | None, contiguous: bool = True,
           expect_head: str | None = None) -> dict[str, Any]:
    """Recompute the chain and compare it with the read model `con` as it stands (None: there is none),
    every seal, and `expect_head` (a head kept outside the store). The first disagreement raises
    IntegrityFailure (exit 5); a chain compared with nothing answers `ok: false, verdict: "unverified"`."""
    seals = _seals(catalog)
    sealed = sum(len(found) for found in seals.values())
    latest_seal = max(seals, default=None)
    check = ChainCheck(con, seals, contiguous, expect_head)
    read = history_reader(catalog)  # the stored rows read directly where they can be (as the catch-up)
    while records := read(check.position, PAGE):
        check.page(chain_all(records, check.position, check.head))
    check.finish()
    through = scalar(con, "SELECT max(position) FROM events") if con is not None else None
    compared = {
        "read_model": {"present": con is not None, "events": check.compared, "through": through},
        "seals": {"count": sealed, "latest": latest_seal},
        "expected_head": None if expect_head is None else {"hash": expect_head, "position": check.expected_at},
    }
    absent = [name for name, vouched in (("read_model", check.compared), ("seals", sealed)) if not vouched]
    verdict = UNVERIFIED if len(absent) == len(WITNESSES) and expect_head is None else VERIFIED
    return {"ok": verdict == VERIFIED, "verdict": verdict, "events": check.count, "head": check.head,
            "position": check.position, "seals": sealed, "compared": compared, "absent": absent}
