"""The deprecation window and removal path (ARCH-21) as pure checks."""
from __future__ import annotations

import pytest

from domain.errors import (
    DuplicateMilestone,
    DuplicateStep,
    ReleaseOrder,
    StepsIncomplete,
    UsageError,
    WindowOpen,
)
from domain.versions import InvalidVersion
from domain.window import (
    MILESTONES,
    InvalidMilestone,
    check_milestone,
    check_release_order,
    check_retirement,
    check_step,
    earliest_removal,
)

ALL_AT_1_1 = {name: "1.1.0" for name in MILESTONES}


def milestones(**overrides: str) -> dict[str, str]:
    return {**ALL_AT_1_1, **overrides}


def without(name: str) -> dict[str, str]:
    return {k: v for k, v in ALL_AT_1_1.items() if k != name}


# --- retirement: happy path ---------------------------------------------------------------------


def test_retirement_allowed_one_minor_after_all_milestones_with_both_confirmations():
    # given every milestone shipped in 1.1.0, canonical introduced in 1.0.0, steps 1 and 2 recorded
    # when retiring in 1.2.0, then nothing is raised
    check_retirement("1.2.0", ALL_AT_1_1, "1.0.0", {1, 2})


def test_retirement_allowed_with_unknown_introduced_release():
    check_retirement("1.2.0", ALL_AT_1_1, None, [1, 2])


# --- retirement: each window condition failing on its own ---------------------------------------


@pytest.mark.parametrize("missing", MILESTONES)
def test_each_missing_milestone_keeps_window_open(missing):
    # given all milestones but one
    with pytest.raises(WindowOpen) as caught:
        check_retirement("9.0.0", without(missing), None, {1, 2})
    # then the missing one is named
    assert caught.value.code == "window_open"
    assert caught.value.details["missing"] == [missing]


def test_all_missing_milestones_are_listed_in_order():
    with pytest.raises(WindowOpen) as caught:
        check_retirement("9.0.0", {"docs_shipped": "1.0.0"}, None, {1, 2})
    assert caught.value.details["missing"] == [
        "canonical_shipped",
        "data_rewrite_shipped",
        "alias_only_emission",
    ]


@pytest.mark.parametrize("late", ["canonical_shipped", "docs_shipped", "data_rewrite_shipped"])
def test_release_before_next_minor_after_latest_shipping_milestone_keeps_window_open(late):
    # given one shipping milestone at 1.2.0 (the latest), alias-only emission early at 1.0.0,
    # canonical introduced at 1.0.0; 1.2.5 is > alias-only and != introduced, but < 1.3.0
    recorded = milestones(alias_only_emission="1.0.0", **{late: "1.2.0"})
    with pytest.raises(WindowOpen) as caught:
        check_retirement("1.2.5", recorded, "1.0.0", {1, 2})
    assert caught.value.code == "window_open"
    assert caught.value.details["earliest"] == "1.3.0"
    assert caught.value.details["release"] == "1.2.5"
    # and 1.3.0 itself is allowed
    check_retirement("1.3.0", recorded, "1.0.0", {1, 2})


def test_prerelease_of_the_next_minor_is_still_inside_the_window():
    with pytest.raises(WindowOpen) as caught:
        check_retirement("1.2.0-rc.1", ALL_AT_1_1, None, {1, 2})
    assert caught.value.details["earliest"] == "1.2.0"


def test_latest_shipping_milestone_is_chosen_by_semver_not_text():
    # given "1.10.0" which sorts before "1.9.0" as text
    recorded = milestones(canonical_shipped="1.9.0", docs_shipped="1.10.0", alias_only_emission="1.0.0")
    with pytest.raises(WindowOpen) as caught:
        check_retirement("1.10.5", recorded, None, {1, 2})
    assert caught.value.details["earliest"] == "1.11.0"


@pytest.mark.parametrize("release", ["1.3.0", "1.2.0"])
def test_release_not_after_alias_only_emission_keeps_window_open(release):
    # given shipping milestones at 1.1.0 (so >= 1.2.0 holds) and alias-only emission at 1.3.0
    recorded = milestones(alias_only_emission="1.3.0")
    with pytest.raises(WindowOpen) as caught:
        check_retirement(release, recorded, "1.0.0", {1, 2})
    assert caught.value.code == "window_open"
    assert caught.value.details["alias_only_emission"] == "1.3.0"
    assert caught.value.details["earliest_removal"] == "1.3.1"
    # and the next patch after it is allowed
    check_retirement("1.3.1", recorded, "1.0.0", {1, 2})


def test_release_that_introduced_the_canonical_replacement_keeps_window_open():
    # given all ordering conditions hold for 1.2.0 but the canonical replacement was introduced in 1.2.0
    with pytest.raises(WindowOpen) as caught:
        check_retirement("1.2.0", ALL_AT_1_1, "1.2.0", {1, 2})
    assert caught.value.code == "window_open"
    assert caught.value.details["introduced_release"] == "1.2.0"


def test_introduced_release_compares_by_precedence_ignoring_build():
    with pytest.raises(WindowOpen):
        check_retirement("1.2.0+ci.7", ALL_AT_1_1, "1.2.0", {1, 2})


# --- retirement: steps ----------------------------------------------------------------------------


@pytest.mark.parametrize("steps, missing", [(set(), [1, 2]), ({1}, [2]), ({2}, [1]), ({5}, [1, 2])])
def test_retirement_needs_both_confirmation_steps(steps, missing):
    with pytest.raises(StepsIncomplete) as caught:
        check_retirement("1.2.0", ALL_AT_1_1, "1.0.0", steps)
    assert caught.value.code == "steps_incomplete"
    assert caught.value.details["missing"] == missing


