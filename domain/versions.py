"""Semantic versions (SemVer 2.0.0), the catalog's release clock, through the `semver` package.

Deprecation windows are decided by comparing releases, so ordering is SemVer precedence exactly: a
pre-release sorts before its release, and build metadata is ignored for equality, ordering and hashing
(`semver.Version` does all three that way).
"""
from __future__ import annotations

from semver import Version

from domain.errors import UsageError

__all__ = ["InvalidVersion", "Version", "parse_version"]


class InvalidVersion(UsageError):
    code = "invalid_version"


def parse_version(text: str) -> Version:
    """The version `text` spells exactly (no leading 'v', no surrounding spaces, ASCII digits only)."""
    # `semver` would also take UTF-8 bytes; a release is text.
    if isinstance(text, str):
        try:
            return Version.parse(text)
        except ValueError:
            pass
    raise InvalidVersion(
        f"{text!r} is not a semantic version; expected MAJOR.MINOR.PATCH such as 1.4.0 "
        "(optionally with -prerelease and +build, e.g. 1.4.0-rc.1+abc)",
        given=text,
    )
