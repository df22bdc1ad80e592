"""`audit what-if`: the history replayed under another naming policy into a scratch read model. Every
name the history introduced (registrations, renames, aliases) is checked against that policy; a refused
registration is left out of the replay with every later event of that tool, and the policy's own platform
namespaces and pattern shims replace the recorded ones, so the effective sets show what the policy would
have given. Refused renames and aliases are reported; the replay keeps them, since later events build on
them (the report says so)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import duckdb

from domain.catalog import Catalog
from domain.errors import ToolcatError
from domain.history import HistoryRecord
from domain.naming import NamingPolicy
from projections.connection import connect
from projections.effective.reads import effective_rows, subjects_at
from projections.canonical import GENESIS_HASH
from projections.envelope import chain_all
from projections.migrate import migrate
from projections.projector import Projector
from projections.scratch import set_changes

PAGE = 2000


def _refusal(policy: NamingPolicy, record: HistoryRecord, sources: dict[str, str]) -> dict[str, Any] | None:
    """Why `policy` would have refused this event's new name (None: it would not)."""
    state, source = record.state, sources.get(record.originator_id, "")
    try:
        if record.topic == "Tool.Registered":
            name = state["tool_id"]
            policy.check_tool_id(name, state["spec"]["source"])
        elif record.topic == "Tool.Renamed":
            name = state["new_id"]
            policy.check_tool_id(name, state.get("source") or source)
        elif record.topic == "Tool.AliasAdded":
            name = state["alias"]
            policy.check_alias_id(name, source)
        else:
            return None
    except ToolcatError as error:
        return {"position": record.position, "type": record.topic, "id": name, "code": error.code,
                "message": error.message}
    return None


def _sets_at(con: duckdb.DuckDBPyConnection, at: int) -> dict[str, dict[str, dict[str, Any]]]:
    subjects = subjects_at(con, at)
    sets: dict[str, dict[str, dict[str, Any]]] = {f"{k}:{n}": {} for k, n in subjects}
    for row in effective_rows(con, subjects, at):
        sets[f"{row['subject_kind']}:{row['subject']}"][row["tool_id"]] = row
    return sets


def what_if(catalog: Catalog, live: duckdb.DuckDBPyConnection, policy: NamingPolicy, at: int) -> dict[str, Any]:
    refused: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    dropped: set[str] = set()  # tools whose registration the policy refuses
    scratch = connect()
    try:
        migrate(scratch)
        projector, after, position, head = Projector(scratch), 0, 0, GENESIS_HASH
        while after < at and (records := [r for r in catalog.history(after=after, limit=PAGE) if r.position <= at]):
            after = records[-1].position
            kept = []
            for record in records:
                found = _refusal(policy, record, sources)
                if record.topic == "Tool.Registered":
                    sources[record.originator_id] = record.state["spec"]["source"]
                elif record.topic == "Tool.Renamed" and record.state.get("source"):
                    sources[record.originator_id] = record.state["source"]  # a rename that moved the tool
                if found is not None:
                    refused.append(found | {"replayed": record.topic != "Tool.Registered"})
                    if record.topic == "Tool.Registered":
                        dropped.add(record.originator_id)
                if record.originator_id in dropped:
                    continue
                if record.topic == "Policy.Recorded":
                    record = replace(record, state={**record.state, "policy": policy.model_dump(mode="json")})
                kept.append(record)
            if kept:
                envelopes = chain_all(kept, position, head)
                projector.apply(envelopes, chained_here=True)
                position, head = envelopes[-1].position, envelopes[-1].hash
        effects = set_changes(_sets_at(live, at), _sets_at(scratch, at))
    finally:
        scratch.close()
    return {"policy": policy.name, "position": at, "refused": refused, "effects": effects}
