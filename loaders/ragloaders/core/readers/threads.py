"""Worker threads that are always joined: reading ahead on one thread (`iter_ahead`), mapping on several in
order (`map_ahead`)."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
USABLE_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
PARSE_THREADS = max(1, min(4, USABLE_CORES))
"""Threads parsing chunks at once (each chunk on one thread): the cores this process may use, up to 4."""


def iter_ahead(items: Iterator[T]) -> Iterator[T]:
    """`items`, each produced on a worker thread while the caller handles the one before (reading overlaps
    with the caller's work). The worker is always waited for: closing this generator leaves no thread."""
    end = object()
    with ThreadPoolExecutor(1, thread_name_prefix="ragloaders-read") as pool:
        pending = pool.submit(next, items, end)
        while (item := pending.result()) is not end:
            pending = pool.submit(next, items, end)
            yield item


def map_ahead(function: Callable[[T], R], items: Iterable[T], threads: int = PARSE_THREADS,
              stop: Callable[[], None] | None = None) -> Iterator[R]:
    """`function(item)` for each item, in order, computed on `threads` worker threads while the caller reads
    the next items and handles earlier results (at most `threads` + 1 items in flight).

    For work that mostly releases the GIL (pyarrow parsing). An error in `items` comes after the results of the
    items before it (or their own error), as it would without threads. The workers are always waited for: closing
    this generator, or an error, leaves no thread running and no work queued. `stop`, if given, is called first
    when the generator ends before every result is given (closed, Ctrl-C, an error): it makes the calls still
    running return, so that waiting for them is short."""
    pool = ThreadPoolExecutor(threads, thread_name_prefix="ragloaders-parse")
    pending: deque[Future[R]] = deque()
    iterator = iter(items)
    try:
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                break
            except Exception:
                while pending:
                    yield pending.popleft().result()
                raise
            pending.append(pool.submit(function, item))
            if len(pending) > threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        if pending and stop is not None:
            stop()
        pool.shutdown(wait=True, cancel_futures=True)
