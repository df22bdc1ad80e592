"""FAST PATH (maintenance.FastPaths.grants, and .ways through fast_ways.py): a follower's refresh of the
current effective sets for the frequent event kinds of its small batches, in Python, beside the SQL of
rebuild.recompute (effective_set.sql: the rule), which it falls back to and which runs instead when the
fast path is off; tests/integration/test_effective_fast_paths.py holds both ways to the same rows,
documents and changed subjects.

The general query costs ≈ 20 ms of DuckDB work even for one subject (it reads every history table); a
grant added on an agent or a unit changes only the rows of the tools it covers, for the subjects at or
below its holder, and those rows follow from the rows already there. So:

- while a batch is applied, dirty.py notes its events (in memory for a batch refreshed in its own
  transaction, else in the connection's temporary table `_effective_deltas`): each grant added
  (`grant_added`) or revoked (`grant_revoked`), connector bound or unbound (`bound`, `unbound`, the slug
  as target), allowlist set or cleared (`allowlist`), and `general` for any other event that can change
  a set;
- `refresh` applies them when they explain every dirty subject (no `general`, and every dirty row's
  position is one of theirs: a batch of another connection, or one left by a crash, is not), and
  answers None otherwise, for the general query. Grants added alone take the way below; any other mix
  re-ranks the pairs it touches (fast_ways.py), which also handles a way removed.
"""
from __future__ import annotations

from typing import Any

import duckdb

from projections.effective.fast_ways import (NOTED_COLUMNS, Pair, WayTools, admitted, exposure, given_notes,
                                             render, replace, rerank, subject_rows)
from projections.effective.reach import Reach
from projections.rows import among, given_rows, run
from projections.sqlfiles import query

DELTAS = "_effective_deltas"


def note(con: duckdb.DuckDBPyConnection, notes: list[dict[str, object]], general: bool) -> None:
    """Record a batch's events for the next refresh (in the batch's transaction: a rollback forgets them):
    `notes` as rows of the table (kind, position, holder_kind, holder, target, tool_key)."""
    if not notes and not general:
        return
    _create(con)
    rows = [{"kind": "general"}] if general else notes
    columns = {name: [row.get(name) for row in rows] for name in _NOTES}
    # Nothing once a `general` is noted: the general query refreshes these sets anyway (a long catch-up
    # keeps no grants here); checked in the insert: each statement is ≈ 0.4 ms of a small pass.
    with given_rows(con, "_delta_notes", columns, _NOTES) as (notes_table, params):
        run(con, f"INSERT INTO {DELTAS} SELECT * FROM {notes_table} WHERE NOT EXISTS "
                 f"(SELECT 1 FROM {DELTAS} WHERE kind = 'general')", params)


_NOTES = {"kind": "VARCHAR", "position": "BIGINT", "holder_kind": "VARCHAR", "holder": "VARCHAR",
          "target": "VARCHAR", "tool_key": "VARCHAR"}


def _create(con: duckdb.DuckDBPyConnection) -> None:
    run(con, f"CREATE TEMP TABLE IF NOT EXISTS {DELTAS} ({', '.join(f'{n} {t}' for n, t in _NOTES.items())})")


def forget(con: duckdb.DuckDBPyConnection) -> None:
    """The sets are refreshed: what was noted is applied."""
    run(con, f"DROP TABLE IF EXISTS temp.{DELTAS}")


def refresh(con: duckdb.DuckDBPyConnection, notes: list[dict[str, object]] | None = None,
            reaching: Reach | None = None, facts: WayTools | None = None, grants: bool = True,
            ways: bool = True) -> list[str] | None:
    """Refresh the dirty subjects' current sets from the noted grants; the subjects (`kind:name`) whose set
    changed, or None when the noted events do not explain every dirty subject (nothing is written).
    `notes`: a batch's notes (rows as `note` takes them) that explain its dirty subjects, refreshed in its
    own transaction without going through the table (default: the table's, checked against the dirty);
    `reaching`: who holders reach, as the batch worked it out in this transaction; `facts`: the current
    tools' facts its projector keeps; `grants`, `ways`: which fast paths are on (maintenance.FastPaths)."""
    noted = _noted(con) if notes is None else _summary(notes)
    if noted is None or not (ways if noted[2] else grants):
        return None
    reaching = reaching or Reach(con)
    if noted[2]:  # a way removed, a binding or an allowlist: the pairs are ranked again
        subjects = rerank(con, noted[3], reaching)
        if subjects is None:
            return None
        render(con, subjects)
        return [f"{kind}:{name}" for kind, name in subjects]
    rows, stored = _grant_rows(con, reaching, noted[3], *noted[:2], facts)
    if rows:
        replace(con, stored, rows)
    changed = sorted({(row["subject_kind"], row["subject"]) for row in rows})
    render(con, changed)
    return [f"{kind}:{name}" for kind, name in changed]


# The noted grants' tool keys, whether one is a namespace pattern, whether anything besides grants added
# was noted, and the notes (kind, holder kind, holder, target, tool key).
Noted = tuple[list[str], bool, bool, list[list[str | None]]]


def _noted(con: duckdb.DuckDBPyConnection) -> Noted | None:
    """The noted grants' tool keys, whether one is a namespace pattern, whether anything besides grants
    added was noted, and the notes (kind, holder kind, holder, target, tool key), when they explain every
    dirty subject, else None (one statement: each is ≈ 0.4 ms of a follower's small pass)."""
    _create(con)
    unexplained, keys, patterns, others, notes = run(con, f"""
        SELECT count(*) FILTER (WHERE kind = 'general')
             + (SELECT count(*) FROM effective_dirty d
                WHERE NOT EXISTS (SELECT 1 FROM {DELTAS} n WHERE n.position = d.position)),
               list(DISTINCT tool_key) FILTER (WHERE kind = 'grant_added' AND tool_key IS NOT NULL),
               count(*) FILTER (WHERE kind = 'grant_added' AND tool_key IS NULL) > 0,
               count(*) FILTER (WHERE kind <> 'grant_added') > 0,
               list([kind, holder_kind, holder, target, tool_key])
        FROM {DELTAS}""")[0]
    return None if unexplained else (keys or [], patterns, others, notes or [])


