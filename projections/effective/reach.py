"""Who a grant holder reaches: a unit reaches itself, every unit below it and their agents; an agent only
itself. Dirty tracking (dirty.py) works out the subjects a batch touches with it, and the fast paths
(fast_grants.py, fast_ways.py) the subjects a noted grant or binding can change. Read from the current
unit_history and agent_history, which only the events of `REACH_EVENTS` change."""
from __future__ import annotations

import duckdb

from projections.rows import among, run
from projections.subjects_part import SubjectsPart

Subject = tuple[str, str]                # (kind, name)
# The tables `reach` reads.
_READS = ("unit_history", "agent_history")
# The events that write them (the subjects part's): a projector keeps what it learnt of who holders reach
# across batches without them (maintenance.py).
REACH_EVENTS = frozenset(t for history in SubjectsPart().histories if history.table in _READS
                         for t in history.types)


def reach(con: duckdb.DuckDBPyConnection, holders: set[Subject], parents: dict[str, str | None]
          ) -> dict[Subject, list[tuple[str, str, int]]]:
    """Per holder, the subjects (kind, name, the holder's depth in their chain) at or below it: a unit
    holder reaches itself and every unit below it (depth: their distance) and their agents (one more); an
    agent only itself (depth 0)."""
    children: dict[str, list[str]] = {}
    for unit, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(unit)
    units_reached: dict[str, list[tuple[str, int]]] = {}
    for kind, holder in holders:
        if kind == "unit" and holder in parents:
            found, level, depth = [], [holder], 0
            while level:
                found += [(unit, depth) for unit in level]
                level, depth = [c for unit in level for c in children.get(unit, [])], depth + 1
            units_reached[holder] = found
    depth_of = {(holder, unit): depth for holder, found in units_reached.items() for unit, depth in found}
    units = sorted({u for _, u in depth_of})
    members = run(con, "SELECT name, unit FROM agent_history WHERE valid_to IS NULL AND "
                       + among("unit", "units", units), {"units": units}) if units else []
    reached: dict[Subject, list[tuple[str, str, int]]] = {}
    for holder, found in units_reached.items():
        reached[("unit", holder)] = [("unit", unit, depth) for unit, depth in found]
        reached[("unit", holder)] += [("agent", agent, depth_of[(holder, unit)] + 1) for agent, unit in members
                                      if (holder, unit) in depth_of]
    named = sorted(holder for kind, holder in holders if kind == "agent")
    agents = {name for (name,) in run(con, "SELECT name FROM agent_history WHERE valid_to IS NULL AND "
                                           + among("name", "names", named), {"names": named})} if named else set()
    reached.update({("agent", name): [("agent", name, 0)] for name in agents})
    return reached


class Reach:
    """Who holders reach (`reach`), worked out once per transaction: the batch's flush works out its dirty
    subjects with it (dirty.py), and the deltas that refresh them in the same transaction reuse
    it (two statements, and the recursive query it replaces, of a follower's pass). Only valid while
    unit_history and agent_history do not change."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self._parents: dict[str, str | None] | None = None
        self._found: dict[Subject, list[tuple[str, str, int]]] = {}

    @property
    def parents(self) -> dict[str, str | None]:
        """Each current unit's parent."""
        if self._parents is None:
            self._parents = dict(run(self.con, "SELECT name, parent FROM unit_history WHERE valid_to IS NULL"))
        return self._parents

    def of(self, holders: set[Subject]) -> dict[Subject, list[tuple[str, str, int]]]:
        """`reach` of these holders (a new dict: callers add to it)."""
        missing = holders - self._found.keys()
        if missing:  # an agent holder reaches itself alone: no parents needed
            found = reach(self.con, missing, self.parents if any(k == "unit" for k, _ in missing) else {})
            self._found.update({holder: found.get(holder, []) for holder in missing})
        return {holder: self._found[holder] for holder in holders if self._found[holder]}
