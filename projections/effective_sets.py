"""Dirty effective sets and their refresh (DESIGN.md section 5).

Each batch records the subjects it may have changed in `effective_dirty`, in its own transaction. A
catch-up refreshes them once, at its end; a follower's one-batch pass refreshes them with the batch. The
refresh writes the marker `effective_valid` (the sets are valid through that position) with the sets, so a
crash in between leaves the marker behind the tracking row: readers see it and the next run repairs it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from projections import effective_deltas as deltas
from projections.effective import subjects_at
from projections.effective_ways import Reach, ToolFacts
from projections.materialize import rebuild_all, refresh
from projections.rows import among, insert_columns, run, scalar

# Above this share of every subject dirty, one set-based pass over all of them beats a per-subject refresh.
FULL_REBUILD_SHARE = 0.5
# At most this many dirty subjects are refreshed one by one whatever their share (both ways write the same
# sets; this saves a follower's small pass the statement that counts every subject).
SMALL = 20
_DIRTY = {"subject_kind": "VARCHAR", "subject": "VARCHAR", "position": "BIGINT"}


@dataclass
class BatchDirty:
    """What one batch may have changed (effective_part.py): the subjects it touched, (kind, name) → the
    position of the last event touching each, and its notes for effective_deltas.py (`general`: an event
    only the general query follows). Recorded in the tables when the sets are refreshed later; handed to
    `refresh_dirty` as they are when refreshed in the batch's own transaction."""
    touched: dict[tuple[str, str], int] = field(default_factory=dict)
    notes: list[dict[str, object]] = field(default_factory=list)
    general: bool = False
    reaching: Reach | None = None  # who the holders reach, as `touched` was worked out (the refresh reuses it)
    facts: ToolFacts | None = None  # the current tools' facts, as the projector keeps them

    def record(self, con: duckdb.DuckDBPyConnection) -> None:
        """Into `effective_dirty` and effective_deltas.py's table, for a refresh in a later transaction."""
        deltas.note(con, self.notes, self.general)
        record_dirty(con, self.touched)

    def explained(self) -> bool:
        """Whether the notes explain every touched subject (what effective_deltas._noted checks in SQL)."""
        return not self.general and set(self.touched.values()) <= {note["position"] for note in self.notes}


def record_dirty(con: duckdb.DuckDBPyConnection, touched: dict[tuple[str, str], int]) -> None:
    """Add (kind, name) → position of the last event touching it to the dirty subjects."""
    if touched:
        columns = {"subject_kind": [k for k, _ in touched], "subject": [n for _, n in touched],
                   "position": list(touched.values())}
        insert_columns(con, "effective_dirty", columns, _DIRTY)


def valid_through(con: duckdb.DuckDBPyConnection) -> int:
    """The position the materialized effective sets are valid through."""
    return scalar(con, "SELECT max(position) FROM effective_valid") or 0


def is_settled(con: duckdb.DuckDBPyConnection, position: int) -> bool:
    """Whether the sets are valid through `position` with nothing dirty left to refresh."""
    return valid_through(con) >= position and not scalar(con, "SELECT count(*) FROM effective_dirty")


def refresh_dirty(con: duckdb.DuckDBPyConnection, position: int, batch: BatchDirty | None = None) -> list[str]:
    """Refresh every dirty subject's set (inside the caller's transaction), queue the changed ones for the
    changelog with the position of the last event that touched each, and mark the sets valid through
    `position`. Returns the changed subjects (`kind:name`).
    `batch`: the dirty subjects of the one batch of this transaction, with nothing else dirty (the sets
    were valid through the position it follows); not written to the tables and read back (four statements
    of a follower's small pass). Default: the tables'."""
    changed: list[str] = []
    dirty = batch.touched if batch is not None else {(kind, name): at for kind, name, at in run(
        con, "SELECT subject_kind, subject, max(position) FROM effective_dirty GROUP BY ALL")}
    if dirty:
        # A follower's few dirty subjects skip counting everyone (a statement of each small pass).
        everyone = subjects_at(con) if len(dirty) > SMALL else []
        if len(dirty) > FULL_REBUILD_SHARE * len(everyone) > 0:
            changed = rebuild_all(con, everyone)
        else:  # the frequent small batches' own refresh when it applies, else the general one
            delta = _delta(con, batch)
            changed = delta if delta is not None else refresh(con, sorted(dirty))
        causes = {f"{kind}:{name}": at for (kind, name), at in dirty.items()}
        _queue(con, {subject: causes.get(subject, position) for subject in changed})
        if batch is None:
            run(con, "DELETE FROM effective_dirty")
    if batch is None:
        deltas.forget(con)
    # Updated in place (one statement of each pass); inserted when the table is empty.
    if not run(con, "UPDATE effective_valid SET position = $p", {"p": position})[0][0]:
        run(con, "INSERT INTO effective_valid VALUES ($p)", {"p": position})
    return sorted(changed)


def _delta(con: duckdb.DuckDBPyConnection, batch: BatchDirty | None) -> list[str] | None:
    """The delta's refresh (None: it does not apply) of the batch's notes, or of those in the table."""
    if batch is None:
        return deltas.refresh(con)
    return deltas.refresh(con, batch.notes, batch.reaching, batch.facts) if batch.explained() else None


def _queue(con: duckdb.DuckDBPyConnection, changed: dict[str, int]) -> None:
    """The outbox holds one row per subject: its final set is published once, whatever it went through."""
    if changed:
        run(con, f"DELETE FROM changelog_outbox WHERE {among('subject', 's', list(changed))}", {"s": sorted(changed)})
        columns = {"subject": list(changed), "position": list(changed.values())}
        insert_columns(con, "changelog_outbox", columns, {"subject": "VARCHAR", "position": "BIGINT"})