def _summary(notes: list[dict[str, object]]) -> Noted:
    """What _noted answers, from a batch's own notes."""
    grants = [n["tool_key"] for n in notes if n["kind"] == "grant_added"]
    return (sorted({key for key in grants if key is not None}), None in grants,
            any(n["kind"] != "grant_added" for n in notes), [[n.get(c) for c in NOTED_COLUMNS] for n in notes])


def _grant_rows(con: duckdb.DuckDBPyConnection, reaching: Reach, notes: list[list[str | None]], keys: list[str],
                patterns: bool, facts: WayTools | None = None) -> tuple[list[dict[str, Any]], list[Pair]]:
    """The rows of effective_tools the noted grants change, and which of them replace a stored row (the
    others are new: no row to delete), for the current sets: for each subject at or
    below a grant's holder and each current tool the grant covers, the grant's row where it beats the
    subject's row (effective_set.sql ranks explicit grants first, the holder closest in the subject's chain
    first). A subject's row that stays keeps its exposure (it depends on the subject and the tool alone);
    a new one gets it as effective_set.sql works it out. A few small statements, not one query: DuckDB
    plans a large one in ≈ 10 ms, which is what this saves."""
    covered = _covered(facts or WayTools(con), notes, keys)
    if patterns:
        with given_notes(con, notes) as (notes_table, params):
            covered += run(con, query("grant_pattern_coverage", notes=notes_table), params)
    if not covered:
        return [], []
    reach_of = reaching.of({(kind, holder) for kind, holder, *_ in covered})
    offers: dict[tuple[str, str, str], tuple[int, str, str]] = {}  # (kind, name, key) → (depth, holder kind, holder)
    for holder_kind, holder, key, *_ in covered:
        for kind, name, depth in reach_of.get((holder_kind, holder), []):
            best = offers.get((kind, name, key))
            if best is None or depth < best[0]:
                offers[(kind, name, key)] = (depth, holder_kind, holder)
    tools = {key: fields for _, _, key, *fields in covered}
    rows, names = subject_rows(sorted({name for _, name, _ in offers}),
                               "subject_kind, subject, tool_key, provenance, inherited_from, exposure")
    stored = {(kind, name, key): (provenance, inherited, exposed) for kind, name, key, provenance, inherited, exposed
              in run(con, f"{rows}SELECT * FROM rows WHERE tool_key = ANY($keys::VARCHAR[])",
                     {"keys": sorted(tools)} | names)}
    offered_agents = sorted({name for kind, name, _ in offers if kind == "agent"})
    agents = {name: (mode, allowlisted) for name, mode, allowlisted in run(con, f"""
        SELECT a.name, a.state_mode, l.agent IS NOT NULL FROM agent_history a
        LEFT JOIN allowlist_history l ON l.agent = a.name AND l.valid_to IS NULL
        WHERE a.valid_to IS NULL AND {among("a.name", "names", offered_agents)}""",
        {"names": offered_agents})} if offered_agents else {}
    rows, replaced, undecided = [], [], []
    for (kind, name, key), (depth, holder_kind, holder) in offers.items():
        has = stored.get((kind, name, key))
        if has is not None and has[0] == "explicit" and not _farther(has[1], holder_kind, holder, reaching):
            continue  # the explicit grant already there is as close or closer
        if has is not None:
            replaced.append((kind, name, key))
        tool_id, namespace, description, schema_valid, requires_state = tools[key]
        shown = has[2] if has is not None else exposure(kind, agents.get(name), schema_valid, requires_state)
        if shown == "":
            undecided.append(len(rows))
        rows.append({"subject_kind": kind, "subject": name, "tool_key": key, "tool_id": tool_id,
                     "namespace": namespace, "description": description, "provenance": "explicit",
                     "inherited_from": holder if depth > 0 else None, "exposure": shown})
    if undecided:
        admitted(con, [rows[i] for i in undecided])
    return rows, replaced


def _covered(facts: WayTools, notes: list[list[str | None]], keys: list[str]) -> list[tuple]:
    """(holder kind, holder, tool key, canonical ID, namespace, description, schema_valid, requires_state)
    of each noted grant of one tool whose tool is current and can be in a set (way_tools.sql); the grants
    are joined here, not in SQL (a join of the notes costs a DuckDB statement ≈ 1 ms more)."""
    tools = facts.of(keys)
    return list(dict.fromkeys((holder_kind, holder, key, *tools[key][:5]) for kind, holder_kind, holder, _, key
                              in notes if kind == "grant_added" and key in tools))


def _farther(inherited_from: str | None, holder_kind: str, holder: str, reaching: Reach) -> bool:
    """Whether the stored explicit row (inherited from that unit, or the subject's own grant) lies farther up
    the subject's chain than the new grant's holder: only then does the new grant win."""
    if inherited_from is None:
        return False  # the subject's own grant: depth 0, nothing is closer
    if holder_kind == "agent":
        return True  # the agent's own new grant beats anything inherited
    parents = reaching.parents
    unit = parents.get(holder)
    while unit is not None:
        if unit == inherited_from:
            return True
        unit = parents.get(unit)
    return False
