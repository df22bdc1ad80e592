"""Releases, the deprecation window and the removal path (ARCH-21) through the Catalog, as stories.

The story behind most tests: release 1.0.0 is published, then memory.seed is registered (so the
canonical ID is introduced in the next release, 1.1.0) with mcp.memory.seed as a deprecated alias.
In-memory store only (no I/O).
"""
from __future__ import annotations

from typing import Any

import pytest

from domain.catalog import Catalog
from domain.errors import (
    AliasConflict,
    DuplicateMilestone,
    DuplicateStep,
    LegacyId,
    ReleaseOrder,
    RetiredAlias,
    StepsIncomplete,
    UnknownRelease,
    UnknownTool,
    UsageError,
    WindowOpen,
)
from domain.versions import InvalidVersion
from domain.window import MILESTONES, InvalidMilestone
from tests.unit.conftest import META, new_catalog, rejected, spec, types

ALIAS = "mcp.memory.seed"


def record_milestones(catalog: Catalog, release: str, names: tuple[str, ...] = MILESTONES,
                      alias: str = ALIAS) -> None:
    for name in names:
        catalog.record_milestone(alias, name, release, f"{name} evidence", META)


def confirm_steps(catalog: Catalog, *steps: int, alias: str = ALIAS) -> None:
    for step in steps:
        catalog.record_step(alias, step, f"step {step} evidence", META)


@pytest.fixture
def catalog() -> Catalog:
    """Given 1.0.0 published, memory.seed registered after it, mcp.memory.seed deprecated, 1.1.0 published."""
    app = new_catalog()
    app.publish_release("1.0.0", META)
    app.register_tool("memory.seed", spec(group="memory"), META)
    app.add_alias("memory.seed", ALIAS, False, META)
    app.deprecate_alias(ALIAS, META)
    app.publish_release("1.1.0", META)
    return app


@pytest.fixture
def retired(catalog: Catalog) -> Catalog:
    """Given the window closed and mcp.memory.seed retired in 1.2.0."""
    record_milestones(catalog, "1.1.0")
    confirm_steps(catalog, 1, 2)
    catalog.publish_release("1.2.0", META)
    catalog.retire_alias(ALIAS, "1.2.0", META)
    return catalog


def entry(catalog: Catalog, alias: str = ALIAS) -> Any:
    return catalog.owner_of(alias).aliases[alias]


# --- the happy path -------------------------------------------------------------------------------


def test_given_deprecated_alias_when_whole_removal_path_followed_then_retired_and_cleanup_recorded(catalog):
    for name in MILESTONES:
        assert types(catalog.record_milestone(ALIAS, name, "1.1.0", "shipped", META)) == ["Tool.MilestoneRecorded"]
    for step in (1, 2):
        assert types(catalog.record_step(ALIAS, step, "confirmed", META)) == ["Tool.StepRecorded"]
    catalog.publish_release("1.2.0", META)

    result = catalog.retire_alias(ALIAS, "1.2.0", META)

    assert types(result) == ["Tool.AliasRetired"]
    assert entry(catalog).lifecycle == "retired"
    assert sorted(entry(catalog).steps) == [1, 2, 3, 4]  # retirement performs steps 3 and 4
    assert types(catalog.record_step(ALIAS, 5, "fixtures cleaned", META)) == ["Tool.StepRecorded"]
    assert sorted(entry(catalog).steps) == [1, 2, 3, 4, 5]


# --- each window condition failing on its own -----------------------------------------------------


@pytest.mark.parametrize("missing", MILESTONES)
def test_given_one_milestone_missing_when_retiring_then_window_open(catalog, missing):
    record_milestones(catalog, "1.1.0", tuple(m for m in MILESTONES if m != missing))
    confirm_steps(catalog, 1, 2)
    catalog.publish_release("1.2.0", META)

    with rejected(catalog, WindowOpen, "window_open") as info:
        catalog.retire_alias(ALIAS, "1.2.0", META)
    assert info.value.details["missing"] == [missing]


def test_given_milestones_at_1_1_when_retiring_before_next_minor_then_window_open(catalog):
    record_milestones(catalog, "1.1.0")
    confirm_steps(catalog, 1, 2)
    catalog.publish_release("1.1.1", META)

    with rejected(catalog, WindowOpen, "window_open") as info:
        catalog.retire_alias(ALIAS, "1.1.1", META)
    assert info.value.details["earliest"] == "1.2.0"


def test_given_alias_only_emission_in_1_2_when_retiring_in_1_2_then_window_open(catalog):
    record_milestones(catalog, "1.1.0", MILESTONES[:3])
    catalog.publish_release("1.2.0", META)
    record_milestones(catalog, "1.2.0", ("alias_only_emission",))
    confirm_steps(catalog, 1, 2)

    with rejected(catalog, WindowOpen, "window_open") as info:
        catalog.retire_alias(ALIAS, "1.2.0", META)
    assert info.value.details["alias_only_emission"] == "1.2.0"
    assert info.value.details["earliest_removal"] == "1.2.1"


