"""The auditor's deprecation journey through the `toolcat` command line: the removal steps by name in the help
and in `audit alias`; `audit report` listing every rule it checked per alias with its evidence, the
configuration still naming old IDs, and the integrity of the history; `-o -` on stdout."""
from __future__ import annotations

import html
import json
import re
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from domain.window import REMOVAL_STEPS
from infra.timeline_svg import KINDS, timeline_svg
from tests.browser import headless
from tests.e2e.conftest import OPEN, RETIRED
from tests.expected import check_expected
from tests.integration.test_audit_seals import tamper
from tests.support import ok
from tests.unit.test_timeline_layout import crowded

RULES = ["window opened", "milestone canonical_shipped", "milestone docs_shipped", "milestone data_rewrite_shipped",
         "milestone alias_only_emission", "earliest removal release",
         *(f"step {n}: {name}" for n, name in REMOVAL_STEPS.items()), "retirement", "tombstone",
         "no configuration names it"]
STEP_2 = f"step 2: {REMOVAL_STEPS[2]}"


def words(text: str) -> str:
    return " ".join(text.split())


def report_of(toolcat: Any, *args: str, code: int = 0) -> dict[str, Any]:
    run = toolcat("audit", "report", "--format", "json", "-o", "-", *args, json_output=False)
    assert run.code == code, f"exit {run.code}\nstdout: {run.stdout[-2000:]}\nstderr: {run.stderr}"
    return json.loads(run.stdout)


def test_the_step_names_are_in_the_help(toolcat: Any) -> None:
    step_help = toolcat("alias", "step", "--help", json_output=False)
    assert step_help.code == 0
    for number, name in REMOVAL_STEPS.items():
        assert f"{number}: {name}" in words(step_help.stdout), (number, step_help.stdout)
    retire_help = words(toolcat("alias", "retire", "--help", json_output=False).stdout)
    assert f"3 ({REMOVAL_STEPS[3]}) and 4 ({REMOVAL_STEPS[4]})" in retire_help
    assert all(name in words(toolcat("audit", "alias", "--help", json_output=False).stdout)
               for name in REMOVAL_STEPS.values())


def test_expected_audit_alias_renderings(audit_home: Path, toolcat: Any, request: pytest.FixtureRequest) -> None:
    answer = ok(toolcat("audit", "alias", RETIRED))
    assert [(s["step"], s["name"]) for s in answer["steps"]] == list(REMOVAL_STEPS.items())
    check_expected(request, "audit/alias_retired.json", json.dumps(answer, indent=2))
    text = toolcat("audit", "alias", RETIRED, json_output=False)
    assert text.code == 0 and all(name in text.stdout for name in REMOVAL_STEPS.values())
    check_expected(request, "audit/alias_retired.txt", text.stdout)
    # an alias whose window just opened: every step listed by name, none recorded yet
    check_expected(request, "audit/alias_open.txt", toolcat("audit", "alias", OPEN[0], json_output=False).stdout)


def test_expected_report_renderings(audit_home: Path, toolcat: Any, request: pytest.FixtureRequest) -> None:
    ok(toolcat("tool", "list"))  # a read: the read model records the hashes verify compares with
    check_expected(request, "audit/report.json", json.dumps(report_of(toolcat), indent=2))
    page = toolcat("audit", "report", "-o", "-", json_output=False)
    assert page.code == 0 and page.stdout.startswith("<!doctype html>")
    check_expected(request, "audit/report.html", page.stdout)


