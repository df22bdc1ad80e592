"""End to end: the catalog commands of CONTRACT.md driven through the `toolcat` command line.

Each test is a small story; every check is on the JSON documents and exit codes the contract states.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from domain.naming import preset
from tests.support import ok

TOOL_FIELDS = {"canonical_id", "family", "group", "tier", "visibility", "lifecycle", "source", "backing_server",
               "plugin", "description", "classes", "risk", "schema_valid", "aliases"}
REGISTER = ("--group", "core", "--tier", "default", "--visibility", "public")


def write(toolcat: Any, *args: str) -> dict[str, Any]:
    """A write that must succeed, with the answer's shape checked."""
    answer = ok(toolcat(*args))
    assert set(answer) == {"position", "events"}, answer
    assert answer["events"], answer
    positions = [e["position"] for e in answer["events"]]
    assert positions == sorted(positions) and len(set(positions)) == len(positions), answer
    assert answer["position"] == positions[-1]
    for event in answer["events"]:
        assert set(event) == {"position", "type"} and isinstance(event["type"], str) and event["type"]
    return answer


def rejected(run: Any, exit_code: int, code: str) -> dict[str, Any]:
    assert run.code == exit_code, f"expected exit {exit_code} ({code}), got {run.code}\n" \
                                  f"stdout: {run.stdout}\nstderr: {run.stderr}"
    assert run.stdout.strip() == "", run.stdout
    error = run.error
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)
    return error


def sql(toolcat: Any, query: str) -> list[dict[str, Any]]:
    return ok(toolcat("sql", query, "--format", "json"))


def event_count(toolcat: Any) -> int:
    return sql(toolcat, "select count(*) as n from events")[0]["n"]


def test_writes_answer_positions_and_store_actor_and_reason(toolcat: Any) -> None:
    first = write(toolcat, "init", "--policy", "tyrum")
    assert [e["type"] for e in first["events"]] == ["Policy.Recorded"]
    release = write(toolcat, "release", "publish", "1.0.0", "--actor", "alice", "--reason", "first cut")
    assert release["events"][0]["position"] > first["position"]
    assert "Releases.Published" in [e["type"] for e in release["events"]]
    tool = write(toolcat, "tool", "register", "files.list", "--source", "builtin", *REGISTER,
                 "--actor", "bob", "--reason", "needed by the planner", "--description", "list files")
    assert tool["events"][0]["position"] == release["position"] + 1
    assert "Tool.Registered" in [e["type"] for e in tool["events"]]
    alias = write(toolcat, "alias", "add", "files.list", "files.ls")
    assert alias["events"][0]["position"] == tool["position"] + 1

    registered = next(e["position"] for e in tool["events"] if e["type"] == "Tool.Registered")
    published = next(e["position"] for e in release["events"] if e["type"] == "Releases.Published")
    assert sql(toolcat, f"select actor, reason from events where position = {registered}") == [
        {"actor": "bob", "reason": "needed by the planner"}]
    assert sql(toolcat, f"select actor, reason from events where position = {published}") == [
        {"actor": "alice", "reason": "first cut"}]
    # Without --actor the actor is TOOLCAT_ACTOR (the fixture sets "e2e"), and no reason.
    assert sql(toolcat, f"select actor, reason from events where position = {alias['position']}") == [
        {"actor": "e2e", "reason": None}]
    assert event_count(toolcat) == alias["position"]


def test_idempotency_key_replays_the_first_answer_and_refuses_another_command(toolcat: Any) -> None:
    write(toolcat, "init")
    command = ("tool", "register", "files.read-all", "--source", "builtin", *REGISTER)
    first = write(toolcat, *command, "--idempotency-key", "k-1")
    events = event_count(toolcat)
    again = toolcat(*command, "--idempotency-key", "k-1")
    assert again.code == 0, again.stderr
    assert again.json == first
    assert event_count(toolcat) == events

    other = toolcat("release", "publish", "2.0.0", "--idempotency-key", "k-1")
    rejected(other, 4, "idempotency_key_reused")
    # The same command with other arguments is another command too.
    changed = toolcat("tool", "register", "files.write-all", "--source", "builtin", *REGISTER,
                      "--idempotency-key", "k-1")
    rejected(changed, 4, "idempotency_key_reused")
    assert event_count(toolcat) == events


