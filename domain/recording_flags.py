"""Flags on how an alias's removal path was recorded (issue 30): a milestone recorded long after the release
it names was published, and a retirement back-dated to a release older than the latest one already
published when it was recorded. Both are accepted by the write side (the history may be entered after the
fact), so they are not findings; `audit alias` and the audit report show them for a person to judge.

Pure: the caller gives each release's publication (position and time) and each record's position and time.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, TypedDict

# "Long after": a milestone recorded more than this many days after its release was published. A month
# covers a release's own follow-up (notes, docs, the migration shipped in it) being written down late;
# beyond it the record is a reconstruction. One named threshold, in docs/auditors.md.
LATE_MILESTONE_DAYS = 30
LATE_MILESTONE = timedelta(days=LATE_MILESTONE_DAYS)


class Published(TypedDict):
    """A published release as the flags need it."""

    seq: int
    position: int
    recorded_at: datetime


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def late_milestones(milestones: list[Mapping[str, Any]], releases: Mapping[str, Published]) -> list[dict[str, Any]]:
    """Each milestone (`name`, `release`, `position`, `recorded_at`) recorded more than LATE_MILESTONE after
    its release was published."""
    flags = []
    for milestone in milestones:
        published = releases.get(milestone["release"])
        if published is None:
            continue
        late = milestone["recorded_at"] - published["recorded_at"]
        if late <= LATE_MILESTONE:
            continue
        flags.append({
            "kind": "late_milestone", "milestone": milestone["name"], "release": milestone["release"],
            "position": milestone["position"], "days_after": late.days,
            "message": f"milestone {milestone['name']} names {milestone['release']} (published "
                       f"{_day(published['recorded_at'])}, position {published['position']}) but was recorded "
                       f"{late.days} days later, on {_day(milestone['recorded_at'])} (more than "
                       f"{LATE_MILESTONE_DAYS} days)"})
    return flags


def backdated_retirement(release: str | None, position: int | None,
                         releases: Mapping[str, Published]) -> list[dict[str, Any]]:
    """The retirement (in `release`, recorded at `position`) when a later release was already published
    before it was recorded: the alias was still resolvable in that later release."""
    retired_in = releases.get(release or "")
    if retired_in is None or position is None:
        return []
    later = [(r["seq"], version, r) for version, r in releases.items()
             if r["seq"] > retired_in["seq"] and r["position"] < position]
    if not later:
        return []
    _, latest, published = max(later, key=lambda found: found[0])
    return [{
        "kind": "backdated_retirement", "release": release, "position": position, "latest_release": latest,
        "message": f"retired in {release}, but recorded at position {position}, after {latest} was published "
                   f"(position {published['position']}): the alias still resolved in {latest}"}]
