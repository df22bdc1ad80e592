"""End to end: `toolcat demo` through the installed command, as a user runs it, in a fresh home.

Every step of the walk-through is checked against what the bundled examples (examples/tyrum.toolcat and
examples/spring-voyage.toolcat) say and against the JSON shapes of the command-line contract, not only
the exit code: the two builds, the effective sets with provenance, inheritance and exposure, explain,
the as-of answer around the revoke, resolution, the audit timeline of the retired alias, the hash chain,
SQL over history, and (with a broker) the Kafka round trip. The expected values are derived from the
example files where they can be, so the tests follow the examples rather than a copy of the output.
"""
from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from infra.dev.demo import EXAMPLES, script_lines
from tests.support import Run, call_toolcat, ok, run_toolcat, toolcat_env

ROW_FIELDS = {"tool_id", "namespace", "description", "provenance", "inherited_from", "exposure"}
EXPOSURES = {"enabled", "disabled_invalid_schema", "disabled_by_state_mode", "disabled_by_agent_allowlist"}
MILESTONES = ["canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission"]
DEMO_TIMEOUT = 240


# ---------------------------------------------------------------------------------------------- helpers

def example_commands(name: str) -> list[list[str]]:
    """The toolcat argument lists of an example file (its clock lines apart)."""
    return script_lines(EXAMPLES / f"{name}.toolcat")


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def installed(*args: str, home: Path | None = None, env: dict[str, str] | None = None,
              json_output: bool = True, timeout: float = DEMO_TIMEOUT) -> Run:
    """The installed command, with the environment of the `toolcat` fixture (no TOOLCAT_* leaks in)."""
    return run_toolcat(*args, env=toolcat_env("e2e", {"TOOLCAT_HOME": str(home)} if home else None, env),
                       timeout=timeout, json_output=json_output)


def answered(*args: str, env: dict[str, str] | None = None) -> Run:
    """The same command answered in this process: the reads of the demo's homes, and its refusals."""
    return call_toolcat(*args, env=toolcat_env("e2e", env))


def sql(home: Path, query: str) -> list[dict[str, Any]]:
    """Ask one of the demo's catalogs directly, after the demo finished (its homes stay for exploring)."""
    return ok(answered("--home", str(home), "sql", query, "--format", "json"))


def rows(document: dict[str, Any]) -> dict[str, tuple[Any, Any, Any]]:
    return {r["tool_id"]: (r["provenance"], r["inherited_from"], r["exposure"]) for r in document["tools"]}


def snapshot(root: Path) -> dict[str, Any]:
    """Everything observable about a directory tree: names, kinds, modes, sizes, mtimes and contents."""
    def describe(path: Path) -> tuple[Any, ...]:
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() \
            else None
        return (st.st_mode, st.st_size if path.is_file() else None, st.st_mtime_ns, digest)
    found = {".": describe(root)}
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            found[str(path.relative_to(root))] = describe(path)
    return found


# ------------------------------------------------------------------- the checks of the JSON document

def check_catalogs(document: dict[str, Any]) -> None:
    catalogs = document["catalogs"]
    assert set(catalogs) == {"tyrum", "spring-voyage"}
    for name, built in catalogs.items():
        commands = example_commands(name)
        assert built["commands"] == len(commands), (name, built)
        assert built["events"] > 0 and built["head"] > 0, (name, built)
        assert built["events"] >= built["commands"], f"every example line is a write: {built}"
        assert built["head"] == built["events"], f"SQLite positions have no holes: {built}"


def check_effective_document(document: dict[str, Any], subject: str, position: int) -> None:
    """`position`: the read model's (the head): the subject's own last change is at or before it."""
    assert set(document) == {"subject", "position", "read_model_position", "tools"}, document.keys()
    assert document["subject"] == subject
    assert document["read_model_position"] == position
    assert 0 < document["position"] <= position
    ids = [r["tool_id"] for r in document["tools"]]
    assert ids == sorted(ids), f"rows must be sorted by tool_id: {ids}"
    assert len(ids) == len(set(ids)), f"one row per tool: {ids}"
    for row in document["tools"]:
        assert set(row) == ROW_FIELDS, row
        assert row["exposure"] in EXPOSURES, row
        assert row["namespace"] == row["tool_id"].split(".", 1)[0], row


