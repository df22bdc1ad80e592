"""A fuzz over every write command and option (issue 17): random text, bytes that survive argv, huge
values, Unicode confusables, option-like strings and JSON/SQL metacharacters, fed to the command line in
this process (`infra.cli.main`, a throwaway home) so it runs in CI.

Every answer is one of: exit 2 or 3 with a stable error code and nothing written; exit 0 with every value
written inside its grammar. Never exit 1, never a traceback. The counts are reported at the end."""
from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain import grammar
from domain.errors import ToolcatError
from domain.secret_aliases import check_alias, check_display_name
from domain.secret_refs import check_ref
from infra.cli import main
from tests.support import toolcat_environ

def _codes(cls: type[ToolcatError]) -> set[str]:
    return {cls.code}.union(*(_codes(sub) for sub in cls.__subclasses__()))


# Every stable error code there is (`infra.cli` imported them all); "error" is a bug's, never stable.
STABLE_CODES = _codes(ToolcatError) - {"error"}
EXAMPLES_PER_COMMAND = 30  # the whole fuzz stays near a minute on a 2-core machine
STORY = [
    ["init", "--policy", "tyrum"],
    ["release", "publish", "1.0.0"],
    ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default", "--visibility",
     "public"],
    ["alias", "add", "read", "tool.fs.read", "--shim"],
    ["tool", "register", "memory.seed", "--source", "builtin_mcp", "--group", "memory", "--tier", "default",
     "--visibility", "public"],
    ["alias", "add", "memory.seed", "mcp.memory.seed"],
    ["alias", "deprecate", "mcp.memory.seed"],
    ["release", "publish", "1.1.0"],
    ["tool", "register", "acme.ticket.open", "--source", "plugin", "--plugin", "acme", "--group", "extension",
     "--tier", "advanced", "--visibility", "public"],
    ["unit", "create", "eng"],
    ["agent", "create", "triage", "--unit", "eng"],
    ["connector", "register", "gh", "--tool", "gh.issue"],
    ["node", "pair", "desk"],
    ["tool", "register", "tool.secret.copy-to-node-clipboard", "--source", "builtin", "--group", "node", "--tier",
     "advanced", "--visibility", "public"],
    ["secret", "ref", "add", "github-token", "--allow-tool", "tool.secret.copy-to-node-clipboard"],
]

# -- hostile values ---------------------------------------------------------------------------------------
NO_NUL = st.characters(blacklist_characters="\x00")  # argv cannot carry NUL, anything else it can
CONFUSABLES = ["reаd", "rеad", "ｒｅａｄ", "reаd.*", "ᴜnit", "еng", "gh.іssue", "1.0.0", "１.０.０", "ℝead",
               "acme.tіcket.open", "unit:еng", "agent:triаge", "K", "ǅ", "ß", "ﬁle.read"]
OPTION_LIKE = ["--json", "-x", "--", "-", "--home", "--actor=x", "-1", "--reason", "--help", "-h", "--shim",
               "--clear", "---", "--idempotency-key="]
METACHARACTERS = ["'", '"', "\\", "'; DROP TABLE stored_events; --", '{"a": 1}', '"}]', "%s%n%x", "${IFS}",
                  "$(id)", "`id`", "[red]BETA[/red]", "<script>alert(1)</script>", "*", "**", ".*", "..",
                  "../..", "/etc/hostname", "null", "read.", ":", "@", "a@sha256:", "NaN", "1e999", "\\u202e"]
HIDDEN = ["\u202e", "a\u202eb", "\x1b[2J", "\x01", "a\x7fb", "\u2066x\u2069", "line\nbreak", "tab\tx", "\r",
          "\u2028", "\u200f", "\x85", "\udcff"]


def hostile() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(alphabet=NO_NUL, max_size=40),
        st.binary(max_size=40).filter(lambda b: b"\x00" not in b).map(os.fsdecode),  # as argv decodes bytes
        st.builds(lambda s, n: s * n, st.text(alphabet=NO_NUL, min_size=1, max_size=3), st.integers(250, 20_000)),
        st.sampled_from(CONFUSABLES), st.sampled_from(OPTION_LIKE), st.sampled_from(METACHARACTERS),
        st.sampled_from(HIDDEN),
    )


