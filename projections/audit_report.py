"""The deprecation audit report: for every deprecated or retired alias (or one), each rule of ARCH-21's
deprecation window and removal path, checked again from the recorded history independently of the write
path, with its result and its evidence (the event positions); the configuration that still names the
alias; and the integrity of the history it was read from (the caller's `audit verify` answer).

A rule's result is "met", "not met" (a finding) or "pending" (not due yet: the window is still open). An
alias is "complete" when it was retired and every rule was met, "window open" while it is deprecated and
nothing was broken so far, "findings" as soon as one rule was not met ("not deprecated" for a supported
alias asked for by name).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from domain.errors import CatalogRuleError
from domain.versions import parse_version
from domain.window import (
    CONFIRMATION_STEPS,
    MILESTONES,
    PERFORMED_BY_RETIREMENT,
    REMOVAL_STEPS,
    SHIPPING_MILESTONES,
    check_retirement,
)
from projections.queries import audit_alias
from projections.rows import run, scalar, select_rows
from projections.sqlfiles import query

MET, NOT_MET, PENDING = "met", "not met", "pending"
COMPLETE, WINDOW_OPEN, FINDINGS, SUPPORTED = "complete", "window open", "findings", "not deprecated"


def rule(name: str, result: str, evidence: str, position: int | None = None) -> dict[str, Any]:
    return {"rule": name, "result": result, "evidence": evidence, "position": position}


def _window_opened(entry: Mapping[str, Any]) -> dict[str, Any]:
    window = entry["window"]
    position = window.get("opened_position")
    if entry["state"] == "alias":
        return rule("window opened", PENDING, "not deprecated: a supported alias")
    if position is None:
        return rule("window opened", NOT_MET, "no deprecation is recorded for this alias")
    release = window["opened_release"]
    shipped = f"the first release since is {release}" if release else "no release has been published since"
    return rule("window opened", MET, f"deprecated at position {position}; {shipped}", position)


def _milestone(name: str, entry: Mapping[str, Any], retired: bool) -> dict[str, Any]:
    found = next((m for m in entry["milestones"] if m["name"] == name), None)
    if found is not None:
        evidence = found["evidence"] or "no evidence given"
        return rule(f"milestone {name}", MET, f"shipped in {found['release']}: {evidence}", found["position"])
    if retired:
        return rule(f"milestone {name}", NOT_MET, "never recorded, yet the alias was retired")
    return rule(f"milestone {name}", PENDING, "not recorded yet")


def _earliest_removal(entry: Mapping[str, Any], retired: bool) -> dict[str, Any]:
    earliest = entry["window"]["earliest_removal_release"]
    released = entry["window"]["retired_release"]
    if earliest is None:
        needs = f"known once {', '.join(SHIPPING_MILESTONES)} are recorded"
        return rule("earliest removal release", NOT_MET if retired else PENDING, needs)
    if not retired:
        return rule("earliest removal release", PENDING, f"{earliest}; not retired yet")
    if parse_version(released) < parse_version(earliest):
        return rule("earliest removal release", NOT_MET, f"{earliest}, but retired in {released}")
    return rule("earliest removal release", MET, f"{earliest}; retired in {released}")


def _step(number: int, steps: Mapping[int, dict[str, Any]], retired_at: int | None) -> dict[str, Any]:
    name = f"step {number}: {REMOVAL_STEPS[number]}"
    found = steps.get(number)
    if found is not None:
        evidence = f"recorded by {found['actor']}: {found['evidence'] or 'no evidence given'}"
        if number in CONFIRMATION_STEPS and retired_at is not None and found["position"] > retired_at:
            return rule(name, NOT_MET, f"confirmed only after the retirement at position {retired_at}; {evidence}",
                        found["position"])
        return rule(name, MET, evidence, found["position"])
    if retired_at is None:
        due = ("to be confirmed before retirement" if number in CONFIRMATION_STEPS else
               "performed by the retirement" if number in PERFORMED_BY_RETIREMENT else "recorded after retirement")
        return rule(name, PENDING, f"not yet: {due}")
    return rule(name, NOT_MET, "not confirmed before the retirement" if number in CONFIRMATION_STEPS
                else "not recorded yet")


def _retirement(entry: Mapping[str, Any], steps: Mapping[int, dict[str, Any]], retired_at: int | None
                ) -> dict[str, Any]:
    released = entry["window"]["retired_release"]
    if retired_at is None:
        return rule("retirement", PENDING, "not retired: the alias still resolves")
    milestones = {m["name"]: m["release"] for m in entry["milestones"]}
    confirmed = [n for n, s in steps.items() if n in CONFIRMATION_STEPS and s["position"] < retired_at]
    try:
        check_retirement(released, milestones, entry["canonical_introduced_release"], confirmed)
    except CatalogRuleError as error:
        return rule("retirement", NOT_MET, f"retired in {released} although {error.message}", retired_at)
    return rule("retirement", MET, f"retired in {released}: the window had closed and steps "
                                   f"{', '.join(map(str, CONFIRMATION_STEPS))} were confirmed", retired_at)


def _tombstone(con: duckdb.DuckDBPyConnection, entry: Mapping[str, Any], retired_at: int | None) -> dict[str, Any]:
    alias = entry["alias"]
    if retired_at is None:
        return rule("tombstone", PENDING, "the ID is reserved as a tombstone once retired")
    taken = scalar(con, "SELECT canonical_id FROM tools WHERE canonical_id = ?", [alias])
    if taken is not None or entry["state"] != "retired":
        return rule("tombstone", NOT_MET, f"'{alias}' was given to a tool again after its retirement", retired_at)
    return rule("tombstone", MET, f"'{alias}' stays reserved: resolving it is rejected with a pointer to "
                                  f"'{entry['canonical_id']}'", retired_at)


def _unused(uses: list[dict[str, Any]]) -> dict[str, Any]:
    name = "no configuration names it"
    if not uses:
        return rule(name, MET, "no allowlist, grant, connector, image, route rule or secret reference names it")
    named = ", ".join(f"{u['kind']} {u['holder']} (position {u['position']})" for u in uses)
    return rule(name, NOT_MET, f"still named by {named}", max(u["position"] for u in uses))


def _migrated(step: dict[str, Any], uses: list[dict[str, Any]]) -> dict[str, Any]:
    """Step 2 (stored data migrated) as recorded, unless the catalog's own configuration still names the ID."""
    if not uses or step["result"] != MET:
        return step
    return rule(step["rule"], NOT_MET, f"{len(uses)} configuration entr"
                                       f"{'y of the catalog still names' if len(uses) == 1 else 'ies of the catalog still name'}"
                                       f" it; {step['evidence']}", step["position"])


