"""The auditor sees how a removal path was recorded: a milestone recorded long after the release it names
(more than LATE_MILESTONE_DAYS) and a retirement back-dated to a release older than one already published
are accepted by the write side, and flagged by `audit alias` (text and --json) and by the audit report."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domain.recording_flags import LATE_MILESTONE_DAYS
from infra.dev.example_clock import ExampleClock
from tests.support import ok

OLD = "acme.ticket.create"
PLUGIN = ["--source", "plugin", "--plugin", "acme", "--group", "extension", "--tier", "advanced",
          "--visibility", "public", "--risk", "safe_create"]
# (time, command): releases a month apart; two milestones written down in June for 1.1.0 and 1.2.0; the
# alias retired in 1.3.0 the day after 1.4.0 was published.
STORY = [
    ("2026-01-05T09:00:00+00:00", ["init", "--policy", "tyrum"]),
    (None, ["release", "publish", "1.0.0"]),
    (None, ["tool", "register", OLD, *PLUGIN]),
    (None, ["tool", "rename", OLD, "acme.ticket.open"]),
    ("2026-02-01T09:00:00+00:00", ["release", "publish", "1.1.0"]),
    ("2026-02-02T09:00:00+00:00", ["alias", "milestone", OLD, "canonical_shipped", "--release", "1.1.0"]),
    (None, ["alias", "milestone", OLD, "docs_shipped", "--release", "1.1.0"]),
    ("2026-03-01T09:00:00+00:00", ["release", "publish", "1.2.0"]),
    ("2026-04-01T09:00:00+00:00", ["release", "publish", "1.3.0"]),
    ("2026-06-15T09:00:00+00:00", ["alias", "milestone", OLD, "data_rewrite_shipped", "--release", "1.1.0"]),
    (None, ["alias", "milestone", OLD, "alias_only_emission", "--release", "1.2.0"]),
    (None, ["alias", "step", OLD, "1", "--evidence", "docs name acme.ticket.open"]),
    (None, ["alias", "step", OLD, "2", "--evidence", "tickets rewritten"]),
    ("2026-07-01T09:00:00+00:00", ["release", "publish", "1.4.0"]),
    ("2026-07-02T09:00:00+00:00", ["alias", "retire", OLD, "--release", "1.3.0"]),
]


@pytest.fixture
def recorded_late(toolcat: Any) -> Any:
    """Given the story, each command recorded at its time (every write accepted)."""
    clock = ExampleClock()
    for moment, args in STORY:
        if moment:
            clock.set(moment)
        with clock.recording():
            ok(toolcat(*args))
    return toolcat


def test_audit_alias_flags_the_late_milestones_and_the_back_dated_retirement(recorded_late: Any) -> None:
    flags = ok(recorded_late("audit", "alias", OLD))["flags"]

    assert [(f["kind"], f.get("milestone"), f["release"]) for f in flags] == [
        ("late_milestone", "data_rewrite_shipped", "1.1.0"),
        ("late_milestone", "alias_only_emission", "1.2.0"),
        ("backdated_retirement", None, "1.3.0")]
    assert [f.get("days_after") for f in flags] == [134, 106, None]
    assert min(f["days_after"] for f in flags[:2]) > LATE_MILESTONE_DAYS
    assert flags[2]["latest_release"] == "1.4.0"
    assert "the alias still resolved in 1.4.0" in flags[2]["message"]

    text = recorded_late("audit", "alias", OLD, json_output=False)
    assert text.code == 0
    assert "recorded late or back-dated" in text.stdout
    assert "134 days later" in " ".join(text.stdout.split())


def test_the_audit_report_carries_the_flags_in_json_and_html(recorded_late: Any, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    ok(recorded_late("audit", "report", "--format", "json", "-o", str(target)))
    (entry,) = json.loads(target.read_text())["aliases"]
    assert [f["kind"] for f in entry["flags"]] == ["late_milestone", "late_milestone", "backdated_retirement"]
    # flags are for a person to judge: the rules the write side checks were all met
    assert entry["status"] == "findings" and entry["findings"] == [
        "step 5: legacy examples, fixtures and guidance removed: not recorded yet"]

    page = recorded_late("audit", "report", "-o", "-", json_output=False).stdout
    assert "<h3>Flags</h3>" in page and "3 flag(s) on how removal paths were recorded" in page
    assert "retired in 1.3.0, but recorded at position" in page and "134 days later" in page


def test_a_path_recorded_as_it_happened_has_no_flags(toolcat: Any) -> None:
    ok(toolcat("init", "--policy", "tyrum"))
    ok(toolcat("release", "publish", "1.0.0"))
    ok(toolcat("tool", "register", OLD, *PLUGIN))
    ok(toolcat("tool", "rename", OLD, "acme.ticket.open"))
    ok(toolcat("release", "publish", "1.1.0"))
    ok(toolcat("alias", "milestone", OLD, "docs_shipped", "--release", "1.1.0"))

    assert ok(toolcat("audit", "alias", OLD))["flags"] == []
