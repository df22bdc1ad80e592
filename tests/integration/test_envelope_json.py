"""The streaming projector's envelope parser (orjson, no pydantic): it reads back exactly what the relay
publishes, divergent values included, and refuses with a reason whatever the pydantic model refused,
plus an envelope that does not match its own hash.
"""
from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from infra.settings import Settings
from projections.canonical import GENESIS_HASH
from projections.envelope import Envelope, chain_all
from projections.envelope_bytes import hash_matches, publish_all
from projections.envelope_json import BadEnvelope, parse_envelope
from tests.integration.test_canonical_json import stored_divergent_records


def test_given_published_envelopes_with_divergent_values_when_parsed_then_each_is_the_one_published(
        sqlite_settings: Settings) -> None:
    # given the envelopes of stored events whose values hit every orjson/json divergence, as published
    envelopes = chain_all(stored_divergent_records(sqlite_settings), 0, GENESIS_HASH)
    for envelope in envelopes:
        published = envelope.to_json()
        # when the fast parser reads one back
        parsed = parse_envelope(published)
        # then it publishes the same bytes, carries the same hash, and agrees with the pydantic model
        assert parsed.to_json() == published, envelope.position
        assert (parsed.hash, parsed.expected_hash()) == (envelope.hash, envelope.hash)
        assert parsed.to_json() == Envelope.model_validate_json(published).to_json()


def test_given_stored_events_with_divergent_values_when_published_as_bytes_then_they_are_the_envelopes_json(
        sqlite_settings: Settings) -> None:
    # given stored events whose values hit every divergence, chained after some earlier head
    records = stored_divergent_records(sqlite_settings)
    # when the relay's byte path publishes them
    published = publish_all(records, 0, GENESIS_HASH)
    # then each is byte for byte the envelope's canonical JSON, with the same hash and key
    for envelope, message in zip(chain_all(records, 0, GENESIS_HASH), published, strict=True):
        assert message.value == envelope.to_json(), envelope.position
        assert (message.key, message.position, message.hash) == \
            (envelope.originator_id.encode(), envelope.position, envelope.hash)
        # and the parser verifies them from the bytes
        assert hash_matches(message.value, envelope.prev_hash, envelope.hash)


def test_given_an_envelope_in_another_key_order_when_parsed_then_its_hash_is_checked_on_its_content(
        sqlite_settings: Settings) -> None:
    # given a valid envelope written by another producer: other key order, spaces
    envelope = chain_all(stored_divergent_records(sqlite_settings)[:2], 0, GENESIS_HASH)[1]
    values = json.loads(envelope.to_json())  # orjson would read its integers beyond 64 bits as floats
    reordered = json.dumps(dict(reversed(list(values.items())))).encode()
    assert not hash_matches(reordered, envelope.prev_hash, envelope.hash)
    # when it is parsed, then it is accepted: the same envelope
    assert parse_envelope(reordered).to_json() == envelope.to_json()


def a_published_envelope(sqlite_settings: Settings) -> dict[str, Any]:
    envelope = chain_all(stored_divergent_records(sqlite_settings)[:1], 0, GENESIS_HASH)[0]
    return orjson.loads(envelope.to_json())


@pytest.mark.parametrize(("change", "reason"), [
    (lambda v: v.update(schema="toolcat.event/v2"), "schema is 'toolcat.event/v2'"),
    (lambda v: v.pop("originator_id"), "missing originator_id"),
    (lambda v: v.update(surprise=1), "unknown field(s) surprise"),
    (lambda v: v.update(position=True), "position is not an integer ≥ 1"),
    (lambda v: v.update(position="1"), "position is not an integer ≥ 1"),
    (lambda v: v.update(prev_position=-1), "prev_position is not an integer ≥ 0"),
    (lambda v: v.update(actor=None), "actor is not a string"),
    (lambda v: v.update(reason=3), "reason is neither a string nor null"),
    (lambda v: v.update(data=[]), "data is not an object"),
    (lambda v: v["data"].update(forged=True), "does not match its hash"),
], ids=["wrong schema", "missing field", "extra field", "bool position", "text position", "negative",
        "null actor", "number reason", "list data", "altered data, hash kept"])
def test_given_an_invalid_envelope_when_parsed_then_the_reason_says_what_is_wrong(
        sqlite_settings: Settings, change: Any, reason: str) -> None:
    # given a published envelope, changed
    values = a_published_envelope(sqlite_settings)
    change(values)
    # when it is parsed, then it is refused with the reason, and the pydantic model refuses it too
    with pytest.raises(BadEnvelope, match="envelope") as raised:
        parse_envelope(orjson.dumps(values))
    assert reason in str(raised.value)
    if "hash" not in reason:
        with pytest.raises(ValueError):
            Envelope.model_validate_json(orjson.dumps(values), strict=True)


@pytest.mark.parametrize(("raw", "reason"), [(b"not json", "not JSON"), (b"[1, 2]", "a JSON list"),
                                             (None, "no value"), (b"", "not JSON")])
def test_given_a_message_that_is_no_envelope_when_parsed_then_the_reason_says_so(raw: bytes | None,
                                                                                 reason: str) -> None:
    with pytest.raises(BadEnvelope, match="not a toolcat.event/v1 envelope") as raised:
        parse_envelope(raw)
    assert reason in str(raised.value)
