"""End to end: `toolcat audit report` after the bundled example story — the JSON report a compliance
auditor files, and the HTML page with its timeline, rendered by a real headless Chromium.

The story is written in-process (fast); every report is produced by the `toolcat` command line.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from infra.cli import main
from infra.dev.demo import EXAMPLES, script_lines
from tests.browser import headless, png_size
from tests.support import ok

RETIRED = "mcp.memory.search"
MILESTONES = ["canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission"]
STEP_FIELDS = {"step", "name", "position", "recorded_at", "actor", "evidence"}
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


@pytest.fixture
def story(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Given the bundled example story, written by `auditor-e2e`; returns the positions its writes answered
    for the retired alias: milestones by name, steps by number."""
    for key in list(os.environ):
        if key.startswith("TOOLCAT_"):
            monkeypatch.delenv(key)
    positions: dict[str, Any] = {"milestones": {}, "steps": {}, "aliases": {}}
    for args in script_lines(EXAMPLES / "tyrum.toolcat"):
        # the aliases the story deprecates (directly or by a rename) and retires
        if args[:2] == ["alias", "deprecate"]:
            positions["aliases"][args[2]] = "deprecated"
        elif args[:2] == ["tool", "rename"]:
            positions["aliases"][args[2]] = "deprecated"
        elif args[:2] == ["alias", "retire"]:
            positions["aliases"][args[2]] = "retired"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main([*args, "--home", str(home), "--json", "--actor", "auditor-e2e"])
        assert code == 0, args
        answer = json.loads(out.getvalue())
        if args[:1] == ["alias"] and RETIRED in args:
            evidence = args[args.index("--evidence") + 1] if "--evidence" in args else None
            if args[1] == "milestone":
                positions["milestones"][args[3]] = (answer["position"], evidence)
            elif args[1] == "step":
                positions["steps"][int(args[3])] = (answer["position"], evidence)
            elif args[1] == "retire":
                positions["steps"][3] = positions["steps"][4] = (answer["position"], None)
    assert sorted(positions["milestones"]) == sorted(MILESTONES)
    assert sorted(positions["steps"]) == [1, 2, 3, 4, 5]
    assert positions["aliases"][RETIRED] == "retired" and len(positions["aliases"]) >= 4
    return positions


def recorded_at(toolcat: Any, position: int) -> str:
    rows = ok(toolcat("sql", f"select recorded_at from events where position = {position}"))
    return rows[0]["recorded_at"]


def same_instant(a: str, b: str) -> bool:
    from datetime import datetime
    return datetime.fromisoformat(a.replace("Z", "+00:00")) == datetime.fromisoformat(b.replace("Z", "+00:00"))


