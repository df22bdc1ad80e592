"""Releases: the catalog's clock for deprecation windows."""
from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import UnknownRelease
from domain.semver import Version
from domain.window import check_release_order

RELEASES_KEY = natural_id("releases", "catalog")


class ReleaseTrain(Aggregate):
    """The ordered list of published versions; one per catalog, so publishing serialises."""

    TOPIC = "Releases"

    class Event(CatalogEvent):
        TOPIC = "Releases.Event"

    class Started(Event, Aggregate.Created):
        TOPIC = "Releases.Started"

        def apply(self, aggregate: ReleaseTrain) -> None:
            aggregate.versions = []

    class Published(Event):
        TOPIC = "Releases.Published"
        version: str

        def apply(self, aggregate: ReleaseTrain) -> None:
            aggregate.versions.append(self.version)

    def __init__(self) -> None:
        self.versions: list[str]

    @classmethod
    def start(cls, meta: Meta) -> ReleaseTrain:
        return create(cls, cls.Started, RELEASES_KEY, meta)

    @property
    def latest(self) -> str | None:
        return self.versions[-1] if self.versions else None

    def publish(self, version: str, meta: Meta) -> None:
        canonical = str(Version.parse(version))
        check_release_order(canonical, self.latest)
        record(self, self.Published, meta, version=canonical)

    def require(self, version: str) -> str:
        """The published release matching `version`, or UnknownRelease."""
        wanted = Version.parse(version)
        # Build metadata does not make another release (SemVer precedence ignores it).
        for published in self.versions:
            if Version.parse(published) == wanted:
                return published
        canonical = str(wanted)
        raise UnknownRelease(f"release {canonical} has not been published; publish it first with "
                             f"'toolcat release publish {canonical}'", release=canonical,
                             published=self.versions[-5:])

    def first_after(self, version: str | None) -> str | None:
        """The first release published after `version` (None: the first release ever)."""
        if version is None:
            return self.versions[0] if self.versions else None
        index = self.versions.index(version)
        return self.versions[index + 1] if index + 1 < len(self.versions) else None