def test_given_canonical_introduced_in_1_1_when_retiring_old_id_in_1_1_then_window_open():
    app = new_catalog()
    app.register_tool("memory.seed", spec(group="memory"), META)
    app.publish_release("1.0.0", META)
    app.rename_tool("memory.seed", "memory.seedling", META)  # memory.seedling ships in 1.1.0
    with rejected(app, ReleaseOrder, "release_order"):  # 1.0.0 was out before memory.seedling existed
        record_milestones(app, "1.0.0", alias="memory.seed")
    app.publish_release("1.1.0", META)
    record_milestones(app, "1.1.0", alias="memory.seed")
    confirm_steps(app, 1, 2, alias="memory.seed")

    with rejected(app, WindowOpen, "window_open") as info:
        app.retire_alias("memory.seed", "1.1.0", META)
    assert info.value.details["earliest_removal"] == "1.2.0"

    # one release later the window has closed
    app.publish_release("1.2.0", META)
    assert types(app.retire_alias("memory.seed", "1.2.0", META)) == ["Tool.AliasRetired"]


def test_given_window_open_and_no_steps_when_retiring_then_window_reported_first(catalog):
    record_milestones(catalog, "1.1.0", MILESTONES[:2])

    with rejected(catalog, WindowOpen, "window_open"):
        catalog.retire_alias(ALIAS, "1.1.0", META)


# --- removal steps ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("confirmed", "missing"), [((), [1, 2]), ((1,), [2])])
def test_given_window_closed_without_confirmations_when_retiring_then_steps_incomplete(catalog, confirmed, missing):
    record_milestones(catalog, "1.1.0")
    confirm_steps(catalog, *confirmed)
    catalog.publish_release("1.2.0", META)

    with rejected(catalog, StepsIncomplete, "steps_incomplete") as info:
        catalog.retire_alias(ALIAS, "1.2.0", META)
    assert info.value.details["missing"] == missing


def test_given_no_steps_when_recording_step_2_then_steps_incomplete(catalog):
    with rejected(catalog, StepsIncomplete, "steps_incomplete") as info:
        catalog.record_step(ALIAS, 2, "migration shipped", META)
    assert info.value.details["missing"] == [1]


def test_given_alias_not_retired_when_recording_step_5_then_steps_incomplete(catalog):
    confirm_steps(catalog, 1, 2)

    with rejected(catalog, StepsIncomplete, "steps_incomplete"):
        catalog.record_step(ALIAS, 5, "fixtures cleaned", META)


@pytest.mark.parametrize("step", [3, 4, 0, 6])
def test_given_deprecated_alias_when_recording_unrecordable_step_then_steps_incomplete(catalog, step):
    with rejected(catalog, StepsIncomplete, "steps_incomplete"):
        catalog.record_step(ALIAS, step, "evidence", META)


@pytest.mark.parametrize("step", [3, 4])
def test_given_retired_alias_when_recording_step_performed_by_retirement_then_steps_incomplete(retired, step):
    with rejected(retired, StepsIncomplete, "steps_incomplete"):
        retired.record_step(ALIAS, step, "evidence", META)


@pytest.mark.parametrize("step", [1, 2])
def test_given_retired_alias_when_recording_confirmation_again_then_duplicate_step(retired, step):
    with rejected(retired, DuplicateStep, "duplicate_step"):
        retired.record_step(ALIAS, step, "evidence", META)


def test_given_step_recorded_when_recording_it_again_then_duplicate_step(catalog):
    confirm_steps(catalog, 1)

    with rejected(catalog, DuplicateStep, "duplicate_step") as info:
        catalog.record_step(ALIAS, 1, "again", META)
    assert info.value.details["step"] == 1


def test_given_step_5_recorded_when_recording_it_again_then_duplicate_step(retired):
    confirm_steps(retired, 5)

    with rejected(retired, DuplicateStep, "duplicate_step"):
        retired.record_step(ALIAS, 5, "again", META)


# --- milestones ------------------------------------------------------------------------------------


def test_given_milestone_recorded_when_recording_it_again_then_duplicate_milestone(catalog):
    record_milestones(catalog, "1.1.0", ("docs_shipped",))

    with rejected(catalog, DuplicateMilestone, "duplicate_milestone") as info:
        catalog.record_milestone(ALIAS, "docs_shipped", "1.1.0", None, META)
    assert info.value.details["release"] == "1.1.0"


def test_given_deprecated_alias_when_recording_milestone_in_unpublished_release_then_unknown_release(catalog):
    with rejected(catalog, UnknownRelease, "unknown_release") as info:
        catalog.record_milestone(ALIAS, "docs_shipped", "1.2.0", None, META)
    assert info.value.details == {"release": "1.2.0", "published": ["1.0.0", "1.1.0"]}
    assert info.value.message == "release 1.2.0 has not been published yet"  # the interface says how to publish


