"""Maintaining the materialized effective sets (DESIGN.md section 5): `Maintenance`, the one entry point,
held by the projector.

Each batch records the subjects it may have changed (dirty.py) in `effective_dirty`, in its own
transaction. A catch-up refreshes them once, at its end; a follower's one-batch pass refreshes them with
the batch, from memory. The refresh is the SQL of the rule (effective_set.sql through rebuild.py: one
set-based pass when most subjects are dirty, else the dirty subjects'), unless a fast path (`FastPaths`)
explains the batch. It writes the marker `effective_valid` (the sets are valid through that position)
with the sets, so a crash in between leaves the marker behind the tracking row: readers see it and the
next run repairs it.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb

from projections.effective import fast_grants
from projections.effective.dirty import BatchDirty, DirtyPart
from projections.effective.fast_ways import WAY_TOOLS_CHANGED_BY, WayTools
from projections.effective.reach import REACH_EVENTS, Reach
from projections.effective.reads import subjects_at
from projections.effective.rebuild import rebuild_all, recompute
from projections.rows import among, insert_columns, run, scalar

# Above this share of every subject dirty, one set-based pass over all of them beats a per-subject refresh.
FULL_REBUILD_SHARE = 0.5
# At most this many dirty subjects are refreshed one by one whatever their share (both ways write the same
# sets; this saves a follower's small pass the statement that counts every subject).
SMALL = 20


@dataclass(frozen=True)
class FastPaths:
    """The Python speed-ups beside the SQL of the rule, each switched off by the setting
    `effective_fast_paths` (infra/settings.py). Off, the same batch is refreshed by the SQL alone;
    tests/integration/test_effective_fast_paths.py holds both ways to the same rows, documents and changed
    subjects."""
    # Each pays for itself (alternated on a 20k-event home, CPU of a follower's pass with it off / on):
    grants: bool = True  # a batch of grants added alone: fast_grants.py (8 grants: ≈ 375 / 123 ms)
    ways: bool = True    # grants revoked, bindings, allowlists: fast_ways.rerank (≈ 814 / 369 ms)
    kept: bool = True    # who holders reach and the tools' facts kept from batch to batch (≈ 157 / 123 ms)

    @classmethod
    def named(cls, names: list[str] | tuple[str, ...]) -> FastPaths:
        """The fast paths of these names (the setting's value) on, the others off."""
        return cls(**{name: name in names for name in cls.__dataclass_fields__})


NO_FAST_PATHS = FastPaths(grants=False, ways=False, kept=False)


class Maintenance:
    """Everything the projector asks of effective sets: a dirty-tracking part for each batch, the refresh of
    the dirty sets (with the batch, or at a catch-up's end), and what it keeps from one batch to the next.
    The projector holds one per connection, and tells it of each commit and rollback."""

    def __init__(self, fast: FastPaths = FastPaths()) -> None:
        self.fast = fast
        # How the last refresh went: "fast" (a fast path), "subjects" (the SQL for the dirty subjects),
        # "all" (the set-based rebuild), or None (nothing was dirty); tests and the bench read it.
        self.last: str | None = None
        self._reach: Reach | None = None    # who holders reach, as the last batch committed worked it out
        self._facts: WayTools | None = None  # the current tools' facts, as the last batch committed read them
        # A `general` the committed batches noted in fast_grants.py's table, not yet refreshed: the batches
        # after it note nothing (the refresh they wait for runs the general query whatever they note).
        self._general_noted = False

    def part(self, types: set[str]) -> DirtyPart:
        """The dirty-tracking part of a batch of these event types, with what is still true of the last."""
        if not self.fast.kept:
            return DirtyPart(general_noted=self._general_noted)
        return DirtyPart(self._reach if REACH_EVENTS.isdisjoint(types) else None,
                         self._facts if WAY_TOOLS_CHANGED_BY.isdisjoint(types) else None, self._general_noted)

    def refresh(self, con: duckdb.DuckDBPyConnection, dirty: BatchDirty, position: int, settle: bool,
                alone: bool) -> list[str]:
        """Refresh the sets a batch touched (`dirty`) through `position` (`alone`: from memory, nothing else
        was dirty), or record them for a later refresh and, with `settle`, refresh every dirty set now; the
        subjects whose set changed."""
        if alone:
            return self.refresh_dirty(con, position, dirty)
        noting = self.fast.grants or self.fast.ways
        dirty.record(con, notes=noting and not self._general_noted)
        dirty.general_noted = noting and dirty.general and not settle  # settled: refresh_dirty drops the notes
        return self.refresh_dirty(con, position) if settle else []

    def committed(self, dirty: BatchDirty) -> None:
        """The batch's transaction committed: what it worked out holds for the next batch."""
        self._reach, self._facts = dirty.reaching, dirty.facts
        self._general_noted = self._general_noted or dirty.general_noted

    def forget(self) -> None:
        """A transaction failed: nothing worked out in it holds (nor, to be safe, what the table holds)."""
        self._reach = self._facts = None
        self._general_noted = False

    def refresh_dirty(self, con: duckdb.DuckDBPyConnection, position: int,
                      batch: BatchDirty | None = None) -> list[str]:
        """Refresh every dirty subject's set (inside the caller's transaction), queue the changed ones for
        the changelog with the position of the last event that touched each, and mark the sets valid through
        `position`. Returns the changed subjects (`kind:name`).
        `batch`: the dirty subjects of the one batch of this transaction, with nothing else dirty (the sets
        were valid through the position it follows); not written to the tables and read back (four
        statements of a follower's small pass). Default: the tables'."""
        changed: list[str] = []
        self.last = None
        dirty = batch.touched if batch is not None else {(kind, name): at for kind, name, at in run(
            con, "SELECT subject_kind, subject, max(position) FROM effective_dirty GROUP BY ALL")}
        if dirty:
            # A follower's few dirty subjects skip counting everyone (a statement of each small pass).
            everyone = subjects_at(con) if len(dirty) > SMALL else []
            if len(dirty) > FULL_REBUILD_SHARE * len(everyone) > 0:
                changed, self.last = rebuild_all(con, everyone), "all"
            else:  # a fast path when one explains the batch, else the rule's SQL for the dirty subjects
                fast = self._fast(con, batch)
                changed, self.last = (fast, "fast") if fast is not None else (recompute(con, sorted(dirty)), "subjects")
            causes = {f"{kind}:{name}": at for (kind, name), at in dirty.items()}
            _queue(con, {subject: causes.get(subject, position) for subject in changed})
            if batch is None:
                run(con, "DELETE FROM effective_dirty")
        if batch is None:
            fast_grants.forget(con)
            self._general_noted = False
        # Updated in place (one statement of each pass); inserted when the table is empty.
        if not run(con, "UPDATE effective_valid SET position = $p", {"p": position})[0][0]:
            run(con, "INSERT INTO effective_valid VALUES ($p)", {"p": position})
        return sorted(changed)

    def _fast(self, con: duckdb.DuckDBPyConnection, batch: BatchDirty | None) -> list[str] | None:
        """The fast paths' refresh (None: none applies) of the batch's notes, or of those in the table."""
        if not (self.fast.grants or self.fast.ways):
            return None
        if batch is None:
            return fast_grants.refresh(con, grants=self.fast.grants, ways=self.fast.ways)
        if not batch.explained():
            return None
        return fast_grants.refresh(con, batch.notes, batch.reaching, batch.facts, self.fast.grants,
                                   self.fast.ways)


def valid_through(con: duckdb.DuckDBPyConnection) -> int:
    """The position the materialized effective sets are valid through."""
    return scalar(con, "SELECT max(position) FROM effective_valid") or 0


def is_settled(con: duckdb.DuckDBPyConnection, position: int) -> bool:
    """Whether the sets are valid through `position` with nothing dirty left to refresh."""
    return valid_through(con) >= position and not scalar(con, "SELECT count(*) FROM effective_dirty")


def _queue(con: duckdb.DuckDBPyConnection, changed: dict[str, int]) -> None:
    """The outbox holds one row per subject: its final set is published once, whatever it went through.
    subject_changes keeps the same position for reads (a subject's position and ETag)."""
    if changed:
        columns = {"subject": list(changed), "position": list(changed.values())}
        for table in ("changelog_outbox", "subject_changes"):
            run(con, f"DELETE FROM {table} WHERE {among('subject', 's', list(changed))}", {"s": sorted(changed)})
            insert_columns(con, table, columns, {"subject": "VARCHAR", "position": "BIGINT"})