def tyrum_expectations() -> dict[str, Any]:
    """What examples/tyrum.toolcat implies for agent:triage, worked out from the file."""
    commands = example_commands("tyrum")
    registered = {c[2]: c for c in commands if c[:2] == ["tool", "register"]}
    requires_state = {t for t, c in registered.items() if "--requires-state" in c}
    groups = Counter(option(c, "--group") for c in registered.values())
    desktop = sorted(t for t in registered if t.startswith("tool.desktop."))
    assert desktop and requires_state & set(desktop), "the example changed: triage's desktop grant"
    return {"desktop": desktop, "requires_state": requires_state, "groups": groups}


def check_tyrum(document: dict[str, Any], home: Path | None) -> None:
    tyrum = document["tyrum"]
    head = document["catalogs"]["tyrum"]["head"]
    expected = tyrum_expectations()
    assert set(tyrum) >= {"effective", "explain", "before_revoke", "revoked_tools", "resolve", "audit_alias",
                          "verify", "sql"}, tyrum.keys()

    # the effective set of agent:triage now: provenance, inheritance (grants on units eng and support)
    # and exposure (triage is stateless and allowlisted: tool.fs.* mcp.memory.search websearch)
    effective = tyrum["effective"]
    check_effective_document(effective, "agent:triage", head)
    now = rows(effective)
    exposures = {r[2] for r in now.values()}
    assert {"enabled", "disabled_by_agent_allowlist", "disabled_by_state_mode"} <= exposures, now
    assert all(r[0] == "explicit" for r in now.values()), now
    # grants on unit:eng (parent of support) reach triage; `tool.fs.*` admits them through the shim
    assert now["read"] == ("explicit", "eng", "enabled"), now
    assert now["grep"] == ("explicit", "eng", "enabled"), now
    # grants on unit:support were given through the mcp.memory.* aliases and land on memory.*
    assert now["memory.write"] == ("explicit", "support", "disabled_by_state_mode"), now
    assert now["memory.search"][:2] == ("explicit", "support"), now
    # mcp.memory.search is retired, but `alias migrate` rewrote the allowlist entry naming it before
    # removal step 2: memory.search is still admitted
    assert now["memory.search"][2] == "enabled", now
    for tool in expected["desktop"]:  # the agent's own pattern grant tool.desktop.*
        state = "disabled_by_state_mode" if tool in expected["requires_state"] else "disabled_by_agent_allowlist"
        assert now[tool] == ("explicit", None, state), (tool, now.get(tool))
    assert set(now) == {"read", "grep", "memory.search", "memory.write", *expected["desktop"]}, sorted(now)
    assert "websearch" not in now

    # explain: the winning grant lives on unit:support
    explain = tyrum["explain"]
    assert {"subject", "tool_id", "visible", "winner", "shadowed", "positions"} <= set(explain), explain
    assert explain["subject"] == "agent:triage" and explain["tool_id"] == "memory.write"
    assert explain["visible"] is True
    winner = explain["winner"]
    assert winner["provenance"] == "explicit" and winner["inherited_from"] == "support", winner
    assert winner["exposure"] == "disabled_by_state_mode", winner
    assert isinstance(winner["position"], int) and 0 < winner["position"] <= head, winner
    assert "unit:support" in winner["cause"], winner
    assert winner["position"] in explain["positions"], explain
    assert explain["shadowed"] == [], explain

    # as of the position just before the revoke, websearch was still there
    before = tyrum["before_revoke"]
    check_effective_document(before, "agent:triage", before["position"])
    then = rows(before)
    assert then["websearch"] == ("explicit", None, "enabled"), then
    assert set(then) == set(now) | {"websearch"}, (sorted(then), sorted(now))
    assert then["memory.search"] == ("explicit", "support", "enabled"), "not yet retired at that position"
    assert tyrum["revoked_tools"] == ["websearch"]

    # resolution: a shim, a deprecated alias, a renamed plugin tool
    assert tyrum["resolve"] == [
        {"input": "tool.fs.read", "canonical_id": "read", "lifecycle": "alias", "shim": True},
        {"input": "mcp.memory.seed", "canonical_id": "memory.seed", "lifecycle": "deprecated", "shim": False},
        {"input": "acme.ticket.create", "canonical_id": "acme.ticket.open", "lifecycle": "deprecated",
         "shim": False},
    ]

    # the audit timeline of the retired alias
    audit = tyrum["audit_alias"]
    assert audit["alias"] == "mcp.memory.search" and audit["canonical_id"] == "memory.search", audit
    assert audit["state"] == "retired"
    window = audit["window"]
    assert window["closed"] is True, window
    assert window["opened_release"] == "1.1.0" and window["earliest_removal_release"] == "1.3.0", window
    assert [m["name"] for m in audit["milestones"]] == MILESTONES
    evidence = {c[3]: option(c, "--evidence") for c in example_commands("tyrum")
                if c[:3] == ["alias", "milestone", "mcp.memory.search"]}
    for milestone in audit["milestones"]:
        assert set(milestone) == {"name", "release", "position", "recorded_at", "evidence"}, milestone
        assert milestone["release"] == "1.2.0" and milestone["evidence"] == evidence[milestone["name"]], milestone
    steps = audit["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5], steps
    positions = [s["position"] for s in steps]
    assert positions == sorted(positions) and positions[-1] == head, positions
    assert steps[2]["position"] == steps[3]["position"], "steps 3 and 4 are written by the retirement"
    assert max(m["position"] for m in audit["milestones"]) < steps[0]["position"], audit
    for step in steps:
        assert {"step", "position", "recorded_at", "actor", "evidence"} <= set(step), step
        assert step["actor"] == "e2e" and step["evidence"], step

    # a denied route (ADR-027): a shim of webfetch after a sensitive read, the canonical ID in the evidence
    denied = tyrum["route_denied"]
    assert {k: denied[k] for k in ("decision", "matched_tool_name", "matched_route_rule_id", "reason_code")} == {
        "decision": "deny", "matched_tool_name": "webfetch",
        "matched_route_rule_id": "no-network-sink-after-sensitive-source", "reason_code": "denied_by_class_rule"}
    assert denied["matched_tool_classes"] == ["sink:network"], denied
    assert tyrum["route_node"]["node"] == "laptop" and tyrum["route_node"]["reason"] == "attached_node"

    # the hash chain
    verify = tyrum["verify"]
    assert verify["ok"] is True and verify["events"] == head, verify
    assert re.fullmatch(r"[0-9a-f]{64}", verify["head"]), verify

    # SQL over history: three non-empty answers
    granted, lifecycle, per_group = tyrum["sql"]
    assert len(granted) == 1, granted
    grant = granted[0]
    assert (grant["subject_kind"], grant["subject"]) == ("agent", "triage"), grant
    assert grant["valid_to"] is not None and grant["valid_from"] < grant["valid_to"] <= head, grant
    assert before["position"] == grant["valid_to"] - 1, "as of the position just before the revoke"
    # a real rename (tool rename --source builtin_mcp): the old ID is deprecated from the start
    assert [r["lifecycle"] for r in lifecycle] == ["deprecated", "retired"], lifecycle
    assert all(r["alias"] == "mcp.memory.search" for r in lifecycle), lifecycle
    assert lifecycle[0]["valid_to"] == lifecycle[1]["valid_from"] == steps[2]["position"], lifecycle
    assert lifecycle[1]["valid_to"] is None, lifecycle
    assert per_group, "tools per group at release 1.1.0"
    assert {r["group_name"]: r["tools"] for r in per_group} == dict(expected["groups"]), per_group
    assert per_group == sorted(per_group, key=lambda r: (-r["tools"], r["group_name"])), per_group

    if home is None:
        return
    # the demo's tyrum home stays for exploring, and its answers agree with the document
    store = sql(home / "tyrum", "SELECT count(*) AS events, max(position) AS head FROM events")[0]
    assert store == {"events": head, "head": head}, store
    revoked = sql(home / "tyrum", "SELECT position FROM events WHERE type = 'Grants.Revoked'")
    assert [r["position"] for r in revoked] == [grant["valid_to"]], revoked
    support = sql(home / "tyrum", "SELECT valid_from FROM grant_history WHERE subject_kind = 'unit' "
                                  "AND subject = 'support' AND target = 'memory.write'")
    assert [r["valid_from"] for r in support] == [winner["position"]], support


def check_spring_voyage(document: dict[str, Any], home: Path | None) -> None:
    story = document["spring_voyage"]
    head = document["catalogs"]["spring-voyage"]["head"]
    commands = example_commands("spring-voyage")
    platform = sorted(c[2] for c in commands if c[:2] == ["tool", "register"] and c[2].startswith("sv."))
    connectors = {c[2]: [c[i + 1] for i, a in enumerate(c) if a == "--tool"]
                  for c in commands if c[:2] == ["connector", "register"]}
    images = {c[2]: [c[i + 1] for i, a in enumerate(c) if a == "--tool"]
              for c in commands if c[:2] == ["image", "declare"]}  # the last declaration wins

    # agent:librarian (unit papers < research < acme): platform, connector (inherited), image, explicit
    effective = story["effective"]
    check_effective_document(effective, "agent:librarian", head)
    librarian = rows(effective)
    expected: dict[str, tuple[Any, Any, Any]] = {}
    for tool in platform:
        expected[tool] = ("platform", None, "enabled")
    for tool in connectors["websearch"]:  # bound to acme
        expected[tool] = ("connector:websearch", "acme", "enabled")
    for tool in connectors["arxiv"]:      # moved from research to acme in 2.1.0
        expected[tool] = ("connector:arxiv", "acme", "enabled")
    for tool in images["librarian"]:      # the rotated image acme/librarian:1.1
        expected[tool] = ("image", None, "enabled")
    expected["chat.post_message"] = ("explicit", None, "enabled")
    # precedence: the explicit grant on unit:research beats the websearch connector bound to acme
    expected["websearch.query"] = ("explicit", "research", "enabled")
    assert librarian == expected, {"got": librarian, "expected": expected}
    assert {p for p, _, _ in librarian.values()} == {"platform", "connector:arxiv", "connector:websearch",
                                                     "image", "explicit"}
    assert not any(t.startswith("chat.read") for t in librarian), "slack is bound to support, not papers"

    explain = story["explain"]
    assert explain["subject"] == "agent:librarian" and explain["tool_id"] == "arxiv.search", explain
    assert explain["visible"] is True
    winner = explain["winner"]
    assert (winner["provenance"], winner["inherited_from"], winner["exposure"]) == \
        ("connector:arxiv", "acme", "enabled"), winner
    assert "arxiv" in winner["cause"] and "unit:acme" in winner["cause"], winner
    assert winner["position"] in explain["positions"], explain

    # agent:helpdesk: stateless, allowlisted to sv.* chat.* acme.*
    helpdesk = story["helpdesk"]
    check_effective_document(helpdesk, "agent:helpdesk", head)
    allow = ("sv.", "chat.", "acme.")
    seen = rows(helpdesk)
    for tool, (provenance, inherited, exposure) in seen.items():
        want = "enabled" if tool.startswith(allow) else "disabled_by_agent_allowlist"
        assert exposure == want, (tool, provenance, inherited, exposure)
    assert {e for _, _, e in seen.values()} == {"enabled", "disabled_by_agent_allowlist"}, seen
    assert set(platform) <= set(seen)
    for tool in images["helpdesk"]:
        assert seen[tool] == ("image", None, "enabled"), seen
    for tool in connectors["slack"]:
        assert seen[tool] == ("connector:slack", "support", "enabled"), seen
    for tool in connectors["arxiv"]:  # the explicit arxiv.* grant was revoked; the acme binding remains
        assert seen[tool] == ("connector:arxiv", "acme", "disabled_by_agent_allowlist"), seen
    for tool in connectors["websearch"]:
        assert seen[tool] == ("connector:websearch", "acme", "disabled_by_agent_allowlist"), seen
    assert not any(p == "explicit" for p, _, _ in seen.values()), seen

    if home is None:
        return
    bound = sql(home / "spring-voyage", "SELECT valid_from FROM binding_history "
                                        "WHERE unit = 'acme' AND slug = 'arxiv' AND valid_to IS NULL")
    assert [r["valid_from"] for r in bound] == [winner["position"]], bound


def check_gateway(document: dict[str, Any], home: Path | None) -> None:
    """The gateway act: what agent:scheduler saw through /mcp with the SDK's client, as
    examples/gateway.toolcat implies (its grants), and the decision log of its two calls."""
    act = document["gateway"]
    commands = example_commands("gateway")
    granted = [c[3] for c in commands if c[:3] == ["grant", "add", "agent:scheduler"]]
    assert act["catalog"]["commands"] == len(commands), act["catalog"]
    head = act["catalog"]["head"]
    assert act["url"].startswith("http://127.0.0.1:") and act["url"].endswith("/mcp"), act["url"]
    assert act["protocol_version"], act
    # tools/list: exactly the agent's grants under their canonical IDs, described as the server said
    assert [t["name"] for t in act["tools"]] == granted == ["mcp.time.get_current_time"], act["tools"]
    [tool] = act["tools"]
    assert tool["description"] == "Get current time in a specific timezone", tool
    assert "timezone" in tool["inputSchema"]["properties"], tool
    assert tool["annotations"]["readOnlyHint"] is True, tool
    # with the output schema and hints the server listed, which the catalog kept at the sync
    assert {"timezone", "datetime"} <= set(tool["outputSchema"]["properties"]), tool
    assert tool["annotations"]["idempotentHint"] is True, tool
    # the call was forwarded upstream: the time server's answer, with what ran in _meta.toolcat
    answer = act["call"]["answer"]
    assert answer.get("isError") is not True, answer
    said = json.loads(answer["content"][0]["text"])
    assert said["timezone"] == "UTC" and re.fullmatch(r"\d{4}-\d\d-\d\dT.*\+00:00", said["datetime"]), said
    assert answer["_meta"]["toolcat"] == {"canonical_id": "mcp.time.get_current_time",
                                          "asked": "mcp.time.get_current_time", "position": head}, answer
    # a tool the agent was not granted is refused, with the gateway's refusal code and reason
    refused = act["refused"]
    assert (refused["name"], refused["code"], refused["reason"]) == ("mcp.time.convert_time", -32003, "not_in_set")
    assert "is not a tool of your set" in refused["message"], refused
    # the decision log holds both, for the token's subject, at the set's position
    assert [(d["subject"], d["token"], d["asked"], d["allowed"], d["reason"], d["set_position"])
            for d in act["decisions"]] == [
        ("agent:scheduler", "scheduler-bot", "mcp.time.get_current_time", True, "in_set", head),
        ("agent:scheduler", "scheduler-bot", "mcp.time.convert_time", False, "not_in_set", head)], act["decisions"]
    if home is not None:  # the act's home stays for exploring: the server stopped, its decisions kept
        kept = sql(home / "gateway", "SELECT asked, allowed FROM gateway_decisions ORDER BY decided_at")
        assert [(r["asked"], r["allowed"]) for r in kept] == [("mcp.time.get_current_time", True),
                                                             ("mcp.time.convert_time", False)], kept
        assert not (home / "gateway" / "serve.json").exists(), "the act's server was stopped"


def check_document(document: dict[str, Any], home: Path | None = None) -> None:
    if home is not None:
        assert Path(document["home"]) == home
    check_catalogs(document)
    check_tyrum(document, home)
    check_spring_voyage(document, home)
    check_gateway(document, home)


# --------------------------------------------------------------------------------------------- tests

@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty directory that exists already (as a user makes one for the demo)."""
    home = tmp_path_factory.mktemp("demo") / "home"
    home.mkdir()
    return home


@pytest.fixture(scope="module")
def demo_run(demo_home: Path) -> Run:
    """`toolcat demo --json --home HOME` in that empty directory, no broker (TOOLCAT_KAFKA_BOOTSTRAP is not
    passed on). The stories below read its output and its home; one demo run serves them all."""
    return installed("demo", "--home", str(demo_home))


def test_demo_json_without_a_broker_exits_0_with_one_document(demo_run: Run) -> None:
    document = ok(demo_run)
    assert set(document) == {"home", "catalogs", "tyrum", "spring_voyage", "gateway"}, document.keys()
    assert "kafka" not in document


def test_demo_gateway_act(demo_run: Run, demo_home: Path) -> None:
    document = ok(demo_run)
    check_gateway(document, demo_home)


def test_demo_builds_both_example_catalogs(demo_run: Run, demo_home: Path) -> None:
    document = ok(demo_run)
    assert Path(document["home"]) == demo_home
    check_catalogs(document)
    for name in ("tyrum", "spring-voyage"):
        built = document["catalogs"][name]
        store = sql(demo_home / name, "SELECT count(*) AS events, max(position) AS head FROM events")[0]
        assert store == {"events": built["events"], "head": built["head"]}, (name, store, built)


def test_demo_tyrum_walkthrough(demo_run: Run, demo_home: Path) -> None:
    document = ok(demo_run)
    check_tyrum(document, demo_home)


def test_demo_spring_voyage_walkthrough(demo_run: Run, demo_home: Path) -> None:
    document = ok(demo_run)
    check_spring_voyage(document, demo_home)


def test_demo_effective_sets_agree_with_plain_commands_in_its_homes(demo_run: Run, demo_home: Path) -> None:
    """The demo's homes are ordinary catalogs: asking them afterwards gives the answers it showed."""
    document = ok(demo_run)
    triage = ok(answered("--home", str(demo_home / "tyrum"), "effective", "agent:triage"))
    assert triage == document["tyrum"]["effective"]
    before = document["tyrum"]["before_revoke"]
    assert ok(answered("--home", str(demo_home / "tyrum"), "effective", "agent:triage",
                          "--at", str(before["position"]))) == before
    sv = demo_home / "spring-voyage"
    assert ok(answered("--home", str(sv), "effective", "agent:librarian")) == \
        document["spring_voyage"]["effective"]
    assert ok(answered("--home", str(sv), "effective", "agent:helpdesk")) == document["spring_voyage"]["helpdesk"]
    retired = answered("--home", str(demo_home / "tyrum"), "resolve", "mcp.memory.search")
    assert retired.code == 3 and retired.error["code"] == "retired_alias", (retired.code, retired.stderr)
    assert retired.error["details"]["canonical_id"] == "memory.search"


def test_demo_human_output_prints_every_section_and_readable_tables(installed_toolcat: Any, home: Path) -> None:
    run = installed_toolcat("demo", json_output=False, timeout=DEMO_TIMEOUT)
    assert run.code == 0, f"exit {run.code}\nstdout: {run.stdout[-3000:]}\nstderr: {run.stderr[-3000:]}"
    out = run.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)
    headings = [line[3:].rstrip(" =") for line in out.splitlines() if line.startswith("== ")]
    assert headings == [
        "Building the example catalogs in a fresh home",
        "tyrum: the effective tool set of agent:triage (provenance, inheritance, exposure)",
        "tyrum: why does triage see memory.write, and how is it exposed?",
        headings[3],
        "tyrum: resolving a shim, a deprecated alias and a renamed plugin tool",
        "tyrum: the audit timeline of the retired alias mcp.memory.search",
        "tyrum: the hash chain, recomputed from the event store",
        "tyrum: SQL over history",
        "tyrum: triage read its location, then calls the web through a shim — denied, with evidence",
        "tyrum: which node takes a desktop screenshot on the main lane?",
        "spring-voyage: agent:librarian — platform, connector (inherited), image and explicit tiers",
        "spring-voyage: why does librarian see arxiv.search?",
        "spring-voyage: agent:helpdesk, stateless and allowlisted",
        "gateway: an agent calls mcp-server-time through toolcat's MCP gateway",
    ], headings
    assert re.fullmatch(r"tyrum: as of position \d+, just before websearch was revoked", headings[3]), headings[3]
    for name in ("tyrum", "spring-voyage"):
        assert re.search(rf"^{name}: {len(example_commands(name))} commands, \d+ events, head position \d+$",
                         out, re.M), name
    # readable tables and sentences: tool IDs, provenance, exposure, resolution arrows, SQL answers
    for text in ("tool.desktop.screenshot", "memory.write", "disabled_by_state_mode",
                 "disabled_by_agent_allowlist", "tool.fs.read → read", "acme.ticket.create → acme.ticket.open",
                 "websearch is gone", "canonical_shipped", "alias_only_emission", "ok: ", "orchestration",
                 "sv.directory.list", "connector:arxiv", "chat.post_message", "acme.translate", "research"):
        assert text in out, text
    assert "(no broker:" in out
    # what the agent saw through the gateway: its tools/list, the call's answer, the refusal, the decisions
    act = out[out.index("== gateway: "):]
    assert re.search(r"^token scheduler-bot bound to agent:scheduler \(scope call\); toolcat serve answers MCP "
                     r"at http://127\.0\.0\.1:\d+/mcp$", act, re.M), act[:600]
    listed = re.search(r"^  mcp\.time\.get_current_time.*: Get current time in a specific timezone "
                       r"\[.*readOnlyHint.*\] → \{(.*)\}$", act, re.M)  # its hints, and the fields of its output schema
    assert listed and {"timezone", "datetime"} <= set(listed.group(1).split(", ")), act[:1500]
    assert re.search(r'^tools/call mcp\.time\.get_current_time \{"timezone": "UTC"\} → \{.*"timezone": "UTC"',
                     act, re.M), act[:1500]
    assert re.search(r"^tools/call mcp\.time\.convert_time → refused \(-32003, not_in_set\)", act, re.M), act
    assert re.search(r"scheduler-bot .* mcp\.time\.convert_time .* False .* not_in_set", act), act
    # the closing hint names a command that works as printed (the venv's toolcat when not on the PATH)
    hint = re.search(r"^Done\. Explore: (\S*toolcat .+)$", out, re.M)
    assert hint, out[-500:]
    args = shlex.split(hint.group(1))[1:]
    assert args[:2] == ["--home", str(home / "tyrum")], args
    listed = ok(answered(*args))
    ids = {t["canonical_id"] for t in listed["tools"]}
    assert {"read", "memory.search", "acme.ticket.open"} <= ids, sorted(ids)


