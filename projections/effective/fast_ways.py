"""FAST PATH (maintenance.FastPaths.ways): a follower's refresh for a way removed or added (a grant revoked,
a connector bound or unbound, grants mixed with these) and for an allowlist set or cleared, in Python.
The rule itself is effective_set.sql; with the fast path off, rebuild.recompute runs it for the dirty
subjects instead, and tests/integration/test_effective_fast_paths.py holds both ways to the same rows,
documents and changed subjects.

When a way is removed the tool may remain by another: for each (subject, tool) pair the noted events can
touch, every way that grants it now is gathered with a few small statements and ranked as
effective_set.sql ranks them (`rank, depth, provenance`: explicit grants, then connector bindings, the
platform namespaces and the subject's own image; the closest holder first). The winner is the row, the stored
one is replaced where they differ, and the pair loses its row when no way is left. Ranking from the state
after the batch, not event by event, makes a batch of mixed kinds right in any order.

An allowlist changes only the exposure of its agent's rows; they are worked out again after the pairs.
Also here: the helpers both fast paths share (the tools' facts, a new row's exposure, the documents).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb

from projections.catalog_part import CatalogPart, ignore
from projections.effective.reach import Reach, Subject
from projections.rows import among, given_rows, insert_columns, run, select_rows
from projections.schema import EFFECTIVE_FIELDS
from projections.sqlfiles import query

Pair = tuple[str, str, str]              # (kind, name, tool key)
# The columns of effective_tools, every one a VARCHAR.
_TYPES = {name: "VARCHAR" for name in ("subject_kind", "subject", "tool_key", *EFFECTIVE_FIELDS)}


def rerank(con: duckdb.DuckDBPyConnection, notes: list[list[str | None]], reaching: Reach) -> list[Subject] | None:
    """Refresh the pairs the noted ways can touch, then the exposures of the agents
    whose allowlist changed; the subjects whose rows changed, or None when a noted connector is unknown.
    `notes`: fast_grants.py's notes (kind, holder kind, holder, target, tool key)."""
    if all(kind == "allowlist" or kind.startswith("grant") and key is not None for kind, *_, key in notes):
        # grants of one tool each (the frequent kind): their pairs are known without a query
        noted = [(holder_kind, holder, key or "", kind != "allowlist") for kind, holder_kind, holder, _, key in notes]
    else:
        with given_notes(con, notes) as (notes_table, params):
            noted = run(con, query("way_coverage", notes=notes_table), params)
    if any(tool_key is None for *_, tool_key, _ in noted):
        return None  # a binding of a connector the read model does not know: the general query decides
    parents = reaching.parents
    ways = [(kind, holder, key) for kind, holder, key, is_way in noted if is_way]
    reached = reaching.of({(kind, holder) for kind, holder, _ in ways if kind == "unit"})
    # An agent holder reaches itself; _winners skips an agent that is not current (one statement less).
    reached.update({(kind, holder): [(kind, holder, 0)] for kind, holder, _ in ways if kind == "agent"})
    pairs = sorted({(kind, name, key) for holder_kind, holder, key in ways
                    for kind, name, _ in reached.get((holder_kind, holder), [])})
    changed = _write(con, pairs, _winners(con, pairs, parents)) if pairs else set()
    allowlists = sorted({holder for _, holder, _, is_way in noted if not is_way})
    if allowlists:
        changed |= _reexpose(con, allowlists)
    return sorted(changed)


# The columns of fast_grants.py's notes that its queries read, in this order.
NOTED_COLUMNS = ("kind", "holder_kind", "holder", "target", "tool_key")