def test_given_window_closed_when_retiring_in_unpublished_release_then_unknown_release(catalog):
    record_milestones(catalog, "1.1.0")
    confirm_steps(catalog, 1, 2)

    with rejected(catalog, UnknownRelease, "unknown_release"):
        catalog.retire_alias(ALIAS, "1.2.0", META)


def test_given_deprecated_alias_when_recording_milestone_with_invalid_version_then_invalid_version(catalog):
    with rejected(catalog, InvalidVersion, "invalid_version") as info:
        catalog.record_milestone(ALIAS, "docs_shipped", "1.1", None, META)
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2


def test_given_deprecated_alias_when_recording_unknown_milestone_then_invalid_milestone(catalog):
    with rejected(catalog, InvalidMilestone, "invalid_milestone") as info:
        catalog.record_milestone(ALIAS, "tests_shipped", "1.1.0", None, META)
    assert isinstance(info.value, UsageError)


# --- after retirement ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    lambda c: c.deprecate_alias(ALIAS, META),
    lambda c: c.retire_alias(ALIAS, "1.2.0", META),
    lambda c: c.record_milestone(ALIAS, "docs_shipped", "1.2.0", None, META),
], ids=["deprecate", "retire", "milestone"])
def test_given_retired_alias_when_changing_its_lifecycle_then_retired_alias_pointing_at_canonical(retired, command):
    with rejected(retired, RetiredAlias, "retired_alias") as info:
        command(retired)
    assert info.value.details["canonical_id"] == "memory.seed"


def test_given_retired_alias_when_registering_its_id_then_alias_conflict_tombstone(retired):
    with rejected(retired, AliasConflict, "alias_conflict") as info:
        retired.register_tool(ALIAS, spec(source="mcp", group="extension"), META)
    assert info.value.details["lifecycle"] == "retired"
    assert info.value.details["canonical_id"] == "memory.seed"


def test_given_retired_alias_when_adding_it_as_alias_of_another_tool_then_alias_conflict(retired):
    retired.register_tool("memory.plant", spec(group="memory"), META)

    with rejected(retired, AliasConflict, "alias_conflict"):
        retired.add_alias("memory.plant", ALIAS, False, META)


def test_given_retired_alias_when_renaming_another_tool_to_it_then_alias_conflict(retired):
    retired.register_tool("mcp.memory.plant", spec(source="mcp", group="extension"), META)

    with rejected(retired, AliasConflict, "alias_conflict"):
        retired.rename_tool("mcp.memory.plant", ALIAS, META)


def test_given_retired_old_id_when_tool_renamed_back_to_it_then_legacy_id_not_promoted():
    app = new_catalog()
    app.register_tool("memory.seed", spec(group="memory"), META)
    app.publish_release("1.0.0", META)
    app.rename_tool("memory.seed", "memory.seedling", META)
    app.publish_release("1.1.0", META)
    record_milestones(app, "1.1.0", alias="memory.seed")
    confirm_steps(app, 1, 2, alias="memory.seed")
    app.publish_release("1.2.0", META)
    app.retire_alias("memory.seed", "1.2.0", META)

    with rejected(app, LegacyId, "legacy_id") as info:
        app.rename_tool("memory.seedling", "memory.seed", META)
    assert info.value.details["lifecycle"] == "retired"


def test_given_retired_alias_when_resolving_it_as_canonical_then_unknown_tool_pointing_at_canonical(retired):
    with rejected(retired, UnknownTool, "unknown_tool") as info:
        retired.canonical_tool(ALIAS)
    assert info.value.details["canonical_id"] == "memory.seed"


# --- releases: the window's clock ------------------------------------------------------------------


def test_given_no_release_when_publishing_then_train_started_and_release_published():
    app = new_catalog()

    result = app.publish_release("1.0.0", META)

    assert types(result)[-2:] == ["Releases.Started", "Releases.Published"]
    assert types(app.publish_release("1.1.0", META)) == ["Releases.Published"]


@pytest.mark.parametrize("version", ["1.1.0", "1.1.0+build.7", "1.0.0", "1.1.0-rc.1"])
def test_given_release_published_when_publishing_equal_or_lower_then_release_order(catalog, version):
    with rejected(catalog, ReleaseOrder, "release_order") as info:
        catalog.publish_release(version, META)
    assert info.value.details["latest"] == "1.1.0"


@pytest.mark.parametrize("version", ["1.2", "v1.2.0", "01.2.0", ""])
def test_given_releases_when_publishing_invalid_version_then_invalid_version_usage_error(catalog, version):
    with rejected(catalog, InvalidVersion, "invalid_version") as info:
        catalog.publish_release(version, META)
    assert isinstance(info.value, UsageError)
    assert info.value.exit_code == 2


def test_given_tool_registered_after_a_release_then_it_remembers_that_release(catalog):
    assert catalog.canonical_tool("memory.seed").canonical_since == "1.0.0"
