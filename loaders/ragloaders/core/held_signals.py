"""SIGINT and SIGTERM held while a block runs, then delivered: for a step that Ctrl-C must not cut in two (a folder's
swap and its record, a Parquet write through its sink), or a C call that would lose what a handler raises in it
(sqlite's progress handler discards it)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """Hold SIGINT and SIGTERM until the block has run (then deliver them to their own handlers); the block is given
    the list of those received so far, so a long one can stop early. Only the main thread can set handlers;
    elsewhere the block runs as it is (and the list stays empty)."""
    received: list[int] = []
    try:
        previous = {number: signal.signal(number, lambda number, frame: received.append(number))
                    for number in STOP_SIGNALS}
    except ValueError:  # not the main thread
        yield received
        return
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(received):
            signal.raise_signal(number)