@contextmanager
def given_notes(con: duckdb.DuckDBPyConnection, notes: list[list[str | None]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The notes (rows of NOTED_COLUMNS) as a FROM item for the queries that read them (the fragment
    `notes` of grant_coverage.sql, grant_pattern_coverage.sql, way_coverage.sql) and its parameters: a
    follower's batch keeps its notes in memory, not in a table."""
    columns = {name: [row[i] for row in notes] for i, name in enumerate(NOTED_COLUMNS)}
    with given_rows(con, "_delta_notes", columns, dict.fromkeys(NOTED_COLUMNS, "VARCHAR")) as found:
        yield found


def _winners(con: duckdb.DuckDBPyConnection, pairs: list[Pair], parents: dict[str, str | None]
             ) -> dict[Pair, dict[str, Any]]:
    """Each pair's row as effective_set.sql writes it now (no entry: no way grants the tool)."""
    tools = way_tools(con, sorted({key for _, _, key in pairs}))
    agent_names = sorted({name for kind, name, _ in pairs if kind == "agent"})
    agents = {name: (unit, mode, allowlisted, set(image or [])) for name, unit, mode, allowlisted, image in run(
        con, query("way_agents"), {"names": agent_names})} if agent_names else {}
    pairs = [(kind, name, key) for kind, name, key in pairs if kind == "unit" or name in agents]
    unit_names = sorted({name for kind, name, _ in pairs if kind == "unit"})
    unit_images = {unit: set(keys) for unit, keys in run(con, query("way_unit_images"), {"names": unit_names})
                   } if unit_names else {}
    chains = {(kind, name): _chain(kind, name, agents, parents) for kind, name, _ in pairs}
    units = sorted({unit for chain in chains.values() for unit, _ in chain})
    grants: dict[Subject, list[tuple[str, str | None]]] = {}
    bindings: dict[str, list[tuple[str, str]]] = {}
    holders = {"names": sorted(set(units) | set(agent_names)), "units": units}
    for way, kind, holder, target, key in run(con, query("way_holders"), holders):
        if way == "grant":
            grants.setdefault((kind, holder), []).append((target, key))
        else:  # a binding: the connector's slug and namespace
            bindings.setdefault(holder, []).append((target, key))
    winners: dict[Pair, dict[str, Any]] = {}
    for kind, name, key in pairs:
        tool = tools.get(key)
        if tool is None:
            continue  # not a current tool, or a runtime-only helper (never model-facing)
        tool_id, namespace, _, _, _, platform = tool
        ways: list[tuple[int, int, str, str | None]] = []  # (rank, depth, provenance, inherited_from)
        if kind == "agent" and any(_covers(t, k, key, tool_id, namespace) for t, k in grants.get((kind, name), [])):
            ways.append((1, 0, "explicit", None))
        for unit, depth in chains[(kind, name)]:
            inherited = unit if depth > 0 else None
            if any(_covers(t, k, key, tool_id, namespace) for t, k in grants.get(("unit", unit), [])):
                ways.append((1, depth, "explicit", inherited))
            ways += [(2, depth, f"connector:{slug}", inherited) for slug, prefix in bindings.get(unit, [])
                     if namespace == prefix.split(".")[0] and tool_id.startswith(prefix + ".")]
        if platform:
            ways.append((3, 0, "platform", None))
        if kind == "agent" and key in agents[name][3] or kind == "unit" and key in unit_images.get(name, ()):
            ways.append((4, 0, "image", None))  # a unit's image is its own: never inherited down the chain
        if ways:
            _, _, provenance, inherited = min(ways)
            winners[(kind, name, key)] = {"subject_kind": kind, "subject": name, "tool_key": key,
                                          "tool_id": tool_id, "namespace": namespace, "description": tool[2],
                                          "provenance": provenance, "inherited_from": inherited}
    _expose(con, [row for row in winners.values()], agents, tools)
    return winners


def _chain(kind: str, name: str, agents: dict[str, tuple], parents: dict[str, str | None]) -> list[tuple[str, int]]:
    """The subject's own unit (a unit: itself, depth 0; an agent: its unit, depth 1) and every ancestor."""
    unit, depth = (name, 0) if kind == "unit" else (agents[name][0], 1)
    chain = [(unit, depth)]
    while (unit := parents.get(unit)) is not None:
        depth += 1
        chain.append((unit, depth))
    return chain


def _covers(target: str, grant_key: str | None, key: str, tool_id: str, namespace: str) -> bool:
    """Whether a grant covers the tool: by its key, or a namespace pattern by the canonical ID's prefix."""
    if grant_key is not None:
        return grant_key == key
    return namespace == target.split(".")[0] and tool_id.startswith(target.rstrip("*"))


def _expose(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]], agents: dict[str, tuple],
            tools: dict[str, tuple]) -> None:
    """Each row's exposure as effective_set.sql decides it, from the agent and the tool."""
    undecided = []
    for row in rows:
        _, _, _, schema_valid, requires_state, _ = tools[row["tool_key"]]
        agent = agents.get(row["subject"])
        row["exposure"] = exposure(row["subject_kind"], agent[1:3] if agent else None, schema_valid, requires_state)
        if row["exposure"] == "":
            undecided.append(row)
    if undecided:
        admitted(con, undecided)


