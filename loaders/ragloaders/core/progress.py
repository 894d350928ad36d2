"""One progress line while a large source file is read: bytes read of its size, with a rate.

The line is off unless switched on with `show(True)`: the command line does so when stderr is a terminal and
--quiet is not given (cli.progress_bars); `ragloaders.load` and the builders used as a library never print one, so
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
    """A seekable binary stream whose reads advance a tqdm line to the furthest byte read.

    The furthest byte, not the bytes returned: indexed_bzip2's threads read parts of a file more than once."""

    def __init__(self, stream: BinaryIO, bar: tqdm, close_stream: bool):
        self.stream, self.bar, self.close_stream = stream, bar, close_stream
        self.start = self.position = self.furthest = stream.tell()

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
        self.position += count
        if self.position > self.furthest:
            self.furthest = self.position
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


def watched(stream: BinaryIO, *, name: str, size: int, close_stream: bool,
            threshold: int | None = None) -> BinaryIO:
    """`stream` itself, or, when lines are shown and `size` (the bytes left to read) is at least `threshold`
    (THRESHOLD_BYTES by default), a stream reading it that draws `name`'s line on stderr; closing that one closes
    the line, and `stream` too when `close_stream`. Read the returned stream from `stream`'s current position."""
    if not is_shown() or size < (THRESHOLD_BYTES if threshold is None else threshold):
        return stream
    bar = tqdm(total=size, desc=f"Reading {os.path.basename(name)}", unit="B", unit_scale=True, unit_divisor=1024,
               mininterval=MIN_INTERVAL, leave=False, dynamic_ncols=True)
    return _Watched(stream, bar, close_stream)  # type: ignore[return-value]


def open_watched(path: str, *, threshold: int | None = None) -> BinaryIO:
    """The file at `path` opened for reading, with its line when it is large (see `watched`)."""
    stream = open(path, "rb")  # noqa: SIM115 (returned open)
    try:
        size = os.fstat(stream.fileno()).st_size
    except BaseException:
        stream.close()
        raise
    result = watched(stream, name=path, size=size, close_stream=True, threshold=threshold)
    if result is stream:
        return stream
    return io.BufferedReader(result, buffer_size=1 << 20)  # type: ignore[arg-type,return-value]
