"""Semantic versions (SemVer 2.0.0), the catalog's release clock.

Ordering follows the SemVer precedence rules exactly, because deprecation windows are decided by
comparing releases: a pre-release sorts before its release, and build metadata never matters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from domain.errors import UsageError

# The regular expression recommended by semver.org, with [0-9] instead of \d so that non-ASCII digits
# (which Python's \d would accept) are rejected.
_NUM = r"0|[1-9][0-9]*"
_PRE_ID = r"0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*"
_SEMVER = re.compile(
    rf"(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>(?:{_PRE_ID})(?:\.(?:{_PRE_ID}))*))?"
    r"(?:\+(?P<build>[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


class InvalidVersion(UsageError):
    code = "invalid_version"


@total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _SEMVER.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidVersion(
                f"{text!r} is not a semantic version; expected MAJOR.MINOR.PATCH such as 1.4.0 "
                "(optionally with -prerelease and +build, e.g. 1.4.0-rc.1+abc)",
                given=text,
            )
        pre, build = match["pre"], match["build"]
        return cls(
            int(match["major"]),
            int(match["minor"]),
            int(match["patch"]),
            tuple(pre.split(".")) if pre else (),
            tuple(build.split(".")) if build else (),
        )

    def next_minor(self) -> Version:
        return Version(self.major, self.minor + 1, 0)

    def _precedence(self) -> tuple:
        # A release outranks all its pre-releases: (1,) > (0, ...). Within a pre-release, numeric
        # identifiers rank below alphanumeric ones, and tuple comparison makes a shorter identifier
        # list rank lower when it is a prefix of the longer one, as SemVer requires.
        if not self.prerelease:
            return (self.major, self.minor, self.patch, (1,))
        ids = tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in self.prerelease)
        return (self.major, self.minor, self.patch, (0, ids))

    # Equality must agree with ordering, so build metadata is ignored here too.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._precedence() == other._precedence()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._precedence() < other._precedence()

    def __hash__(self) -> int:
        return hash(self._precedence())

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text