def test_window_is_checked_before_steps():
    # given both an open window and missing steps, then the window is reported
    with pytest.raises(WindowOpen):
        check_retirement("1.1.5", ALL_AT_1_1, None, set())


# --- earliest_removal -----------------------------------------------------------------------------


def test_earliest_removal_is_none_until_shipping_milestones_are_recorded():
    assert earliest_removal({}) is None
    assert earliest_removal(without("data_rewrite_shipped")) is None


def test_earliest_removal_is_next_minor_after_latest_shipping_milestone():
    assert earliest_removal(ALL_AT_1_1) == "1.2.0"
    assert earliest_removal(without("alias_only_emission")) == "1.2.0"
    assert earliest_removal(milestones(docs_shipped="1.1.4")) == "1.2.0"


def test_earliest_removal_moves_past_late_alias_only_emission():
    assert earliest_removal(milestones(alias_only_emission="1.2.0")) == "1.2.1"
    assert earliest_removal(milestones(alias_only_emission="1.4.2")) == "1.4.3"
    # a pre-release is below its own release, so the release itself is the earliest
    assert earliest_removal(milestones(alias_only_emission="1.4.0-rc.1")) == "1.4.0"


@pytest.mark.parametrize(
    "recorded, just_below",
    [(ALL_AT_1_1, "1.1.99"), (milestones(alias_only_emission="1.4.2"), "1.4.2")],
)
def test_earliest_removal_is_accepted_by_the_authority_and_the_release_below_is_not(recorded, just_below):
    # given the displayed bound, then check_retirement agrees at the bound and just below it
    check_retirement(earliest_removal(recorded), recorded, None, {1, 2})
    with pytest.raises(WindowOpen):
        check_retirement(just_below, recorded, None, {1, 2})


# --- check_step -----------------------------------------------------------------------------------


def test_confirmations_in_order_before_retirement_then_cleanup_after():
    check_step(1, set(), retired=False)
    check_step(2, {1}, retired=False)
    check_step(5, {1, 2}, retired=True)


@pytest.mark.parametrize("step", [3, 4])
def test_steps_performed_by_retirement_cannot_be_recorded(step):
    with pytest.raises(StepsIncomplete) as caught:
        check_step(step, {1, 2}, retired=True)
    assert caught.value.code == "steps_incomplete"
    assert "retirement performs" in caught.value.message
    assert caught.value.details["recordable"] == [1, 2, 5]


@pytest.mark.parametrize("step", [0, 6, -1])
def test_steps_outside_the_path_cannot_be_recorded(step):
    with pytest.raises(StepsIncomplete) as caught:
        check_step(step, set(), retired=False)
    assert caught.value.code == "steps_incomplete"


@pytest.mark.parametrize(
    "step, recorded, retired", [(1, {1}, False), (2, {1, 2}, False), (5, {1, 2, 5}, True)]
)
def test_duplicate_step_is_rejected(step, recorded, retired):
    with pytest.raises(DuplicateStep) as caught:
        check_step(step, recorded, retired)
    assert caught.value.code == "duplicate_step"
    assert caught.value.details["step"] == step


def test_step_2_before_step_1_is_rejected():
    with pytest.raises(StepsIncomplete) as caught:
        check_step(2, set(), retired=False)
    assert caught.value.code == "steps_incomplete"
    assert caught.value.details["missing"] == [1]


@pytest.mark.parametrize("step, recorded", [(1, set()), (2, {1})])
def test_confirmation_after_retirement_is_too_late(step, recorded):
    with pytest.raises(StepsIncomplete) as caught:
        check_step(step, recorded, retired=True)
    assert caught.value.code == "steps_incomplete"
    assert "before retirement" in caught.value.message


def test_cleanup_before_retirement_is_rejected():
    with pytest.raises(StepsIncomplete) as caught:
        check_step(5, {1, 2}, retired=False)
    assert caught.value.code == "steps_incomplete"


# --- check_milestone ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MILESTONES)
def test_each_known_milestone_can_be_recorded_once(name):
    check_milestone(name, {})
    with pytest.raises(DuplicateMilestone) as caught:
        check_milestone(name, {name: "1.0.0"})
    assert caught.value.code == "duplicate_milestone"
    assert caught.value.details == {"milestone": name, "release": "1.0.0"}


@pytest.mark.parametrize("name", ["docs", "CANONICAL_SHIPPED", ""])
def test_unknown_milestone_is_a_usage_error(name):
    with pytest.raises(InvalidMilestone) as caught:
        check_milestone(name, {})
    assert caught.value.code == "invalid_milestone"
    assert isinstance(caught.value, UsageError)
    assert caught.value.details["valid"] == list(MILESTONES)


# --- check_release_order --------------------------------------------------------------------------


def test_first_release_and_strictly_greater_releases_are_accepted():
    check_release_order("0.1.0", None)
    check_release_order("1.2.0", "1.1.9")
    check_release_order("1.2.0", "1.2.0-rc.1")


@pytest.mark.parametrize("new", ["1.2.0", "1.1.0", "1.2.0-rc.1", "1.2.0+build.2"])
def test_equal_or_smaller_release_is_rejected(new):
    with pytest.raises(ReleaseOrder) as caught:
        check_release_order(new, "1.2.0")
    assert caught.value.code == "release_order"
    assert caught.value.details == {"latest": "1.2.0", "given": new}


def test_malformed_release_is_rejected_by_version_parsing():
    with pytest.raises(InvalidVersion) as caught:
        check_release_order("1.2", None)
    assert caught.value.code == "invalid_version"
