"""Give the memory freed by a catch-up's pages back to the system before its set-based refresh."""
from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_free_memory() -> None:
    """glibc keeps freed memory in its arenas, one per thread that allocated: the read-ahead thread's
    pages, once applied and freed, would stay in the process's RSS under the refresh that follows (its
    peak at a million events) without DuckDB being able to reuse them. malloc_trim hands the free pages
    of every arena back; elsewhere than glibc it does nothing."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
