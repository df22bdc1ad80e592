"""How a command is written, as stories: an idempotency key makes a retry write nothing, and a
concurrent writer's change makes the command a conflict that writes nothing.

In-memory store only (no I/O).
"""
from __future__ import annotations

from typing import Any

import pytest
from eventsourcing.persistence import RecordConflictError

from domain.catalog import Catalog
from domain.errors import Conflict, DuplicateTool, IdempotencyKeyReused
from domain.naming import preset
from tests.unit.conftest import IN_MEMORY, META, new_catalog, rejected, spec, types, with_key

@pytest.fixture
def catalog() -> Catalog:
    return new_catalog()


# --- idempotency keys -----------------------------------------------------------------------------


def test_given_command_done_with_key_when_same_command_same_key_again_then_replayed_and_nothing_written(catalog):
    first = catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))
    assert first.replayed_key is None
    assert types(first)[0] == "IdempotencyKey.Used"  # the answer lists every event written
    before = catalog.recorder.max_notification_id()

    again = catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    assert again.replayed_key == "k-1"
    assert again.events == [] and again.position is None
    assert catalog.recorder.max_notification_id() == before


def test_given_key_used_when_different_command_with_same_key_then_idempotency_key_reused(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    with rejected(catalog, IdempotencyKeyReused, "idempotency_key_reused") as info:
        catalog.register_tool("memory.plant", spec(group="memory"), with_key("k-1"))
    assert info.value.exit_code == 4
    assert info.value.details == {"idempotency_key": "k-1", "first_command": "tool.register"}


def test_given_rejected_command_with_key_when_key_reused_for_another_command_then_accepted(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    with rejected(catalog, DuplicateTool, "duplicate_tool"):
        catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    result = catalog.publish_release("1.0.0", with_key("k-1"))

    assert result.replayed_key is None and "Releases.Published" in types(result)


# --- concurrency ----------------------------------------------------------------------------------


def test_given_tool_loaded_twice_when_both_changed_and_saved_then_second_save_conflicts(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    key = catalog.canonical_tool("memory.seed").id
    first, second = catalog.repository.get(key), catalog.repository.get(key)
    first.add_alias("memory.plant", False, META)
    second.add_alias("memory.sow", False, META)
    catalog.save(first)
    before = catalog.recorder.max_notification_id()

    with pytest.raises(RecordConflictError):
        catalog.save(second)

    assert catalog.recorder.max_notification_id() == before
    assert set(catalog.repository.get(key).aliases) == {"memory.plant"}


class RacingCatalog(Catalog):
    """Runs `competitor` (another writer's command) just before its own next save."""

    competitor = None

    def save(self, *objects: Any, **kwargs: Any) -> Any:
        competitor, self.competitor = self.competitor, None
        if competitor is not None:
            competitor()
        return super().save(*objects, **kwargs)


def racing_catalog() -> RacingCatalog:
    return RacingCatalog(env=IN_MEMORY)


def test_given_competing_registration_saved_first_when_registering_then_conflict_and_nothing_written():
    catalog = racing_catalog()
    catalog.init(preset("tyrum"), META)
    after_competitor: list[int | None] = []

    def competing_registration() -> None:
        catalog.register_tool("memory.seed", spec(group="memory"), META)
        after_competitor.append(catalog.recorder.max_notification_id())

    catalog.competitor = competing_registration

    with pytest.raises(Conflict) as info:
        catalog.register_tool("memory.seed", spec(group="memory", description="mine"), META)

    assert info.value.code == "conflict" and info.value.exit_code == 4
    assert catalog.recorder.max_notification_id() == after_competitor[0]
    assert catalog.canonical_tool("memory.seed").spec.description is None


def test_given_competing_rename_saved_first_when_adding_alias_then_conflict():
    catalog = racing_catalog()
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    catalog.competitor = lambda: catalog.rename_tool("memory.seed", "memory.plant", META)

    with pytest.raises(Conflict) as info:
        catalog.add_alias("memory.seed", "memory.sow", False, META)

    assert info.value.code == "conflict"
    assert catalog.owner_of("memory.sow") is None


def test_given_same_keyed_command_saved_first_by_another_writer_when_saving_then_replayed():
    catalog = racing_catalog()
    catalog.init(preset("tyrum"), META)
    catalog.competitor = lambda: catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    result = catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    assert result.replayed_key == "k-1" and result.events == []
