"""The commands that take a catalog from what it holds to what a manifest declares, in an order that
runs (releases before the milestones that name them, parents before children, tools before grants), each
with its risk tag (seed 003). What no command can do (remove a tool, a unit, an agent) is a violation.

Both sides are manifests: the current one is the catalog's own export, so export then plan is empty."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from domain.manifest import MILESTONES, Agent, Alias, Manifest, Tool, Unit
from domain.schema_check import schema_problems
from domain.schema_compat import Mode, breaking_changes

RiskTag = Literal["safe_create", "safe_update", "destructive_update", "destructive_delete"]
DESTRUCTIVE: tuple[str, ...] = ("destructive_update", "destructive_delete")


class Planned(BaseModel):
    """One command as the command line takes it; `inputs` are the file options' contents (option → JSON),
    written to files when the command runs."""

    argv: list[str]
    risk: RiskTag
    inputs: dict[str, Any] = Field(default_factory=dict)


class Violation(BaseModel):
    code: str
    message: str


class Diff:
    def __init__(self, desired: Manifest, current: Manifest, upstream: bool = False) -> None:
        self.desired, self.current = desired, current
        # An MCP server's sync: the server already changed its tools' schemas, so a change the mode refuses
        # is planned as a destructive update that records it anyway, never refused.
        self.upstream = upstream
        self.commands: list[Planned] = []
        self.violations: list[Violation] = []
        self.last: list[Planned] = []  # retirements: after every grant and allowlist that may name the alias

    def add(self, risk: RiskTag, *argv: str, inputs: dict[str, Any] | None = None, last: bool = False) -> None:
        (self.last if last else self.commands).append(Planned(argv=list(argv), risk=risk, inputs=inputs or {}))

    def refuse(self, message: str) -> None:
        self.violations.append(Violation(code="unsupported_change", message=message))

    def removed(self, what: str, names: set[str]) -> None:
        for name in sorted(names):
            self.refuse(f"the manifest leaves out {what} '{name}', and the catalog never removes one; "
                        "keep it in the manifest")


def plan_commands(desired: Manifest, current: Manifest, fresh: bool, upstream: bool = False) -> Diff:
    """`fresh`: the catalog holds no events yet (its policy is whatever the manifest says); `upstream`: the
    desired side is what an MCP server offers (see `Diff.upstream`)."""
    diff = Diff(desired.with_implied_tools(), current, upstream)
    _policy(diff, fresh)
    _compatibility(diff)
    _releases(diff)
    _tools(diff)
    _connectors(diff)
    _units(diff)
    _agents(diff)
    diff.commands += diff.last
    return diff


def _policy(diff: Diff, fresh: bool) -> None:
    policy = diff.desired.policy
    if not fresh and policy == diff.current.policy:
        return
    if isinstance(policy, str):
        diff.add("safe_create", "init", "--policy", policy)
    else:
        diff.add("safe_create", "init", inputs={"--policy": policy})


def _compatibility(diff: Diff) -> None:
    wanted = diff.desired.compatibility
    if wanted is not None and wanted != diff.current.compatibility:
        diff.add("safe_update", "catalog", "compatibility", wanted)


def _mode(diff: Diff) -> Mode:
    """The mode the plan's schema changes run under: the manifest's, else the catalog's (backward when the
    current side names none)."""
    return diff.desired.compatibility or diff.current.compatibility or "backward"


def _releases(diff: Diff) -> None:
    current = {r.version: r for r in diff.current.releases}
    diff.removed("the release", {v for v, r in current.items() if r.published}
                 - {r.version for r in diff.desired.releases if r.published})
    for release in diff.desired.releases:
        known = current.get(release.version)
        if release.published and (known is None or not known.published):
            diff.add("safe_create", "release", "publish", release.version)
        if release.planned_date and (known is None or known.planned_date != release.planned_date):
            diff.add("safe_update", "release", "plan", release.version, "--date", release.planned_date)


def _tool_argv(tool_id: str, tool: Tool) -> tuple[list[str], dict[str, Any]]:
    argv = ["tool", "register", tool_id, "--source", tool.source, "--group", tool.group, "--tier", tool.tier,
            "--visibility", tool.visibility]
    for option, value in (("--family", tool.family), ("--plugin", tool.plugin),
                          ("--backing-server", tool.backing_server), ("--description", tool.description),
                          ("--risk", tool.risk)):
        if value is not None:
            argv += [option, value]
    for label in tool.classes:
        argv += ["--class", label]
    if tool.requires_state:
        argv.append("--requires-state")
    return argv, ({"--schema": tool.input_schema} if tool.input_schema is not None else {})


def _tools(diff: Diff) -> None:
    current = diff.current.tools
    diff.removed("the tool", set(current) - set(diff.desired.tools))
    for tool_id, tool in diff.desired.tools.items():
        known = current.get(tool_id)
        if known is None:
            argv, inputs = _tool_argv(tool_id, tool)
            diff.add("safe_create", *argv, inputs=inputs)
        elif known.input_schema != tool.input_schema:
            _schema_change(diff, tool_id, known.input_schema, tool.input_schema)
        if known is not None and _without_schema(known, tool_id) != _without_schema(tool, tool_id):
            changed = sorted(k for k, v in _without_schema(tool, tool_id).items()
                             if _without_schema(known, tool_id)[k] != v)
            diff.refuse(f"tool '{tool_id}' differs in {', '.join(changed)}; a registered tool's description "
                        "does not change (only its ID, by a rename)")
        _aliases(diff, tool_id, tool.aliases, {} if known is None else known.aliases)


def _without_schema(tool: Tool, tool_id: str) -> dict[str, Any]:
    fields = tool.spec_fields(tool_id)
    del fields["input_schema"]
    return fields


def _schema_change(diff: Diff, tool_id: str, old: Any, new: Any) -> None:
    """A changed input schema: `tool update --schema`, checked as the command checks it (the metaschema,
    then the compatibility mode, each break naming the property). A change that breaks calls valid before
    (allowed by a mode other than backward or full) is a destructive update."""
    if new is None:
        diff.refuse(f"tool '{tool_id}' declares no input schema; a tool's schema is replaced by a new version, "
                    "never removed")
        return
    problems = schema_problems(new)
    for problem in problems:
        diff.violations.append(Violation(code="invalid_schema", message=f"tool '{tool_id}': {problem}"))
    if problems:
        return
    # An invalid schema in force disabled the tool: no call was valid, so none can break.
    old_valid = old is None or not schema_problems(old)
    breaks = breaking_changes(old, new, _mode(diff)) if old_valid else []
    if breaks and diff.upstream:
        diff.add("destructive_update", "tool", "update", tool_id, "--accept-incompatible", inputs={"--schema": new})
        return
    for change in breaks:
        diff.violations.append(Violation(code="incompatible_schema", message=f"tool '{tool_id}': {change}"))
    if not breaks:
        breaking = old_valid and breaking_changes(old, new, "backward")
        diff.add("destructive_update" if breaking else "safe_update", "tool", "update", tool_id,
                 inputs={"--schema": new})


def _aliases(diff: Diff, tool_id: str, desired: dict[str, Alias], current: dict[str, Alias]) -> None:
    diff.removed("the alias", set(current) - set(desired))
    order = ("alias", "deprecated", "retired")
    for alias, want in desired.items():
        have = current.get(alias)
        if have is None:
            diff.add("safe_create", "alias", "add", tool_id, alias, *(["--shim"] if want.shim else []))
            have = Alias(shim=want.shim)
        if have.shim != want.shim or order.index(want.lifecycle) < order.index(have.lifecycle):
            diff.refuse(f"alias '{alias}' cannot go back from {have.lifecycle} to {want.lifecycle} or change "
                        "whether it is a shim")
            continue
        if have.lifecycle == "alias" and want.lifecycle != "alias":
            diff.add("destructive_update", "alias", "deprecate", alias)
        _window(diff, alias, want, have)


def _window(diff: Diff, alias: str, want: Alias, have: Alias) -> None:
    for name in MILESTONES:
        milestone = want.milestones.get(name)
        if milestone is not None and name not in have.milestones:
            diff.add("safe_update", "alias", "milestone", alias, name, "--release", milestone.release,
                     *(["--evidence", milestone.evidence] if milestone.evidence is not None else []))
    for step in (1, 2):
        if step in want.steps and step not in have.steps:
            diff.add("safe_update", "alias", "step", alias, str(step), "--evidence", want.steps[step])
    if want.lifecycle == "retired" and have.lifecycle != "retired" and want.retired_release:
        diff.add("destructive_delete", "alias", "retire", alias, "--release", want.retired_release, last=True)
    if 5 in want.steps and 5 not in have.steps:
        diff.add("safe_update", "alias", "step", alias, "5", "--evidence", want.steps[5], last=True)


def _connectors(diff: Diff) -> None:
    current = diff.current.connectors
    diff.removed("the connector", set(current) - set(diff.desired.connectors))
    for slug, connector in diff.desired.connectors.items():
        known = current.get(slug)
        if known is None:
            ns = ["--namespace", connector.namespace] if connector.namespace not in (None, slug) else []
            diff.add("safe_create", "connector", "register", slug, *ns,
                     *[a for tool in connector.tools for a in ("--tool", tool)])
        elif (known.namespace or slug, known.tools) != (connector.namespace or slug, connector.tools):
            diff.refuse(f"connector '{slug}' declares other tools or another namespace; a registered "
                        "connector's surface does not change")


def _unit_order(units: dict[str, Unit]) -> list[str]:
    """Parents before children (a parent outside the manifest is already in the catalog, or refused)."""
    ordered: list[str] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        parent = units[name].parent
        if parent in units and parent not in ordered and parent not in seen:
            visit(parent, seen + (name,))
        if name not in ordered:
            ordered.append(name)
    for name in units:
        visit(name, ())
    return ordered


def _units(diff: Diff) -> None:
    current = diff.current.units
    diff.removed("the unit", set(current) - set(diff.desired.units))
    for name in _unit_order(diff.desired.units):
        unit, known = diff.desired.units[name], current.get(name)
        if known is None:
            diff.add("safe_create", "unit", "create", name, *(["--parent", unit.parent] if unit.parent else []))
            known = Unit()
        elif known.parent != unit.parent:
            diff.refuse(f"unit '{name}' has parent {known.parent!r}; a unit's parent does not change")
    for name, unit in diff.desired.units.items():
        known = current.get(name) or Unit()
        for slug in unit.connectors:
            if slug not in known.connectors:
                diff.add("safe_create", "connector", "bind", slug, "--unit", name)
        for slug in known.connectors:
            if slug not in unit.connectors:
                diff.add("destructive_delete", "connector", "unbind", slug, "--unit", name)
        _image(diff, f"unit:{name}", unit, known)


def _agents(diff: Diff) -> None:
    current = diff.current.agents
    diff.removed("the agent", set(current) - set(diff.desired.agents))
    for name, agent in diff.desired.agents.items():
        known = current.get(name)
        if known is None:
            diff.add("safe_create", "agent", "create", name, "--unit", agent.unit,
                     *(["--state-mode", agent.state_mode] if agent.state_mode != "stateful" else []))
            known = Agent(unit=agent.unit, state_mode=agent.state_mode)
        elif (known.unit, known.state_mode) != (agent.unit, agent.state_mode):
            diff.refuse(f"agent '{name}' belongs to unit '{known.unit}' ({known.state_mode}); an agent's unit "
                        "and state mode do not change")
        _image(diff, name, agent, known)
    _grants(diff)
    for name, agent in diff.desired.agents.items():
        _allowlist(diff, name, agent, current.get(name))


def _image(diff: Diff, name: str, runner: Agent | Unit, known: Agent | Unit) -> None:
    """The image `name` runs (an agent's name, or unit:NAME)."""
    if runner.image is None:
        if known.image is not None:
            who = f"unit '{name.removeprefix('unit:')}'" if name.startswith("unit:") else f"agent '{name}'"
            diff.refuse(f"{who} declares image '{known.image.ref}'; an image declaration is replaced, "
                        "never removed")
        return
    if known.image != runner.image:
        risk = "safe_create" if known.image is None else "destructive_update"
        diff.add(risk, "image", "declare", name, "--image", runner.image.ref,
                 *[a for tool in runner.image.tools for a in ("--tool", tool)])


def _grants(diff: Diff) -> None:
    def of(manifest: Manifest) -> dict[str, list[str]]:
        return ({f"unit:{n}": u.grants for n, u in manifest.units.items()}
                | {f"agent:{n}": a.grants for n, a in manifest.agents.items()})
    desired, current = of(diff.desired), of(diff.current)
    for subject, targets in desired.items():
        for target in targets:
            if target not in current.get(subject, []):
                diff.add("safe_create", "grant", "add", subject, target)
    for subject, targets in current.items():
        for target in targets:
            if subject in desired and target not in desired[subject]:
                diff.add("destructive_delete", "grant", "revoke", subject, target)


def _allowlist(diff: Diff, name: str, agent: Agent, known: Agent | None) -> None:
    have = None if known is None else known.allowlist
    if agent.allowlist == have:
        return
    if agent.allowlist is None:
        diff.add("safe_update", "agent", "allowlist", name, "--clear")
    else:
        diff.add("safe_create" if known is None else "destructive_update", "agent", "allowlist", name,
                 *agent.allowlist)
