"""The gateway's `SetSource` over a home's DuckDB read model: the one `toolcat serve` owns (fed its
batches' changes by the follower) or, for `toolcat gateway --stdio`, a read-only copy of it.

Everything a call decides is in memory: subjects' sets read once and kept until a batch changes them
(the follower tells which subjects, before it announces the batch's position), and the directory
(descriptors, names, route rules, MCP server entries) read again, whole, at most once per batch that
changed any of it (one small statement tells whether one did)."""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import duckdb
import orjson

from domain.errors import UnknownSubject
from domain.mcp_servers import Connection
from domain.routing import RouteRule
from domain.subjects import parse_subject
from infra.mcp.gateway.source import Changed, Descriptor, Directory, Name, SubjectSet, subscription
from infra.reading import current_document
from projections import queries
from projections.rows import run, select_rows
from projections.effective.reads import INFINITY
from projections.sqlfiles import query

Reader = Callable[[], "contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]"]

# One statement: whether anything the directory holds changed (the latest version of each of its tables), a
# row per table in this order (the stamp's columns). A UNION ALL rather than one row of scalar subqueries:
# DuckDB plans those as an eight-way join whose join-order search took ≈ 4 of the stamp's 5.4 ms (1.4-1.8 ms
# now, 1,000 tools), on the event loop after every batch.
_STAMP_COLUMNS = (
    "SELECT max(updated_position) FROM tools", "SELECT max(updated_position) FROM aliases",
    "SELECT max(position) FROM alias_milestones",
    "SELECT max(greatest(valid_from, coalesce(valid_to, 0))) FROM tool_class_history",
    "SELECT max(greatest(valid_from, coalesce(valid_to, 0))) FROM route_rule_history",
    "SELECT max(greatest(valid_from, coalesce(valid_to, 0))) FROM mcp_server_history",
    "SELECT max(greatest(valid_from, coalesce(valid_to, 0))) FROM mcp_tool_history",
    "SELECT position FROM tracking WHERE projection = 'catalog'")
_DIRECTORY_STAMP = " UNION ALL ".join(f"SELECT {column} AS stamp_column, ({latest}) AS stamp"
                                      for column, latest in enumerate(_STAMP_COLUMNS)) + " ORDER BY stamp_column"

_TOOLS = """
SELECT t.canonical_id, t.tool_key, t.description, t.input_schema, t.risk, t.visibility, t.source,
       coalesce(c.classes, t.classes, []::VARCHAR[]) AS classes, m.server, m.upstream_name, m.title,
       m.output_schema, m.annotations
FROM tools t
LEFT JOIN (SELECT * FROM tool_class_history WHERE valid_to IS NULL) c USING (tool_key)
LEFT JOIN mcp_tools m ON m.tool_id = t.canonical_id"""

_NAMES = "SELECT a.alias, t.canonical_id, a.lifecycle, a.shim FROM aliases a JOIN tools t USING (tool_key)"


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, (str, bytes)) else value


# The columns of _DIRECTORY_STAMP each part of the directory is read from. Names (aliases and their sunsets,
# which follow releases and milestones too) are read again at any change, the catalog's position included:
# grants move that position many times a second, and the 1,000 descriptors of a large catalog read again
# after each batch (≈ 50 ms of CPU in the event loop) held up the writes' answers and list_changed.
_TOOLS_STAMP, _RULES_STAMP, _SERVERS_STAMP = (0, 3, 6), (4,), (5,)


def read_directory(con: duckdb.DuckDBPyConnection, stamp: tuple[Any, ...],
                   before: tuple[Directory, tuple[Any, ...]] | None = None) -> Directory:
    """The directory as the read model holds it at `stamp` (a row of _DIRECTORY_STAMP); with `before`
    (the directory and its stamp), the parts whose stamp columns have not moved are kept from it (the same
    descriptors, and with them what each built once)."""
    def part(columns: tuple[int, ...], kept: str, read: Callable[[duckdb.DuckDBPyConnection], Any]) -> Any:
        if before is not None and all(stamp[column] == before[1][column] for column in columns):
            return getattr(before[0], kept)
        return read(con)
    return Directory(position=stamp[-1] or 0, tools=part(_TOOLS_STAMP, "tools", _read_tools),
                     names=_read_names(con), rules=part(_RULES_STAMP, "rules", _read_rules),
                     servers=part(_SERVERS_STAMP, "servers", _read_servers))


def _read_tools(con: duckdb.DuckDBPyConnection) -> dict[str, Descriptor]:
    tools = {}
    for r in select_rows(con, _TOOLS):
        # A tool synced from an MCP server is served by it: mcp_tools names the entry and the upstream name.
        server = r["server"]
        tools[r["canonical_id"]] = Descriptor(
            tool_id=r["canonical_id"], tool_key=r["tool_key"], description=r["description"],
            input_schema=_json(r["input_schema"]), risk=r["risk"], classes=tuple(r["classes"] or ()),
            visibility=r["visibility"], source=r["source"], backing_server=server,
            upstream_name=r["upstream_name"] if server is not None else None, title=r["title"],
            output_schema=_json(r["output_schema"]), hints=_json(r["annotations"]))
    return tools


