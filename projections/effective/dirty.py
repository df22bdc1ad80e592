"""Dirty tracking: the projection part that works out which effective sets a batch can have changed. It
reads the batch ahead, works out the subjects it touches (with the position of the last event that
touched each) and what it notes for the fast paths, and hands them (`BatchDirty`) to maintenance.py,
which records them in `effective_dirty` in the batch's transaction or refreshes their sets in it."""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from projections.catalog_part import Handler
from projections.effective import fast_grants
from projections.effective.fast_ways import WayTools
from projections.effective.reach import Reach
from projections.effective.reads import subjects_at
from projections.envelope import Envelope
from projections.rows import insert_columns, run
from projections.sqlfiles import query

Positions = dict[str, int]
# The events besides Unit.* and Agent.* that touch sets (below) and have no delta of their own.
_GENERAL = frozenset({"Policy.Recorded", "Tool.Registered", "Tool.Renamed", "Tool.SchemaUpdated", "Tool.AliasAdded",
                      "Tool.AliasDeprecated", "Tool.AliasRetired"})
# The events the fast paths (fast_grants.py) follow, by the kind it notes them as.
_NOTED = {"Grants.Added": "grant_added", "Grants.Revoked": "grant_revoked", "Unit.ConnectorBound": "bound",
          "Unit.ConnectorUnbound": "unbound", "Agent.AllowlistSet": "allowlist", "Agent.AllowlistCleared": "allowlist"}



def touches_sets(event_type: str) -> bool:
    """Whether an event of this type can change an effective set: dirty tracking follows it (a test lists
    the others, so a new event type is decided here)."""
    return event_type in _GENERAL or event_type in _NOTED or event_type.startswith(("Unit.", "Agent."))


_DIRTY = {"subject_kind": "VARCHAR", "subject": "VARCHAR", "position": "BIGINT"}


@dataclass
class BatchDirty:
    """What one batch may have changed (DirtyPart): the subjects it touched, (kind, name) → the
    position of the last event touching each, and its notes for fast_grants.py (`general`: an event
    only the general query follows). Recorded in the tables when the sets are refreshed later; handed to
    `refresh_dirty` as they are when refreshed in the batch's own transaction."""
    touched: dict[tuple[str, str], int] = field(default_factory=dict)
    notes: list[dict[str, object]] = field(default_factory=list)
    general: bool = False
    reaching: Reach | None = None  # who the holders reach, as `touched` was worked out (the refresh reuses it)
    facts: WayTools | None = None  # the current tools' facts, as the projector keeps them
    general_noted: bool = False  # its `general` is in fast_grants.py's table once committed (maintenance.py)

    def record(self, con: duckdb.DuckDBPyConnection, notes: bool = True) -> None:
        """Into `effective_dirty` and (`notes`: for the fast paths) fast_grants.py's table, for a refresh in
        a later transaction."""
        if notes:
            fast_grants.note(con, self.notes, self.general)
        record_dirty(con, self.touched)

    def explained(self) -> bool:
        """Whether the notes explain every touched subject (what fast_grants._noted checks in SQL)."""
        return not self.general and set(self.touched.values()) <= {note["position"] for note in self.notes}


def record_dirty(con: duckdb.DuckDBPyConnection, touched: dict[tuple[str, str], int]) -> None:
    """Add (kind, name) → position of the last event touching it to the dirty subjects."""
    if touched:
        columns = {"subject_kind": [k for k, _ in touched], "subject": [n for _, n in touched],
                   "position": list(touched.values())}
        insert_columns(con, "effective_dirty", columns, _DIRTY)


def _touch(found: Positions, key: str, position: int) -> None:
    found[key] = max(found.get(key, 0), position)


def _note(kind: str, e: Envelope) -> dict[str, object]:
    """A row of fast_grants.py's notes: the event's holder (a grant's subject, a binding's unit, an
    allowlist's agent) and what it names."""
    data = e.data
    if kind.startswith("grant"):
        holder_kind, _, holder = data["subject"].partition(":")
        return {"kind": kind, "position": e.position, "holder_kind": holder_kind, "holder": holder,
                "target": data["target"], "tool_key": data["tool_key"]}
    if kind == "allowlist":
        return {"kind": kind, "position": e.position, "holder_kind": "agent", "holder": data["agent"]}
    return {"kind": kind, "position": e.position, "holder_kind": "unit", "holder": data["unit"],
            "target": data["slug"]}