def test_the_report_lists_every_rule_with_its_evidence(audit_home: Path, toolcat: Any) -> None:
    report = report_of(toolcat)
    assert [a["alias"] for a in report["aliases"]] == sorted([RETIRED, *OPEN])
    entries = {a["alias"]: a for a in report["aliases"]}
    for entry in entries.values():
        assert [r["rule"] for r in entry["rules"]] == RULES, entry["alias"]
    retired = entries[RETIRED]
    # agent bot's allowlist was migrated before step 2: the retired ID met every rule of its path
    assert retired["status"] == "complete"
    assert [r["rule"] for r in retired["rules"] if r["result"] != "met"] == []
    rules = {r["rule"]: r for r in retired["rules"]}
    assert rules["no configuration names it"]["evidence"].startswith("no allowlist, grant")
    assert rules[STEP_2]["evidence"] == "recorded by auditor: stored tickets rewritten"
    positions = {r["rule"]: r["position"] for r in retired["rules"]}
    assert positions["window opened"] == retired["window"]["opened_position"]
    for milestone in retired["milestones"]:
        assert positions[f"milestone {milestone['name']}"] == milestone["position"]
    for step in retired["steps"]:
        assert positions[f"step {step['step']}: {step['name']}"] == step["position"]
    assert positions["retirement"] == positions["tombstone"] == retired["window"]["retired_position"]
    assert rules["earliest removal release"]["evidence"] == "1.3.0; retired in 1.3.0"
    assert rules["milestone docs_shipped"]["evidence"] == "shipped in 1.2.0: docs_shipped in 1.2.0"
    # a window with no milestone at all is open, not "every rule was met"; the configuration still naming
    # each of them is a finding
    for name in OPEN:
        assert entries[name]["status"] == "findings"
        assert [r["result"] for r in entries[name]["rules"]] == ["met", *["pending"] * 12, "not met"], name


def test_the_report_flags_configuration_that_still_names_old_ids(audit_home: Path, toolcat: Any) -> None:
    uses = {a["alias"]: a["uses"] for a in report_of(toolcat)["aliases"]}
    flagged = {alias: [(u["kind"], u["holder"], u["lifecycle"]) for u in found] for alias, found in uses.items()}
    # (the retired ID's allowlist entry was migrated: only the deprecated IDs are still named)
    assert flagged == {RETIRED: [],
                       "acme.ticket.close": [("grant", "unit:eng", "deprecated")],
                       "tickets.list": [("connector", "connector:tickets", "deprecated")]}
    target = audit_home / "report.json"
    # (the first report caught the read model up: its recorded hashes now vouch for the chain)
    assert ok(toolcat("audit", "report", "--format", "json", "-o", str(target))) == {
        "output": str(target), "aliases": 3, "findings": 2, "flagged": 2, "integrity": "verified"}
    assert json.loads(target.read_text())["aliases"][0]["uses"] == uses["acme.ticket.close"]


def test_a_retirement_without_its_cleanup_step_is_a_finding(retired_without_cleanup: Path, toolcat: Any) -> None:
    report = report_of(toolcat, "--alias", RETIRED)
    (entry,) = report["aliases"]
    assert entry["status"] == "findings"
    assert f"step 5: {REMOVAL_STEPS[5]}: not recorded yet" in entry["findings"]
    assert [r["rule"] for r in entry["rules"] if r["result"] != "met"] == [f"step 5: {REMOVAL_STEPS[5]}"]
    page = toolcat("audit", "report", "--alias", RETIRED, "-o", "-", json_output=False).stdout
    assert "every rule" not in page and "not recorded yet" in page


def test_the_report_carries_the_integrity_of_the_history(audit_home: Path, toolcat: Any) -> None:
    unverified = report_of(toolcat)["integrity"]
    assert (unverified["verdict"], unverified["absent"]) == ("unverified", ["read_model", "seals"])
    sealed = ok(toolcat("audit", "seal"))["seal"]
    integrity = report_of(toolcat)["integrity"]
    assert integrity["verdict"] == "verified" and integrity["ok"] is True
    assert integrity["compared"]["seals"] == {"count": 1, "latest": sealed["position"]}
    assert integrity["position"] == sealed["position"] + 2  # the seal's own two events follow what it seals
    page = toolcat("audit", "report", "-o", "-", json_output=False).stdout
    assert re.search(r'<p class="verified"><strong>Verified:</strong>[^<]*up to position '
                     rf'{integrity["position"]}\.</p>', page)

    # when the history was altered, the report says where, and the command exits 5
    tamper(audit_home, 8, lambda state: state.replace(b'"actor":"auditor"', b'"actor":"auditoR"'))
    altered = report_of(toolcat, code=5)["integrity"]
    assert altered["verdict"] == "altered" and altered["ok"] is False
    assert altered["position"] == 8 and "position 8 was altered" in altered["error"]["message"]


