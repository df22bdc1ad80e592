"""End to end: the Spring Voyage story (units, agents, connectors, images, grants) through the `toolcat`
command line, checked against the effective-set and explain documents of CONTRACT.md."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from tests.support import ok

REGISTER = ("--group", "core", "--tier", "default", "--visibility", "public")
ROW_FIELDS = {"tool_id", "namespace", "description", "provenance", "inherited_from", "exposure"}


def write(toolcat: Any, *args: str) -> dict[str, Any]:
    answer = ok(toolcat(*args))
    assert set(answer) == {"position", "events"} and answer["events"], answer
    assert answer["position"] == answer["events"][-1]["position"]
    return answer


def rejected(run: Any, code: str, exit_code: int = 3) -> dict[str, Any]:
    assert run.code == exit_code, f"expected exit {exit_code} ({code}), got {run.code}\n" \
                                  f"stdout: {run.stdout}\nstderr: {run.stderr}"
    assert run.stdout.strip() == ""
    assert run.error["code"] == code, run.error
    return run.error


def sql(toolcat: Any, query: str, **kwargs: Any) -> list[dict[str, Any]]:
    return ok(toolcat("sql", query, "--format", "json", **kwargs))


def event_count(toolcat: Any) -> int:
    return sql(toolcat, "select count(*) as n from events")[0]["n"]


def rows(document: dict[str, Any]) -> dict[str, tuple[Any, Any, Any]]:
    return {r["tool_id"]: (r["provenance"], r["inherited_from"], r["exposure"]) for r in document["tools"]}


def build_story(toolcat: Any) -> int:
    """The Spring Voyage example; answers the position of the last write."""
    write(toolcat, "init", "--policy", "spring-voyage")
    write(toolcat, "tool", "register", "sv.directory.list", "--source", "builtin", *REGISTER,
          "--description", "list the directory")
    write(toolcat, "tool", "register", "sv.memory.search", "--source", "builtin", "--group", "memory",
          "--tier", "default", "--visibility", "public", "--description", "search memory")
    write(toolcat, "connector", "register", "arxiv", "--tool", "arxiv.search", "--tool", "arxiv.fetch_abstract")
    write(toolcat, "unit", "create", "org")
    write(toolcat, "unit", "create", "research", "--parent", "org")
    write(toolcat, "connector", "bind", "arxiv", "--unit", "org")
    write(toolcat, "agent", "create", "ada", "--unit", "research", "--state-mode", "stateless")
    write(toolcat, "image", "declare", "ada", "--image", "acme/ada:1", "--tool", "acme.summarize")
    return write(toolcat, "grant", "add", "agent:ada", "arxiv.search")["position"]


def test_spring_voyage_effective_sets_explain_and_time_travel(toolcat: Any) -> None:
    last = build_story(toolcat)

    live = ok(toolcat("effective", "agent:ada"))
    assert live["subject"] == "agent:ada"
    assert live["position"] == live["read_model_position"] == last  # the last write changed ada's set
    for row in live["tools"]:
        assert set(row) == ROW_FIELDS, row
    ids = [r["tool_id"] for r in live["tools"]]
    assert ids == sorted(ids)
    assert rows(live) == {
        "acme.summarize": ("image", None, "enabled"),
        "arxiv.fetch_abstract": ("connector:arxiv", "org", "enabled"),
        "arxiv.search": ("explicit", None, "enabled"),
        "sv.directory.list": ("platform", None, "enabled"),
        "sv.memory.search": ("platform", None, "enabled"),
    }
    by_id = {r["tool_id"]: r for r in live["tools"]}
    assert by_id["arxiv.search"]["namespace"] == "arxiv"
    assert by_id["sv.memory.search"]["namespace"] == "sv"
    assert by_id["sv.directory.list"]["description"] == "list the directory"

    unit = ok(toolcat("effective", "unit:research"))
    assert unit["subject"] == "unit:research"
    # the unit's position is its own set's last change (its ETag), not the read model's
    assert unit["position"] < unit["read_model_position"] == last
    assert [r["tool_id"] for r in unit["tools"]] == ["arxiv.fetch_abstract", "arxiv.search",
                                                   "sv.directory.list", "sv.memory.search"]
    assert all(r["exposure"] is None for r in unit["tools"])
    assert rows(unit)["arxiv.search"] == ("connector:arxiv", "org", None)
    assert rows(unit)["sv.directory.list"] == ("platform", None, None)

    why = ok(toolcat("explain", "agent:ada", "arxiv.search"))
    assert why["subject"] == "agent:ada"
    assert why["tool_id"] == "arxiv.search"
    assert why["visible"] is True
    assert why["winner"]["provenance"] == "explicit"
    assert [w["provenance"] for w in why["shadowed"]] == ["connector:arxiv"]
    assert why["shadowed"][0]["inherited_from"] == "org"
    assert why["positions"] and all(isinstance(p, int) and 0 < p <= last for p in why["positions"])
    assert why["positions"] == sorted(why["positions"])
    unseen = ok(toolcat("explain", "unit:org", "acme.summarize"))
    assert unseen["visible"] is False and unseen["winner"] is None

    revoke = write(toolcat, "grant", "revoke", "agent:ada", "arxiv.search")
    after_revoke = ok(toolcat("effective", "agent:ada"))
    assert after_revoke["position"] == revoke["position"]
    assert rows(after_revoke)["arxiv.search"] == ("connector:arxiv", "org", "enabled")

    assert ok(toolcat("effective", "agent:ada", "--at", str(last))) == live
    times = {r["position"]: datetime.fromisoformat(r["recorded_at"])
             for r in sql(toolcat, "select position, recorded_at from events")}
    first_revoke = revoke["events"][0]["position"]
    assert first_revoke == last + 1
    between = times[last] + (times[first_revoke] - times[last]) / 2
    assert times[last] < between < times[first_revoke]
    assert ok(toolcat("effective", "agent:ada", "--as-of", between.isoformat())) == live
    explained_then = ok(toolcat("explain", "agent:ada", "arxiv.search", "--at", str(last)))
    assert explained_then["winner"]["provenance"] == "explicit"

    allow = write(toolcat, "agent", "allowlist", "ada", "sv.directory.list")
    limited = ok(toolcat("effective", "agent:ada"))
    assert limited["position"] == allow["position"]
    assert {t: r[2] for t, r in rows(limited).items()} == {
        "acme.summarize": "disabled_by_agent_allowlist",
        "arxiv.fetch_abstract": "disabled_by_agent_allowlist",
        "arxiv.search": "disabled_by_agent_allowlist",
        "sv.directory.list": "enabled",
        "sv.memory.search": "disabled_by_agent_allowlist",
    }
    write(toolcat, "agent", "allowlist", "ada", "--clear")
    restored = ok(toolcat("effective", "agent:ada"))
    assert restored["tools"] == after_revoke["tools"]


def test_subject_rejections_write_nothing(toolcat: Any) -> None:
    build_story(toolcat)
    before = event_count(toolcat)
    error = rejected(toolcat("effective", "agent:nobody"), "unknown_subject")
    assert error["message"]
    rejected(toolcat("grant", "add", "unit:nowhere", "arxiv.search"), "unknown_subject")
    rejected(toolcat("agent", "create", "bob", "--unit", "nowhere"), "unknown_subject")
    rejected(toolcat("unit", "create", "org"), "duplicate_subject")
    rejected(toolcat("connector", "bind", "github", "--unit", "org"), "unknown_connector")
    rejected(toolcat("connector", "bind", "arxiv", "--unit", "org"), "already_bound")
    rejected(toolcat("connector", "unbind", "arxiv", "--unit", "research"), "not_bound")
    rejected(toolcat("grant", "revoke", "agent:ada", "sv.memory.search"), "unknown_grant")
    assert event_count(toolcat) == before

    # Unbinding takes the connector's tools away from the unit and everything below it.
    write(toolcat, "connector", "unbind", "arxiv", "--unit", "org")
    assert "arxiv.fetch_abstract" not in rows(ok(toolcat("effective", "unit:research")))
    assert rows(ok(toolcat("effective", "agent:ada")))["arxiv.search"] == ("explicit", None, "enabled")


def test_sql_reads_in_three_formats_and_never_writes(toolcat: Any) -> None:
    last = build_story(toolcat)
    objects = sql(toolcat, "select position, type from events order by position")
    assert isinstance(objects, list) and len(objects) == last
    assert all(set(o) == {"position", "type"} for o in objects)
    assert [o["position"] for o in objects] == list(range(1, last + 1))
    assert objects[0]["type"] == "Policy.Recorded"

    csv_run = toolcat("sql", "select position, type from events order by position", "--format", "csv",
                      json_output=False)
    assert csv_run.code == 0, csv_run.stderr
    lines = csv_run.stdout.strip().splitlines()
    assert lines[0].strip() == "position,type"
    assert lines[1].strip() == "1,Policy.Recorded"
    assert len(lines) == last + 1

    table = toolcat("sql", "select position, type from events", json_output=False)
    assert table.code == 0 and "Policy.Recorded" in table.stdout

    refused = toolcat("sql", "delete from events")
    assert refused.code != 0
    assert refused.stdout.strip() == ""
    assert json.loads(refused.stderr)["error"]["message"]
    refused_drop = toolcat("sql", "drop table events")
    assert refused_drop.code != 0
    assert event_count(toolcat) == last
    verified = ok(toolcat("audit", "verify"))
    assert verified["ok"] is True and verified["events"] == last