def slot(*valid: str) -> st.SearchStrategy[str]:
    """The valid values of one argument (a case replaces some arguments by hostile values)."""
    return st.sampled_from(valid)


@st.composite
def arguments(draw: st.DrawFn, slots: dict[str, st.SearchStrategy[str]]) -> dict[str, str]:
    """One value per argument: up to two of them hostile, the others valid (so some cases are accepted)."""
    fuzzed = draw(st.sets(st.sampled_from(sorted(slots)), max_size=2))
    return {name: draw(hostile() if name in fuzzed else valid) for name, valid in slots.items()}


# -- the write commands, each argument a slot -------------------------------------------------------------
@dataclass
class Write:
    argv: list[str]  # "{slot}" marks an argument drawn from `slots`
    slots: dict[str, st.SearchStrategy[str]]
    grammar: dict[str, Callable[[str], Any]] = field(default_factory=dict)  # the slot's grammar, if accepted
    examples: int = EXAMPLES_PER_COMMAND


TOOL = slot("read", "acme.ticket.open", "memory.seed")
NEW_ID = slot("acme.ticket.close", "acme.notes.fetch", "gh.pr")
VERSION = slot("1.0.0", "1.1.0", "2.0.0", "1.2.0-rc.1")
TEXT = slot("docs shipped", "two\nlines\tand a tab", "«naïve» ✓")
WRITES = {
    "init": Write(["init", "--policy", "{policy}"], {"policy": slot("tyrum", "spring-voyage", "verb-noun")}),
    "release publish": Write(["release", "publish", "{v}"], {"v": VERSION}, {"v": grammar.check_version_text}),
    "tool register": Write(
        ["tool", "register", "{id}", "--source", "{source}", "--plugin", "{plugin}", "--group", "{group}",
         "--tier", "{tier}", "--visibility", "{visibility}", "--family", "{family}", "--backing-server", "{server}",
         "--description", "{description}", "--class", "{class}", "--risk", "{risk}", "--schema", "{schema}",
         "--requires-state"],
        {"id": NEW_ID, "source": slot("plugin"), "plugin": slot("acme", "gh"), "group": slot("extension"),
         "tier": slot("advanced"), "visibility": slot("public", "internal"),
         "family": slot("acme.ticket"), "server": slot("exa"), "description": TEXT,
         "class": slot("sink:network"), "risk": slot("read_only"), "schema": slot("/nonexistent.json")},
        {"plugin": lambda v: grammar.check_name(v, "plugin"), "family": grammar.check_namespace,
         "server": lambda v: grammar.check_name(v, "backing server"),
         "description": lambda v: grammar.check_text(v, "description"), "class": grammar.check_class_label}),
    "tool rename": Write(["tool", "rename", "{old}", "{new}"], {"old": TOOL, "new": NEW_ID}),
    "alias add": Write(["alias", "add", "{tool}", "{alias}", "--shim"], {"tool": TOOL, "alias": NEW_ID}),
    "alias deprecate": Write(["alias", "deprecate", "{alias}"], {"alias": slot("tool.fs.read", "mcp.memory.seed")}),
    "alias milestone": Write(
        ["alias", "milestone", "{alias}", "{milestone}", "--release", "{v}", "--evidence", "{evidence}"],
        {"alias": slot("mcp.memory.seed"), "milestone": slot("docs_shipped", "canonical_shipped"), "v": VERSION,
         "evidence": TEXT}, {"evidence": lambda v: grammar.check_text(v, "evidence")}),
    "alias step": Write(["alias", "step", "{alias}", "{step}", "--evidence", "{evidence}"],
                        {"alias": slot("mcp.memory.seed"), "step": slot("1", "2", "5"), "evidence": TEXT},
                        {"evidence": lambda v: grammar.check_text(v, "evidence")}),
    "alias retire": Write(["alias", "retire", "{alias}", "--release", "{v}"],
                          {"alias": slot("mcp.memory.seed"), "v": VERSION}),
    "unit create": Write(["unit", "create", "{unit}", "--parent", "{parent}"],
                         {"unit": slot("ops", "lab.eu"), "parent": slot("eng")},
                         {"unit": lambda v: grammar.check_name(v, "unit")}),
    "agent create": Write(["agent", "create", "{agent}", "--unit", "{unit}", "--state-mode", "{mode}"],
                          {"agent": slot("scout", "rover-2"), "unit": slot("eng"), "mode": slot("stateless")},
                          {"agent": lambda v: grammar.check_name(v, "agent")}),
    "agent allowlist": Write(["agent", "allowlist", "{agent}", "{p1}", "{p2}"],
                             {"agent": slot("triage"), "p1": slot("read", "tool.fs.*", "*"),
                              "p2": slot("gh.*", "memory.seed")}),
    "agent allowlist --clear": Write(["agent", "allowlist", "{agent}", "--clear"], {"agent": slot("triage")}),
    "connector register": Write(
        ["connector", "register", "{slug}", "--namespace", "{ns}", "--tool", "{tool}"],
        {"slug": slot("arxiv", "web-search"), "ns": slot("arxiv"), "tool": slot("arxiv.search")},
        {"slug": lambda v: grammar.check_name(v, "connector"), "ns": grammar.check_namespace}),
    "connector bind": Write(["connector", "bind", "{slug}", "--unit", "{unit}", "--effective-at", "{at}"],
                            {"slug": slot("gh"), "unit": slot("eng"), "at": slot("2026-03-01T09:00:00Z")}),
    "connector unbind": Write(["connector", "unbind", "{slug}", "--unit", "{unit}"],
                              {"slug": slot("gh"), "unit": slot("eng")}),
    "image declare": Write(["image", "declare", "{agent}", "--image", "{image}", "--tool", "{tool}"],
                           {"agent": slot("triage"), "image": slot("ghcr.io/acme/triage:1.2", "acme/x@sha256:"
                                                                     + "a" * 64), "tool": slot("img.alpha")},
                           {"image": grammar.check_image_ref}),
    "grant add": Write(["grant", "add", "{subject}", "{target}", "--effective-at", "{at}"],
                       {"subject": slot("agent:triage", "unit:eng"), "target": slot("read", "gh.*", "tool.fs.*"),
                        "at": slot("2026-03-01T10:00:00+01:00")}),
    "grant revoke": Write(["grant", "revoke", "{subject}", "{target}"],
                          {"subject": slot("agent:triage", "unit:eng"), "target": slot("read", "gh.*")}),
    "audit seal": Write(["audit", "seal"], {}, examples=10),  # each seal verifies the whole chain first
    "tool classify": Write(["tool", "classify", "{tool}", "--class", "{c1}", "--class", "{c2}"],
                           {"tool": TOOL, "c1": slot("source:sensitive"), "c2": slot("sink:network", "exec:command")},
                           {"c1": grammar.check_class_label, "c2": grammar.check_class_label}),
    "route rule add": Write(
        ["route", "rule", "add", "{rule}", "--deny-any-class", "{c}", "--after-tool", "{tool}", "--scope", "{scope}"],
        {"rule": slot("no-sink", "r_1"), "c": slot("sink:network"), "tool": TOOL,
         "scope": slot("unit:eng", "agent:triage")},
        {"rule": lambda v: grammar.check_name(v, "route rule"), "c": grammar.check_class_label}),
    "node pair": Write(["node", "pair", "{node}"], {"node": slot("laptop", "phone-2")},
                       {"node": lambda v: grammar.check_name(v, "node")}),
    "node capability": Write(["node", "capability", "{node}", "--advertise", "{cap}"],
                             {"node": slot("desk"), "cap": slot("tyrum.desktop.screenshot", "tyrum.location.get")}),
    "node attach": Write(["node", "attach", "{node}", "--lane", "{lane}"], {"node": slot("desk"),
                                                                         "lane": slot("main", "lane-2")},
                         {"lane": lambda v: grammar.check_name(v, "lane")}),
    "secret ref add": Write(["secret", "ref", "add", "{ref}", "--allow-tool", "{tool}"],
                            {"ref": slot("github-token", "ops.deploy-key"), "tool": TOOL}, {"ref": check_ref}),
    "secret alias add": Write(["secret", "alias", "add", "{subject}", "{alias}", "{ref}", "--display-name", "{label}"],
                              {"subject": slot("agent:triage"), "alias": slot("github", "gh_2"),
                               "ref": slot("github-token"), "label": slot("GitHub token", "«naïve» ✓")},
                              {"alias": check_alias, "label": check_display_name}),
}
# Valid keys are fresh UUIDs (a key used again for another command is a conflict, exit 4).
COMMON = {"actor": slot("alice", "José"), "reason": TEXT, "key": st.uuids().map(str)}
COMMON_GRAMMAR = {"actor": grammar.check_actor, "reason": lambda v: grammar.check_text(v, "reason"),
                  "key": grammar.check_idempotency_key}


