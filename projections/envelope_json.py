"""An envelope from its published JSON bytes, checked on the hot path without pydantic.

The streaming projector reads every event this way: orjson decodes it, a few type checks stand in for
the pydantic model's validation (same fields, same bounds, no coercion), and its own hash is verified
here, so the projector only has to check the links of the chain. Anything else is a `BadEnvelope`
whose message is the reason a dead letter carries.
"""
from __future__ import annotations

import json
from typing import Any

import orjson

from projections.envelope import SCHEMA, Envelope, chain_hash, trusted_envelope


class BadEnvelope(ValueError):
    """The message is not a valid toolcat.event/v1 envelope; str() is the reason."""


_TEXT = ("originator_id", "type", "recorded_at", "actor", "prev_hash", "hash")
_OPTIONAL_TEXT = ("reason", "idempotency_key")
# (field, lowest allowed value), as the model's Field(ge=...) bounds
_COUNTS = (("position", 1), ("prev_position", 0), ("originator_version", 1), ("type_version", 1))
_REQUIRED = frozenset(("schema", "data", "reason", "position", "prev_position", "originator_version",
                       *_TEXT))
_ALLOWED = _REQUIRED | {"type_version", "idempotency_key"}
_DEFAULTS = {"type_version": 1, "idempotency_key": None}


def parse_envelope(raw: bytes | None) -> Envelope:
    """The envelope in `raw`, its hash verified; raises BadEnvelope with the reason otherwise."""
    try:
        return _verified(orjson.loads(_value(raw)), finite=True)
    except orjson.JSONDecodeError:
        pass  # NaN, Infinity: the json module reads them
    except BadEnvelope as error:
        # orjson reads an integer beyond 64 bits as a float, so the hash differs: the json module decides
        if not error.args[0].endswith(_MISMATCH):
            raise
    try:
        values = json.loads(_value(raw))
    except (ValueError, TypeError) as error:
        raise _bad(f"not JSON ({error})") from error
    return _verified(values, finite=False)


_MISMATCH = "does not match its hash (altered or corrupted)"


def _value(raw: bytes | None) -> bytes:
    if raw is None:
        raise _bad("the message has no value")
    return raw


def _verified(values: Any, finite: bool) -> Envelope:
    """`finite`: the decoder refuses NaN and Infinity, so the values hold none."""
    _check_fields(values)
    body = {**_DEFAULTS, **values}
    prev_hash, stated = body.pop("prev_hash"), body.pop("hash")
    if chain_hash(prev_hash, body, finite) != stated:
        raise BadEnvelope(f"not a valid toolcat.event/v1 envelope: the event at position {body['position']} "
                          + _MISMATCH)
    body["schema_"] = body.pop("schema")
    body.update(prev_hash=prev_hash, hash=stated)
    return trusted_envelope(body)


def _check_fields(values: Any) -> None:
    if type(values) is dict and values.keys() == _ALLOWED and _well_typed(values):
        return  # every envelope the relay publishes: one look; the checks below name what is wrong
    if type(values) is not dict:
        raise _bad(f"a JSON {type(values).__name__}, not an object")
    if values.get("schema") != SCHEMA:
        raise _bad(f"schema is {values.get('schema')!r}")
    if missing := sorted(_REQUIRED - values.keys()):
        raise _bad(f"missing {', '.join(missing)}")
    if extra := sorted(values.keys() - _ALLOWED):
        raise _bad(f"unknown field(s) {', '.join(extra)}")
    for name in _TEXT:
        if type(values[name]) is not str:
            raise _bad(f"{name} is not a string")
    for name in _OPTIONAL_TEXT:
        if values.get(name) is not None and type(values[name]) is not str:
            raise _bad(f"{name} is neither a string nor null")
    for name, lowest in _COUNTS:
        if name in values and (type(values[name]) is not int or values[name] < lowest):
            raise _bad(f"{name} is not an integer ≥ {lowest}")
    if type(values["data"]) is not dict:
        raise _bad("data is not an object")


def _well_typed(v: dict[str, Any]) -> bool:
    return (type(v["position"]) is int and v["position"] >= 1 and type(v["prev_position"]) is int
            and v["prev_position"] >= 0 and type(v["originator_version"]) is int and v["originator_version"] >= 1
            and type(v["type_version"]) is int and v["type_version"] >= 1 and type(v["data"]) is dict
            and v["schema"] == SCHEMA and all(type(v[name]) is str for name in _TEXT)
            and all(v[name] is None or type(v[name]) is str for name in _OPTIONAL_TEXT))


def _bad(detail: str) -> BadEnvelope:
    return BadEnvelope(f"not a toolcat.event/v1 envelope: {detail}")
