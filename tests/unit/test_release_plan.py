"""`release plan VERSION --date D`: a future release's planned date, on the release train (no I/O)."""
from __future__ import annotations

import pytest

from domain.errors import ReleaseOrder, UsageError
from tests.unit.conftest import META, new_catalog


def event_types(result) -> list[str]:
    return [e.type for e in result.events]


def test_a_future_release_gets_a_date_and_a_new_date_moves_it():
    catalog = new_catalog()
    catalog.publish_release("1.0.0", META)
    assert event_types(catalog.plan_release("1.1.0", "2027-06-01", META)) == ["Releases.Planned"]
    assert catalog.plan_release("1.1.0", "2027-06-01", META).events == []  # already says so
    assert event_types(catalog.plan_release("1.1.0", "2027-07-01", META)) == ["Releases.Planned"]


@pytest.mark.parametrize("date", ["2027-6-1", "next week", "2027-02-30", "20270601", ""])
def test_a_date_must_be_a_calendar_date(date):
    with pytest.raises(UsageError):
        new_catalog().plan_release("1.1.0", date, META)


def test_only_a_release_after_the_latest_published_can_be_planned():
    catalog = new_catalog()
    catalog.publish_release("1.2.0", META)
    for version in ("1.2.0", "1.1.0"):
        with pytest.raises(ReleaseOrder):
            catalog.plan_release(version, "2027-06-01", META)