# -- running one case ---------------------------------------------------------------------------------------
@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


def run_cli(home: Path, argv: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            # The global options first: a fuzzed `--` makes everything after it an argument.
            code = main(["--home", str(home), "--json", *argv])
        except SystemExit as done:  # argparse's --help exits by itself
            code = done.code if isinstance(done.code, int) else 2
    return Outcome(code, out.getvalue(), err.getvalue())


def stored_events(home: Path, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
    with contextlib.closing(sqlite3.connect(home / "events.sqlite")) as con:
        rows = con.execute("SELECT rowid, state FROM stored_events WHERE rowid > ? ORDER BY rowid", [after])
        return [(rowid, json.loads(state)) for rowid, state in rows.fetchall()]


def head(home: Path) -> int:
    with contextlib.closing(sqlite3.connect(home / "events.sqlite")) as con:
        return con.execute("SELECT coalesce(max(rowid), 0) FROM stored_events").fetchone()[0]


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def assert_written_within_grammar(home: Path, before: int) -> None:
    for _, state in stored_events(home, before):
        grammar.check_actor(state["actor"])
        if state.get("reason") is not None:
            grammar.check_text(state["reason"], "reason")
        for text in strings(state):
            assert len(text) <= grammar.TEXT_MAX
            assert not any(grammar.hidden_character(c, multiline=True) for c in text), f"hidden in {text!r}"


COUNTS: Counter[str] = Counter()


@pytest.fixture(scope="module")
def fuzz_home(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("fuzz") / "home"
    with toolcat_environ("fuzzer"):
        for argv in STORY:
            assert run_cli(home, argv).code == 0, argv
        yield home
    summary = (f"fuzz of the write commands: {COUNTS['tried']} inputs tried, {COUNTS['refused']} refused "
               f"(exit 2, 3 or 4), {COUNTS['accepted']} accepted, {COUNTS['crashes']} crashes")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_line(summary)


@pytest.mark.parametrize("command", list(WRITES))
def test_a_write_refuses_cleanly_or_writes_only_what_its_grammar_allows(command: str, fuzz_home: Path) -> None:
    write = WRITES[command]
    strategy = arguments({**write.slots, **COMMON})

    @settings(max_examples=write.examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(values=strategy)
    def case(values: dict[str, str]) -> None:
        argv = [part.format(**values) if part.startswith("{") else part for part in write.argv]
        argv += ["--actor", values["actor"], "--reason", values["reason"], "--idempotency-key", values["key"]]
        before = head(fuzz_home)
        with toolcat_environ("fuzzer"):
            outcome = run_cli(fuzz_home, argv)
        COUNTS["tried"] += 1
        crashed = outcome.code not in (0, 2, 3, 4) or "Traceback" in outcome.stderr
        COUNTS["crashes"] += crashed
        assert not crashed, f"toolcat {argv!r} exited {outcome.code}:\n{outcome.stderr[-3000:]}"
        if outcome.code == 0:
            COUNTS["accepted"] += 1
            assert_written_within_grammar(fuzz_home, before)
            if head(fuzz_home) > before:
                for name, check in {**write.grammar, **COMMON_GRAMMAR}.items():
                    check(values[name])
            return
        COUNTS["refused"] += 1
        assert head(fuzz_home) == before, f"toolcat {argv!r} was refused but wrote"
        error = json.loads(outcome.stderr.strip().splitlines()[-1])["error"]
        assert error["code"] in STABLE_CODES, error
        if outcome.code == 4:  # a fuzzed key that is valid and was used before, for another command
            assert error["code"] == "idempotency_key_reused", error

    case()
