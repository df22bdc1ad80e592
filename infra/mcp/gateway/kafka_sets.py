"""The gateway's `SetSource` fed by Kafka alone (`toolcat gateway --from kafka`): no DuckDB, no home.

- Subjects' sets: the `toolcat.effective-tools` changelog (docs/services.md, "Consuming
  toolcat.effective-tools"): whole snapshots per key, a value whose position is not above the one held is a
  repeat, a null value is a subject gone.
- The directory (descriptors, names, route rules, scopes, MCP server entries): folded here from the
  envelopes of `toolcat.events`, in position order, as the projector's parts fold them into DuckDB
  (projections/catalog_part.py, routing_part.py, mcp_part.py, subjects_part.py).

Both topics are read from their beginning at start (the changelog is compacted; the events topic is the
whole history), so every replica holds the same state for the same offsets: replicas are interchangeable.
A snapshot is held back until the directory has reached its position, so a set never names a tool whose
descriptor has not arrived yet; its listeners hear of it then. A snapshot that only takes tools away is
applied at once (it can only refuse more)."""
from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from domain.errors import Unavailable, UnknownSubject
from domain.mcp_servers import Connection
from domain.routing import RouteRule
from consumers.changelog import CAUGHT_UP_KEY
from domain.subjects import parse_subject
from domain.window import earliest_removal
from infra.mcp.gateway.source import Changed, Descriptor, Directory, Name, SubjectSet, subscription

log = logging.getLogger("toolcat.gateway")


