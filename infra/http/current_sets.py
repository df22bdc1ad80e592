"""The hot read of `toolcat serve`: a subject's current effective set (`GET /v1/subjects/{s}/effective` with
no moment and no class labels), answered from the encoded bytes of an earlier answer while the subject's set
has not changed since, else read with one statement, encoded once and kept.

An answer holds the position of the subject's last change (its ETag) and the read model's position. A kept
answer is the document's bytes around the read model's position: read at P1 and still unchanged at P2 (no
batch in between changed the subject's set, as the follower tells `changed`), the answer at P2 is those
bytes with P2 in between — exactly what reading at P2 gives; its ETag has not changed. A batch thus invalidates only the subjects whose set it changed. Answers are bytes equal
to what the command line's `effective SUBJECT --json` document encodes to, through the same `encode`."""
from __future__ import annotations

import threading
from typing import NamedTuple

import duckdb

from domain.errors import ToolcatError
from infra.reading import current_document
from infra.freshness import Freshness
from infra.http.answers import encode
from infra.http.state import ServerState
from projections.rows import run

# Answers kept at most (each about the size of one subject's set, ~50 KB on the 10k-tool benchmark
# catalog); past it, the whole cache starts again.
KEPT = 2048


class Kept(NamedTuple):
    position: int  # the read model's position the answer was read at
    changed: int  # the position of the subject's last change: the answer's `position` and ETag
    head: bytes  # the document's bytes before the read model's position
    tail: bytes  # and after it

    def at(self, position: int) -> bytes:
        return self.head + str(position).encode() + self.tail


def kept_answer(document: dict) -> Kept:
    """The encoded document (`subject`, `position`, `read_model_position`, `tools`, in that order) cut
    around the read model's position."""
    head = encode({"subject": document["subject"], "position": document["position"]})[:-1] + \
        b', "read_model_position": '
    return Kept(document["read_model_position"], document["position"], head,
                b', "tools": ' + encode(document["tools"]) + b"}")


class CurrentSets:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._lock = threading.Lock()
        self._answers: dict[str, Kept] = {}
        self._changed_at: dict[str, int] = {}  # subject → the latest position a batch changed its set at
        self._floor = 0  # nothing read before this position is served again (everything may have changed)
        state.on_changes.append(self.changed)
        state.on_caught_up.append(self.warm)

    def changed(self, position: int, subjects: list[str] | None) -> None:
        """(The follower, before it announces `position`.) These subjects' sets changed in the batch that
        reached `position`; None: any may have."""
        with self._lock:
            if subjects is None:
                self._floor, self._answers, self._changed_at = position, {}, {}
                return
            for subject in subjects:
                self._changed_at[subject] = position
                self._answers.pop(subject, None)

    def warm(self) -> int:
        """(The store follower, once caught up at start, before it announces that) keep the answers of up to half of KEPT subjects, read as any
        first read of them is; how many. A set not kept costs ≈ 2 ms of CPU to read (one statement, the JSON
        decoded and encoded again), and at 500 reads/s over 1,000 subjects a third of the first five seconds'
        reads were first reads: they were the p99 (≈ 25 ms against ≈ 1 ms kept). Half: room is left for
        others before the cache starts again."""
        with self.state.read_model(Freshness(min_position=0)) as con:
            subjects = [subject for (subject,) in run(con, "SELECT subject FROM effective_documents ORDER BY subject "
                                                           "LIMIT $n", {"n": KEPT // 2})]
        for subject in subjects:
            try:
                self._read(subject)
            except (ToolcatError, duckdb.Error):  # not readable now: read when asked, as before
                return len(self._answers)
        return len(self._answers)

    def answer(self, subject: str, freshness: Freshness) -> tuple[int, bytes]:
        """(ETag position, JSON body) of the subject's current set, as fresh as `freshness` asks."""
        self.state.wait_until_fresh(freshness)
        return self.kept(subject) or self._read(subject)

    def kept(self, subject: str) -> tuple[int, bytes] | None:
        """The answer at the applied position from a kept one, when the subject's set has not changed since
        it was read; None otherwise. The position is taken first: a batch's changes are noted before its
        position is announced, so what is unchanged through the changes noted is unchanged through it."""
        position = self.state.position
        kept = self._answers.get(subject)
        if kept is None or kept.position > position or not self.unchanged_since(subject, kept.position):
            return None
        return kept.changed, kept.at(position)

    def unchanged_since(self, subject: str, position: int) -> bool:
        """Whether no batch changed the subject's set after `position` (through the announced position taken
        before asking: a batch's changes are noted before its position is announced)."""
        return self._floor <= position and self._changed_at.get(subject, -1) <= position

    def _read(self, subject: str) -> tuple[int, bytes]:
        with self.state.read_model(Freshness(min_position=0), one_statement=True) as con:
            document = current_document(con, subject)
        kept = kept_answer(document)
        with self._lock:
            if self._changed_at.get(subject, -1) <= kept.position and kept.position >= self._floor:
                if len(self._answers) >= KEPT:
                    self._answers = {}
                self._answers[subject] = kept
        return kept.changed, kept.at(kept.position)