class DirtyPart:
    """Writes no rows of its own from events (no handlers); reads the batch ahead to see what it touches."""

    handlers: dict[str, Handler] = {}

    def __init__(self, reaching: Reach | None = None, facts: WayTools | None = None,
                 general_noted: bool = False) -> None:
        """`reaching`: who holders reach, as an earlier batch worked it out, when still true for this one;
        `facts`: the current tools' facts an earlier batch read, when still true (both kept by
        maintenance.Maintenance when its fast path `kept` is on); `general_noted`: an earlier batch noted
        `general` for the refresh this one's subjects wait for, so the general query refreshes them anyway
        and nothing is noted (a long catch-up's pages: a dict per grant or binding, and the statements that
        would write them, for nothing)."""
        self.kept_reach, self.kept_facts, self.general_noted = reaching, facts, general_noted
        self.discard()

    def discard(self) -> None:
        self.everyone = 0                      # the last event that touches every subject (0: none)
        self.units: Positions = {}
        self.agents: Positions = {}
        self.new_tools: Positions = {}         # canonical IDs registered or renamed to in this batch
        self.moved_tools: Positions = {}       # tool keys whose canonical ID or input schema changed
        self.aliases_changed = 0               # allowlists resolve through aliases
        self.notes: list[dict[str, object]] = []  # for the fast paths (fast_grants.py)
        self.general = self.general_noted      # an event only the general refresh follows
        self.dirty = BatchDirty()              # what the batch flushed last touched

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        for e in envelopes:
            self._read(e)

    def _read(self, e: Envelope) -> None:
        data, at = e.data, e.position
        noted = _NOTED.get(e.type)
        if noted is not None and not self.general:
            self.notes.append(_note(noted, e))
        else:
            self.general = self.general or touches_sets(e.type)
        if e.type == "Policy.Recorded":
            self.everyone = at
        elif e.type == "Tool.Registered":
            _touch(self.new_tools, data["tool_id"], at)
        elif e.type == "Tool.Renamed":
            _touch(self.new_tools, data["new_id"], at)
            _touch(self.moved_tools, e.originator_id, at)
            self.aliases_changed = at
        elif e.type == "Tool.SchemaUpdated":  # its holders' exposure follows schema_valid
            _touch(self.moved_tools, e.originator_id, at)
        elif e.type in ("Tool.AliasAdded", "Tool.AliasDeprecated", "Tool.AliasRetired"):
            self.aliases_changed = at
        elif e.type.startswith("Unit."):
            _touch(self.units, data.get("unit") or data["name"], at)
        elif e.type.startswith("Agent."):
            _touch(self.agents, data.get("agent") or data["name"], at)
        elif e.type in ("Grants.Added", "Grants.Revoked"):
            kind, _, name = data["subject"].partition(":")
            _touch(self.units if kind == "unit" else self.agents, name, at)

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        """Work out what the batch touched into `dirty`, for the projector to record or refresh."""
        self._reach_of_tool_changes(con)
        reaching = self.kept_reach or Reach(con)
        dirty = BatchDirty(self.touched(reaching), self.notes, self.general, reaching,
                           self.kept_facts.kept(con) if self.kept_facts else WayTools(con))
        self.discard()
        self.dirty = dirty

    def _add(self, rows: list[tuple], position: int | Positions) -> None:
        """Holders (kind, name[, cause]) touched at `position`, or at the position of their cause."""
        for kind, name, *cause in rows:
            at = position if isinstance(position, int) else position[cause[0]]
            _touch(self.units if kind == "unit" else self.agents, name, at)

    def _reach_of_tool_changes(self, con: duckdb.DuckDBPyConnection) -> None:
        """Who a new or renamed tool can reach: connector namespaces and ns.* grants that cover it
        (a platform namespace reaches everyone); a renamed tool also leaves the sets it was in."""
        if self.new_tools:
            ids = sorted(self.new_tools)
            platform = run(con, "SELECT x.id FROM unnest($ids::VARCHAR[]) AS x(id) JOIN platform_namespaces p "
                                "ON p.namespace = split_part(x.id, '.', 1) WHERE p.valid_to IS NULL", {"ids": ids})
            self.everyone = max([self.everyone] + [self.new_tools[tool_id] for (tool_id,) in platform])
            self._add(run(con, query("tool_reach"), {"ids": ids}), self.new_tools)
        for key, at in self.moved_tools.items():
            self._add(run(con, query("tool_holders"), {"key": key}), at)
        if self.aliases_changed:
            self._add(run(con, "SELECT 'agent', agent FROM allowlist_history WHERE valid_to IS NULL"),
                      self.aliases_changed)

    def touched(self, reaching: Reach) -> dict[tuple[str, str], int]:
        """The touched subjects and their positions; a unit brings its descendant units and their agents
        (the current ones: `reaching`, kept for the refresh)."""
        found: dict[tuple[str, str], int] = {}
        if self.everyone:
            found = {subject: self.everyone for subject in subjects_at(reaching.con)}
        reached = reaching.of({("unit", name) for name in self.units}) if self.units else {}
        for (_, unit), subjects in reached.items():
            for kind, name, _ in subjects:
                found[(kind, name)] = max(found.get((kind, name), 0), self.units[unit])
        for name, at in self.agents.items():
            found[("agent", name)] = max(found.get(("agent", name), 0), at)
        return found