def test_demo_streams_both_catalogs_through_kafka(installed_toolcat: Any, home: Path, kafka_bootstrap: str) -> None:
    run = installed_toolcat("demo", env={"TOOLCAT_KAFKA_BOOTSTRAP": kafka_bootstrap}, timeout=DEMO_TIMEOUT)
    document = ok(run)
    check_document(document, home)
    kafka = document["kafka"]
    assert set(kafka) == {"tyrum", "spring-voyage"}, kafka.keys()
    topics = set()
    for name, streamed in kafka.items():
        built = document["catalogs"][name]
        assert streamed["matches"] is True, (name, streamed)
        assert streamed["published"] == built["events"], (name, streamed, built)
        assert streamed["store"]["position"] == streamed["kafka"]["position"] == built["head"], (name, streamed)
        assert streamed["store"]["fingerprint"] == streamed["kafka"]["fingerprint"], (name, streamed)
        assert streamed["store"] == streamed["kafka"], (name, streamed)
        assert streamed["topic"], streamed
        topics.add(streamed["topic"])
    assert len(topics) == 2, "each catalog goes to its own topic"
    # the read model built from Kafka alone answers like the one built from the store
    copy = home / "tyrum-from-kafka"
    assert ok(answered("--home", str(copy), "effective", "agent:triage")) == document["tyrum"]["effective"]
    copy = home / "spring-voyage-from-kafka"
    assert ok(answered("--home", str(copy), "effective", "agent:librarian")) == \
        document["spring_voyage"]["effective"]


