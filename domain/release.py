"""Releases: the catalog's clock for deprecation windows."""
from __future__ import annotations

import datetime

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import UnknownRelease, UsageError
from domain.versions import parse_version
from domain.window import check_release_order

RELEASES_KEY = natural_id("releases", "catalog")


def parse_date(text: str) -> str:
    """A calendar date spelled YYYY-MM-DD."""
    try:
        if isinstance(text, str) and len(text) == 10:
            return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise UsageError(f"{text!r} is not a date; expected YYYY-MM-DD such as 2027-03-01", given=text)


class ReleaseTrain(Aggregate):
    """The ordered list of published versions; one per catalog, so publishing serialises."""

    TOPIC = "Releases"

    class Event(CatalogEvent):
        TOPIC = "Releases.Event"

    class Started(Event, Aggregate.Created):
        TOPIC = "Releases.Started"

        def apply(self, aggregate: ReleaseTrain) -> None:
            aggregate.versions = []
            aggregate.plans = {}

    class Published(Event):
        TOPIC = "Releases.Published"
        version: str

        def apply(self, aggregate: ReleaseTrain) -> None:
            aggregate.versions.append(self.version)

    class Planned(Event):
        """A future release's planned date (it feeds the `Sunset` of aliases whose removal it is)."""
        TOPIC = "Releases.Planned"
        version: str
        date: str  # YYYY-MM-DD

        def apply(self, aggregate: ReleaseTrain) -> None:
            aggregate.plans[self.version] = self.date

    def __init__(self) -> None:
        self.versions: list[str]
        self.plans: dict[str, str]  # version → planned date, the latest plan of each

    @classmethod
    def start(cls, meta: Meta) -> ReleaseTrain:
        return create(cls, cls.Started, RELEASES_KEY, meta)

    @property
    def latest(self) -> str | None:
        return self.versions[-1] if self.versions else None

    def publish(self, version: str, meta: Meta) -> None:
        canonical = str(parse_version(version))
        check_release_order(canonical, self.latest)
        record(self, self.Published, meta, version=canonical)

    def plan(self, version: str, date: str, meta: Meta) -> None:
        """Record when a release not yet published is planned; planning it again moves the date."""
        canonical = str(parse_version(version))
        check_release_order(canonical, self.latest)  # published releases are in the past
        planned = parse_date(date)
        if self.plans.get(canonical) != planned:
            record(self, self.Planned, meta, version=canonical, date=planned)

    def require(self, version: str) -> str:
        """The published release matching `version`, or UnknownRelease."""
        wanted = parse_version(version)
        # Build metadata does not make another release (SemVer precedence ignores it).
        for published in self.versions:
            if parse_version(published) == wanted:
                return published
        canonical = str(wanted)
        raise UnknownRelease(f"release {canonical} has not been published yet", release=canonical,
                             published=self.versions[-5:])

    def first_after(self, version: str | None) -> str | None:
        """The first release published after `version` (None: the first release ever)."""
        if version is None:
            return self.versions[0] if self.versions else None
        index = self.versions.index(version)
        return self.versions[index + 1] if index + 1 < len(self.versions) else None
