"""Give memory that a finished phase freed back to the operating system.

Freed memory is not returned by itself: Arrow's allocator (mimalloc) keeps the segments it freed for reuse, and
glibc's malloc keeps freed blocks in its arenas (one per thread that allocated, e.g. indexed_bzip2's decompression
threads, plus Python's large strings). Measured on half of a generated CRAG task 1&2 file, ~150 MB of anonymous
memory was held that way after `records` was prepared, and more after each Parquet split; every later phase of
`ragloaders build` allocated on top of it, so the process's peak RSS was the sum of phases rather than the largest.
Releasing it between phases costs milliseconds.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import pyarrow as pa


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS, Windows).

    Looked up among the symbols already loaded in the process (the C library Python itself uses): finding the
    library by name (`ctypes.util.find_library`) runs `ldconfig` in a subprocess, 3-4 ms on every build."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # TypeError: Windows has no CDLL(None)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_freed_memory() -> None:
    """Return to the OS the memory Arrow's default pool and the C allocator hold freed (nothing is freed that is
    in use); call it when a large phase has ended."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