def test_rejections_have_their_codes_and_exit_statuses_and_write_nothing(toolcat: Any, tmp_path: Path) -> None:
    write(toolcat, "init", "--policy", "tyrum")
    write(toolcat, "release", "publish", "1.0.0")
    write(toolcat, "tool", "register", "files.read-all", "--source", "builtin", *REGISTER)
    write(toolcat, "alias", "add", "files.read-all", "files.cat")
    before = event_count(toolcat)

    rejected(toolcat("tool", "register", "Bad.ID", "--source", "builtin", *REGISTER), 3, "invalid_id")
    rejected(toolcat("tool", "register", "sandbox.run", "--source", "plugin", "--plugin", "p", *REGISTER),
             3, "reserved_prefix")
    error = rejected(toolcat("tool", "register", "bash", "--source", "plugin", "--plugin", "p", *REGISTER),
                     3, "reserved_id")
    assert error["details"].get("tool_id") == "bash"
    rejected(toolcat("tool", "register", "files.read-all", "--source", "builtin", *REGISTER), 3, "duplicate_tool")
    rejected(toolcat("resolve", "files.nothing"), 3, "unknown_tool")
    rejected(toolcat("tool", "show", "files.nothing"), 3, "unknown_tool")
    rejected(toolcat("alias", "add", "files.nothing", "files.none"), 3, "unknown_tool")
    rejected(toolcat("release", "publish", "0.9.0"), 3, "release_order")
    rejected(toolcat("release", "publish", "1.0.0"), 3, "release_order")

    # Usage errors: exit 2, and with --json the stderr is a JSON error document.
    usage = [
        toolcat("tool", "register", "files.x", "--source", "builtin", "--group", "core", "--tier", "default"),
        toolcat("tool", "register", "files.x", "--source", "builtin", "--group", "bogus", "--tier", "default",
                "--visibility", "public"),
        toolcat("tool", "register", "files.x", "--source", "builtin", *REGISTER,
                "--schema", str(tmp_path / "missing.json")),
        toolcat("tool", "list", "--limit", "0"),
    ]
    for run in usage:
        assert run.code == 2, (run.code, run.stderr)
        assert run.stdout.strip() == ""
        assert json.loads(run.stderr)["error"]["message"]

    # A schema file that is not JSON is a catalog rule (exit 3), not a usage error.
    not_json = tmp_path / "not.json"
    not_json.write_text("this is { not json")
    rejected(toolcat("tool", "register", "files.x", "--source", "builtin", *REGISTER, "--schema", str(not_json)),
             3, "invalid_schema")
    assert event_count(toolcat) == before

    # JSON but not a valid JSON Schema: accepted, and reported as schema_valid false.
    bad_schema = tmp_path / "bad-schema.json"
    bad_schema.write_text(json.dumps({"type": 12, "properties": "nope"}))
    write(toolcat, "tool", "register", "files.y", "--source", "builtin", *REGISTER, "--schema", str(bad_schema))
    good_schema = tmp_path / "good-schema.json"
    good_schema.write_text(json.dumps({"type": "object", "properties": {"path": {"type": "string"}}}))
    write(toolcat, "tool", "register", "files.z", "--source", "builtin", *REGISTER, "--schema", str(good_schema))
    shown = ok(toolcat("tool", "show", "files.y"))
    assert TOOL_FIELDS <= set(shown)
    assert shown["schema_valid"] is False
    assert ok(toolcat("tool", "show", "files.z"))["schema_valid"] is True


def test_alias_conflicts(toolcat: Any) -> None:
    write(toolcat, "init")
    write(toolcat, "tool", "register", "files.read-all", "--source", "builtin", *REGISTER)
    write(toolcat, "tool", "register", "files.write-all", "--source", "builtin", *REGISTER)
    write(toolcat, "alias", "add", "files.read-all", "files.cat")
    before = event_count(toolcat)
    rejected(toolcat("alias", "add", "files.write-all", "files.cat"), 3, "alias_conflict")
    rejected(toolcat("alias", "add", "files.write-all", "files.read-all"), 3, "alias_conflict")
    # A tool may not take an ID that is already an alias (no alias equals a canonical ID).
    taken = toolcat("tool", "register", "files.cat", "--source", "builtin", *REGISTER)
    assert taken.code == 3 and taken.error["code"] in ("alias_conflict", "duplicate_tool"), taken.stderr
    assert event_count(toolcat) == before


