"""The server's hot read, in process: a subject's current effective set is answered with exactly the bytes
the command line's `effective SUBJECT --json` document encodes to, kept while the read model stands still
and read again once a batch moves it."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from domain.base import Meta
from domain.errors import UnknownSubject, UsageError
from infra.cli import run
from infra.freshness import Freshness
from infra.http.answers import encode
from infra.http.current_sets import CurrentSets
from infra.http.state import ServerState
from infra.settings import Settings
from tests.serving import following_state
from tests.support import run_example

META = Meta(actor="tester")


@pytest.fixture
def state(sqlite_settings: Settings) -> Iterator[ServerState]:
    run_example(sqlite_settings.home)
    with following_state(sqlite_settings) as server:
        yield server


def _commands_bytes(state: ServerState, subject: str) -> bytes:
    return encode(run(["--json", "effective", subject], state.settings, backend=state).document)


def test_a_kept_answer_is_the_commands_bytes_until_a_batch_moves_the_read_model(state: ServerState) -> None:
    sets = CurrentSets(state)
    # given the set read once
    position, body = sets.answer("agent:triage", Freshness())
    # when it is asked for again with nothing applied meanwhile, then the same answer: the command's bytes
    assert sets.answer("agent:triage", Freshness()) == (position, body)
    assert body == _commands_bytes(state, "agent:triage")
    assert json.loads(body)["tools"]
    # when a write is applied
    written = state.catalog.create_unit("ops", None, META).position
    assert written is not None and written > position
    # then the next answer holds the new read model position, and is still the command's bytes, but the
    # subject's ETag is its own last change: an unrelated write leaves it as it was
    tag, again = sets.answer("agent:triage", Freshness())
    assert tag == position == json.loads(body)["position"] < written
    assert json.loads(again)["read_model_position"] == written and json.loads(again)["position"] == position
    assert again == _commands_bytes(state, "agent:triage")
    assert json.loads(again)["tools"] == json.loads(body)["tools"]


def test_unknown_and_malformed_subjects_are_refused_as_the_command_refuses_them(state: ServerState) -> None:
    sets = CurrentSets(state)
    with pytest.raises(UnknownSubject):
        sets.answer("agent:nobody", Freshness())
    with pytest.raises(UsageError):
        sets.answer("nobody", Freshness())


def test_a_batch_drops_only_the_kept_answers_of_the_subjects_whose_set_it_changed(state: ServerState) -> None:
    sets = CurrentSets(state)
    # given the sets of an agent and of a unit above it answered once
    sets.answer("agent:triage", Freshness())
    sets.answer("unit:eng", Freshness())
    # when a grant on the agent alone is applied
    written = state.catalog.add_grant("agent:triage", "codesearch", META).position
    assert written is not None
    state.wait_for(written, 30)
    # then the unit's answer is still kept, now at the new position, and is the command's bytes there, its
    # ETag unchanged
    unit_tag = json.loads(_commands_bytes(state, "unit:eng"))["position"]
    assert unit_tag < written
    assert sets.kept("unit:eng") == (unit_tag, _commands_bytes(state, "unit:eng"))
    # and the agent's is read again, with the new tool
    assert sets.kept("agent:triage") is None
    position, body = sets.answer("agent:triage", Freshness())
    assert (position, body) == (written, _commands_bytes(state, "agent:triage"))
    assert "codesearch" in [tool["tool_id"] for tool in json.loads(body)["tools"]]
    # when the unit above it is granted the same tool, then the unit's answer is read again, and the
    # agent's is kept: its own grant still wins, its set is unchanged
    written = state.catalog.add_grant("unit:eng", "codesearch", META).position
    assert written is not None
    state.wait_for(written, 30)
    assert sets.kept("unit:eng") is None
    assert sets.answer("unit:eng", Freshness()) == (written, _commands_bytes(state, "unit:eng"))
    agent_tag = json.loads(_commands_bytes(state, "agent:triage"))["position"]
    assert sets.kept("agent:triage") == (agent_tag, _commands_bytes(state, "agent:triage"))


def test_warming_keeps_every_subjects_answer_as_its_first_read_would_give_it(state: ServerState) -> None:
    state.wait_for(state.store_head(), 30)
    sets = CurrentSets(state)
    # given a server caught up that has read no set yet
    assert sets.kept("agent:triage") is None and sets.kept("unit:eng") is None
    # when it warms its kept answers at start
    warmed = sets.warm()
    # then every subject's answer is kept, and is the command's bytes at the applied position
    assert warmed >= 2
    for subject in ("agent:triage", "unit:eng"):
        answer = _commands_bytes(state, subject)
        assert sets.kept(subject) == (json.loads(answer)["position"], answer)
        assert json.loads(answer)["read_model_position"] == state.position
    # and a batch changing one subject's set still drops that answer alone
    written = state.catalog.add_grant("agent:triage", "codesearch", META).position
    assert written is not None
    state.wait_for(written, 30)
    assert sets.kept("agent:triage") is None
    unchanged = _commands_bytes(state, "unit:eng")
    assert sets.kept("unit:eng") == (json.loads(unchanged)["position"], unchanged)
    assert json.loads(unchanged)["position"] < written == json.loads(unchanged)["read_model_position"]
