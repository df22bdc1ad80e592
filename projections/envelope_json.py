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
from projections.envelope_bytes import hash_matches


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
    values, finite = _decode(raw)
    _check_fields(values)
    body = {**_DEFAULTS, **values}
    prev_hash, stated = body.pop("prev_hash"), body.pop("hash")
    # The bytes as published, hashes cut out (a byte compare and one SHA-256); else, bytes not in the
    # canonical form, the canonical JSON of what was parsed.
    if not hash_matches(raw, prev_hash, stated) and chain_hash(prev_hash, body, finite) != stated:
        raise BadEnvelope(f"not a valid toolcat.event/v1 envelope: the event at position {body['position']} "
                          "does not match its hash (altered or corrupted)")
    body["schema_"] = body.pop("schema")
    body.update(prev_hash=prev_hash, hash=stated)
    return trusted_envelope(body)


# orjson reads an integer beyond 64 bits as a float (not as json does), and refuses NaN and Infinity.
# Such an integer has 19 digits or more: every digit becomes "0" and one `find` looks for a run (a
# regular expression costs more than the whole parse).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _decode(raw: bytes | None) -> tuple[Any, bool]:
    """(the value, whether it is known to hold no NaN or Infinity)."""
    if raw is None:
        raise _bad("the message has no value")
    if _LONG_RUN not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(raw), True
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(raw), False
    except (ValueError, TypeError) as error:
        raise _bad(f"not JSON ({error})") from error


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
    position, prev_position, version, type_version = \
        v["position"], v["prev_position"], v["originator_version"], v["type_version"]
    reason, key = v["reason"], v["idempotency_key"]
    return (type(position) is int and position >= 1 and type(prev_position) is int and prev_position >= 0
            and type(version) is int and version >= 1 and type(type_version) is int and type_version >= 1
            and type(v["data"]) is dict and v["schema"] == SCHEMA and type(v["originator_id"]) is str
            and type(v["type"]) is str and type(v["recorded_at"]) is str and type(v["actor"]) is str
            and type(v["prev_hash"]) is str and type(v["hash"]) is str
            and (reason is None or type(reason) is str) and (key is None or type(key) is str))


def _bad(detail: str) -> BadEnvelope:
    return BadEnvelope(f"not a toolcat.event/v1 envelope: {detail}")
