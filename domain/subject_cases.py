"""Use cases of subjects, connectors, images and grants."""
from __future__ import annotations

import uuid

from domain.agent import Agent, StateMode, agent_key
from domain.application import Batch, CatalogApplication, WriteResult
from domain.base import Meta
from domain.connector import Connector, connector_key
from domain.errors import DuplicateConnector, DuplicateSubject, InvalidName, InvalidPattern, NotModelFacing, \
    ReservedPrefix, RetiredAlias, UnknownConnector, UnknownSubject, UnknownTool, UsageError
from domain.grammar import check_entry, check_name, image_publisher, check_namespace, check_pattern, shown
from domain.grants import SubjectGrants, grants_key, is_pattern
from domain.name import NameClaim
from domain.subjects import parse_effective_at, parse_subject
from domain.tool import Tool
from domain.unit import Unit, unit_key
from domain.values import ToolSpec


class SubjectUseCases(CatalogApplication):
    # -- lookups --------------------------------------------------------------------------------
    def unit(self, name: str) -> Unit:
        unit = self.get_or_none(unit_key(name), Unit)
        if unit is None:
            raise UnknownSubject(f"no unit '{name}'", subject=f"unit:{name}")
        return unit

    def agent(self, name: str) -> Agent:
        agent = self.get_or_none(agent_key(name), Agent)
        if agent is None:
            raise UnknownSubject(f"no agent '{name}'", subject=f"agent:{name}")
        return agent

    def subject(self, text: str) -> Unit | Agent:
        kind, name = parse_subject(text)
        return self.unit(name) if kind == "unit" else self.agent(name)

    def connector(self, slug: str) -> Connector:
        connector = self.get_or_none(connector_key(slug), Connector)
        if connector is None:
            raise UnknownConnector(f"no connector '{slug}'", connector=slug)
        return connector

    def live_tool(self, tool_id: str) -> Tool:
        """The tool an ID names now (canonical or live alias); retired and unknown IDs are rejected."""
        tool = self.owner_of(tool_id)
        if tool is None:
            raise UnknownTool(f"no tool or alias '{tool_id}' in the catalog", tool_id=tool_id)
        if tool.tool_id != tool_id and tool.aliases[tool_id].lifecycle == "retired":
            raise RetiredAlias(f"'{tool_id}' was retired; use '{tool.tool_id}'", tool_id=tool_id,
                               canonical_id=tool.tool_id)
        return tool

    def _tool_or_register(self, batch: Batch, tool_id: str, source: str, owner: str, meta: Meta) -> Tool:
        """An existing live tool, or a new one registered with `source` (connector and image tools) in a
        namespace that is `owner`'s or nobody's (which `owner` then claims)."""
        if self.owner_of(tool_id) is not None:
            return self.live_tool(tool_id)  # naming a tool registers nothing: its namespace is not entered
        batch.policy.check_tool_id(tool_id, source)
        spec = ToolSpec(source=source, group="extension", tier="advanced", visibility="public")  # type: ignore[arg-type]
        tool = Tool.register(tool_id, spec.with_family(tool_id), batch.releases().latest, meta)
        batch.add(tool, NameClaim.claim(tool_id, tool.id, meta))
        self.enter_namespace(batch, tool_id, owner)
        return tool

    # -- units and agents ---------------------------------------------------------------------------
    def create_unit(self, name: str, parent: str | None, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_name(name, "unit")
            if self.get_or_none(unit_key(name), Unit) is not None:
                raise DuplicateSubject(f"unit '{name}' already exists", subject=f"unit:{name}")
            if parent is not None:
                self.unit(parent)
            batch.add(Unit.create(name, parent, meta))
        return self.execute("unit.create", {"name": name, "parent": parent}, meta, build)

    def create_agent(self, name: str, unit: str, state_mode: StateMode, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_name(name, "agent")
            if self.get_or_none(agent_key(name), Agent) is not None:
                raise DuplicateSubject(f"agent '{name}' already exists", subject=f"agent:{name}")
            self.unit(unit)
            batch.add(Agent.create(name, unit, state_mode, meta))
        return self.execute("agent.create", {"name": name, "unit": unit, "state_mode": state_mode}, meta,
                            build)

    def set_allowlist(self, name: str, patterns: list[str], meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            for pattern in patterns:
                check_entry(batch.policy, pattern)
            agent = self.agent(name)
            if not patterns:
                raise UsageError("an allowlist holds at least one pattern; to allow every tool, clear the "
                                 "allowlist instead", agent=name)
            for pattern in patterns:
                self._check_allow_pattern(batch, pattern)
            agent.set_allowlist(list(dict.fromkeys(patterns)), meta)
            batch.add(agent)
        return self.execute("agent.allowlist", {"agent": name, "patterns": patterns}, meta, build)

    def _check_allow_pattern(self, batch: Batch, pattern: str) -> None:
        if pattern == "*" or batch.policy.expand_pattern_shim(pattern) is not None:
            return
        if is_pattern(pattern):
            check_pattern(pattern)
        else:
            self.live_tool(pattern)

    def clear_allowlist(self, name: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            agent = self.agent(name)
            if agent.allowlist is not None:
                agent.clear_allowlist(meta)
                batch.add(agent)
        return self.execute("agent.allowlist.clear", {"agent": name}, meta, build)

    # -- connectors and images ------------------------------------------------------------------------
    @staticmethod
    def _refuse_platform_namespace(batch: Batch, namespace: str, kind: str) -> None:
        """Spring Voyage: `sv.*` is the platform's; no connector or image declares tools there."""
        platform = namespace.split(".", 1)[0]
        if platform in batch.policy.platform_namespaces:
            raise ReservedPrefix(f"the namespace '{platform}.' belongs to the platform; a {kind} declares its tools "
                                 f"in its own namespace", prefix=f"{platform}.", source=kind,
                                 allowed_sources=list(batch.policy.platform_sources))

    def register_connector(self, slug: str, namespace: str | None, tools: list[str], meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_name(slug, "connector")
            ns = check_namespace(namespace or slug)
            self._refuse_platform_namespace(batch, ns, "connector")
            if self.get_or_none(connector_key(slug), Connector) is not None:
                raise DuplicateConnector(f"connector '{slug}' is already registered", connector=slug)
            if not tools:
                raise UsageError("a connector declares at least one tool", connector=slug)
            for tool_id in dict.fromkeys(tools):
                if not tool_id.startswith(ns + "."):
                    raise InvalidName(f"connector tool {shown(tool_id)} must live in the connector's namespace "
                                      f"'{ns}.'", tool_id=tool_id, namespace=ns)
                self._tool_or_register(batch, tool_id, "connector", f"connector:{slug}", meta)
            batch.add(Connector.register(slug, ns, list(dict.fromkeys(tools)), meta))
        return self.execute("connector.register", {"slug": slug, "namespace": namespace, "tools": tools},
                            meta, build)

    def bind_connector(self, slug: str, unit_name: str, meta: Meta, effective_at: str | None = None
                       ) -> WriteResult:
        return self._change_binding("bind", slug, unit_name, meta, effective_at)

    def unbind_connector(self, slug: str, unit_name: str, meta: Meta, effective_at: str | None = None
                         ) -> WriteResult:
        return self._change_binding("unbind", slug, unit_name, meta, effective_at)

    def _change_binding(self, verb: str, slug: str, unit_name: str, meta: Meta, effective_at: str | None
                        ) -> WriteResult:
        def build(batch: Batch) -> None:
            self.connector(slug)
            unit = self.unit(unit_name)
            getattr(unit, verb)(slug, meta, parse_effective_at(effective_at))
            batch.add(unit)
        args = {"slug": slug, "unit": unit_name, "effective_at": effective_at}
        return self.execute(f"connector.{verb}", args, meta, build)

    def declare_image(self, subject: str, image: str, tools: list[str], meta: Meta) -> WriteResult:
        """The image `subject` runs: `unit:NAME`, `agent:NAME`, or a bare agent name (as before units could)."""
        kind, name = parse_subject(subject) if ":" in subject else ("agent", subject)

        def build(batch: Batch) -> None:
            runner = self.unit(name) if kind == "unit" else self.agent(name)
            if not image.strip():
                raise UsageError("an image declaration names the image reference", **{kind: name})
            # New tools in sv.* are the policy's reserved prefix; an existing platform tool stays the platform's.
            owner = f"image:{image_publisher(image)}"
            declared = [self._tool_or_register(batch, tool_id, "image", owner, meta)
                        for tool_id in dict.fromkeys(tools)]
            runner.declare_image(image, [t.tool_id for t in declared], [str(t.id) for t in declared], meta)
            batch.add(runner)
        # An agent's arguments as they were before units ran images: a retried idempotency key still matches.
        return self.execute("image.declare", {kind: name, "image": image, "tools": tools}, meta, build)

    # -- explicit grants -------------------------------------------------------------------------------
    def _grant_targets(self, batch: Batch, target: str) -> list[tuple[str, uuid.UUID | None]]:
        """What a grant entry names: a namespace pattern, one tool, or the tools a shim pattern
        (`tool.fs.*`) expands to, as an allowlist expands it."""
        expansion = batch.policy.expand_pattern_shim(target)
        if expansion is not None:
            return self._shim_grant_targets(target, expansion)
        if is_pattern(target):
            return [(check_pattern(target), None)]
        tool = self.live_tool(target)
        if tool.spec.visibility != "public":
            # ARCH-21: internal and runtime-only IDs are not part of the model-facing contract.
            what = "a runtime-only helper" if tool.spec.visibility == "runtime_only" else "an internal tool"
            raise NotModelFacing(f"'{tool.tool_id}' is {what}: it never enters an agent's tool set, so it cannot "
                                 "be granted; grant a public tool instead", tool_id=tool.tool_id,
                                 visibility=tool.spec.visibility)
        return [(tool.tool_id, tool.id)]

    def _shim_grant_targets(self, target: str, expansion: list[str]) -> list[tuple[str, uuid.UUID | None]]:
        if "*" in expansion:
            raise InvalidPattern(f"{shown(target)} stands for every tool; a grant names a tool or a namespace "
                                 "(ns.*)", pattern=target)
        tools = [self.owner_of(t) for t in expansion]
        found = [(t.tool_id, t.id) for t in tools if t is not None]
        if not found:
            raise UnknownTool(f"{shown(target)} expands to {', '.join(expansion)}, none of which is in the catalog",
                              tool_id=target, expands_to=expansion)
        return found

    def add_grant(self, subject: str, target: str, meta: Meta, effective_at: str | None = None) -> WriteResult:
        def build(batch: Batch) -> None:
            check_entry(batch.policy, target)
            self.subject(subject)
            grants = self.get_or_none(grants_key(subject), SubjectGrants) or SubjectGrants.open(subject, meta)
            targets = self._grant_targets(batch, target)
            fresh = [(c, k) for c, k in targets if str(k) not in grants.targets] if len(targets) > 1 else targets
            for canonical, tool_key in fresh or targets:
                grants.add(canonical, tool_key, meta, parse_effective_at(effective_at))
            batch.add(grants)
        args = {"subject": subject, "target": target, "effective_at": effective_at}
        return self.execute("grant.add", args, meta, build)

    def _revoke_targets(self, batch: Batch, grants: SubjectGrants, target: str
                        ) -> list[tuple[str, uuid.UUID | None]]:
        """What a revoke names: the grants a shim pattern made (each tool it expands to that is granted),
        else the entry itself, as stored (even from before the limits: a revoke is never refused for them)."""
        expansion = batch.policy.expand_pattern_shim(target)
        if expansion is not None and "*" not in expansion:
            tools = [self.owner_of(t) for t in expansion]
            held = [(t.tool_id, t.id) for t in tools if t is not None and str(t.id) in grants.targets]
            if held:
                return held
        tool = None if is_pattern(target) else self.owner_of(target)
        return [(target, tool.id if tool else None)]

    def revoke_grant(self, subject: str, target: str, meta: Meta, effective_at: str | None = None) -> WriteResult:
        def build(batch: Batch) -> None:
            self.subject(subject)
            grants = self.get_or_none(grants_key(subject), SubjectGrants) or SubjectGrants.open(subject, meta)
            for revoked, tool_key in self._revoke_targets(batch, grants, target):
                grants.revoke(revoked, tool_key, meta, parse_effective_at(effective_at))
            batch.add(grants)
        args = {"subject": subject, "target": target, "effective_at": effective_at}
        return self.execute("grant.revoke", args, meta, build)
