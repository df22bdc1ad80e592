"""The serve bench's paced load (infra/dev/bench_serve._paced): every thread prepares before the clock
starts, and a thread that cannot prepare stops the load with its error instead of leaving the others
waiting for it."""
from __future__ import annotations

import threading

import pytest

from infra.dev.bench_serve import _paced


def test_given_every_thread_prepared_when_paced_then_each_action_runs_once_after_all_prepared() -> None:
    prepared: list[int] = []
    ran: list[tuple[int, int]] = []
    lock = threading.Lock()

    def prepare() -> None:
        with lock:
            prepared.append(threading.get_ident())

    def action(index: int) -> None:
        with lock:
            ran.append((index, len(prepared)))

    achieved = _paced(200, 0.1, 4, action, prepare)
    assert sorted(index for index, _ in ran) == list(range(20))
    assert {seen for _, seen in ran} == {4}  # no action before the last thread had prepared
    assert achieved > 0


def test_given_a_thread_that_cannot_prepare_when_paced_then_its_error_ends_the_load_and_nothing_runs() -> None:
    calls: list[int] = []
    tries, lock = [], threading.Lock()

    def prepare() -> None:
        with lock:
            tries.append(1)
            second = len(tries) == 2
        if second:
            raise ConnectionError("the server refused the connection")

    finished: list[bool] = []

    def load() -> None:
        with pytest.raises(ConnectionError, match="refused the connection"):
            _paced(200, 0.1, 4, calls.append, prepare)
        finished.append(True)
    runner = threading.Thread(target=load)
    runner.start()
    runner.join(10)
    assert finished == [True], "the load waited for a thread that had failed"
    assert calls == []
