"""The canonical JSON the hash chain covers, made fast.

The reference form is `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, and every
hash ever recorded was computed over it. orjson writes the same bytes about twice as fast, except where
the two differ: a negative one-digit exponent (orjson `1e-7`, json `1e-07`), magnitudes from 1e-5 to
1e-4 (orjson `0.00001`, json `1e-05`), NaN and ±Infinity (orjson `null`, json `NaN`), integers beyond
64 bits and lone surrogates (orjson refuses them); a sweep of a million floats found no other
difference. Those cases are caught — by the exception, by a byte check for negative exponents and for
`0.0000` in a number, and by looking for floats when the bytes hold a
`null` (unless the caller knows the value finite: its stored bytes held no NaN or Infinity) — and take
the reference form, so the bytes are always the reference bytes.
"""
from __future__ import annotations

import json
import re
from typing import Any

import orjson

# The `prev_hash` of the first event: the hash chain starts here.
GENESIS_HASH = "0" * 64

# Cheap byte searches first, for "e-" and "0.0000" (a UUID often holds "e-"); then whether it is a number
# that diverges (it follows `:`, `,` or `[`); a match inside a string only costs a fallback.
_DIVERGENT = re.compile(rb"[:,\[]-?(?:[0-9]+(?:\.[0-9]+)?e-|0\.0000)")
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
    if _diverges(fast) or (not finite and b"null" in fast and _has_float(value)):
        return reference_json(value)
    return fast


# The regex is tried only in a window before each "e-" or "0.0000", not over the whole text: a UUID holds
# "e-" in about a third of the events, and the regex's scan of a whole event costs more than orjson's
# dump. A number orjson writes with a negative exponent has at most 17 digits, a point and a sign before
# it, so the window holds the whole of any match ending there.
_BEFORE_EXPONENT = 32


def _diverges(fast: bytes) -> bool:
    at = fast.find(b"e-")
    while at >= 0:
        if _DIVERGENT.search(fast, max(0, at - _BEFORE_EXPONENT), at + 2) is not None:
            return True
        at = fast.find(b"e-", at + 2)
    at = fast.find(b"0.0000")
    while at >= 0:  # a match starts at most two bytes before it (`:-0.0000`)
        if _DIVERGENT.search(fast, max(0, at - 2), at + 6) is not None:
            return True
        at = fast.find(b"0.0000", at + 1)
    return False


def _has_float(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        return any(_has_float(v) for v in value.values())
    if kind is list or kind is tuple:
        return any(_has_float(v) for v in value)
    return False
