"""A build writes one config's Parquet on a thread of its own while the main thread prepares the next config.

Writing a config's files (zstd with content-defined chunking) runs on one core, and so does much of preparing a
config; the two in turn left a core idle. One write at a time runs on the thread; a config prepared while it runs is
written by the main thread beside it (two writes at most), and a config that reads the one being written waits for
it unless its rows were all written ahead (build.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class WriteStopped(Exception):
    """Raised inside a write that `WriteBehind.abandon` stopped (never seen outside this module's caller)."""


class WriteBehind(Generic[T]):
    """Runs `write(stop)` for one config at a time on a thread of its own. `finish()` waits for it and gives its
    result, or raises what it raised; `abandon()` (on an error or Ctrl-C in the main thread) sets `stop`, which the
    write checks between row groups, and waits for the thread, so nothing is written after the build has failed."""

    def __init__(self) -> None:
        self.config: str | None = None
        """The config being written (None when no write is under way)."""
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None

    @property
    def running(self) -> bool:
        """Whether a write is still under way on the thread (one that has ended waits for `finish`)."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, config: str, write: Callable[[threading.Event], T]) -> None:
        """Start writing `config` (the previous write must be finished)."""
        if self._thread is not None:
            raise RuntimeError(f"the write of {self.config} is not finished")
        self.config, self._result, self._error = config, None, None

        def run() -> None:
            try:
                self._result = write(self._stop)
            except BaseException as e:  # handed to the main thread by finish()
                self._error = e

        self._thread = threading.Thread(target=run, name=f"ragloaders-write-{config}", daemon=True)
        self._thread.start()

    def finish(self) -> tuple[str, T] | None:
        """(config, result) of the write under way once it is done (None when there is none); its error if it
        failed, raised here with its own traceback."""
        if self._thread is None:
            return None
        self._thread.join()
        self._thread = None
        config, result, error = self.config, self._result, self._error
        self.config, self._result, self._error = None, None, None
        if error is not None:
            raise error
        return config, result  # type: ignore[return-value]

    def abandon(self) -> None:
        """Stop the write under way at its next row group and wait for it; its result or error is dropped."""
        if self._thread is None:
            return
        self._stop.set()
        while True:
            try:
                self._thread.join()
                break
            except KeyboardInterrupt:  # a second Ctrl-C: the write still stops at its next row group
                continue
        self._thread = None
        self.config, self._result, self._error = None, None, None
