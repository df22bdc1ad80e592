"""The read-side seed rules (docs/operators.md, "Naming, ownership and window rules" 6, 7, 10 and 12), told
through the command line run in this process on real SQLite and DuckDB files: given a catalog, when it is
read, then the answer follows the rule.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import ok, run_in_process, toolcat_environ, toolcat_in_process

TOOL = ["--tier", "default", "--visibility", "public"]
MEMORY = ["--source", "mcp", "--backing-server", "memory", "--group", "memory", *TOOL]


@pytest.fixture
def read(home: Path) -> Iterator[Any]:
    with toolcat_environ("tester"):
        yield lambda *args: ok(toolcat_in_process(home, *args, "--json"))


def walk_to_retirement(home: Path) -> None:
    """Given mcp.memory.seed renamed into the memory family in 1.0.0's successor and retired in 1.2.0."""
    run_in_process(home, [
        ["release", "publish", "1.0.0"],
        ["tool", "register", "mcp.memory.seed", *MEMORY],
        ["tool", "rename", "mcp.memory.seed", "memory.seed", "--source", "builtin_mcp"],
        ["release", "publish", "1.1.0"],
        *[["alias", "milestone", "mcp.memory.seed", m, "--release", "1.1.0"]
          for m in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission")],
        ["alias", "step", "mcp.memory.seed", "1", "--evidence", "docs"],
        ["alias", "step", "mcp.memory.seed", "2", "--evidence", "data"],
        ["release", "publish", "1.2.0"],
    ])


def test_rule_7_a_rename_with_source_moves_provenance_and_family(home: Path, read: Any) -> None:
    walk_to_retirement(home)

    shown = read("tool", "show", "memory.seed")

    assert (shown["source"], shown["family"], shown["backing_server"]) == ("builtin_mcp", "memory", "memory")
    assert shown["aliases"] == [{"id": "mcp.memory.seed", "lifecycle": "deprecated", "shim": False}]


def test_rule_6_after_retirement_the_retired_id_leaves_show_and_list_but_not_the_audit(home: Path, read: Any) -> None:
    walk_to_retirement(home)
    run_in_process(home, [["alias", "retire", "mcp.memory.seed", "--release", "1.2.0"]])

    assert read("tool", "show", "memory.seed")["aliases"] == []
    [listed] = read("tool", "list")["tools"]
    assert listed["aliases"] == []
    audit = read("audit", "alias", "mcp.memory.seed")
    assert audit["state"] == "retired" and [s["step"] for s in audit["steps"]] == [1, 2, 3, 4]


def test_rule_5_audit_alias_shows_the_earliest_removal_retire_enforces(home: Path, read: Any) -> None:
    walk_to_retirement(home)

    assert read("audit", "alias", "mcp.memory.seed")["window"]["earliest_removal_release"] == "1.2.0"


def test_rule_10_internal_and_runtime_only_tools_stay_out_of_the_public_inventory(home: Path, read: Any) -> None:
    run_in_process(home, [
        ["tool", "register", "read", "--source", "builtin", "--group", "core", *TOOL],
        ["tool", "register", "artifact.index", "--source", "builtin", "--group", "core", "--tier", "default",
         "--visibility", "internal"],
        ["tool", "register", "artifact.bridge", "--source", "builtin", "--group", "core", "--tier", "default",
         "--visibility", "runtime_only"],
    ])

    def listed(*args: str) -> list[str]:
        return [t["canonical_id"] for t in read("tool", "list", *args)["tools"]]

    assert listed() == ["read"]
    assert listed("--visibility", "internal") == ["artifact.index"]
    assert listed("--visibility", "all") == ["artifact.bridge", "artifact.index", "read"]


def test_rule_12_explain_at_a_past_position_names_the_id_of_then_and_the_allowlist(home: Path, read: Any) -> None:
    run_in_process(home, [
        ["tool", "register", "acme.ticket.create", "--source", "plugin", "--plugin", "acme", "--group",
         "extension", "--tier", "advanced", "--visibility", "public"],
        ["tool", "register", "read", "--source", "builtin", "--group", "core", *TOOL],
        ["unit", "create", "eng"],
        ["agent", "create", "triage", "--unit", "eng"],
        ["grant", "add", "unit:eng", "acme.*"],
        ["agent", "allowlist", "triage", "read"],
    ])
    before_rename = read("effective", "agent:triage")["position"]
    run_in_process(home, [["tool", "rename", "acme.ticket.create", "acme.ticket.open"]])

    then = read("explain", "agent:triage", "acme.ticket.open", "--at", str(before_rename))

    assert then["tool_id"] == "acme.ticket.create"
    assert [t["tool_id"] for t in read("effective", "agent:triage", "--at", str(before_rename))["tools"]] == \
        ["acme.ticket.create"]
    assert then["winner"]["exposure"] == "disabled_by_agent_allowlist"
    assert before_rename in then["positions"], "the allowlist that disabled it decided the answer"


def test_rule_13_resolving_a_pattern_answers_invalid_id_not_unknown_tool(home: Path) -> None:
    run_in_process(home, [["tool", "register", "read", "--source", "builtin", "--group", "core", *TOOL]])

    with toolcat_environ("tester"):
        answer = toolcat_in_process(home, "resolve", "acme.*", "--json")

    assert (answer.code, answer.error["code"]) == (3, "invalid_id")


def test_rule_10_a_runtime_only_helper_in_a_granted_namespace_never_enters_the_set(home: Path, read: Any) -> None:
    acme = ["--source", "plugin", "--plugin", "acme", "--group", "extension", "--tier", "advanced"]
    run_in_process(home, [
        ["tool", "register", "acme.ticket.open", *acme, "--visibility", "public"],
        ["tool", "register", "acme.ticket.bridge", *acme, "--visibility", "runtime_only"],
        ["unit", "create", "eng"],
        ["agent", "create", "triage", "--unit", "eng"],
        ["grant", "add", "unit:eng", "acme.*"],
    ])

    assert [t["tool_id"] for t in read("effective", "agent:triage")["tools"]] == ["acme.ticket.open"]
    assert read("explain", "agent:triage", "acme.ticket.bridge")["visible"] is False


@pytest.mark.parametrize(("command", "hint"), [
    (["tool", "rename", "mcp.memory.seed", "memory.seed"],
     "toolcat tool rename mcp.memory.seed memory.seed --source builtin_mcp"),
    (["tool", "register", "tool.exec", "--source", "builtin", "--group", "core", *TOOL],
     "toolcat alias add bash tool.exec --shim"),
])
def test_rules_4_and_7_the_refusal_hints_the_command_that_works_and_it_does(home: Path, command: list[str],
                                                                          hint: str) -> None:
    run_in_process(home, [["tool", "register", "mcp.memory.seed", *MEMORY],
                          ["tool", "register", "bash", "--source", "builtin", "--group", "core", *TOOL]])
    with toolcat_environ("tester"):
        refused = toolcat_in_process(home, *command, "--json")
        assert refused.code == 3 and f"'{hint}'" in refused.error["message"], refused.stderr
        pasted = toolcat_in_process(home, *hint.split()[1:], "--json")
    assert pasted.code == 0, pasted.stderr