def _read_names(con: duckdb.DuckDBPyConnection) -> dict[str, Name]:
    names = {}
    for r in select_rows(con, _NAMES):
        lifecycle = "shim" if r["shim"] and r["lifecycle"] != "retired" else r["lifecycle"]
        # A deprecated alias's sunset as the HTTP API's `Sunset` header gives it (few aliases are deprecated).
        found = queries.deprecation(con, r["alias"]) if lifecycle == "deprecated" else None
        names[r["alias"]] = Name(alias=r["alias"], canonical_id=r["canonical_id"], lifecycle=lifecycle,
                                 sunset=str(found["removal_planned"]) if found and found["removal_planned"] else None,
                                 sunset_release=found["removal_release"] if found else None)
    return names


def _read_rules(con: duckdb.DuckDBPyConnection) -> list[RouteRule]:
    return [RouteRule.model_validate({k: r[k] for k in RouteRule.model_fields})
            for r in select_rows(con, "SELECT * FROM route_rule_history WHERE valid_to IS NULL ORDER BY rule_id")]


def _read_servers(con: duckdb.DuckDBPyConnection) -> dict[str, Connection]:
    servers = {}
    for r in select_rows(con, "SELECT * FROM mcp_servers"):
        servers[r["name"]] = Connection(transport=r["transport"], command=r["command"], args=list(r["args"] or []),
                                        env=_json(r["env"]) or {}, env_refs=_json(r["env_refs"]) or {},
                                        url=r["url"], header_refs=_json(r["header_refs"]) or {})
    return servers


def read_subject_set(con: duckdb.DuckDBPyConnection, subject: str) -> SubjectSet:
    document = current_document(con, subject)
    enabled = tuple(row["tool_id"] for row in document["tools"] if row["exposure"] == "enabled")
    others = {row["tool_id"]: row["exposure"] for row in document["tools"] if row["exposure"] != "enabled"}
    return SubjectSet(subject=subject, position=document["position"], tools=enabled, exposure=others)


def read_scopes(con: duckdb.DuckDBPyConnection, subject: str) -> set[str]:
    kind, name = parse_subject(subject)
    scopes = {scope for (scope,) in run(con, query("route_scopes"),
                                         {"kind": kind, "name": name, "at": INFINITY})}
    if f"{kind}:{name}" not in scopes:
        raise UnknownSubject(f"no {kind} '{name}'", subject=subject)
    return scopes


class ReadModelSets:
    """A `SetSource` over a read model. `read()` leases a cursor (in a transaction of its own) of the read
    model as fresh as the position `position()` announces; `changed` is to be called with each batch's
    changes, before its position is announced (ServerState.on_changes)."""

    def __init__(self, read: Reader, position: Callable[[], int]) -> None:
        self._read, self._position = read, position
        self._lock = threading.Lock()
        self._sets: dict[str, SubjectSet] = {}
        self._scopes: dict[str, set[str]] = {}
        self._directory: Directory | None = None
        self._stamp: tuple[Any, ...] | None = None
        self._looked_at = -1  # the announced position the directory's stamp was last compared at
        self._listeners: list[Changed] = []
        self._changed_at: dict[str, int] = {}  # subject → the latest position a batch changed its set at
        self._floor = 0  # nothing read before this position is kept (every set may have changed)

    # -- fed by the follower ---------------------------------------------------------------------------
    def changed(self, position: int, subjects: list[str] | None) -> None:
        with self._lock:
            if subjects is None:
                self._sets, self._scopes, self._changed_at, self._floor = {}, {}, {}, position
            else:
                for subject in subjects:
                    self._sets.pop(subject, None)
                    self._scopes.pop(subject, None)
                    self._changed_at[subject] = position
            listeners = list(self._listeners)
        for listener in listeners:
            listener(position, subjects)

    # -- SetSource -------------------------------------------------------------------------------------
    def subscribe(self, listener: Changed) -> Callable[[], None]:
        return subscription(self._listeners, self._lock, listener)

    def subject_set(self, subject: str) -> SubjectSet:
        found = self._sets.get(subject)
        if found is not None:
            return found
        with self._read() as con:
            found = read_subject_set(con, subject)
        with self._lock:
            # Kept only when read at or after the last batch that changed it (a batch applied while this read
            # ran has already dropped what was kept, and must not find this older set kept after it).
            if found.position >= max(self._floor, self._changed_at.get(subject, -1)):
                self._sets[subject] = found
        return found

    def scopes(self, subject: str) -> set[str]:
        found = self._scopes.get(subject)
        if found is None:
            with self._read() as con:
                position = self._position()
                found = read_scopes(con, subject)
            with self._lock:
                if position >= max(self._floor, self._changed_at.get(subject, -1)):
                    self._scopes[subject] = found
        return found

    def directory(self) -> Directory:
        position = self._position()
        directory = self._directory
        if directory is not None and self._looked_at >= position:
            return directory
        with self._read() as con:
            stamp = tuple(value for _column, value in run(con, _DIRECTORY_STAMP))
            if directory is None or stamp != self._stamp:
                before = None if directory is None or self._stamp is None else (directory, self._stamp)
                directory = read_directory(con, stamp, before)
        self._directory, self._stamp, self._looked_at = directory, stamp, position
        return directory