def subject_rows(names: list[str], columns: str = "*") -> tuple[str, dict[str, Any]]:
    """A `WITH rows AS (...)` clause: the rows (`columns`) of effective_tools of the subjects with these
    names, of any kind (the caller filters the kind), and its parameters. A few names are found through
    the subject index (migration 100): DuckDB scans the index only when no other filter is pushed into
    the scan, which MATERIALIZED prevents (a lookup of a unit's 15 rows: 4.1 -> 2.3 ms)."""
    return (f"WITH rows AS MATERIALIZED (SELECT {columns} FROM effective_tools WHERE "
            f"{among('subject', 'stored_names', names)}) "), {"stored_names": names}


def _write(con: duckdb.DuckDBPyConnection, pairs: list[Pair], winners: dict[Pair, dict[str, Any]]) -> set[Subject]:
    """Replace the stored rows of the pairs that differ from their winners; the subjects changed."""
    rows, names = subject_rows(sorted({name for _, name, _ in pairs}))
    with given_rows(con, "_way_pairs", _pair_columns(pairs), _TYPES) as (pairs_table, params):
        stored = {(r["subject_kind"], r["subject"], r["tool_key"]): r for r in select_rows(
            con, f"{rows}SELECT e.* FROM rows e JOIN {pairs_table} p USING (subject_kind, subject, tool_key)",
            params | names)}
    differ = [p for p in pairs if stored.get(p) != winners.get(p)]
    if differ:
        replace(con, differ, [winners[p] for p in differ if p in winners])
    return {(kind, name) for kind, name, _ in differ}


def replace(con: duckdb.DuckDBPyConnection, pairs: list[Pair], rows: list[dict[str, Any]]) -> None:
    """The rows of effective_tools of these pairs replaced by `rows` (none: the pairs lose theirs; a row of
    a pair not among them is new: the caller knows no row of it is stored)."""
    if pairs:
        with given_rows(con, "_way_pairs", _pair_columns(pairs), _TYPES) as (pairs_table, params):
            run(con, f"DELETE FROM effective_tools e USING {pairs_table} d WHERE e.subject_kind = d.subject_kind "
                     "AND e.subject = d.subject AND e.tool_key = d.tool_key", params)
    if rows:
        insert_columns(con, "effective_tools", {name: [row[name] for row in rows] for name in _TYPES}, _TYPES)


def _pair_columns(pairs: list[Pair]) -> dict[str, list[str]]:
    return {"subject_kind": [p[0] for p in pairs], "subject": [p[1] for p in pairs], "tool_key": [p[2] for p in pairs]}


def _reexpose(con: duckdb.DuckDBPyConnection, names: list[str]) -> set[Subject]:
    """The exposures of these agents' rows worked out again (their allowlist changed); the agents changed."""
    rows, params = subject_rows(names)
    stored = select_rows(con, f"{rows}SELECT * FROM rows WHERE subject_kind = 'agent'", params)
    keys = sorted({row["tool_key"] for row in stored})
    tools = way_tools(con, keys) if keys else {}
    agents = {name: (unit, mode, allowlisted, None) for name, unit, mode, allowlisted, _ in run(
        con, query("way_agents"), {"names": names})}
    rows = [dict(row) for row in stored]
    _expose(con, rows, agents, tools)
    differ = [(old, new) for old, new in zip(stored, rows) if old != new]
    if differ:
        replace(con, [(r["subject_kind"], r["subject"], r["tool_key"]) for r, _ in differ], [r for _, r in differ])
    return {("agent", row["subject"]) for row, _ in differ}


# way_tools.sql's fragment `which` choosing the tools of the parameter $keys.
TOOLS_OF_KEYS = "t.tool_key = ANY($keys::VARCHAR[])"


