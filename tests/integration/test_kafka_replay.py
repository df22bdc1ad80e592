"""Kafka as a second road to the same read model (DESIGN.md sections 4 and 6): a read model fed only by
`toolcat.events` equals one fed by the store, even when the relay published a page twice (it died
before saving its position) and when two relays were started for the same home.
Real broker (the session's Tansu, or TOOLCAT_TEST_KAFKA_BOOTSTRAP), real SQLite and DuckDB files.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from infra.relay import RelayState
from infra.settings import Settings
from tests.integration.kafka_support import (
    on_both_kafka_clients,
    assert_each_position_once,
    envelope_positions,
    events_on_topic,
    popen_toolcat,
    read_model_facts,
    relay,
    relay_all,
    stop_process,
    store_fingerprint,
    store_head,
    toolcat,
    wait_for,
)
from tests.support import SCRIPT, Run, error_of, ok, run_in_process, toolcat_environ, toolcat_in_process


@pytest.fixture
def story(kafka_settings: Settings) -> int:
    """Given the bundled example story (tools, aliases through retirement, units, agents, grants, a
    revoke) is in the store; returns its head position."""
    run_in_process(kafka_settings.home, SCRIPT)
    head = store_head(kafka_settings)
    assert head > 100
    return head


def project_from_kafka(settings: Settings, home: Path) -> dict:
    return ok(toolcat("project", "--from", "kafka", "--idle-seconds", "2", home=home, settings=settings))


# -- 1. the same read model by either road -----------------------------------------------------------

@on_both_kafka_clients
def test_a_read_model_fed_by_kafka_alone_equals_the_one_fed_by_the_store(
        story: int, kafka_settings: Settings, tmp_path: Path) -> None:
    home = kafka_settings.home
    # Given the read model is projected from the store (no Kafka configured for this command)
    assert ok(toolcat("project", home=home))["position"] == story
    store_built = read_model_facts(home)

    # When the relay publishes the store and a fresh home projects only the topic
    relayed = ok(toolcat("relay", home=home, settings=kafka_settings))
    assert (relayed["position"], relayed["published"]) == (story, story)
    other = tmp_path / "from-kafka"
    projected = project_from_kafka(kafka_settings, other)

    # Then both read models say the same, bit for bit
    assert (projected["position"], projected["source"]) == (story, "kafka")
    kafka_built = read_model_facts(other)
    assert_each_position_once(kafka_built, story)
    assert not (other / "events.sqlite").exists(), "the Kafka-fed home must not need an event store"
    assert kafka_built["fingerprint"] == store_built["fingerprint"]
    assert kafka_built["offsets"] == {(kafka_settings.kafka_events_topic, 0): story}

    # and a second run finds nothing new and changes nothing
    again = project_from_kafka(kafka_settings, other)
    assert again["position"] == story
    assert read_model_facts(other)["fingerprint"] == store_built["fingerprint"]

    # and the Kafka-fed home is a replica: a write to it is refused, and nothing is written
    with toolcat_environ("replica-writer"):
        refused = toolcat_in_process(other, "unit", "create", "stray", "--json")
    assert refused.code == 2
    assert error_of(refused)["code"] == "read_only_replica"
    assert not (other / "events.sqlite").exists()


# -- 3. the relay died after publishing, before saving its position ----------------------------------

class DiedBeforeSaving(Exception):
    """Stands for the relay process dying between the broker's acknowledgement and the state file."""


def publish_first_page_then_die(settings: Settings, state_path: Path, page_size: int) -> None:
    relayer, catalog = relay(settings, state_path, page_size=page_size)
    saved = []

    def die(position: int, head: str) -> None:
        saved.append(position)
        raise DiedBeforeSaving(position)

    relayer.state.save = die  # type: ignore[method-assign]
    try:
        with pytest.raises(DiedBeforeSaving):
            relayer.run(follow=False, retry_seconds=5)
    finally:
        relayer.close()
        catalog.close()
    assert saved == [page_size], "the relay must try to save only after the first page was acknowledged"
    assert RelayState(state_path).load()[0] == 0, "nothing was saved: the next relay starts from the beginning"


@pytest.mark.parametrize("projected_between", [False, True],
                         ids=["duplicates-in-one-poll", "duplicates-after-a-projection"])