def _stable(document: dict[str, Any]) -> dict[str, Any]:
    """The document without what legitimately differs between two runs (times and the hash chain,
    which covers the recording times)."""
    tyrum = dict(document["tyrum"])
    tyrum["audit_alias"] = {**tyrum["audit_alias"],
                            "steps": [{k: v for k, v in s.items() if k != "recorded_at"}
                                      for s in tyrum["audit_alias"]["steps"]]}
    tyrum["verify"] = {k: v for k, v in tyrum["verify"].items() if k != "head"}
    # the gateway act: the server's port and the time the time server told
    gateway = {k: v for k, v in document["gateway"].items() if k not in ("url", "call")}
    return {**document, "tyrum": tyrum, "gateway": gateway}


@pytest.mark.postgres
def test_demo_twice_in_the_same_home_starts_afresh_and_keeps_out_of_a_configured_store(
        demo_run: Run, demo_home: Path, postgres_url: str) -> None:
    """The second run also has a TOOLCAT_EVENT_STORE_URL in its environment (the user's real catalog): the
    demo builds its catalogs in its own fresh home, and that store must not receive the example events."""
    import psycopg
    # Given the module's demo run in an empty existing directory (it accepted the directory), and a file
    # left in its home
    first = ok(demo_run)
    check_catalogs(first)
    leftover = demo_home / "tyrum" / "leftover.txt"
    leftover.write_text("from the first run\n")
    # When the demo runs again in the same home, with a PostgreSQL event store configured
    run = installed("--home", str(demo_home), "demo", env={"TOOLCAT_EVENT_STORE_URL": postgres_url})
    # Then that store holds nothing
    schema = postgres_url.rsplit("schema=", 1)[1]
    base = postgres_url.split("?", 1)[0]
    with psycopg.connect(base, autocommit=True) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = %s", (schema,)).fetchall()]
        counts = {t: con.execute(f'SELECT count(*) FROM "{schema}"."{t}"').fetchone()[0] for t in tables}
    assert not any(counts.values()), f"the demo wrote into the configured PostgreSQL store: {counts}; " \
                                     f"exit {run.code}, stderr: {run.stderr[-1500:]}"
    # and the demo started afresh and told the same story
    second = ok(run)
    check_document(second, demo_home)
    assert not leftover.exists(), "the second run starts from a fresh home"
    assert _stable(second) == _stable(first)


