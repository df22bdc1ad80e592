"""The canonical JSON the hash chain covers, made fast.

The reference form is `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, and every
hash ever recorded was computed over it. orjson writes the same bytes about twice as fast, except where
the two differ: a negative one-digit exponent (orjson `1e-7`, json `1e-07`), NaN and ±Infinity (orjson
`null`, json `NaN`), integers beyond 64 bits and lone surrogates (orjson refuses them). Those cases are
caught — by the exception, by a byte check for exponents, and by looking for floats when the bytes hold a
`null` (unless the caller knows the value finite: its stored bytes held no NaN or Infinity) — and take
the reference form, so the bytes are always the reference bytes.
"""
from __future__ import annotations

import json
import re
from typing import Any

import orjson

# A number (it follows `:`, `,` or `[`) with an exponent; inside a string it only costs a fallback.
_EXPONENT = re.compile(rb"[:,\[]-?[0-9]+(?:\.[0-9]+)?[eE]")
# Types orjson would write where json refuses them (datetimes, dataclasses, subclasses of str and int):
# passed through, they make orjson refuse too, and the reference form decides.
_OPTIONS = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
            | orjson.OPT_PASSTHROUGH_SUBCLASS)


def reference_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def canonical_json(value: Any, finite: bool = False) -> bytes:
    """`finite`: the caller knows the value holds no NaN or Infinity, so `null` needs no look for floats."""
    try:
        fast = orjson.dumps(value, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: big integers, surrogates, non-string keys, other types
        return reference_json(value)
    if _EXPONENT.search(fast) or (not finite and b"null" in fast and _has_float(value)):
        return reference_json(value)
    return fast


def _has_float(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        return any(_has_float(v) for v in value.values())
    if kind is list or kind is tuple:
        return any(_has_float(v) for v in value)
    return False