def test_a_page_published_twice_is_applied_once(story: int, kafka_settings: Settings, tmp_path: Path,
                                                projected_between: bool) -> None:
    state_path = tmp_path / "relay-state.json"
    page = 25
    store_built = store_fingerprint(kafka_settings, tmp_path / "store.duckdb")
    other = tmp_path / "from-kafka"

    # Given a relay published its first page, was acknowledged, and died before saving its position,
    # its second page already sent (the relay sends a page while the broker takes the one before)
    publish_first_page_then_die(kafka_settings, state_path, page)
    events_on_topic(kafka_settings, range(1, page + 1))
    if projected_between:
        assert project_from_kafka(kafka_settings, other)["position"] in (page, 2 * page)

    # When the next relay starts from its saved position (nothing) and publishes everything
    assert relay_all(kafka_settings, state_path) == story
    messages = events_on_topic(kafka_settings, range(1, story + 1))
    positions = envelope_positions(messages)
    assert positions.count(1) == 2 and positions.count(page) == 2 and positions.count(2 * page + 1) == 1, \
        "the first page is on the topic twice (the second one may be), nothing past the second"

    # Then the Kafka-fed read model applies every position once and equals the store-fed one
    projected = toolcat("project", "--from", "kafka", "--idle-seconds", "2", home=other, settings=kafka_settings)
    assert projected.code == 0, (
        f"duplicates on the topic (at-least-once delivery) must be ignored by position, but the projector "
        f"stopped with exit {projected.code}: {projected.stderr.strip()}")
    assert projected.json["position"] == story
    facts = read_model_facts(other)
    assert_each_position_once(facts, story)
    assert (story, facts["fingerprint"]) == store_built


# -- 6. two relays for one home ----------------------------------------------------------------------

def test_two_following_relays_for_one_home_one_publishes_the_other_exits_4(
        story: int, kafka_settings: Settings, tmp_path: Path) -> None:
    home = kafka_settings.home
    store_built = store_fingerprint(kafka_settings, tmp_path / "store.duckdb")
    # When two `relay --follow` start at once for the same home and topic
    relays = [popen_toolcat("relay", "--follow", "--json", home=home, settings=kafka_settings,
                            stderr_path=tmp_path / f"relay-{n}.err") for n in range(2)]
    try:
        # Then one of them stops at once with a conflict, and the other keeps relaying
        stopped = wait_for(lambda: [r for r in relays if r.poll() is not None], 60,
                           "one of two following relays to give up the lock")
        assert len(stopped) == 1, "exactly one relay may hold the home's relay lock"
        loser = stopped[0]
        winner = next(r for r in relays if r is not loser)
        loser_stderr = (tmp_path / f"relay-{relays.index(loser)}.err").read_text()
        assert loser.returncode == 4, f"exit {loser.returncode}: {loser_stderr}"
        error = error_of(Run(loser.returncode, loser.stdout.read() if loser.stdout else "", loser_stderr))
        assert error["code"] == "conflict"
        assert "another relay" in error["message"]

        events_on_topic(kafka_settings, range(1, story + 1))
        assert winner.poll() is None, "the relay holding the lock keeps following"
    finally:
        codes = [stop_process(r) for r in relays]
    assert codes[relays.index(winner)] == 0, "a following relay stopped by SIGTERM exits 0"

    # and the topic holds each position once, so the Kafka-fed read model equals the store-fed one
    assert sorted(envelope_positions(events_on_topic(kafka_settings, range(1, story + 1)))) == \
        list(range(1, story + 1))
    other = tmp_path / "from-kafka"
    assert project_from_kafka(kafka_settings, other)["position"] == story
    facts = read_model_facts(other)
    assert_each_position_once(facts, story)
    assert (story, facts["fingerprint"]) == store_built


def test_two_one_shot_relays_started_at_once_still_give_one_read_model(
        story: int, kafka_settings: Settings, tmp_path: Path) -> None:
    home = kafka_settings.home
    store_built = store_fingerprint(kafka_settings, tmp_path / "store.duckdb")
    relays = [popen_toolcat("relay", "--json", home=home, settings=kafka_settings,
                            stderr_path=tmp_path / f"relay-{n}.err") for n in range(2)]
    try:
        for process in relays:
            process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError("a one-shot relay did not finish within 120s") from None
    finally:
        for process in relays:
            stop_process(process)
    codes = sorted(r.returncode for r in relays)
    stderrs = [(tmp_path / f"relay-{n}.err").read_text() for n in range(2)]
    # Either one held the lock while the other tried (exit 4, conflict), or they ran one after the other
    assert codes in ([0, 0], [0, 4]), f"exit codes {codes}: {stderrs}"
    if codes == [0, 4]:
        loser = next(n for n, r in enumerate(relays) if r.returncode == 4)
        assert '"conflict"' in stderrs[loser] and "another relay" in stderrs[loser]
    events_on_topic(kafka_settings, range(1, story + 1))

    # In every case the Kafka-fed read model applies each position once and equals the store-fed one
    other = tmp_path / "from-kafka"
    projected = toolcat("project", "--from", "kafka", "--idle-seconds", "2", home=other, settings=kafka_settings)
    assert projected.code == 0, f"exit {projected.code}: {projected.stderr.strip()}"
    facts = read_model_facts(other)
    assert_each_position_once(facts, story)
    assert (story, facts["fingerprint"]) == store_built
