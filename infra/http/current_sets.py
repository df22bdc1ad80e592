"""The hot read of `toolcat serve`: a subject's current effective set (`GET /v1/subjects/{s}/effective` with
no moment and no class labels), answered from the encoded bytes of the last answer while the read model has
not moved since, else read with one statement, encoded once and kept.

An answer holds the read model's position (and its ETag is that position), so an answer kept for position P
is exactly what reading at P gives: it is served only while the server's applied position is still P, and
any batch applied makes every kept answer a miss. Answers are bytes equal to what the command line's
`effective SUBJECT --json` document encodes to, through the same `json_response`."""
from __future__ import annotations

import threading

from infra.cli.effective import current_document
from infra.freshness import Freshness
from infra.http.answers import encode
from infra.http.state import ServerState

# Answers kept at most (each about the size of one subject's set, ~50 KB on the 10k-tool benchmark
# catalog); past it, the whole cache starts again, as a new position does.
KEPT = 2048


class CurrentSets:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._lock = threading.Lock()
        self._position = -1
        self._answers: dict[str, tuple[int, bytes]] = {}

    def answer(self, subject: str, freshness: Freshness) -> tuple[int, bytes]:
        """(position, JSON body) of the subject's current set, as fresh as `freshness` asks."""
        self.state.wait_until_fresh(freshness)
        kept = self._answers.get(subject)
        if kept is not None and kept[0] == self.state.position:
            return kept
        with self.state.read_model(Freshness(min_position=0)) as con:
            document = current_document(con, subject)
        found = document["position"], encode(document)
        self._keep(subject, found)
        return found

    def _keep(self, subject: str, found: tuple[int, bytes]) -> None:
        with self._lock:
            if found[0] < self._position:  # read before a newer answer was kept: already stale
                return
            if found[0] > self._position or len(self._answers) >= KEPT:
                self._position, self._answers = found[0], {}
            self._answers[subject] = found
