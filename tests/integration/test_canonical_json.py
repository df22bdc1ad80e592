"""The fast canonical JSON (orjson, guarded) gives the hash chain exactly the bytes of the reference form,
over stored events whose values hit every case where the two writers differ.

Real SQLite file store: the values go through the store's own encoding and decoding first.
"""
from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from contextlib import closing
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from domain.base import Meta
from domain.naming import preset
from domain.values import ToolSpec
from infra.settings import Settings
from infra.wiring import open_catalog
from projections.canonical import canonical_json, reference_json
from projections.canonical import GENESIS_HASH
from projections.envelope import chain_all
from projections.projector import data_texts

META = Meta(actor="tester", reason="naïve — ünïcode 😀")

# Where orjson and json.dumps write different bytes, or orjson refuses: each must fall back.
DIVERGENT: dict[str, Any] = {
    "tiny": 1e-7, "tinier": 2.5e-300, "small": 1e-5, "smallish": 0.00001234, "in_list": [3, 2.5e-05], "huge": 1e300, "big_exponent": 1e16, "nan": math.nan,
    "infinity": math.inf, "minus_infinity": -math.inf, "beyond_64_bits": 2**70, "below_64_bits": -(2**70),
    "non_ascii": "é ü — \u2028 \x7f 😀", "ключ": "значение", "nested": [{"x": 1e-5, "y": None}, [2**65]],
    "plain": 0.1, "nothing": None,
}


def reference_hash(prev_hash: str, body: dict[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode() + b"\n" + reference_json(body)).hexdigest()


@pytest.mark.parametrize("name", sorted(DIVERGENT))
def test_given_a_divergent_value_when_written_canonically_then_the_bytes_are_the_reference_bytes(
        name: str) -> None:
    value = {"data": {name: DIVERGENT[name]}, "reason": None}
    assert canonical_json(value) == reference_json(value)


def stored_divergent_records(sqlite_settings: Settings) -> list[Any]:
    """Stored events whose values hit every divergence (an input schema can hold any JSON), read back."""
    catalog = open_catalog(sqlite_settings)
    try:
        catalog.init(preset("tyrum"), META)
        for index, (name, value) in enumerate(sorted(DIVERGENT.items())):
            schema = {"type": "object", "properties": {"p": {"type": "number", "default": value}},
                      "title": name, "examples": [value]}
            spec = ToolSpec(source="builtin", group="core", tier="default", visibility="public",
                            description=f"{name} ünïcode", input_schema=schema)
            catalog.register_tool(f"edge.case{index}", spec, META)
        catalog.register_tool("edge.nonfinite", ToolSpec(source="builtin", group="core", tier="default",
                                                         visibility="public", input_schema={"examples": [None]}), META)
    finally:
        catalog.close()
    # the domain writes NaN as null; a store written by an older or other writer may hold NaN itself
    with closing(sqlite3.connect(sqlite_settings.event_store_path)) as store:
        store.execute("""UPDATE stored_events SET state = CAST(replace(CAST(state AS TEXT), '"examples":[null]',
                         '"examples":[NaN,Infinity,-Infinity]') AS BLOB) WHERE topic = 'Tool.Registered'""")
        store.commit()
    catalog = open_catalog(sqlite_settings)
    try:
        records = catalog.history(after=0, limit=1000)
    finally:
        catalog.close()
    return records


def test_given_stored_events_with_divergent_values_when_chained_then_envelopes_and_hashes_are_unchanged(
        sqlite_settings: Settings) -> None:
    # given events in the store whose values hit every divergence
    records = stored_divergent_records(sqlite_settings)
    # when they are chained with the fast canonical form
    envelopes = chain_all(records, 0, GENESIS_HASH)
    # then each envelope's hash is the one the reference form gives, and the published bytes are the same
    prev_hash = GENESIS_HASH
    for envelope in envelopes:
        assert envelope.hash == reference_hash(prev_hash, envelope.body()), envelope.position
        assert envelope.to_json() == reference_json(envelope.as_dict())
        prev_hash = envelope.hash
    stored = [v for e in envelopes if e.type == "Tool.Registered" for v in e.data["spec"]["input_schema"]["examples"]]
    assert any(isinstance(v, float) and math.isnan(v) for v in stored)  # the values survived the store
    assert 2**70 in stored and 1e-7 in stored and math.inf in stored


# Numbers around the divergent magnitudes, beside strings that hold "e-" and "0.0000" as a UUID or a
# timestamp does: the guard looks at a window before each, never misses a number, and only a string costs
# the reference form.
_NUMBERS = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.floats(min_value=1e-9, max_value=1e-3),
                     st.floats(min_value=-1e-3, max_value=-1e-9), st.integers(min_value=-2**63, max_value=2**63 - 1))
_STRINGS = st.one_of(st.uuids().map(str), st.just("12.00000e-3"), st.text(alphabet="0123456789.e-:,[", max_size=24))
_VALUES = st.recursive(st.one_of(_NUMBERS, _STRINGS, st.none()),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_STRINGS, inner, max_size=4),
                       max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(value=st.dictionaries(_STRINGS, _VALUES, max_size=6))
def test_given_numbers_beside_uuids_when_written_canonically_then_the_bytes_are_the_reference_bytes(
        value: dict[str, Any]) -> None:
    assert canonical_json(value, finite=True) == reference_json(value)


_ANY_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(), st.integers(), st.integers(min_value=2**63, max_value=2**80),
              st.text()),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.dictionaries(st.text(max_size=6), _ANY_JSON, max_size=5), max_size=3))
def test_given_any_data_when_written_as_the_events_column_then_it_is_json_dumps_default_form(
        values: list[dict[str, Any]]) -> None:
    # the `events.data` column the fingerprint covers: NaN, infinities, big integers, any text included
    assert data_texts(values) == [json.dumps(value, sort_keys=True) for value in values]
