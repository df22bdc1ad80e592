"""A seeded, deterministic catalog history for benchmarks: tools over namespaces, aliases walked through
their whole deprecation lifecycle, units nested three deep, agents, connectors bound and unbound, image
rotations, grants added and revoked. Aggregates are built in memory through their own command methods
(so every domain rule still applies) and saved in chunks: the bulk append path."""
from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.agent import Agent
from domain.base import Meta
from domain.catalog import Catalog
from domain.connector import Connector
from domain.grants import SubjectGrants
from domain.name import NameClaim
from domain.naming import preset
from domain.policy import CatalogPolicy
from domain.release import ReleaseTrain
from domain.tool import Tool
from domain.unit import Unit
from domain.values import ToolSpec
from domain.window import MILESTONES

META = Meta(actor="bench", reason="generated workload")
# The fewest events `Workload.run(events=…)` writes exactly: below it the catalog it builds (tools, units,
# agents, connectors) already takes more.
FEWEST_EVENTS = 150


@dataclass(frozen=True)
class Shape:
    connectors: int
    tools_per_connector: int
    platform_tools: int
    units: int  # in three levels: orgs, departments, teams
    agents: int
    lifecycles: int  # aliases walked from added to step 5
    churn: int  # grant / binding / image changes after the initial build

    @classmethod
    def for_events(cls, events: int) -> Shape:
        """A realistic mix whose history holds roughly `events` events."""
        tools = max(8, events // 4)
        connectors = max(2, tools // 50)
        return cls(connectors=connectors, tools_per_connector=max(2, tools // connectors), platform_tools=20,
                   units=max(3, events // 500), agents=max(2, events // 100), lifecycles=max(1, events // 400),
                   churn=max(10, events // 3))

    @classmethod
    def read_latency(cls) -> Shape:
        """1k agents and 10k tools (the effective-set read budget)."""
        return cls(connectors=100, tools_per_connector=100, platform_tools=20, units=60, agents=1000,
                   lifecycles=10, churn=2000)


class Workload:
    def __init__(self, catalog: Catalog, shape: Shape, seed: int = 7, chunk: int = 2000,
                 progress: Callable[[int], None] | None = None) -> None:
        self.catalog, self.shape, self.random = catalog, shape, random.Random(seed)
        self.chunk, self.progress = chunk, progress
        self.dirty: dict[Any, Any] = {}
        self.counted: dict[Any, int] = {}  # pending events already counted, per dirty aggregate
        self.saved = 0
        self.pending = 0

    @property
    def events(self) -> int:
        """Every event made so far, saved or pending (exact)."""
        return self.saved + self.pending

    # -- saving in chunks ---------------------------------------------------------------------------
    def touch(self, *aggregates: Any) -> None:
        for aggregate in aggregates:
            self.dirty[aggregate.id] = aggregate
            now = len(aggregate.pending_events)
            self.pending += now - self.counted.get(aggregate.id, 0)
            self.counted[aggregate.id] = now
        if self.pending >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if self.dirty:
            recordings = self.catalog.save(*self.dirty.values())
            self.saved += len(recordings)
            self.dirty, self.counted, self.pending = {}, {}, 0
            if self.progress:
                self.progress(self.saved)

    # -- the story ------------------------------------------------------------------------------------
    def run(self, events: int | None = None) -> int:
        """Write the story; with `events`, churn goes on until exactly that many events are written (the
        last command may add one more: a subject's first grant opens its grants too)."""
        shape, rnd = self.shape, self.random
        self.touch(CatalogPolicy.record(preset("spring-voyage"), META))
        train = ReleaseTrain.start(META)
        train.publish("1.0.0", META)
        self.touch(train)
        tools = [self.register(f"sv.area{i % 6}.verb{i}", "builtin") for i in range(shape.platform_tools)]
        connectors = []
        for c in range(shape.connectors):
            ids = [f"ns{c}.tool_{t}" for t in range(shape.tools_per_connector)]
            tools += [self.register(tool_id, "connector") for tool_id in ids]
            connector = Connector.register(f"conn{c}", f"ns{c}", ids, META)
            connectors.append(connector)
            self.touch(connector)
        units = self.build_units()
        agents = [Agent.create(f"agent{a}", rnd.choice(units[-1]).name, rnd.choice(["stateful", "stateless"]),
                               META) for a in range(shape.agents)]
        self.touch(*agents)
        # Each unit has a few connectors it may use; churn binds and unbinds among those.
        self.candidates = {unit.name: rnd.sample(connectors, min(5 if unit in units[-1] else 2, len(connectors)))
                           for level in units[1:] for unit in level}
        for unit in units[-1]:
            for connector in self.candidates[unit.name][:3]:
                unit.bind(connector.slug, META)
                self.touch(unit)
        self.walk_lifecycles(train, rnd.sample(tools, min(shape.lifecycles, len(tools))))
        if events is not None and self.events > events:
            raise ValueError(f"the workload's catalog alone takes {self.events} events, more than {events}")
        self.churn(units, agents, connectors, tools, events)
        self.flush()
        return self.saved

    def register(self, tool_id: str, source: str) -> Tool:
        spec = ToolSpec(source=source, group="extension", tier="advanced", visibility="public",
                        requires_state=self.random.random() < 0.1).with_family(tool_id)  # type: ignore[arg-type]
        tool = Tool.register(tool_id, spec, "1.0.0", META)
        self.touch(tool, NameClaim.claim(tool_id, tool.id, META))
        return tool

    def build_units(self) -> list[list[Unit]]:
        orgs = [Unit.create(f"org{i}", None, META) for i in range(max(1, self.shape.units // 12))]
        depts = [Unit.create(f"dept{i}", self.random.choice(orgs).name, META)
                 for i in range(max(1, self.shape.units // 4))]
        teams = [Unit.create(f"team{i}", self.random.choice(depts).name, META)
                 for i in range(max(1, self.shape.units - len(orgs) - len(depts)))]
        self.touch(*orgs, *depts, *teams)
        return [orgs, depts, teams]

    def walk_lifecycles(self, train: ReleaseTrain, tools: list[Tool]) -> None:
        for index, tool in enumerate(tools):
            alias = f"legacy{index}.{tool.tool_id.split('.')[0]}_{index}"
            tool.add_alias(alias, False, META)
            tool.deprecate_alias(alias, META)
            self.touch(tool, NameClaim.claim(alias, tool.id, META))
        for version in ("1.1.0", "1.2.0"):
            train.publish(version, META)
        self.touch(train)
        for index, tool in enumerate(tools):
            alias = f"legacy{index}.{tool.tool_id.split('.')[0]}_{index}"
            for milestone in MILESTONES:
                tool.record_milestone(alias, milestone, "1.1.0", "generated", META)
            tool.record_step(alias, 1, "generated", META)
            tool.record_step(alias, 2, "generated", META)
            tool.retire_alias(alias, "1.2.0", "1.1.0", META)
            tool.record_step(alias, 5, "generated", META)
            self.touch(tool)

    def churn(self, units: list[list[Unit]], agents: list[Agent], connectors: list[Connector],
              tools: list[Tool], events: int | None = None) -> None:
        rnd, grants = self.random, {}
        everyone = [(f"unit:{u.name}", u) for level in units for u in level] + [(f"agent:{a.name}", a) for a in agents]
        steps = itertools.count() if events is not None else iter(range(self.shape.churn))
        for step in steps:
            if events is not None and self.events >= events:
                break
            roll = rnd.random()
            if roll < 0.5:
                subject, _ = rnd.choice(everyone)
                grant = grants.get(subject) or SubjectGrants.open(subject, META)
                grants[subject] = grant
                tool = rnd.choice(tools)
                if str(tool.id) in grant.targets:
                    grant.revoke(tool.tool_id, tool.id, META)
                else:
                    grant.add(tool.tool_id, tool.id, META)
                self.touch(grant)
            elif roll < 0.75:
                unit = rnd.choice(units[-1] + units[-2])
                connector = rnd.choice(self.candidates[unit.name])
                (unit.unbind if connector.slug in unit.bindings else unit.bind)(connector.slug, META)
                self.touch(unit)
            else:
                agent = rnd.choice(agents)
                chosen = rnd.sample(tools, 3)
                agent.declare_image(f"img/{agent.name}:{step}", [t.tool_id for t in chosen],
                                    [str(t.id) for t in chosen], META)
                self.touch(agent)