class DirectoryFold:
    """The directory, folded from the events' envelopes (as dicts: `type`, `position`, `originator_id`,
    `data`). Envelopes at or below the position reached are repeats and ignored."""

    def __init__(self) -> None:
        self.position = 0
        self._tools: dict[str, dict[str, Any]] = {}  # tool key → {"tool_id", "spec"}
        self._aliases: dict[str, dict[str, Any]] = {}  # alias → {"tool_key", "lifecycle", "shim"}
        self._milestones: dict[str, dict[str, str]] = {}  # alias → milestone → release
        self._rules: dict[str, RouteRule] = {}
        self._servers: dict[str, Connection] = {}
        self._upstream: dict[str, tuple[str, str]] = {}  # tool ID → (server, upstream name)
        self._described: dict[str, dict[str, Any]] = {}  # tool ID → its title, output schema and annotations
        self._units: dict[str, str | None] = {}  # unit → its parent
        self._agents: dict[str, str] = {}  # agent → its unit
        self._built: Directory | None = None
        self._handlers: dict[str, Callable[[str, dict[str, Any]], None]] = {
            "Tool.Registered": self._registered, "Tool.Renamed": self._renamed,
            "Tool.AliasAdded": self._alias_added, "Tool.AliasDeprecated": self._alias_deprecated,
            "Tool.AliasRetired": self._alias_retired, "Tool.MilestoneRecorded": self._milestone,
            "Tool.Classified": self._classified, "Tool.SchemaUpdated": self._schema_updated,
            "RouteRules.RuleAdded": self._rule_added, "RouteRules.RuleRemoved": self._rule_removed,
            "McpServer.Added": self._server, "McpServer.Changed": self._server,
            "McpServer.Removed": self._server_removed, "McpServer.Synced": self._synced,
            "Unit.Created": self._unit, "Agent.Created": self._agent}

    def apply(self, envelope: dict[str, Any]) -> bool:
        """Fold one envelope; whether it changed the directory (a repeat or an event of no concern did not)."""
        if envelope["position"] <= self.position:
            return False
        self.position = envelope["position"]
        handler = self._handlers.get(envelope["type"])
        if handler is None:
            return False
        handler(envelope["originator_id"], envelope["data"])
        self._built = None
        return True

    # -- tools and names -------------------------------------------------------------------------------
    def _registered(self, key: str, data: dict[str, Any]) -> None:
        self._tools[key] = {"tool_id": data["tool_id"], "spec": dict(data["spec"])}

    def _renamed(self, key: str, data: dict[str, Any]) -> None:
        tool = self._tools[key]
        tool["tool_id"] = data["new_id"]
        if data.get("source") is not None:  # v2: the rename moved the tool to another provenance
            tool["spec"]["source"] = data["source"]
        self._aliases.pop(data["new_id"], None)
        self._aliases[data["old_id"]] = {"tool_key": key, "lifecycle": "deprecated", "shim": False}

    def _alias_added(self, key: str, data: dict[str, Any]) -> None:
        self._aliases[data["alias"]] = {"tool_key": key, "lifecycle": "alias", "shim": data["shim"]}

    def _alias_deprecated(self, key: str, data: dict[str, Any]) -> None:
        self._aliases[data["alias"]]["lifecycle"] = "deprecated"

    def _alias_retired(self, key: str, data: dict[str, Any]) -> None:
        self._aliases[data["alias"]]["lifecycle"] = "retired"

    def _milestone(self, key: str, data: dict[str, Any]) -> None:
        self._milestones.setdefault(data["alias"], {})[data["milestone"]] = data["release"]

    def _classified(self, key: str, data: dict[str, Any]) -> None:
        self._tools[key]["spec"]["classes"] = list(data["classes"])

    def _schema_updated(self, key: str, data: dict[str, Any]) -> None:
        self._tools[key]["spec"]["input_schema"] = data["input_schema"]

    # -- policy ----------------------------------------------------------------------------------------
    def _rule_added(self, key: str, data: dict[str, Any]) -> None:
        rule = RouteRule.model_validate(data["rule"])
        self._rules[rule.rule_id] = rule

    def _rule_removed(self, key: str, data: dict[str, Any]) -> None:
        self._rules.pop(data["rule_id"], None)

    def _server(self, key: str, data: dict[str, Any]) -> None:
        self._servers[data["name"]] = Connection.model_validate(data["connection"])

    def _server_removed(self, key: str, data: dict[str, Any]) -> None:
        self._servers.pop(data["name"], None)

    def _synced(self, key: str, data: dict[str, Any]) -> None:
        for tool in data["tools"]:
            self._upstream[tool["tool_id"]] = (data["name"], tool["upstream_name"])
            # (McpServer.Synced version 1 holds none of them)
            self._described[tool["tool_id"]] = {"title": tool.get("title"), "output_schema": tool.get("output_schema"),
                                                "hints": tool.get("annotations")}

    def _unit(self, key: str, data: dict[str, Any]) -> None:
        self._units[data["name"]] = data.get("parent")

    def _agent(self, key: str, data: dict[str, Any]) -> None:
        self._agents[data["name"]] = data["unit"]

    # -- answers ---------------------------------------------------------------------------------------
    def scopes(self, subject: str) -> set[str]:
        """The subject itself and every unit of its chain (projections/sql/route_scopes.sql)."""
        kind, name = parse_subject(subject)
        known = self._agents if kind == "agent" else self._units
        if name not in known:
            raise UnknownSubject(f"no {kind} '{name}'", subject=subject)
        scopes = {f"{kind}:{name}"}
        unit: str | None = self._agents[name] if kind == "agent" else self._units[name]
        while unit is not None and f"unit:{unit}" not in scopes:
            scopes.add(f"unit:{unit}")
            unit = self._units.get(unit)
        return scopes

    def directory(self) -> Directory:
        if self._built is not None:
            return self._built
        tools = {}
        for key, tool in self._tools.items():
            spec = tool["spec"]
            server, upstream = self._upstream.get(tool["tool_id"], (None, None))
            tools[tool["tool_id"]] = Descriptor(
                tool_id=tool["tool_id"], tool_key=key, description=spec.get("description"),
                input_schema=spec.get("input_schema"), risk=spec.get("risk"),
                classes=tuple(spec.get("classes") or ()), visibility=spec.get("visibility", "public"),
                source=spec.get("source", "builtin"), backing_server=server, upstream_name=upstream,
                **self._described.get(tool["tool_id"], {}))
        names = {}
        for alias, entry in self._aliases.items():
            lifecycle = "shim" if entry["shim"] and entry["lifecycle"] != "retired" else entry["lifecycle"]
            milestones = self._milestones.get(alias, {})
            names[alias] = Name(alias=alias, canonical_id=self._tools[entry["tool_key"]]["tool_id"],
                                lifecycle=lifecycle,
                                sunset=earliest_removal(milestones) if lifecycle == "deprecated" else None)
        self._built = Directory(position=self.position, tools=tools, names=names,
                                rules=[self._rules[rule_id] for rule_id in sorted(self._rules)],
                                servers=dict(self._servers))
        return self._built