def way_tools(con: duckdb.DuckDBPyConnection, keys: list[str] | None) -> dict[str, tuple[Any, ...]]:
    """way_tools.sql's facts of these current tools (None: of every current tool), by tool key: canonical ID,
    namespace, description, schema_valid, requires_state, whether a platform namespace grants it."""
    which, params = ("true", {}) if keys is None else (TOOLS_OF_KEYS, {"keys": keys})
    return {row[0]: row[1:] for row in run(con, query("way_tools", which=which), params)}


def _tool_writers() -> frozenset[str]:
    """The events the catalog part projects with a handler of its own: way_tools.sql reads tool_history,
    tools and platform_namespaces, which only the catalog part writes (a test holds the other parts to it),
    so any other event leaves the current tools' facts as they were."""
    return frozenset(event for event, handle in CatalogPart().handlers.items() if handle is not ignore)


# A projector keeps the current tools' facts (WayTools) across batches of none of these.
WAY_TOOLS_CHANGED_BY = _tool_writers()


class WayTools:
    """The current tools' facts the grants of a follower's passes need, kept by its projector across batches
    that cannot change them (none of WAY_TOOLS_CHANGED_BY). The first batch reads those of the tools it grants; once
    kept across a batch, every current tool's are read at once (≈ 10 ms for 10,020 tools) and each later
    pass of grants finds its tools in memory: the lookup (≈ 2.3 ms) leaves the pass. A mix of tool changes
    and grants, batch after batch, keeps reading the few it needs, as before."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.carried = con, False  # carried: kept across a batch at least once
        self._every: dict[str, tuple[Any, ...]] | None = None

    def kept(self, con: duckdb.DuckDBPyConnection) -> WayTools:
        """These facts, for one more batch (on `con`, its projector's connection)."""
        self.con, self.carried = con, True
        return self

    def of(self, keys: list[str]) -> dict[str, tuple[Any, ...]]:
        """way_tools' facts of these tool keys."""
        if self._every is None and self.carried:
            self._every = way_tools(self.con, None)
        if self._every is None:
            return way_tools(self.con, keys) if keys else {}
        return {key: self._every[key] for key in keys if key in self._every}


def exposure(kind: str, agent: tuple[str, bool] | None, schema_valid: bool, requires_state: bool) -> str | None:
    """A row's exposure as effective_set.sql decides it; "" where the agent's allowlist decides.
    `agent`: its (state mode, whether it has an allowlist)."""
    if kind == "unit":
        return None
    if not schema_valid:
        return "disabled_invalid_schema"
    mode, allowlisted = agent or ("stateful", False)
    if requires_state and mode == "stateless":
        return "disabled_by_state_mode"
    return "" if allowlisted else "enabled"


def admitted(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> None:
    """The exposure of rows of agents with an allowlist: enabled where it admits the tool."""
    admits = set(run(con, query("allowlist_admits"), {"agents": sorted({r["subject"] for r in rows}),
                                                       "keys": sorted({r["tool_key"] for r in rows})}))
    for row in rows:
        row["exposure"] = "enabled" if (row["subject"], row["tool_key"]) in admits else "disabled_by_agent_allowlist"


def render(con: duckdb.DuckDBPyConnection, subjects: list[Subject]) -> None:
    """Write these subjects' documents again from their rows. The subjects are the query's `_subjects` as a
    CTE over given_rows: a follower's few go as list parameters (not an Arrow table registered and dropped
    again, ≈ 0.5–1 ms of its pass)."""
    if subjects:
        names = [f"{kind}:{name}" for kind, name in subjects]
        run(con, f"DELETE FROM effective_documents WHERE {among('subject', 'names', names)}", {"names": names})
        columns = {"kind": [kind for kind, _ in subjects], "name": [name for _, name in subjects]}
        with given_rows(con, "_rendered", columns, {"kind": "VARCHAR", "name": "VARCHAR"}) as (rendered, params):
            run(con, f"INSERT INTO effective_documents BY NAME WITH _subjects AS (SELECT * FROM {rendered}) "
                     + query("effective_documents", rows="effective_tools"), params)
