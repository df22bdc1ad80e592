"""Idempotency keys belong to their actor (issue 28, finding 4), and the keys stored before that — one
namespace for every actor — still answer their own actor's retries as they did."""
from __future__ import annotations

from pathlib import Path

from domain.base import Meta, create
from domain.idempotency import IdempotencyKey, command_digest, legacy_key_id
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.support import call_toolcat, error_of, ok, run_in_process, toolcat_env


def unit_create(home: Path, unit: str, actor: str, key: str) -> tuple[int, object]:
    run = call_toolcat("unit", "create", unit, "--actor", actor, "--idempotency-key", key,
                       env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}))
    return run.code, (run.json if run.code == 0 else error_of(run))


def test_a_key_stored_before_keys_belonged_to_actors_still_answers_its_actor(home: Path) -> None:
    # Given a catalog where alice wrote under key k1 as toolcat did before: the key stored for everyone
    run_in_process(home, [["init"]])
    catalog = open_catalog(Settings(home=home, event_store_url=None))
    meta = Meta(actor="alice", idempotency_key="k1")
    try:
        with catalog.compound(meta) as batch:
            catalog.create_unit("legacy", None, meta)
            batch.add(create(IdempotencyKey, IdempotencyKey.Used, legacy_key_id("k1"), meta, command="unit.create",
                             digest=command_digest("unit.create", {"name": "legacy", "parent": None})))
            stored = catalog.save_compound(batch)
    finally:
        catalog.close()
    first = [e.position for e in stored.events]
    # When alice retries it, she gets her first answer and nothing is written
    code, answer = unit_create(home, "legacy", "alice", "k1")
    assert code == 0 and [e["position"] for e in answer["events"]] == first and answer["position"] == max(first)
    # When alice uses k1 for another command, it is still a conflict
    code, error = unit_create(home, "elsewhere", "alice", "k1")
    assert (code, error["code"]) == (4, "idempotency_key_reused")
    # When bob uses k1, it is his own command, carried out (not alice's answer)
    code, answer = unit_create(home, "bobs", "bob", "k1")
    assert code == 0 and answer["position"] > max(first)
    code, again = unit_create(home, "bobs", "bob", "k1")
    assert code == 0 and again == answer
    code, error = unit_create(home, "legacy", "bob", "k2")
    assert (code, error["code"]) == (3, "duplicate_subject")
    assert ok(call_toolcat("sql", "SELECT count(*) AS n FROM units WHERE name = 'bobs'",
                           env=toolcat_env("t", {"TOOLCAT_HOME": str(home)})))[0]["n"] == 1
