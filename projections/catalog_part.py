"""The catalog part of the read model: naming policy, releases, tools, aliases, milestones, steps."""
from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import duckdb

from projections.envelope import Envelope
from projections.rows import AppendRows, Buffer, BufferedPart, GroupedRows, HistoryRows, scalar
from projections.sql_history import SqlAppend, SqlHistory

Handler = Callable[[Envelope, dict[str, Any]], None]


def when(envelope: Envelope) -> datetime:
    return datetime.fromisoformat(envelope.recorded_at)


def ignore(envelope: Envelope, data: dict[str, Any]) -> None:
    """The handler of events whose rows, if any, are not written by a handler: those that only guard
    uniqueness or start an aggregate, and those built in SQL at flush. The projector does not even upcast
    them."""


class CatalogPart(BufferedPart):
    """One small method per event type; rows are buffered and written in bulk by `flush`."""

    def __init__(self) -> None:
        self.policy = AppendRows("naming_policy")
        self.releases = AppendRows("releases")
        self.release_plans = AppendRows("release_plans")
        self.milestones = AppendRows("alias_milestones")
        self.steps = AppendRows("alias_steps")
        self.tools = GroupedRows("tools", key="tool_key", group="tool_key")
        self.aliases = GroupedRows("aliases", key="alias", group="tool_key")
        self.tool_history = HistoryRows("tool_history", ("tool_key",))
        self.alias_history = HistoryRows("alias_history", ("alias",))
        self.class_history = HistoryRows("tool_class_history", ("tool_key",))
        self.schema_history = HistoryRows("tool_schema_history", ("tool_key",))
        self.compatibility = AppendRows("compatibility_modes")
        self.platform_namespaces = AppendRows("platform_namespaces")
        self.pattern_shims = AppendRows("pattern_shims")
        self.seals = AppendRows("seals")
        # A tool registered with no other Tool.* event in its batch and no input schema (most of them):
        # its rows are a pure function of the event, built in SQL (sql/registered_*.sql). The others
        # (`in_python`) go through the handlers, which later events of the batch read back.
        registered = frozenset({"Tool.Registered"})
        self.registered_tools = SqlAppend("tools", "registered_tools", registered)
        self.registered_history = SqlHistory("tool_history", ("tool_key",), "history_registered_tools", registered,
                                             new_keys=True)
        self.registered_classes = SqlHistory("tool_class_history", ("tool_key",), "history_registered_classes",
                                             registered, new_keys=True)
        self.in_python: set[str] = set()  # the batch's tools whose rows the handlers build
        self._release_count: int | None = None
        self.handlers: dict[str, Handler] = {
            "Policy.Recorded": self.policy_recorded,
            "Releases.Started": ignore,
            "Releases.Published": self.release_published,
            "Releases.Planned": self.release_planned,
            "Tool.Registered": self.tool_registered,
            "Tool.Renamed": self.tool_renamed,
            "Tool.AliasAdded": self.alias_added,
            "Tool.AliasDeprecated": self.alias_deprecated,
            "Tool.MilestoneRecorded": self.milestone_recorded,
            "Tool.StepRecorded": self.step_recorded,
            "Tool.AliasRetired": self.alias_retired,
            "Tool.Classified": self.tool_classified,
            "Name.Claimed": ignore,
            "IdempotencyKey.Used": ignore,
            "Audit.Started": ignore,
            "Audit.Sealed": self.sealed,
            # on the chain (the events table) and read from there by the rebuild's and verify's checks
            "Audit.AlteredHistoryAccepted": ignore,
            "Namespace.Claimed": ignore,
            "Tool.SchemaUpdated": self.schema_updated,
            "Compatibility.Started": self.compatibility_set,
            "Compatibility.ModeSet": self.compatibility_set,
        }

    def prefetch(self, con: duckdb.DuckDBPyConnection, envelopes: list[Envelope]) -> None:
        tool_events = [e for e in envelopes if e.type.startswith("Tool.")]
        self.in_python = {e.originator_id for e in tool_events
                     if e.type != "Tool.Registered" or e.data["spec"].get("input_schema") is not None}
        present, in_python = {e.type for e in tool_events}, sorted(self.in_python)
        self.registered_tools.plan(envelopes, present, in_python=in_python)
        self.registered_history.plan(envelopes, present, in_python=in_python)
        # Most registrations list no classes: no statement for tool_class_history then.
        classified = any(e.type == "Tool.Registered" and e.data["spec"].get("classes") for e in tool_events)
        self.registered_classes.plan(envelopes, present if classified else set(), in_python=in_python)
        self.tools.load(con, self.in_python)
        self.aliases.load(con, self.in_python)
        if any(e.type == "Releases.Published" for e in envelopes):
            self._release_count = scalar(con, "SELECT count(*) FROM releases")

    def _buffers(self) -> tuple[Buffer, ...]:
        return (self.policy, self.releases, self.release_plans, self.milestones, self.steps, self.tools, self.aliases,
                self.tool_history, self.alias_history, self.platform_namespaces, self.pattern_shims, self.seals, self.class_history,
                self.schema_history, self.compatibility, self.registered_tools, self.registered_history,
                self.registered_classes)


    def _tool_version(self, e: Envelope, tool_key: str) -> None:
        tool = self.tools.get(tool_key)
        self.tool_history.set((tool_key,), {
            "canonical_id": tool["canonical_id"], "namespace": tool["canonical_id"].split(".", 1)[0],
            "description": tool["description"], "schema_valid": tool["schema_valid"],
            "requires_state": tool["requires_state"]}, e.position, when(e))

    def _alias_version(self, e: Envelope, alias: str) -> None:
        row = self.aliases.find(alias)
        version = None if row is None else {"tool_key": row["tool_key"], "lifecycle": row["lifecycle"],
                                            "shim": row["shim"]}
        self.alias_history.set((alias,), version, e.position, when(e))

    # -- handlers ---------------------------------------------------------------------------------
    def policy_recorded(self, e: Envelope, data: dict[str, Any]) -> None:
        policy = data["policy"]
        self.policy.add(name=policy["name"], policy=json.dumps(policy, sort_keys=True), position=e.position,
                        recorded_at=when(e))
        since = {"valid_from": e.position, "valid_from_time": when(e), "valid_to": None, "valid_to_time": None}
        for namespace in policy.get("platform_namespaces", []):
            self.platform_namespaces.add(namespace=namespace, **since)
        for pattern, targets in policy.get("pattern_shims", {}).items():
            for target in targets:
                self.pattern_shims.add(pattern=pattern, target=target, **since)

    def sealed(self, e: Envelope, data: dict[str, Any]) -> None:
        self.seals.add(sealed_position=data["position"], hash=data["hash"], events=data["events"],
                       position=e.position, recorded_at=when(e), actor=e.actor)

    def release_published(self, e: Envelope, data: dict[str, Any]) -> None:
        assert self._release_count is not None
        self._release_count += 1
        self.releases.add(version=data["version"], seq=self._release_count, position=e.position,
                          recorded_at=when(e), actor=e.actor)

    def release_planned(self, e: Envelope, data: dict[str, Any]) -> None:
        self.release_plans.add(version=data["version"], planned_date=data["date"], position=e.position,
                               recorded_at=when(e), actor=e.actor)

    def tool_registered(self, e: Envelope, data: dict[str, Any]) -> None:
        if e.originator_id not in self.in_python:
            return  # built in SQL at flush
        spec = data["spec"]
        schema = spec.get("input_schema")
        self.tools.put({
            "tool_key": e.originator_id, "canonical_id": data["tool_id"], "family": spec.get("family"),
            "group_name": spec["group"], "tier": spec["tier"], "visibility": spec["visibility"],
            "source": spec["source"], "backing_server": spec.get("backing_server"),
            "plugin": spec.get("plugin"), "description": spec.get("description"),
            "input_schema": None if schema is None else json.dumps(schema, sort_keys=True),
            "schema_valid": spec.get("schema_valid", True), "classes": list(spec.get("classes", [])),
            "risk": spec.get("risk"), "requires_state": spec.get("requires_state", False),
            "registered_position": e.position, "registered_at": when(e),
            "canonical_position": e.position, "updated_position": e.position,
        })
        self._tool_version(e, e.originator_id)
        if schema is not None:
            self._schema_version(e, 1, schema, spec.get("schema_valid", True))
        if spec.get("classes"):
            self.class_history.set((e.originator_id,), {"classes": list(spec["classes"])}, e.position, when(e))

    def _schema_version(self, e: Envelope, version: int, schema: Any, valid: bool) -> None:
        self.schema_history.set((e.originator_id,), {
            "version": version, "input_schema": json.dumps(schema, sort_keys=True), "schema_valid": valid},
            e.position, when(e))

    def schema_updated(self, e: Envelope, data: dict[str, Any]) -> None:
        self.tools.get(e.originator_id).update(
            input_schema=json.dumps(data["input_schema"], sort_keys=True), schema_valid=data["schema_valid"],
            updated_position=e.position)
        self._tool_version(e, e.originator_id)  # schema_valid decides the tool's exposure, as of P
        self._schema_version(e, data["version"], data["input_schema"], data["schema_valid"])

    def compatibility_set(self, e: Envelope, data: dict[str, Any]) -> None:
        self.compatibility.add(mode=data["mode"], position=e.position, recorded_at=when(e), actor=e.actor)

    def tool_classified(self, e: Envelope, data: dict[str, Any]) -> None:
        self.tools.get(e.originator_id).update(classes=list(data["classes"]), updated_position=e.position)
        self.class_history.set((e.originator_id,), {"classes": list(data["classes"])}, e.position, when(e))

    def tool_renamed(self, e: Envelope, data: dict[str, Any]) -> None:
        tool = self.tools.get(e.originator_id)
        tool.update(canonical_id=data["new_id"], canonical_position=e.position, updated_position=e.position)
        if data.get("source") is not None:  # v2: the rename moved the tool to another provenance
            tool.update(source=data["source"], family=data["family"] or tool["family"],
                        plugin=tool["plugin"] if data["source"] == "plugin" else None)
        self.aliases.remove(data["new_id"])
        self.aliases.put({
            "alias": data["old_id"], "tool_key": e.originator_id, "lifecycle": "deprecated", "shim": False,
            "added_position": e.position, "deprecated_position": e.position, "retired_position": None,
            "retired_release": None, "updated_position": e.position,
        })
        self._tool_version(e, e.originator_id)
        self._alias_version(e, data["new_id"])
        self._alias_version(e, data["old_id"])

    def alias_added(self, e: Envelope, data: dict[str, Any]) -> None:
        self.aliases.put({
            "alias": data["alias"], "tool_key": e.originator_id, "lifecycle": "alias",
            "shim": data["shim"], "added_position": e.position, "deprecated_position": None,
            "retired_position": None, "retired_release": None, "updated_position": e.position,
        })
        self._alias_version(e, data["alias"])

    def alias_deprecated(self, e: Envelope, data: dict[str, Any]) -> None:
        self.aliases.get(data["alias"]).update(lifecycle="deprecated", deprecated_position=e.position,
                                               updated_position=e.position)
        self._alias_version(e, data["alias"])

    def milestone_recorded(self, e: Envelope, data: dict[str, Any]) -> None:
        self.milestones.add(alias=data["alias"], milestone=data["milestone"], release=data["release"],
                            evidence=data.get("evidence"), position=e.position, recorded_at=when(e),
                            actor=e.actor)

    def step_recorded(self, e: Envelope, data: dict[str, Any]) -> None:
        self.steps.add(alias=data["alias"], step=data["step"], evidence=data["evidence"],
                       position=e.position, recorded_at=when(e), actor=e.actor)

    def alias_retired(self, e: Envelope, data: dict[str, Any]) -> None:
        self.aliases.get(data["alias"]).update(lifecycle="retired", retired_position=e.position,
                                               retired_release=data["release"], updated_position=e.position)
        self._alias_version(e, data["alias"])
        for step in (3, 4):
            self.steps.add(alias=data["alias"], step=step, evidence=f"retired in {data['release']}",
                           position=e.position, recorded_at=when(e), actor=e.actor)
