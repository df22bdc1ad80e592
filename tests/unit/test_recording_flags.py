"""Flags on how a removal path was recorded (issue 30): a milestone recorded long after the release it
names, and a retirement back-dated to a release older than one already published. Pure functions."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from domain.recording_flags import LATE_MILESTONE_DAYS, Published, backdated_retirement, late_milestones

JUNE = datetime(2026, 6, 1, tzinfo=timezone.utc)
RELEASES: dict[str, Published] = {
    "1.1.0": {"seq": 2, "position": 10, "recorded_at": JUNE},
    "1.2.0": {"seq": 3, "position": 20, "recorded_at": JUNE + timedelta(days=60)},
}


def milestone(name: str, release: str, days_after: float, position: int = 30) -> dict[str, object]:
    recorded = RELEASES[release]["recorded_at"] + timedelta(days=days_after)
    return {"name": name, "release": release, "position": position, "recorded_at": recorded}


def test_given_a_milestone_recorded_within_the_threshold_then_no_flag():
    assert late_milestones([milestone("docs_shipped", "1.1.0", LATE_MILESTONE_DAYS)], RELEASES) == []


def test_given_a_milestone_recorded_past_the_threshold_then_it_is_flagged_with_its_delay():
    [flag] = late_milestones([milestone("docs_shipped", "1.1.0", 0),
                              milestone("data_rewrite_shipped", "1.1.0", LATE_MILESTONE_DAYS + 1.5)], RELEASES)

    assert {k: flag[k] for k in ("kind", "milestone", "release", "position", "days_after")} == {
        "kind": "late_milestone", "milestone": "data_rewrite_shipped", "release": "1.1.0", "position": 30,
        "days_after": LATE_MILESTONE_DAYS + 1}
    assert "published 2026-06-01, position 10" in flag["message"] and "31 days later" in flag["message"]


def test_given_a_retirement_in_the_latest_published_release_then_no_flag():
    assert backdated_retirement("1.2.0", 25, RELEASES) == []
    assert backdated_retirement("1.1.0", 15, RELEASES) == []  # 1.2.0 was not out yet when it was recorded
    assert backdated_retirement(None, None, RELEASES) == []  # not retired


def test_given_a_retirement_recorded_after_a_later_release_then_it_is_flagged_as_back_dated():
    [flag] = backdated_retirement("1.1.0", 25, RELEASES)

    assert {k: flag[k] for k in ("kind", "release", "position", "latest_release")} == {
        "kind": "backdated_retirement", "release": "1.1.0", "position": 25, "latest_release": "1.2.0"}
    assert "after 1.2.0 was published (position 20)" in flag["message"]