def subject_set(document: dict[str, Any]) -> SubjectSet:
    """A changelog value (toolcat.effective/v1) as the gateway's set: the enabled rows, in their order."""
    rows = document["tools"]
    return SubjectSet(subject=document["subject"], position=document["position"],
                      tools=tuple(row["tool_id"] for row in rows if row.get("exposure") == "enabled"),
                      exposure={row["tool_id"]: row["exposure"] for row in rows if row.get("exposure") != "enabled"})


class KafkaSets:
    """A `SetSource` over the two topics: `feed_events` and `feed_changelog` take what their consumers
    polled (each from one thread); `run` polls both until stopped. Thread-safe for the endpoint's readers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fold = DirectoryFold()
        self._directory = Directory()
        self._sets: dict[str, SubjectSet] = {}
        self._held: dict[str, SubjectSet] = {}  # snapshots ahead of the directory, until it reaches them
        self._listeners: list[Changed] = []
        self.failure: str | None = None  # why the feed stopped: the sets are no longer kept up to date
        # subject → why its latest changelog message could not be read: refused until a readable one comes
        self.unreadable: dict[str, str] = {}

    # -- fed by the consumers --------------------------------------------------------------------------
    def feed_events(self, values: list[bytes | None]) -> None:
        with self._lock:
            changed = False
            for value in values:
                if value is not None:
                    changed |= self._fold.apply(json.loads(value))
            if changed:
                self._directory = self._fold.directory()
            released = [s for s in self._held.values() if s.position <= self._fold.position]
            for found in released:
                del self._held[found.subject]
                self._sets[found.subject] = found
            position = self._fold.position
        subjects = None if changed else [s.subject for s in released]
        if subjects is None or subjects:
            self._tell(position, subjects)

    def feed_changelog(self, messages: list[tuple[bytes | None, bytes | None]]) -> None:
        told: list[str] = []
        with self._lock:
            for key, value in messages:
                if key is None or key.decode() == CAUGHT_UP_KEY:  # the publisher's mark, not a subject
                    continue
                subject = key.decode()
                if value is None:  # the subject is gone
                    self._held.pop(subject, None)
                    if self._sets.pop(subject, None) is not None:
                        told.append(subject)
                    continue
                try:
                    found = subject_set(json.loads(value))
                except (ValueError, TypeError, KeyError, AttributeError) as error:  # another producer's, damaged
                    self._unreadable(subject, f"{type(error).__name__}: {error}")
                    told.append(subject)
                    continue
                self.unreadable.pop(subject, None)
                held = self._held.get(subject) or self._sets.get(subject)
                if held is not None and found.position <= held.position:
                    continue  # a repeat (delivery is at least once)
                if found.position > self._fold.position and not _only_takes_away(found, self._sets.get(subject)):
                    self._held[subject] = found
                else:
                    self._held.pop(subject, None)
                    self._sets[subject] = found
                    told.append(subject)
            position = self._fold.position
        if told:
            self._tell(position, told)

    def _unreadable(self, subject: str, reason: str) -> None:
        """(Under the lock) the subject's latest set cannot be read: it is refused (fail closed) until a
        readable message of its key follows, which a replica reading from the beginning meets too."""
        self.unreadable[subject] = reason
        self._held.pop(subject, None)
        self._sets.pop(subject, None)
        log.error("the changelog's latest message for %s could not be read (%s): its set is refused until a "
                  "readable one arrives", subject, reason)

    def _tell(self, position: int, subjects: list[str] | None) -> None:
        for listener in list(self._listeners):
            listener(position, subjects)

    # -- SetSource -------------------------------------------------------------------------------------
    def subject_set(self, subject: str) -> SubjectSet:
        if self.failure is not None:  # fail closed: a set no longer followed may still hold a revoked tool
            raise Unavailable(f"this gateway no longer follows the catalog ({self.failure}); its sets are "
                              "refused until it is restarted")
        if subject in self.unreadable:
            raise Unavailable(f"the changelog's latest message for {subject} could not be read "
                              f"({self.unreadable[subject]}): its set is refused until a readable one arrives")
        found = self._sets.get(subject)
        if found is None:
            with self._lock:
                self._fold.scopes(subject)  # an unknown subject is refused as such
            return SubjectSet(subject=subject, position=self._fold.position, tools=())
        return found

    def directory(self) -> Directory:
        return self._directory

    def scopes(self, subject: str) -> set[str]:
        with self._lock:
            return self._fold.scopes(subject)

    def subscribe(self, listener: Changed) -> Callable[[], None]:
        return subscription(self._listeners, self._lock, listener)

    @property
    def position(self) -> int:
        return self._fold.position


class KafkaFeed:
    """Two consumers (no group: every replica reads everything) following the events topic and the
    changelog from their beginning into a `KafkaSets`, on a thread of their own."""

    def __init__(self, sets: KafkaSets, events: Any, changelog: Any, events_topic: str, changelog_topic: str
                 ) -> None:
        self.sets, self._events, self._changelog = sets, events, changelog
        self._topics = events_topic, changelog_topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gateway-kafka-feed", daemon=True)
        self.failure: BaseException | None = None
        self.caught_up = threading.Event()

    def start(self, wait_seconds: float) -> KafkaFeed:
        for consumer, topic in zip((self._events, self._changelog), self._topics):
            consumer.assign(topic, consumer.partitions(topic) or [0], {})
        self._thread.start()
        if not self.caught_up.wait(wait_seconds) and self.failure is None:
            raise Unavailable(f"the gateway did not catch up with {' and '.join(self._topics)} in "
                              f"{wait_seconds:g} s")
        if self.failure is not None:
            raise Unavailable(f"the gateway's Kafka feed failed: {self.failure}") from self.failure
        return self

    def _run(self) -> None:
        quiet = 0
        try:
            while not self._stop.is_set():
                events = self._events.poll(100)
                if events:
                    _applied(events, lambda: self.sets.feed_events([m.value for m in events]))
                changes = self._changelog.poll(0 if events else 100)
                if changes:
                    _applied(changes, lambda: self.sets.feed_changelog([(m.key, m.value) for m in changes]))
                # Caught up: both topics answered nothing three times in a row (their history is read).
                quiet = 0 if events or changes else quiet + 1
                if quiet >= 3:
                    self.caught_up.set()
        except BaseException as error:  # noqa: BLE001 - told to whoever waits, and the endpoint's health
            self.failure = error
            self.sets.failure = str(error)
            log.error("the gateway's Kafka feed stopped: %s", error)
            self.caught_up.set()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        for consumer in (self._events, self._changelog):
            with contextlib.suppress(Exception):
                consumer.close()


def _only_takes_away(found: SubjectSet, served: SubjectSet | None) -> bool:
    """Whether `found` only removes tools from the set `served` now: such a set (a revoke, an unbinding, a
    retirement) is applied without waiting for the directory to reach its position, since with any
    directory it allows nothing the served set did not; so a revoke reaches the sessions as soon as the
    changelog does, not once the relay has carried its event too."""
    return served is not None and set(found.tools) <= set(served.tools)


def _applied(records: list[Any], apply: Callable[[], None]) -> None:
    """`apply()` the polled `records`; a message it cannot take stops the feed, naming where it is. (An
    unreadable set on the changelog stops only its subject: KafkaSets.unreadable. A missing event could be
    a retirement or a revoked rule, so an unreadable one on the events topic stops everything.)"""
    try:
        apply()
    except Exception as error:
        first, last = records[0], records[-1]
        raise Unavailable(f"a message of {first.topic} partition {first.partition} between offsets {first.offset} "
                          f"and {last.offset} could not be read: {type(error).__name__}: {error}") from error
