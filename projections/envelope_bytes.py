"""A published envelope as bytes, without writing its JSON twice.

An envelope is published as the canonical JSON of all its fields (sorted keys, no spaces), and its hash
covers the canonical JSON of all of them but the two hashes. So the published bytes are the hashed
bytes with `"hash"` and `"prev_hash"` spliced in at their sorted places, and the hashed bytes are the
published ones with them cut out. The relay writes each event's JSON once this way, and the streaming
projector checks a hash without writing the JSON again.

Where the splices go: every top-level key after `hash` in sorted order (`idempotency_key` … `type_version`)
holds a string, a number or null, and `"key":` with its quotes cannot occur inside a JSON string, so the
last occurrence of such a key in the bytes is the top-level one (`data`, before them, may hold the same
key names in nested objects).
"""
from __future__ import annotations

import hashlib
from typing import NamedTuple

from domain.catalog import HistoryRecord
from projections.canonical import canonical_json
from projections.envelope import envelope_body

_HASH, _PREV_HASH = b',"hash":"', b',"prev_hash":"'
_AFTER_HASH, _AFTER_PREV_HASH = b',"idempotency_key":', b',"prev_position":'
_HEX = 64


class Published(NamedTuple):
    key: bytes
    value: bytes
    position: int
    hash: str


def publish_all(records: list[HistoryRecord], prev_position: int, prev_hash: str) -> list[Published]:
    """The published bytes of consecutive stored events, the first chained to (prev_position, prev_hash):
    byte for byte `chain_all(...)[i].to_json()`, with the same hashes."""
    published = []
    for record in records:
        hashed = canonical_json(envelope_body(record, prev_position), record.finite)
        digest = hashlib.sha256(prev_hash.encode() + b"\n" + hashed).hexdigest()
        published.append(Published(record.originator_id.encode(), with_hashes(hashed, prev_hash, digest),
                                   record.position, digest))
        prev_position, prev_hash = record.position, digest
    return published


def with_hashes(hashed: bytes, prev_hash: str, digest: str) -> bytes:
    """The canonical body bytes with the two hashes spliced in: the published envelope."""
    at = hashed.rindex(_AFTER_PREV_HASH)  # the later one first, so `at` of the other stays right
    spliced = hashed[:at] + _PREV_HASH + prev_hash.encode() + b'"' + hashed[at:]
    at = spliced.rindex(_AFTER_HASH)
    return spliced[:at] + _HASH + digest.encode() + b'"' + spliced[at:]


def hash_matches(published: bytes, prev_hash: str, digest: str) -> bool:
    """Whether the published bytes, the two hashes cut out, hash to `digest`. False also when the bytes
    are not in the canonical form (the caller then writes the canonical JSON of what it parsed)."""
    hashed = _without(_without(published, _PREV_HASH, prev_hash), _HASH, digest)
    return hashed is not None and hashlib.sha256(prev_hash.encode() + b"\n" + hashed).hexdigest() == digest


def _without(published: bytes | None, key: bytes, value: str) -> bytes | None:
    if published is None:
        return None
    at = published.rfind(key)
    end = at + len(key) + _HEX
    if at < 0 or len(value) != _HEX or published[at + len(key):end] != value.encode() \
            or published[end:end + 1] != b'"':
        return None
    return published[:at] + published[end + 1:]