def rules(con: duckdb.DuckDBPyConnection, entry: Mapping[str, Any],
          uses: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every rule checked for one alias, in the order of its path; `uses`: the configuration naming it."""
    uses = uses or []
    steps = {s["step"]: s for s in entry["steps"]}
    retired = entry["state"] == "retired"
    retired_at = min((s["position"] for n, s in steps.items() if n in PERFORMED_BY_RETIREMENT), default=None)
    if retired and retired_at is None:
        retired_at = entry["window"].get("retired_position")
    return [_window_opened(entry),
            *(_milestone(name, entry, retired) for name in MILESTONES),
            _earliest_removal(entry, retired),
            *(_migrated(_step(number, steps, retired_at if retired else None), uses) if number == 2
              else _step(number, steps, retired_at if retired else None) for number in REMOVAL_STEPS),
            _retirement(entry, steps, retired_at if retired else None),
            _tombstone(con, entry, retired_at if retired else None),
            _unused(uses)]


def status(entry: Mapping[str, Any]) -> str:
    if any(r["result"] == NOT_MET for r in entry["rules"]):
        return FINDINGS
    if entry["state"] == "alias":
        return SUPPORTED
    return COMPLETE if entry["state"] == "retired" else WINDOW_OPEN


def legacy_uses(con: duckdb.DuckDBPyConnection, alias: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Allowlists, grants, connectors and images that still name a deprecated or retired ID, by that ID."""
    found: dict[str, list[dict[str, Any]]] = {}
    for use in select_rows(con, query("legacy_uses"), {"alias": alias}):
        found.setdefault(use["id"], []).append(use)
    return found


def _entry(con: duckdb.DuckDBPyConnection, alias: str, uses: list[dict[str, Any]]) -> dict[str, Any]:
    entry = audit_alias(con, alias)
    entry["canonical_introduced_release"] = scalar(con, query("canonical_introduced"), {"alias": alias})
    opened_at, retired_at = run(con, "SELECT deprecated_position, retired_position FROM aliases WHERE alias = ?",
                                [alias])[0]
    entry["window"] |= {"opened_position": opened_at, "retired_position": retired_at}
    entry["rules"] = rules(con, entry, uses)
    entry["findings"] = [f"{r['rule']}: {r['evidence']}" for r in entry["rules"] if r["result"] == NOT_MET]
    entry["status"] = status(entry)
    entry["uses"] = uses
    return entry


def audit_report(con: duckdb.DuckDBPyConnection, alias: str | None = None,
                 integrity: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every deprecated or retired alias (or one), each with its rules, findings, status and the
    configuration that still names it; `integrity` is the history's `audit verify` answer."""
    names = [alias] if alias else [r[0] for r in run(con, "SELECT alias FROM aliases WHERE lifecycle <> 'alias' "
                                                          "ORDER BY alias")]
    uses = legacy_uses(con, alias)
    entries = [_entry(con, name, uses.get(name, [])) for name in names]
    return {"position": scalar(con, "SELECT max(position) FROM events") or 0, "integrity": integrity,
            "aliases": entries}
