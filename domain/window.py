"""The deprecation window and the removal path of a deprecated alias (ARCH-21), as pure checks.

Releases are passed as version strings and compared by SemVer precedence.

Removal steps: 1 (canonical ID is the only one documented and emitted) and 2 (stored-data migration
has shipped) are confirmations recorded before retirement, 2 only after 1; retirement itself performs
3 (alias leaves normalization) and 4 (resolving it is rejected); 5 (legacy examples and fixtures
cleaned up) can only be recorded after retirement.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping

from domain.errors import (
    DuplicateMilestone,
    DuplicateStep,
    ReleaseOrder,
    StepsIncomplete,
    UsageError,
    WindowOpen,
)
from domain.versions import Version, parse_version

MILESTONES = ("canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission")
# The milestones after whose latest release a full minor release must pass.
SHIPPING_MILESTONES = MILESTONES[:3]
CONFIRMATION_STEPS = (1, 2)
PERFORMED_BY_RETIREMENT = (3, 4)
CLEANUP_STEP = 5
RECORDABLE_STEPS = (*CONFIRMATION_STEPS, CLEANUP_STEP)
# What each removal step does, in the words the CLI help, `audit alias` and the audit report use.
REMOVAL_STEPS = {
    1: "only the canonical ID is documented and emitted",
    2: "stored data migrated to the canonical ID",
    3: "alias removed from normalization and alias tables",
    4: "retired ID rejected when resolved",
    5: "legacy examples, fixtures and guidance removed",
}


class InvalidMilestone(UsageError):
    code = "invalid_milestone"


def _minor_bound(milestones: Mapping[str, str]) -> Version:
    return max(parse_version(milestones[name]) for name in SHIPPING_MILESTONES).bump_minor()


def _after(earliest: Version, floor: str) -> Version:
    """`earliest`, or the first release after `floor` when `earliest` is not above it."""
    bound = parse_version(floor)
    if bound < earliest:
        return earliest
    # A pre-release is already below its own release; a release needs the next patch.
    return Version(bound.major, bound.minor, bound.patch if bound.prerelease else bound.patch + 1)


def earliest_removal(milestones: Mapping[str, str], introduced_release: str | None = None) -> str | None:
    """The earliest release in which the alias may be retired, for display only.

    None until the three shipping milestones are recorded. Otherwise the smallest version without a
    pre-release tag that is >= the next minor after the latest shipping milestone and, if
    alias_only_emission is recorded, > its release, and > the release that introduced the canonical
    replacement when known: the same bounds `check_retirement` enforces. It ignores whether
    alias_only_emission is recorded at all and the removal steps: `check_retirement` is the authority
    on whether retirement is allowed.
    """
    if any(name not in milestones for name in SHIPPING_MILESTONES):
        return None
    earliest = _minor_bound(milestones)
    for floor in (milestones.get("alias_only_emission"), introduced_release):
        if floor is not None:
            earliest = _after(earliest, floor)
    return str(earliest)


def check_retirement(
    release: str,
    milestones: Mapping[str, str],
    introduced_release: str | None,
    steps: Collection[int],
) -> None:
    """Reject retiring the alias in `release` unless the window has closed and steps 1, 2 are done.

    Checks run in this order and the first failure is raised: all four milestones recorded; release
    >= next minor after the latest shipping milestone; release > alias_only_emission; release is not
    the one that introduced the canonical replacement (None = unknown, never matches); then the
    confirmation steps. The window comes first because steps are pointless while it is open.
    """
    _check_window_closed(release, milestones, introduced_release)
    missing_steps = [step for step in CONFIRMATION_STEPS if step not in steps]
    if missing_steps:
        raise StepsIncomplete(
            f"cannot retire in {release}: removal steps not yet confirmed: "
            f"{', '.join(map(str, missing_steps))}",
            release=release,
            missing=missing_steps,
        )


def _check_window_closed(release: str, milestones: Mapping[str, str], introduced_release: str | None) -> None:
    missing = [name for name in MILESTONES if name not in milestones]
    if missing:
        raise WindowOpen(
            f"cannot retire in {release}: milestones not yet recorded: {', '.join(missing)}",
            release=release,
            missing=missing,
        )
    given = parse_version(release)
    bound = _minor_bound(milestones)
    if given < bound:
        raise WindowOpen(
            f"cannot retire in {release}: the window lasts at least one minor release after the "
            f"canonical ID, docs and data rewrite shipped; earliest is {bound}",
            release=release,
            earliest=str(bound),
            earliest_removal=earliest_removal(milestones),
        )
    alias_only = milestones["alias_only_emission"]
    if given <= parse_version(alias_only):
        raise WindowOpen(
            f"cannot retire in {release}: at least one release must pass with the alias emitted only "
            f"as metadata, which started in {alias_only}",
            release=release,
            alias_only_emission=alias_only,
            earliest_removal=earliest_removal(milestones, introduced_release),
        )
    if introduced_release is not None and given <= parse_version(introduced_release):
        raise WindowOpen(
            f"cannot retire in {release}: it is not after {introduced_release}, the release that introduced the "
            f"canonical replacement; earliest is {earliest_removal(milestones, introduced_release)}",
            release=release,
            introduced_release=introduced_release,
            earliest_removal=earliest_removal(milestones, introduced_release),
        )


def check_milestone_release(release: str, canonical_since: str | None) -> None:
    """Reject a milestone in a release published before the canonical ID existed (`canonical_since`:
    the latest release when it became canonical; None when no release had been published)."""
    if canonical_since is not None and parse_version(release) <= parse_version(canonical_since):
        raise ReleaseOrder(
            f"milestone release {release} was published before the canonical ID existed (it became canonical "
            f"after {canonical_since}); name a later release",
            release=release, canonical_since=canonical_since,
        )


def check_step(step: int, recorded: Collection[int], retired: bool) -> None:
    """Reject recording removal step `step` given the steps already recorded and retirement state."""
    if step not in RECORDABLE_STEPS:
        why = (
            "retirement performs it"
            if step in PERFORMED_BY_RETIREMENT
            else "the removal path has steps 1 to 5"
        )
        raise StepsIncomplete(
            f"step {step} cannot be recorded ({why}); only steps 1, 2 and 5 are recordable",
            step=step,
            recordable=list(RECORDABLE_STEPS),
        )
    if step in recorded:
        raise DuplicateStep(f"step {step} is already recorded", step=step)
    if step in CONFIRMATION_STEPS and retired:
        raise StepsIncomplete(
            f"step {step} is a confirmation that must come before retirement; the alias is already retired",
            step=step,
        )
    if step == 2 and 1 not in recorded:
        raise StepsIncomplete("step 2 must come after step 1", step=step, missing=[1])
    if step == CLEANUP_STEP and not retired:
        raise StepsIncomplete(
            "step 5 (cleanup of legacy examples and fixtures) can only be recorded after retirement",
            step=step,
        )


def check_milestone(name: str, recorded: Mapping[str, str]) -> None:
    """Reject an unknown milestone name or recording the same milestone twice."""
    if name not in MILESTONES:
        raise InvalidMilestone(
            f"unknown milestone {name!r}; expected one of {', '.join(MILESTONES)}",
            milestone=name,
            valid=list(MILESTONES),
        )
    if name in recorded:
        raise DuplicateMilestone(
            f"milestone {name} is already recorded (release {recorded[name]})",
            milestone=name,
            release=recorded[name],
        )


def check_release_order(new: str, latest: str | None) -> None:
    """Reject a new release that is not strictly greater than the latest published one."""
    given = parse_version(new)
    if latest is not None and given <= parse_version(latest):
        raise ReleaseOrder(
            f"release {new} must be greater than the latest release {latest}",
            latest=latest,
            given=new,
        )
