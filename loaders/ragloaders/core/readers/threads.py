"""Worker threads that are always joined: reading ahead on one thread (`iter_ahead`), mapping on several in
order (`map_ahead`), a second pass fed item by item on one (`FeedThread`)."""

from __future__ import annotations

import os
import queue
import threading
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


def _first_result(pending: deque[Future[R]]) -> R:
    """The result of the first call of `pending`, taken off once it has one: a call still running stays in `pending`
    while it is waited for, so that an interruption of the wait (Ctrl-C) still finds it to stop."""
    result = pending[0].result()
    pending.popleft()
    return result


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
                    yield _first_result(pending)
                raise
            pending.append(pool.submit(function, item))
            if len(pending) > threads:
                yield _first_result(pending)
        while pending:
            yield _first_result(pending)
    finally:
        if pending and stop is not None:
            stop()
        pool.shutdown(wait=True, cancel_futures=True)


class FeedStopped(BaseException):
    """Raised inside a FeedThread's `consume` by the items once `stop` is called: not an Exception, so that no
    `except Exception` in its way waits for work still under way before it ends."""


_END = object()
_STOP = object()


class FeedThread:
    """`consume(items, on_stop)` run on a thread of its own over the items the caller `put`s, in order, at most
    `ahead` of them waiting: a second pass made during the caller's own, item by item. `finish()` ends the items and
    waits for `consume` to return; `stop()` ends it early (the items raise FeedStopped, and every function `consume`
    gave to `on_stop` is called, e.g. to kill worker processes it waits for). An error in `consume` is raised in the
    caller by a `put` that follows it, or by `finish`; the thread has ended when either raises, and when `finish` or
    `stop` returns."""

    def __init__(self, consume: Callable[[Iterator[T], Callable[[Callable[[], None]], None]], None], ahead: int = 16):
        self.queue: queue.Queue = queue.Queue(ahead)
        self.error: BaseException | None = None
        self.stoppers: list[Callable[[], None]] = []
        self.thread = threading.Thread(target=self._run, args=(consume,), name="ragloaders-feed", daemon=True)
        self.thread.start()

    def _items(self) -> Iterator[T]:
        while (item := self.queue.get()) is not _END:
            if item is _STOP:
                raise FeedStopped
            yield item

    def _run(self, consume: Callable[[Iterator[T], Callable[[Callable[[], None]], None]], None]) -> None:
        try:
            consume(self._items(), self.stoppers.append)
        except BaseException as e:  # raised in the caller (FeedStopped: the caller asked for it)
            self.error = e
        self._drain()  # a caller blocked on a full queue must not wait for this thread

    def _drain(self) -> None:
        """Take every item still waiting off the queue."""
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                return

    def _put(self, item: object) -> None:
        """Queue `item`, waiting while the queue is full; given up once `consume` has failed or the thread ended."""
        while self.thread.is_alive() and self.error is None:
            try:
                self.queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _raise_error(self) -> None:
        if self.error is not None and not isinstance(self.error, FeedStopped):
            error, self.error = self.error, FeedStopped()
            raise error

    def put(self, item: T) -> None:
        """Give `consume` the next item (waiting while `ahead` items wait); the error `consume` ended with, if it has
        (RuntimeError if it returned, or was stopped, before its items ended)."""
        self._put(item)
        if self.error is not None or not self.thread.is_alive():
            self.thread.join()
            self._raise_error()
            raise RuntimeError("the feed's consume ended before its items did")

    def finish(self) -> None:
        """End the items and wait for `consume` to return; its error, if it ended with one."""
        self._put(_END)
        self.thread.join()
        self._raise_error()

    def stop(self) -> None:
        """End `consume` early and wait for the thread (its error, if any, is dropped: the caller is ending)."""
        self._drain()
        for stopper in list(self.stoppers):
            stopper()
        self._put(_STOP)
        self.thread.join()