def test_dash_writes_the_report_to_stdout_and_nothing_else(audit_home: Path, toolcat: Any) -> None:
    for form, start in (("json", "{"), ("html", "<!doctype html>")):
        run = toolcat("audit", "report", "--format", form, "-o", "-")  # with --json, too: the report only
        assert run.code == 0 and run.stdout.startswith(start), run
    assert not Path("-").exists() and not (audit_home / "-").exists()


# The page as Chromium lays it out: every text of every timeline, with the box the browser gives it.
MEASURE = """<script>
const measured = [...document.querySelectorAll('svg')].map(svg => [...svg.querySelectorAll('text')].map(text => {
  const box = text.getBBox(); return [box.x, box.y, box.width, box.height, text.textContent]; }));
const out = document.createElement('pre'); out.id = 'measured'; out.textContent = JSON.stringify(measured);
document.body.appendChild(out);
</script>"""


def _intersect(a: list[Any], b: list[Any]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def test_chromium_draws_no_label_over_another(browser: str, audit_home: Path, toolcat: Any, tmp_path: Path) -> None:
    page = toolcat("audit", "report", "-o", "-", json_output=False).stdout
    squeezed = "".join(timeline_svg(crowded(far)) for far in (17, 500, 1_000_000))
    measured_page = tmp_path / "measured.html"
    measured_page.write_text(page.replace("</body>", f"<section>{squeezed}</section>{MEASURE}</body>"))

    dom = headless(tmp_path, "--dump-dom", measured_page.as_uri()).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    timelines = json.loads(html.unescape(found.group(1)))
    assert len(timelines) == 3 + 3
    for texts in timelines:
        assert len(texts) > len(KINDS), texts  # the legend and at least one label
        for a, b in combinations(texts, 2):
            assert not _intersect(a, b), (a, b)


def test_a_secret_reference_or_route_rule_naming_an_old_id_is_a_finding(audit_home: Path, toolcat: Any) -> None:
    # given a secret reference and a route rule written for a tool that was renamed since: its old ID is
    # now a deprecated alias they still name
    # (a secret reference allows only the dedicated tool.secret.* tools)
    old = "tool.secret.fetch-ticket-token"
    ok(toolcat("tool", "register", old, "--source", "builtin", "--group", "core", "--tier", "default",
               "--visibility", "public"))
    ok(toolcat("secret", "ref", "add", "tickets-token", "--allow-tool", old))
    ok(toolcat("route", "rule", "add", "no-purge", "--deny-tool", old))
    ok(toolcat("tool", "rename", old, "tool.secret.get-ticket-token"))
    # when the report is made, then both are listed as uses, and the alias has the finding
    (entry,) = report_of(toolcat, "--alias", old)["aliases"]
    assert {(u["kind"], u["holder"]) for u in entry["uses"]} == {("secret reference", "secret:tickets-token"),
                                                                ("route rule", "rule:no-purge")}
    assert entry["status"] == "findings"
    assert any(f.startswith("no configuration names it") and "secret reference" in f for f in entry["findings"])


def test_small_things_an_auditor_meets(audit_home: Path, toolcat: Any, tmp_path: Path) -> None:
    # `-o report.json` writes JSON, as its name says
    target = tmp_path / "report.json"
    ok(toolcat("audit", "report", "-o", str(target)))
    assert json.loads(target.read_text())["aliases"]
    # a steps table with every step recorded is not titled "not recorded yet"
    complete = toolcat("audit", "alias", RETIRED, json_output=False).stdout
    assert "removal steps" in complete and "not recorded yet" not in complete
    assert "not recorded yet" in toolcat("audit", "alias", OPEN[0], json_output=False).stdout
    # `audit alias --json` says when and by whom the alias was deprecated
    deprecated = ok(toolcat("audit", "alias", RETIRED))["deprecated"]
    assert set(deprecated) == {"position", "recorded_at", "actor"} and deprecated["actor"]
    # a retirement refused while the window is open says what to run
    refused = toolcat("alias", "retire", OPEN[0], "--release", "1.3.0")
    assert refused.error["code"] == "window_open"
    assert f"alias milestone {OPEN[0]} canonical_shipped --release VERSION" in refused.error["message"]
    assert refused.error["details"]["next"]
