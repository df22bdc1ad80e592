"""The catalog in the read model, as a manifest (domain/manifest.py): `toolcat export --format manifest`,
and the side `plan` compares a manifest with. Tools and subjects come in the order they were created."""
from __future__ import annotations

import json
from typing import Any

import duckdb

from domain.compatibility import DEFAULT_MODE
from domain.manifest import Agent, Alias, Connector, Image, Manifest, Milestone, Release, Tool, Unit
from domain.naming import PRESETS
from domain.values import default_family
from projections.rows import run, select_rows


def current_manifest(con: duckdb.DuckDBPyConnection) -> Manifest:
    return Manifest(policy=_policy(con), compatibility=_compatibility(con), releases=_releases(con), tools=_tools(con),
                    connectors=_connectors(con), units=_units(con), agents=_agents(con))


def _policy(con: duckdb.DuckDBPyConnection) -> str | dict[str, Any]:
    rows = run(con, "SELECT name, policy FROM naming_policy ORDER BY position DESC LIMIT 1")
    if not rows:
        return "tyrum"  # what a catalog's first write records
    name, policy = rows[0][0], json.loads(rows[0][1])
    known = PRESETS.get(name)
    return name if known is not None and known.model_dump(mode="json") == policy else policy


def _compatibility(con: duckdb.DuckDBPyConnection) -> str:
    """The mode in force: the latest recorded, else the default (domain/compatibility.py)."""
    rows = run(con, "SELECT mode FROM compatibility_modes ORDER BY position DESC LIMIT 1")
    return rows[0][0] if rows else DEFAULT_MODE


def _releases(con: duckdb.DuckDBPyConnection) -> list[Release]:
    rows = run(con, """
        WITH plans AS (SELECT version, arg_max(planned_date, position)::VARCHAR AS planned_date
                       FROM release_plans GROUP BY version)
        SELECT coalesce(r.version, p.version), p.planned_date, r.version IS NOT NULL
        FROM releases r FULL JOIN plans p ON p.version = r.version
        ORDER BY r.seq NULLS LAST, p.version""")
    return [Release(version=v, planned_date=d, published=published) for v, d, published in rows]


def _tools(con: duckdb.DuckDBPyConnection) -> dict[str, Tool]:
    aliases = _aliases(con)
    tools: dict[str, Tool] = {}
    for row in select_rows(con, "SELECT * FROM tools ORDER BY registered_position"):
        tools[row["canonical_id"]] = Tool(
            source=row["source"], group=row["group_name"], tier=row["tier"], visibility=row["visibility"],
            family=None if row["family"] == default_family(row["canonical_id"], row["source"]) else row["family"],
            plugin=row["plugin"], backing_server=row["backing_server"],
            description=row["description"], classes=list(row["classes"] or []), risk=row["risk"],
            requires_state=row["requires_state"],
            input_schema=None if row["input_schema"] is None else json.loads(row["input_schema"]),
            aliases=aliases.get(row["tool_key"], {}))
    return tools


def _aliases(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Alias]]:
    milestones: dict[str, dict[str, Milestone]] = {}
    for alias, name, release, evidence in run(con, "SELECT alias, milestone, release, evidence "
                                                   "FROM alias_milestones ORDER BY position"):
        milestones.setdefault(alias, {})[name] = Milestone(release=release, evidence=evidence)
    steps: dict[str, dict[int, str]] = {}
    for alias, step, evidence in run(con, "SELECT alias, step, evidence FROM alias_steps "
                                          "WHERE step IN (1, 2, 5) ORDER BY position"):
        steps.setdefault(alias, {})[step] = evidence
    found: dict[str, dict[str, Alias]] = {}
    for row in select_rows(con, "SELECT * FROM aliases ORDER BY added_position"):
        found.setdefault(row["tool_key"], {})[row["alias"]] = Alias(
            lifecycle=row["lifecycle"], shim=row["shim"], milestones=milestones.get(row["alias"], {}),
            steps=steps.get(row["alias"], {}), retired_release=row["retired_release"])
    return found


def _connectors(con: duckdb.DuckDBPyConnection) -> dict[str, Connector]:
    return {slug: Connector(namespace=None if ns == slug else ns, tools=list(tools))
            for slug, ns, tools in run(con, "SELECT slug, namespace, tools FROM connectors ORDER BY since")}


def _grants(con: duckdb.DuckDBPyConnection, kind: str) -> dict[str, list[str]]:
    """Each subject's explicit grants, a tool grant by the tool's canonical ID now (renames follow), sorted."""
    found: dict[str, list[str]] = {}
    for subject, target in run(con, """
            SELECT g.subject, coalesce(t.canonical_id, g.target) FROM grants g
            LEFT JOIN tools t ON t.tool_key = g.tool_key
            WHERE g.subject_kind = ? ORDER BY 2""", [kind]):
        found.setdefault(subject, []).append(target)
    return found


def _units(con: duckdb.DuckDBPyConnection) -> dict[str, Unit]:
    bound: dict[str, list[str]] = {}
    for unit, slug in run(con, "SELECT unit, slug FROM bindings ORDER BY slug"):
        bound.setdefault(unit, []).append(slug)
    grants = _grants(con, "unit")
    images = {unit: Image(ref=image, tools=list(tools)) for unit, image, tools in run(
        con, "SELECT unit, image, tool_ids FROM unit_image_history WHERE valid_to IS NULL")}
    return {name: Unit(parent=parent, connectors=bound.get(name, []), grants=grants.get(name, []),
                       image=images.get(name))
            for name, parent in run(con, "SELECT name, parent FROM units ORDER BY since")}


def _agents(con: duckdb.DuckDBPyConnection) -> dict[str, Agent]:
    images = {agent: Image(ref=image, tools=list(tools)) for agent, image, tools in run(
        con, "SELECT agent, image, tool_ids FROM image_history WHERE valid_to IS NULL")}
    grants = _grants(con, "agent")
    return {name: Agent(unit=unit, state_mode=mode, image=images.get(name),
                        allowlist=None if allowlist is None else list(allowlist), grants=grants.get(name, []))
            for name, unit, mode, allowlist in run(con, "SELECT name, unit, state_mode, allowlist FROM agents "
                                                        "ORDER BY since")}
