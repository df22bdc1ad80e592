"""Read-side answers of routing: route decisions as of any position (ADR-027), node selection and secret
reference checks (ARCH-19). The rules themselves are the domain's (domain/routing.py, domain/nodes.py);
this module only gathers what they need from the read model."""
from __future__ import annotations

from typing import Any

import duckdb

from domain.errors import RetiredAlias, UnknownSubject, UnknownTool, UsageError
from domain.nodes import NodeFacts, refuse_not_model_facing, select_node
from domain.route_errors import SecretAliasNotAllowed, UnknownSecretAlias, UnknownSecretRef
from domain.routing import RouteRule, ToolFacts, decide
from domain.secret_refs import check_allowed
from domain.subjects import parse_subject
from projections.effective.reads import INFINITY
from projections.tracking import read_tracking
from projections.rows import run, select_rows
from projections.schema import AS_OF
from projections.sqlfiles import query

_RULE_FIELDS = tuple(RouteRule.model_fields)


def tool_facts(con: duckdb.DuckDBPyConnection, name: str, at: int = INFINITY) -> ToolFacts:
    """The tool `name` named at `at` (any live name), with the canonical tool's classes."""
    refuse_not_model_facing(name)
    rows = select_rows(con, query("route_lookup"), {"id": name, "at": at})
    if not rows:
        raise UnknownTool(f"no tool or alias '{name}' in the catalog", tool_id=name)
    row = rows[0]
    if row["lifecycle"] == "retired":
        raise RetiredAlias(f"'{name}' was retired; use '{row['canonical_id']}' instead", tool_id=name,
                           canonical_id=row["canonical_id"])
    return ToolFacts(tool_key=row["tool_key"], canonical_id=row["canonical_id"], classes=list(row["classes"]))


def rules_at(con: duckdb.DuckDBPyConnection, at: int = INFINITY) -> list[RouteRule]:
    rows = select_rows(con, f"SELECT * FROM route_rule_history WHERE {AS_OF} ORDER BY rule_id", {"at": at})
    return [RouteRule.model_validate({k: r[k] for k in _RULE_FIELDS}) for r in rows]


def subject_scopes(con: duckdb.DuckDBPyConnection, subject: str, at: int = INFINITY) -> set[str]:
    kind, name = parse_subject(subject)
    scopes = {r["scope"] for r in select_rows(con, query("route_scopes"), {"kind": kind, "name": name, "at": at})}
    if f"{kind}:{name}" not in scopes:
        raise UnknownSubject(f"no {kind} '{name}'" + ("" if at == INFINITY else f" at position {at}"),
                             subject=subject)
    return scopes


def route_check(con: duckdb.DuckDBPyConnection, subject: str, call: str, after: list[str],
                at: int | None = None) -> dict[str, Any]:
    """Allow or deny calling `call` after the `after` calls, as the rules stood at position `at`."""
    head = read_tracking(con).position
    if at is not None and not 0 <= at <= head:
        raise UsageError(f"--at {at} is outside the history (0 to {head})", head=head)
    position = head if at is None else at
    scopes = subject_scopes(con, subject, position)
    called = tool_facts(con, call, position)
    earlier = [tool_facts(con, name, position) for name in after]
    decision = decide(called, earlier, rules_at(con, position), scopes)
    return {"subject": subject, "called": call, "after": list(after), "position": position, **decision}


def node_facts(con: duckdb.DuckDBPyConnection) -> list[NodeFacts]:
    return [NodeFacts(name=r["name"], paired=r["paired"], ready=r["ready"], capabilities=list(r["capabilities"]),
                      denied_tool_keys=list(r["denied_tool_keys"]), lane=r["lane"])
            for r in select_rows(con, "SELECT * FROM nodes ORDER BY name")]


def route_node(con: duckdb.DuckDBPyConnection, tool: str, node: str | None = None, lane: str | None = None,
               secret_ref: str | None = None) -> dict[str, Any]:
    """The node a call of `tool` goes to; with `secret_ref`, also that the reference may go to the tool."""
    facts = tool_facts(con, tool)
    if secret_ref is not None:
        check_secret_ref(con, secret_ref, facts)
    chosen = select_node(facts.canonical_id, facts.tool_key, node_facts(con), node, lane)
    return {**chosen, "requested_node": node, "secret_ref": secret_ref}


def check_secret_ref(con: duckdb.DuckDBPyConnection, ref: str, tool: ToolFacts) -> None:
    rows = select_rows(con, "SELECT allowed_tool_keys FROM secret_refs WHERE ref = ?", [ref])
    if not rows:
        raise UnknownSecretRef(f"no secret reference '{ref}'; add it with toolcat secret ref add {ref} "
                               f"--allow-tool {tool.canonical_id}", secret_ref_id=ref)
    check_allowed(ref, list(rows[0]["allowed_tool_keys"]), tool.canonical_id, tool.tool_key)


def resolve_secret_alias(con: duckdb.DuckDBPyConnection, subject: str, alias: str, tool: str) -> dict[str, Any]:
    """ARCH-19: `alias` looked up in the agent's own scope only, for a call of `tool`. Unknown (in this scope),
    or disallowed — the reference may not go to the tool, or the agent's allowlist does not enable the tool
    for it — fails here, before anything would resolve the secret. Answers safe metadata only."""
    kind, agent = parse_subject(subject)
    if kind != "agent":
        raise UsageError(f"a secret alias is scoped to an agent (agent:NAME), not to the {kind} '{agent}'",
                         subject=subject)
    found = select_rows(con, "SELECT ref, display_name FROM secret_aliases WHERE agent = ? AND secret_alias = ?",
                        [agent, alias])
    if not found:
        known = [r[0] for r in run(con, "SELECT secret_alias FROM secret_aliases WHERE agent = ? ORDER BY 1", [agent])]
        raise UnknownSecretAlias(f"agent '{agent}' has no secret alias '{alias}'; an alias resolves only in its "
                                 "own agent's scope", subject=subject, secret_alias=alias, known=known)
    ref, display_name = found[0]["ref"], found[0]["display_name"]
    facts = tool_facts(con, tool)
    check_secret_ref(con, ref, facts)
    exposure = run(con, "SELECT exposure FROM effective_tools WHERE subject_kind = 'agent' AND subject = ? "
                        "AND tool_key = ?", [agent, facts.tool_key])
    if not exposure or exposure[0][0] != "enabled":
        state = exposure[0][0] if exposure else "not in its set"
        raise SecretAliasNotAllowed(f"agent '{agent}' may not call '{facts.canonical_id}' ({state}): its secret "
                                    f"alias '{alias}' is resolved only for tools its allowlist enables",
                                    subject=subject, secret_alias=alias, tool_id=facts.canonical_id,
                                    exposure=state)
    return {"subject": subject, "secret_alias": alias, "secret_ref_id": ref, "display_name": display_name,
            "tool_id": facts.canonical_id}


def with_classes(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]], at: int) -> list[dict[str, Any]]:
    """Effective-set rows with each tool's classes as of position `at`, last: names, classes and exposure in
    one read for a gateway."""
    found = dict(run(con, f"WITH t AS (SELECT * FROM tool_history WHERE {AS_OF}), "
                          f"c AS (SELECT * FROM tool_class_history WHERE {AS_OF}) "
                          "SELECT t.canonical_id, c.classes FROM t JOIN c USING (tool_key)", {"at": at}))
    return [{**row, "classes": list(found.get(row["tool_id"]) or [])} for row in rows]
