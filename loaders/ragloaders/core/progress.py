"""One progress line while a large source file is read: bytes read of its size, with a rate.

The line is off unless switched on with `show(True)`: the command line does so when stderr is a terminal and
--quiet is not given (cli.progress_bars); `ragloaders.load` and the builders used as a library print none, so
a notebook or a log gets only what `datasets` itself prints. It counts the bytes read from the file itself (the
compressed bytes of a .bz2, not what they decompress to), is drawn at most a few times a second, and closes with
the stream. Sources under THRESHOLD_BYTES get no line: they are read before one would be worth looking at.
"""

from __future__ import annotations

import io
import os
from typing import BinaryIO

from tqdm import tqdm

THRESHOLD_BYTES = 64 << 20
"""Sources smaller than this are read without a line."""
UPDATE_BYTES = 4 << 20
"""Bytes read between two updates of the line (tqdm redraws it at most every MIN_INTERVAL seconds anyway)."""
MIN_INTERVAL = 0.5

_switch = {"shown": False}


def show(shown: bool) -> bool:
    """Switch the lines on or off for the sources opened from now on; the previous setting."""
    before, _switch["shown"] = _switch["shown"], bool(shown)
    return before


def is_shown() -> bool:
    """Whether sources opened now get a line (see `show`)."""
    return _switch["shown"]


class _Watched(io.RawIOBase):
    """A seekable binary stream whose reads advance a tqdm line to the furthest byte read of [start, end).

    The furthest byte, not the bytes returned: indexed_bzip2's threads read parts of a file more than once. Reads
    starting outside [start, end) (a zip's directory, read when it is opened) do not count."""

    def __init__(self, stream: BinaryIO, bar: tqdm, close_stream: bool, start: int):
        self.stream, self.bar, self.close_stream = stream, bar, close_stream
        self.position = stream.tell()
        self.start = self.furthest = start
        self.end = start + int(bar.total)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.stream.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.position = self.stream.seek(offset, whence)
        return self.position

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer) -> int:  # type: ignore[override]
        count = self.stream.readinto(buffer) or 0  # type: ignore[attr-defined]
        self._advance(count)
        return count

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self._advance(len(data))
        return data

    def _advance(self, count: int) -> None:
        begin, self.position = self.position, self.position + count
        if self.start <= begin < self.end and self.position > self.furthest:
            self.furthest = min(self.position, self.end)
            if self.furthest - self.start - self.bar.n >= UPDATE_BYTES:
                self.bar.update(self.furthest - self.start - self.bar.n)

    def close(self) -> None:
        if not self.closed:
            try:
                self.bar.update(self.furthest - self.start - self.bar.n)
                self.bar.close()
            finally:
                if self.close_stream:
                    self.stream.close()
        super().close()


def wanted(size: int, threshold: int | None = None) -> bool:
    """Whether a source of `size` bytes gets a line: lines are shown and it is at least `threshold` (THRESHOLD_BYTES
    by default)."""
    return is_shown() and size >= (THRESHOLD_BYTES if threshold is None else threshold)


def watched(stream: BinaryIO, *, label: str, size: int, close_stream: bool, start: int | None = None,
            threshold: int | None = None) -> BinaryIO:
    """`stream` itself, or, when a line is `wanted` for the `size` bytes to read from byte `start` (the current
    position by default), a stream reading it that draws the line `Reading <label>` on stderr; closing that one
    closes the line, and `stream` too when `close_stream`."""
    if not wanted(size, threshold):
        return stream
    bar = tqdm(total=size, desc=f"Reading {label}", unit="B", unit_scale=True, unit_divisor=1024,
               mininterval=MIN_INTERVAL, leave=False, dynamic_ncols=True)
    return _Watched(stream, bar, close_stream, stream.tell() if start is None else start)  # type: ignore[return-value]


def open_watched(path: str, *, threshold: int | None = None) -> BinaryIO:
    """The file at `path` opened for reading, with its line when it is large (see `watched`)."""
    if not wanted(os.path.getsize(path), threshold):
        return open(path, "rb")
    raw = open(path, "rb", buffering=0)  # noqa: SIM115 (closed with the result)
    try:
        size = os.fstat(raw.fileno()).st_size
        result = watched(raw, label=os.path.basename(path), size=size, close_stream=True, threshold=0)  # type: ignore[arg-type]
    except BaseException:
        raw.close()
        raise
    return io.BufferedReader(result, buffer_size=1 << 20)  # type: ignore[arg-type,return-value]