def _foreign_catalog(path: Path) -> Path:
    """A real catalog the user built (not by the demo)."""
    path.mkdir()
    ok(answered("--home", str(path), "init"))
    ok(answered("--home", str(path), "tool", "register", "read", "--source", "builtin", "--group", "core",
                   "--tier", "default", "--visibility", "public"))
    return path


def _foreign_files(path: Path) -> Path:
    path.mkdir()
    (path / "notes.txt").write_text("my notes\n")
    (path / "sub").mkdir()
    (path / "sub" / "data.bin").write_bytes(bytes(range(256)))
    return path


def _regular_file(path: Path) -> Path:
    path.write_text("not a directory\n")
    return path


@pytest.mark.parametrize("make", [_foreign_files, _foreign_catalog, _regular_file],
                         ids=["files", "user-catalog", "regular-file"])
@pytest.mark.parametrize("placement", ["global", "command"])
def test_demo_refuses_a_home_it_did_not_create_and_touches_nothing(tmp_path: Path, make: Any,
                                                                   placement: str) -> None:
    target = make(tmp_path / "mine")
    before = snapshot(target)
    args = ["--home", str(target), "demo"] if placement == "global" else ["demo", "--home", str(target)]
    run = answered(*args)
    assert run.code == 2, f"exit {run.code}\nstdout: {run.stdout[-2000:]}\nstderr: {run.stderr[-2000:]}"
    assert run.stdout.strip() == ""
    assert run.error["code"] == "usage", run.error
    assert str(target) in run.error["message"], run.error
    assert snapshot(target) == before, "the demo must not touch a home it did not create"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"], "nothing created beside it either"