def test_the_json_report_lists_every_deprecated_and_retired_alias_with_its_whole_path(
        story: dict[str, Any], toolcat: Any, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    answer = ok(toolcat("audit", "report", "--format", "json", "-o", str(target)))
    expected = story["aliases"]
    # the story's writes never caught a read model up, and nothing sealed it: the chain had no witness;
    # triage's allowlist was migrated before step 2, so no configuration names a deprecated or retired ID
    assert answer == {"output": str(target), "aliases": len(expected), "findings": 0, "flagged": 0,
                      "integrity": "unverified"}
    report = json.loads(target.read_text())
    assert report["integrity"]["verdict"] == "unverified" and report["integrity"]["absent"] == ["read_model", "seals"]

    head = ok(toolcat("sql", "select max(position) as m from events"))[0]["m"]
    assert report["position"] == head
    assert {a["alias"]: a["state"] for a in report["aliases"]} == expected
    assert [a["alias"] for a in report["aliases"]] == sorted(expected)
    for entry in report["aliases"]:
        assert entry["uses"] == [] and entry["findings"] == [], entry
        assert entry["status"] == ("complete" if entry["state"] == "retired" else "window open"), entry
        assert set(entry["window"]) >= {"opened_release", "earliest_removal_release", "closed"}
        assert entry["window"]["closed"] is (entry["state"] == "retired")

    (retired,) = [a for a in report["aliases"] if a["alias"] == RETIRED]
    assert retired["canonical_id"] == "memory.search"
    assert retired["window"]["opened_release"] == "1.1.0"
    assert retired["window"]["earliest_removal_release"] == "1.3.0"
    assert retired["window"]["closed"] is True
    # every rule met: the allowlist of agent:triage was migrated to memory.search before step 2
    assert [r["rule"] for r in retired["rules"] if r["result"] != "met"] == []
    assert retired["status"] == "complete" and retired["uses"] == []

    assert [m["name"] for m in retired["milestones"]] == MILESTONES
    for milestone in retired["milestones"]:
        position, evidence = story["milestones"][milestone["name"]]
        assert milestone == {"name": milestone["name"], "release": "1.2.0", "position": position,
                             "evidence": evidence, "recorded_at": milestone["recorded_at"]}

    assert [s["step"] for s in retired["steps"]] == [1, 2, 3, 4, 5]
    for step in retired["steps"]:
        assert set(step) == STEP_FIELDS
        position, evidence = story["steps"][step["step"]]
        assert step["position"] == position
        assert step["actor"] == "auditor-e2e"
        assert same_instant(step["recorded_at"], recorded_at(toolcat, position)), step
        if evidence is not None:
            assert step["evidence"] == evidence
        else:  # steps 3 and 4 are the retirement itself
            assert step["evidence"] and "1.3.0" in step["evidence"]
    positions = [s["position"] for s in retired["steps"]]
    assert positions == sorted(positions)
    assert max(m["position"] for m in retired["milestones"]) < positions[0]


def test_the_report_for_one_alias_and_for_an_unknown_one(story: dict[str, Any], toolcat: Any,
                                                         tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    assert ok(toolcat("audit", "report", "--format", "json", "--alias", RETIRED, "-o", str(one)))["aliases"] == 1
    report = json.loads(one.read_text())
    assert [a["alias"] for a in report["aliases"]] == [RETIRED]
    assert len(report["aliases"][0]["steps"]) == 5

    missing = tmp_path / "missing.json"
    unknown = toolcat("audit", "report", "--format", "json", "--alias", "mcp.memory.nothing", "-o", str(missing))
    assert unknown.code == 3, f"exit {unknown.code}\nstdout: {unknown.stdout}\nstderr: {unknown.stderr}"
    assert unknown.stdout.strip() == ""
    assert unknown.error["code"] == "unknown_tool"
    assert "mcp.memory.nothing" in unknown.error["message"]
    assert not missing.exists()


# -- the HTML page, in a real browser ---------------------------------------------------------------

class Timelines(HTMLParser):
    """Collects, per report section (the alias), the data-position of each circle of its SVG timeline."""

    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.in_svg = False
        self.sections: list[str] = []
        self.svgs: dict[str, int] = {}
        self.circles: dict[str, list[int]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "section":
            self.section = found.get("id")
            self.sections.append(self.section or "")
        elif tag == "svg" and self.section:
            self.in_svg = True
            self.svgs[self.section] = self.svgs.get(self.section, 0) + 1
        elif tag == "circle" and self.in_svg and self.section:
            self.circles.setdefault(self.section, []).append(int(found["data-position"] or -1))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.in_svg = False
        elif tag == "section":
            self.section = None


@pytest.fixture
def page(story: dict[str, Any], toolcat: Any, tmp_path: Path) -> Path:
    target = tmp_path / "page.html"
    answer = ok(toolcat("audit", "report", "--format", "html", "-o", str(target)))
    assert answer["output"] == str(target) and answer["aliases"] == len(story["aliases"])
    return target


def test_the_html_report_is_one_self_contained_page(page: Path) -> None:
    html = page.read_text()
    assert html.lower().startswith("<!doctype html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, re.I)
    assert not re.search(r"<link\b", html, re.I)
    assert not re.search(r"<(img|iframe|object|embed|source|video|audio)\b", html, re.I)
    assert not re.search(r"url\s*\(|@import", html, re.I)
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", html, re.I)
    # the only http text is the SVG namespace name, which is never fetched
    assert "http" not in html.replace(f'xmlns="{SVG_NAMESPACE}"', "")


def test_chromium_renders_the_timeline_with_a_circle_per_milestone_and_step(
        browser: str, story: dict[str, Any], page: Path, tmp_path: Path) -> None:
    done = headless(tmp_path, "--dump-dom", page.as_uri())
    dom = done.stdout
    assert "Deprecation audit report" in dom

    timelines = Timelines()
    timelines.feed(dom)
    # every alias has its section and its timeline
    assert timelines.sections == sorted(story["aliases"])
    assert timelines.svgs.get(RETIRED) == 1
    # a circle per milestone and step, steps 3 and 4 (the retirement) as one, and one for the deprecation
    expected = sorted({p for p, _ in story["milestones"].values()} | {p for p, _ in story["steps"].values()})
    assert len(expected) == 8  # four milestones, steps 1, 2, 5 and the retirement (steps 3 and 4)
    circles = sorted(timelines.circles[RETIRED])
    assert len(circles) == 9 and circles[1:] == expected and circles[0] < expected[0]
    assert f'aria-label="timeline of {RETIRED}"' in dom


def test_chromium_takes_a_screenshot_of_the_page(browser: str, page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    headless(tmp_path, f"--screenshot={shot}", "--window-size=1200,2000", page.as_uri())
    data = shot.read_bytes()
    assert len(data) > 10_000
    assert png_size(data) == (1200, 2000)
