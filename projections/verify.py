"""`audit verify`: recompute the hash chain from the store and check it against everything that vouches
for it — the hashes the read model recorded when it projected each event, the seals in the store, and a
head the auditor kept outside the store.

The chain alone only proves the store agrees with itself: whoever rewrites one event can rewrite every
hash after it. So the answer says what the chain was compared with, and a chain compared with nothing is
"unverified", never "ok".
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import duckdb

from domain.catalog import Catalog
from domain.errors import IntegrityFailure, UsageError
from projections.catchup import history_reader
from projections.canonical import GENESIS_HASH
from projections.envelope import Envelope, chain_all
from projections.rows import registered, run, scalar

if TYPE_CHECKING:
    import pyarrow as pa

PAGE = 5000
ACCEPTED = "Audit.AlteredHistoryAccepted"
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
    overridden: set[int] = set()
    after = 0
    while records := catalog.history(after=after, limit=PAGE, topics=("Audit.Sealed", ACCEPTED)):
        for record in records:
            if record.topic == ACCEPTED:  # an operator accepted the history these seals disagree with
                overridden.update(record.state["seals"])
            else:
                seals.setdefault(record.state["position"], []).append({**record.state, "at": record.position})
        after = records[-1].position
    return {position: kept for position, found in seals.items()
            if (kept := [seal for seal in found if seal["at"] not in overridden])}


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


# -- a rebuild's check ---------------------------------------------------------------------------------------
# The columns of `events` a stored event's hash covers (the envelope's body); two rows that agree on them and
# on prev_hash have the same hash.
BODY = ("prev_position, originator_id, originator_version, type, type_version, recorded_at, actor, reason, "
        "idempotency_key, data")
CHECK_PAGE = 50_000


def _recorded(con: duckdb.DuckDBPyConnection, after: int, upto: int) -> pa.Table:
    """(position, prev_hash, hash, body: digest of the body) of positions in (after, upto], as Arrow."""
    return con.sql(f"SELECT position, prev_hash, hash, md5(concat_ws('|', {BODY})) AS body FROM events "
                   "WHERE position > $after AND position <= $upto", params={"after": after, "upto": upto}
                   ).to_arrow_table()


# The positions of `_recorded` rows (the old read model's) whose event in `events` (the rebuilt one's)
# vanished or changed: a changed body is an altered event; a changed hash on an unchanged link too (the
# hash itself). Joined in DuckDB, not compared in Python: a row tuple and a dict entry per event of both
# read models cost ≈ 5 s of a 1M-event rebuild.
_ALTERED = f"""
SELECT r.position, r.hash, e.hash FROM _toolcat_recorded r
LEFT JOIN (SELECT position, prev_hash, hash, md5(concat_ws('|', {BODY})) AS body FROM events
           WHERE position > $after AND position <= $upto) e ON e.position = r.position
WHERE e.position IS NULL OR e.body <> r.body
   OR (e.prev_hash IS NOT DISTINCT FROM r.prev_hash AND e.hash IS DISTINCT FROM r.hash)
ORDER BY r.position"""


def _accepted_seals(con: duckdb.DuckDBPyConnection) -> set[int]:
    """The seals (by the position of their own event) an accepted alteration overrides."""
    return {int(p) for (data,) in con.execute("SELECT data FROM events WHERE type = ?", [ACCEPTED]).fetchall()
            for p in json.loads(data)["seals"]}


def rebuild_disagreements(fresh: duckdb.DuckDBPyConnection, old: duckdb.DuckDBPyConnection | None,
                          upto: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Where a rebuilt read model `fresh` disagrees with what vouched for the history: the hashes the old
    read model `old` recorded (None: there was none) and the seals either of them holds. `altered` names
    each position whose event changed or vanished (old and new hash; new None when vanished); `seals` each
    seal that no longer matches, unless an accepted alteration already overrode it. Both empty: agreed.
    `upto`: compare only positions up to it (a replay that stopped there)."""
    altered: list[dict[str, Any]] = []
    if old is not None:
        last = scalar(old, "SELECT max(position) FROM events") or 0
        last = last if upto is None else min(last, upto)
        for after in range(0, last, CHECK_PAGE):
            page_end = min(after + CHECK_PAGE, last)
            with registered(fresh, "_toolcat_recorded", _recorded(old, after, page_end)):
                altered += [{"position": position, "old_hash": was, "new_hash": new} for position, was, new
                            in run(fresh, _ALTERED, {"after": after, "upto": page_end})]
    seals: dict[int, dict[str, Any]] = {}
    overridden = _accepted_seals(fresh) | (_accepted_seals(old) if old is not None else set())
    for con in (fresh, old):
        if con is None:
            continue
        for at, sealed, head, count in con.execute(
                "SELECT position, sealed_position, hash, events FROM seals ORDER BY position").fetchall():
            if at in overridden or at in seals or (upto is not None and at > upto):
                continue
            found = fresh.execute("SELECT hash, (SELECT count(*) FROM events WHERE position <= $p) FROM events "
                                  "WHERE position = $p", {"p": sealed}).fetchone()
            if found is None or found[0] != head or found[1] != count:
                seals[at] = {"seal_position": at, "position": sealed, "sealed_hash": head,
                             "hash": None if found is None else found[0]}
    return {"altered": altered, "seals": [seals[at] for at in sorted(seals)]}


def disagreement_message(found: dict[str, list[dict[str, Any]]], doing: str) -> str:
    """One sentence naming every position where the history disagrees with what vouched for it."""
    parts = []
    if found["altered"]:
        parts.append("the event(s) at position(s) " + ", ".join(str(a["position"]) for a in found["altered"])
                     + " no longer match the hashes the read model recorded")
    if found["seals"]:
        parts.append("the seal(s) recorded at position(s) " + ", ".join(str(s["seal_position"]) for s in found["seals"])
                     + " no longer match the history (vouching for position(s) "
                     + ", ".join(str(s["position"]) for s in found["seals"]) + ")")
    return f"{doing}: " + "; and ".join(parts)