def test_deprecation_story_of_mcp_memory_seed(toolcat: Any) -> None:
    alias = "mcp.memory.seed"
    write(toolcat, "init", "--policy", "tyrum")
    write(toolcat, "release", "publish", "1.0.0")
    write(toolcat, "tool", "register", "memory.seed", "--source", "builtin", "--group", "memory",
          "--tier", "default", "--visibility", "public", "--description", "seed the memory")
    write(toolcat, "alias", "add", "memory.seed", alias)
    assert ok(toolcat("resolve", alias)) == {"input": alias, "canonical_id": "memory.seed",
                                             "lifecycle": "alias", "shim": False}
    write(toolcat, "alias", "deprecate", alias)
    assert ok(toolcat("resolve", alias))["lifecycle"] == "deprecated"
    write(toolcat, "release", "publish", "1.1.0")

    before = event_count(toolcat)
    rejected(toolcat("alias", "retire", alias, "--release", "1.1.0"), 3, "window_open")
    rejected(toolcat("alias", "milestone", alias, "canonical_shipped", "--release", "9.9.9"),
             3, "unknown_release")
    assert event_count(toolcat) == before

    milestone_positions = {}
    for name in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission"):
        answer = write(toolcat, "alias", "milestone", alias, name, "--release", "1.1.0",
                       "--evidence", f"{name} in 1.1.0")
        milestone_positions[name] = answer["position"]
    write(toolcat, "release", "publish", "1.2.0")

    before = event_count(toolcat)
    rejected(toolcat("alias", "retire", alias, "--release", "1.1.0"), 3, "window_open")
    rejected(toolcat("alias", "retire", alias, "--release", "1.3.0"), 3, "unknown_release")
    rejected(toolcat("alias", "retire", alias, "--release", "1.2.0"), 3, "steps_incomplete")
    assert event_count(toolcat) == before

    write(toolcat, "alias", "step", alias, "1", "--evidence", "only memory.seed documented",
          "--actor", "carol")
    write(toolcat, "alias", "step", alias, "2", "--evidence", "stored data rewritten")
    retired = write(toolcat, "alias", "retire", alias, "--release", "1.2.0")
    write(toolcat, "alias", "step", alias, "5", "--evidence", "fixtures cleaned")

    before = event_count(toolcat)
    error = rejected(toolcat("resolve", alias), 3, "retired_alias")
    assert error["details"]["canonical_id"] == "memory.seed"
    assert ok(toolcat("resolve", "memory.seed"))["lifecycle"] == "canonical"

    report = ok(toolcat("audit", "alias", alias))
    assert report["alias"] == alias
    assert report["canonical_id"] == "memory.seed"
    assert report["state"] == "retired"
    assert report["window"]["closed"] is True
    assert report["window"]["earliest_removal_release"] == "1.2.0"
    assert report["window"]["opened_release"] == "1.1.0"
    milestones = {m["name"]: m for m in report["milestones"]}
    assert set(milestones) == set(milestone_positions)
    for name, position in milestone_positions.items():
        assert milestones[name]["position"] == position
        assert milestones[name]["release"] == "1.1.0"
        assert milestones[name]["evidence"] == f"{name} in 1.1.0"
    steps = report["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    for step in steps:
        assert set(step) >= {"step", "position", "recorded_at", "actor", "evidence"}
        assert isinstance(step["position"], int) and step["position"] > 0
        assert isinstance(step["recorded_at"], str) and step["recorded_at"]
        assert step["actor"]
        assert step["evidence"]
    assert steps[0]["actor"] == "carol"
    assert steps[0]["evidence"] == "only memory.seed documented"
    positions = [s["position"] for s in steps]
    assert positions == sorted(positions)
    assert {steps[2]["position"], steps[3]["position"]} <= {e["position"] for e in retired["events"]}

    verified = ok(toolcat("audit", "verify"))
    assert verified["ok"] is True
    assert verified["events"] == before == event_count(toolcat)
    assert isinstance(verified["head"], str) and verified["head"]


def test_alias_migrate_rewrites_what_names_the_old_id_before_step_2(toolcat: Any) -> None:
    # given acme.ticket.create named by an agent's allowlist and a route rule, then renamed
    write(toolcat, "init", "--policy", "tyrum")
    write(toolcat, "release", "publish", "1.0.0")
    write(toolcat, "tool", "register", "acme.ticket.create", "--source", "plugin", "--plugin", "acme",
          "--group", "extension", "--tier", "advanced", "--visibility", "public", "--risk", "safe_create")
    write(toolcat, "unit", "create", "eng")
    write(toolcat, "agent", "create", "bot", "--unit", "eng")
    write(toolcat, "agent", "allowlist", "bot", "acme.ticket.create")
    write(toolcat, "route", "rule", "add", "no-tickets", "--deny-tool", "acme.ticket.create")
    write(toolcat, "tool", "rename", "acme.ticket.create", "acme.ticket.open")
    write(toolcat, "alias", "step", "acme.ticket.create", "1", "--evidence", "docs name acme.ticket.open")

    # when step 2 is recorded: exit 3, each holder listed, the command that fixes it named, nothing written
    before = event_count(toolcat)
    error = rejected(toolcat("alias", "step", "acme.ticket.create", "2", "--evidence", "migrated"), 3,
                     "legacy_references")
    assert error["details"]["references"] == [
        {"kind": "allowlist", "holder": "agent:bot"},
        {"kind": "route_rule", "holder": "route_rule:no-tickets", "side": "deny"}]
    assert "toolcat alias migrate acme.ticket.create" in error["message"]
    assert event_count(toolcat) == before

    # then `alias migrate` rewrites both holders, one event each, and step 2 is accepted
    migrated = write(toolcat, "alias", "migrate", "acme.ticket.create")
    assert [e["type"] for e in migrated["events"]] == ["Agent.AllowlistSet", "RouteRules.RuleRewritten"]
    assert sql(toolcat, "SELECT patterns FROM allowlist_history WHERE valid_to IS NULL") == [
        {"patterns": ["acme.ticket.open"]}]
    assert sql(toolcat, "SELECT deny_tool FROM route_rule_history WHERE valid_to IS NULL") == [
        {"deny_tool": "acme.ticket.open"}]
    assert ok(toolcat("alias", "migrate", "acme.ticket.create"))["events"] == []
    write(toolcat, "alias", "step", "acme.ticket.create", "2", "--evidence", "migrated")


def test_rename_makes_the_old_id_a_deprecated_alias(toolcat: Any) -> None:
    write(toolcat, "init")
    write(toolcat, "tool", "register", "files.grep-all", "--source", "builtin", *REGISTER)
    renamed = write(toolcat, "tool", "rename", "files.grep-all", "files.search")
    assert "Tool.Renamed" in [e["type"] for e in renamed["events"]]
    assert ok(toolcat("resolve", "files.grep-all")) == {
        "input": "files.grep-all", "canonical_id": "files.search", "lifecycle": "deprecated", "shim": False}
    shown = ok(toolcat("tool", "show", "files.search"))
    assert shown["canonical_id"] == "files.search"
    assert shown["lifecycle"] == "canonical"
    assert {"id": "files.grep-all", "lifecycle": "deprecated", "shim": False} in shown["aliases"]
    # The old ID is not canonical any more: showing it answers with the canonical tool.
    rejected(toolcat("tool", "rename", "files.nothing", "files.other"), 3, "unknown_tool")


def test_tool_list_pages_through_every_tool(toolcat: Any) -> None:
    write(toolcat, "init")
    ids = ["files.e", "files.a", "files.d", "files.c", "files.b"]
    for tool_id in ids:
        group = "retrieval" if tool_id in ("files.a", "files.d") else "core"
        write(toolcat, "tool", "register", tool_id, "--source", "builtin", "--group", group,
              "--tier", "default", "--visibility", "public")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        args = ["tool", "list", "--limit", "2"] + (["--cursor", cursor] if cursor else [])
        page = ok(toolcat(*args))
        assert set(page) == {"tools", "next_cursor"}
        assert 1 <= len(page["tools"]) <= 2
        for tool in page["tools"]:
            assert TOOL_FIELDS <= set(tool)
        seen += [t["canonical_id"] for t in page["tools"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 10, "next_cursor never ends"
    assert pages == 3
    assert seen == sorted(ids)
    retrieval = ok(toolcat("tool", "list", "--group", "retrieval"))
    assert [t["canonical_id"] for t in retrieval["tools"]] == ["files.a", "files.d"]
    assert retrieval["next_cursor"] is None
    assert all(t["group"] == "retrieval" for t in retrieval["tools"])
    run = toolcat("tool", "list", "--cursor", "not-a-cursor")
    assert run.code == 2
    assert run.error["message"]


def test_naming_policy_is_recorded_once_and_may_come_from_a_file(toolcat: Any, tmp_path: Path) -> None:
    assert [e["type"] for e in write(toolcat, "init", "--policy", "spring-voyage")["events"]] == ["Policy.Recorded"]
    before = event_count(toolcat)
    rejected(toolcat("init", "--policy", "tyrum"), 3, "policy_already_set")
    assert event_count(toolcat) == before

    policy = json.loads(preset("verb-noun").model_dump_json())
    policy["name"] = "house-style"
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps(policy))
    other = tmp_path / "other-home"
    env = {"TOOLCAT_HOME": str(other)}
    answer = ok(toolcat("init", "--policy", str(policy_file), env=env))
    assert [e["type"] for e in answer["events"]] == ["Policy.Recorded"]
    data = ok(toolcat("sql", "select data from events where type = 'Policy.Recorded'", "--format", "json",
                      env=env))
    # JSON columns come back as JSON values, not as strings holding JSON.
    assert data[0]["data"]["policy"]["name"] == "house-style"
    ok(toolcat("tool", "register", "get_file", "--source", "builtin", *REGISTER, env=env))  # ADR-0030: verb first
    rejected(toolcat("tool", "register", "files.read", "--source", "builtin", *REGISTER, env=env),
             3, "invalid_id")
    # The first home kept its own policy.
    assert event_count(toolcat) == before
    unreadable = toolcat("init", "--policy", str(tmp_path / "no-such-policy.json"),
                         env={"TOOLCAT_HOME": str(tmp_path / "third")})
    assert unreadable.code == 2


def test_human_output_is_a_table_and_errors_are_readable(toolcat: Any) -> None:
    write(toolcat, "init")
    for tool_id in ("files.alpha", "files.beta"):
        write(toolcat, "tool", "register", tool_id, "--source", "builtin", *REGISTER)
    table = toolcat("tool", "list", json_output=False)
    assert table.code == 0, table.stderr
    assert "files.alpha" in table.stdout and "files.beta" in table.stdout
    assert "canonical_id" in table.stdout
    try:
        json.loads(table.stdout)
        raise AssertionError("human output must not be a JSON document")
    except ValueError:
        pass
    failed = toolcat("resolve", "files.gamma", json_output=False)
    assert failed.code == 3
    assert failed.stdout == ""
    assert "unknown_tool" in failed.stderr
    assert "files.gamma" in failed.stderr
    assert not failed.stderr.lstrip().startswith("{")


def test_rebuild_keeps_every_answer(toolcat: Any) -> None:
    write(toolcat, "init", "--policy", "spring-voyage")
    write(toolcat, "tool", "register", "sv.directory.list", "--source", "builtin", *REGISTER)
    write(toolcat, "tool", "register", "web.search", "--source", "plugin", "--plugin", "web", *REGISTER)
    write(toolcat, "alias", "add", "web.search", "web.find")
    write(toolcat, "unit", "create", "org")
    last = write(toolcat, "grant", "add", "unit:org", "web.search")
    before = (ok(toolcat("effective", "unit:org")), ok(toolcat("tool", "list")), ok(toolcat("resolve", "web.find")))
    assert before[0]["position"] == last["position"]
    rebuilt = ok(toolcat("rebuild"))
    assert rebuilt["position"] == last["position"]
    after = (ok(toolcat("effective", "unit:org")), ok(toolcat("tool", "list")), ok(toolcat("resolve", "web.find")))
    assert after == before
    assert ok(toolcat("audit", "verify"))["ok"] is True


def test_min_position_waits_for_the_read_model(toolcat: Any) -> None:
    write(toolcat, "init")
    head = write(toolcat, "tool", "register", "files.read-all", "--source", "builtin", *REGISTER)["position"]
    assert ok(toolcat("resolve", "files.read-all", "--min-position", str(head)))["canonical_id"] == "files.read-all"
    assert ok(toolcat("tool", "show", "files.read-all", "--min-position", "1"))["canonical_id"] == "files.read-all"
    late = toolcat("resolve", "files.read-all", "--min-position", str(head + 100), "--timeout", "1")
    assert late.code == 6
    assert late.stdout.strip() == ""
    assert late.error["message"]
