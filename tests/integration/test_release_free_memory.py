"""projections/heap.py: the memory a catch-up's read-ahead thread freed goes back to the system when asked,
instead of staying in the process's resident set under the refresh that follows.

Linux with glibc only (elsewhere release_free_memory does nothing, and this story is skipped)."""
from __future__ import annotations

import os
import platform
import threading

import pytest

from projections.heap import release_free_memory

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc" or not os.path.exists("/proc/self/statm"),
                                reason="malloc_trim is glibc's; the resident set is read from /proc")

BLOCK = 16 * 1024  # below glibc's mmap threshold: served from the thread's arena, as a page's rows are
BLOCKS = 6_000  # ≈ 94 MiB
KEEP_EVERY = 64  # one block kept in 64: the arena cannot shrink by itself, the free pages lie between them


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _allocate_and_free_in_a_thread(kept: list[bytes]) -> None:
    """As the read-ahead thread does: allocate in the thread's own arena, and free most of it."""
    def work() -> None:
        blocks = [os.urandom(1) * BLOCK for _ in range(BLOCKS)]  # bytes(BLOCK) might come from calloc's zeroed pages
        kept.extend(blocks[::KEEP_EVERY])
        del blocks
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


def test_memory_freed_by_another_thread_is_given_back_when_released() -> None:
    # given a thread that allocated ≈ 94 MiB and freed all but one block in 64
    kept: list[bytes] = []
    before = _resident_bytes()
    _allocate_and_free_in_a_thread(kept)
    freed_but_held = _resident_bytes() - before
    assert freed_but_held > BLOCK * BLOCKS // 2, "the freed blocks stay resident until released"
    # when the free memory is released
    release_free_memory()
    # then most of what was freed has left the resident set; what is still used stays
    assert _resident_bytes() - before < freed_but_held // 4
    assert len(kept) == BLOCKS // KEEP_EVERY + 1 and all(len(block) == BLOCK for block in kept)
