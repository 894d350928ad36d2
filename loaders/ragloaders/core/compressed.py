"""Readers for compressed sources: numbered parts joined in order, bzip2, JSON lines, tar members.

Nothing here writes to disk. Every failure of the data (a missing part, a truncated or corrupt
bzip2 stream, a hostile or cut tar) raises SourceError naming the file; a damaged source never
yields fewer rows silently.
"""

from __future__ import annotations

import atexit
import bz2
import io
import math
import os
import queue
import re
import tarfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath
from typing import BinaryIO

import indexed_bzip2

from . import progress
from .errors import SourceError
from .preview import preview

CHUNK_BYTES = 1 << 20
READ_AHEAD_CHUNKS = 32
"""How many CHUNK_BYTES pieces of decompressed bzip2 a reader thread keeps ready ahead of the caller (_ReadAhead)."""
MAX_MEMBER_BYTES = 1 << 37
"""Default limit on one tar member (128 GiB): far above any CRAG shard, far below a tar bomb's claims."""

_PART = re.compile(r"^(?P<stem>.*)\.part(?P<number>\d+)$")
_BZ2_HEADER = re.compile(rb"BZh[1-9]")
_BZ2_END_OF_STREAM = 0x177245385090
"""The 48-bit marker that closes every bzip2 stream; it is followed by a 32-bit CRC and 0-7 pad bits."""


def order_parts(paths: Sequence[str]) -> list[str]:
    """Sort `<stem>.part<N>` files by N; numbering must start at 0 or 1 and have no gap."""
    numbered: dict[int, str] = {}
    stems = set()
    for path in paths:
        match = _PART.match(str(path))
        if match is None:
            raise SourceError(str(path), "not a numbered part (expected a name ending in .part<N>)")
        number = int(match["number"])
        if number in numbered:
            raise SourceError(str(path), f"part {number} given twice (also {numbered[number]})")
        numbered[number] = str(path)
        stems.add(match["stem"])
    if not numbered:
        raise ValueError("no parts given")
    if len(stems) > 1:
        raise SourceError(os.path.dirname(str(paths[0])) or ".", f"parts of different files mixed: {sorted(stems)}")
    stem, first, last = stems.pop(), min(numbered), max(numbered)
    if first > 1:
        message = f"missing part (parts are numbered from 0 or 1; the first found is part{first})"
        raise SourceError(f"{stem}.part1", message)
    for number in range(first, last + 1):
        if number not in numbered:
            raise SourceError(f"{stem}.part{number}", f"missing part (found part{first}..part{last} with a gap)")
    return [numbered[number] for number in range(first, last + 1)]


class _JoinedFiles(io.RawIOBase):
    """A seekable read-only view of several files as one byte sequence."""

    def __init__(self, paths: Sequence[str]):
        self.paths = [str(path) for path in paths]
        self.name = self.paths[0] if len(self.paths) == 1 else f"{self.paths[0]} + {len(self.paths) - 1} more"
        self.starts = [0]
        for path in self.paths:
            self.starts.append(self.starts[-1] + os.path.getsize(path))
        self.position = 0
        self.index = -1
        self.file: BinaryIO | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.starts[-1]}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self.position = base + offset
        return self.position

    def readinto(self, buffer) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        while self.position < self.starts[-1]:
            index = next(i for i in range(len(self.paths)) if self.position < self.starts[i + 1])
            if index != self.index:
                self._close_file()
                self.file, self.index = open(self.paths[index], "rb"), index  # noqa: SIM115 (closed by close())
            assert self.file is not None
            self.file.seek(self.position - self.starts[index])
            count = self.file.readinto(view[: self.starts[index + 1] - self.position])
            if not count:
                raise SourceError(self.paths[index], "file shrank while being read")
            self.position += count
            return count
        return 0

    def _close_file(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file, self.index = None, -1

    def close(self) -> None:
        self._close_file()
        super().close()


def open_joined(paths: Sequence[str]) -> BinaryIO:
    """The byte concatenation of `paths`, in the order given, as one seekable binary stream."""
    if not paths:
        raise ValueError("no files to join")
    return io.BufferedReader(_JoinedFiles(paths), buffer_size=CHUNK_BYTES)  # type: ignore[return-value]


def _check_bz2_frame(source: BinaryIO, name: str) -> int:
    """Check the header and the end-of-stream marker of a seekable bzip2 file (indexed_bzip2 may not); its size
    from the current position."""
    start = source.tell()
    header = source.read(4)
    if not _BZ2_HEADER.fullmatch(header):
        raise SourceError(name, f"not a bzip2 file (starts with {preview(header)}, expected b'BZh1'..b'BZh9')")
    size = source.seek(0, io.SEEK_END) - start
    source.seek(max(start, start + size - 11))
    tail = int.from_bytes(source.read(11), "big")
    source.seek(start)
    if size < 14 or not any((tail >> (32 + pad)) & (2**48 - 1) == _BZ2_END_OF_STREAM for pad in range(8)):
        raise SourceError(name, _unended_message(source, start, size))
    return size


_TAIL_SEARCHED = 1 << 20
"""Bytes at the end of a bzip2 file that does not end with an end-of-stream marker searched for the last one."""


def _unended_message(source: BinaryIO, start: int, size: int) -> str:
    """Why a seekable bzip2 file of `size` bytes from `start` does not end with an end-of-stream marker (the error
    path of _check_bz2_frame): the last marker in its last _TAIL_SEARCHED bytes tells bytes after a whole stream
    that are not a stream (zeros, text: what iter_bz2_streams names by offset) from a stream cut short."""
    window = min(size, _TAIL_SEARCHED)
    source.seek(start + size - window)
    tail = source.read(window)
    source.seek(start)
    end = _after_last_end_of_stream(tail)
    if end is not None and end < len(tail):
        offset = size - window + end
        if not _BZ2_HEADER.fullmatch(tail[end : end + 4]):
            return _not_a_stream_message(offset, tail[end : end + 8])
        return (f"truncated bzip2 file: the stream starting at offset {offset:,} ends after {size - offset:,} bytes "
                "without its end-of-stream marker")
    unless = (f" (nor do its last {window >> 20} MiB hold one; unless more than that of other bytes follow its last "
              "stream)") if window < size else ""  # (a marker further back is not searched for)
    return f"truncated bzip2 file: it does not end with the bzip2 end-of-stream marker{unless}"


def _after_last_end_of_stream(data: bytes) -> int | None:
    """The index in `data` just after the last end-of-stream marker, its CRC and its pad bits (where the next stream
    would start), or None if `data` holds no marker."""
    last = -1
    for shift in range(8):  # the marker starting `shift` bits into a byte
        size = (shift + 48 + 7) // 8
        right = size * 8 - shift - 48
        pattern = (_BZ2_END_OF_STREAM << right).to_bytes(size, "big")
        first, stop = (1 if shift else 0), (size if right == 0 else size - 1)
        known = pattern[first:stop]  # the bytes the marker fills whole
        before = len(data)
        while (found := data.rfind(known, 0, before)) >= 0:
            at = found - first
            if at >= 0 and at + size <= len(data) and (
                    int.from_bytes(data[at : at + size], "big") >> right) & (2**48 - 1) == _BZ2_END_OF_STREAM:
                last = max(last, at * 8 + shift)
                break
            before = found + len(known) - 1
    return None if last < 0 else (last + 48 + 32 + 7) // 8


def _not_a_stream_message(offset: int, head: bytes) -> str:
    what = "at its start" if offset == 0 else "after the bzip2 stream that ends there"
    return (f"bytes at offset {offset:,} are not a bzip2 stream ({preview(head[:8])} {what}): "
            "garbage or a damaged stream header, which a decoder would skip with all that follows")


def iter_bz2_streams(source: BinaryIO, name: str, *, piece_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The decompressed bytes of every bzip2 stream of `source`, in pieces of at most `piece_bytes`.

    Unlike Python's bz2 module, which stops silently at anything after a stream that is not a stream
    header, every byte must belong to a stream: garbage, a damaged header, trailing data or a cut stream
    raises SourceError naming `name` and the byte offset (in the compressed file) where it starts."""
    offset = 0
    """Compressed bytes before the current stream."""
    data = b""
    while True:
        while len(data) < 4 and (more := source.read(CHUNK_BYTES)):
            data += more
        if not data:
            return
        if not _BZ2_HEADER.fullmatch(data[:4]):
            raise SourceError(name, _not_a_stream_message(offset, data[:8]))
        decompressor, fed = bz2.BZ2Decompressor(), 0
        while not decompressor.eof:
            given = b""
            if decompressor.needs_input:
                given, data = data or source.read(CHUNK_BYTES), b""
                if not given:
                    raise SourceError(name, f"truncated bzip2 stream: the stream starting at offset {offset:,} "
                                      f"ends after {fed:,} bytes without its end-of-stream marker")
                fed += len(given)
            try:
                piece = decompressor.decompress(given, max_length=piece_bytes)
            except OSError as error:
                message = f"corrupt bzip2 data in the stream starting at offset {offset:,}: {error}"
                raise SourceError(name, message) from None
            if piece:
                yield piece
        data = decompressor.unused_data
        offset += fed - len(data)


class _Bz2StreamsReader(io.RawIOBase):
    """iter_bz2_streams as a raw stream (Python's bz2, for a source indexed_bzip2 cannot open); closes `owned`."""

    def __init__(self, source: BinaryIO, name: str, owned: BinaryIO | None):
        self.pieces, self.rest, self.owned = iter_bz2_streams(source, name), b"", owned

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        while not self.rest:
            self.rest = next(self.pieces, b"")
            if not self.rest:
                return 0
        count = min(len(buffer), len(self.rest))
        buffer[:count] = self.rest[:count]
        self.rest = self.rest[count:]
        return count

    def close(self) -> None:
        if not self.closed and self.owned is not None:
            self.owned.close()
        super().close()


_OPEN_READERS: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_open_readers() -> None:
    # indexed_bzip2's threads abort the interpreter if a reader is still open when it finalizes
    # (a stream stopped early and never closed): close them while Python is still whole.
    for reader in list(_OPEN_READERS):
        reader.close()


class _Decompressed(io.RawIOBase):
    """Reads a decompressor, turning its errors into SourceError; closes what it owns.

    At the end of an indexed_bzip2 reader, the compressed bytes it consumed must reach the end of the
    file: if not (it stopped at garbage or a damaged header between streams, or ignored trailing data),
    the file is scanned again with iter_bz2_streams, which names the offset."""

    def __init__(self, reader: BinaryIO, name: str, owned: BinaryIO | None, source: BinaryIO | None = None,
                 start: int = 0, size: int = 0):
        self.reader, self.name, self.owned, self.produced = reader, name, owned, 0
        self.source, self.start, self.size = source, start, size
        _OPEN_READERS.add(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        try:
            count = self.reader.readinto(buffer)  # type: ignore[attr-defined]
        except (RuntimeError, ValueError, EOFError, OSError) as error:
            if isinstance(error, SourceError):
                raise
            raise SourceError(
                self.name, f"corrupt or truncated bzip2 data after {self.produced:,} decompressed bytes: {error}; "
                "the file is damaged: download it again"
            ) from error
        self.produced += count
        if count == 0 and len(buffer) and self.source is not None:
            self._check_consumed()
        return count

    def _check_consumed(self) -> None:
        source, self.source = self.source, None
        reader = self.reader
        consumed = max([reader.tell_compressed(), *reader.block_offsets()])  # type: ignore[attr-defined]
        if math.ceil(consumed / 8) == self.size:
            return
        source.seek(self.start)  # type: ignore[union-attr]
        for _ in iter_bz2_streams(source, self.name):  # type: ignore[arg-type]
            pass

    def close(self) -> None:
        if not self.closed:
            try:
                self.reader.close()
            finally:
                if self.owned is not None:
                    self.owned.close()
        super().close()


def open_bz2(source: str | BinaryIO, *, name: str, threads: int | None = None) -> BinaryIO:
    """Decompressed bzip2 (single or multi-stream), with indexed_bzip2 when the source is seekable.

    `threads` defaults to min(2, cpu count); with two or more, a thread of its own keeps up to
    READ_AHEAD_CHUNKS MiB decompressed ahead of the caller (_ReadAhead). Python's bz2 (iter_bz2_streams) is used
    only for a source that indexed_bzip2 cannot open (not seekable). Either way, data between or after the streams that
    is not a stream (which decoders skip with a warning at most) raises SourceError naming the offset.
    Close the result (or use `with`); readers left open are closed at interpreter exit.
    """
    threads = threads or min(2, os.cpu_count() or 1)
    owned = open(source, "rb") if isinstance(source, (str, os.PathLike)) else None  # noqa: SIM115
    fileobj: BinaryIO = owned if owned is not None else source  # type: ignore[assignment]
    try:
        if not fileobj.seekable():
            return io.BufferedReader(_Bz2StreamsReader(fileobj, name, owned), CHUNK_BYTES)  # type: ignore[return-value]
        start = fileobj.tell()
        size = _check_bz2_frame(fileobj, name)
        watched = progress.watched(fileobj, label=os.path.basename(name), size=size, close_stream=owned is not None)
        if watched is not fileobj:  # closing it closes the line (and the file when it is ours)
            fileobj = owned = watched
        try:
            reader: BinaryIO = indexed_bzip2.open(fileobj, parallelization=threads)
        except (io.UnsupportedOperation, AttributeError, TypeError):
            return io.BufferedReader(_Bz2StreamsReader(fileobj, name, owned), CHUNK_BYTES)  # type: ignore[return-value]
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    decompressed: io.RawIOBase = _Decompressed(reader, name, owned, fileobj, start, size)
    if threads > 1:
        decompressed = _ReadAhead(decompressed)
    return io.BufferedReader(decompressed, buffer_size=CHUNK_BYTES)  # type: ignore[return-value]


class _ReadAhead(io.RawIOBase):
    """Reads `raw` on a thread of its own, up to READ_AHEAD_CHUNKS pieces of CHUNK_BYTES ahead of the caller.

    indexed_bzip2 decodes only a couple of blocks past the last read: while the caller parses what it read (holding
    the GIL), its decoding threads stop once those are done, and the caller then waits for the next block. Asked
    for the next pieces all the time, they keep decoding while the caller parses (the reads release the GIL). An
    error of `raw` reaches the caller after every byte read before it, and again at every later read, as without
    the thread. `close` stops the thread (after at most the read under way) and closes `raw`."""

    def __init__(self, raw: io.RawIOBase):
        self.raw, self.pieces = raw, queue.Queue(READ_AHEAD_CHUNKS)  # type: queue.Queue
        self.current, self.ended = memoryview(b""), False
        self.error: BaseException | None = None
        self.stop = threading.Event()
        _OPEN_READERS.discard(raw)  # closed through this reader: its thread first, then `raw`
        _OPEN_READERS.add(self)
        self.thread = threading.Thread(target=self._read, name="ragloaders-bz2-read", daemon=True)
        self.thread.start()

    def readable(self) -> bool:
        return True

    def _read(self) -> None:
        try:
            while not self.stop.is_set():
                piece = self.raw.read(CHUNK_BYTES)
                self._put(piece)
                if not piece:
                    return
        except BaseException as error:  # handed to the caller, raised by its next read
            self._put(error)

    def _put(self, item: bytes | BaseException) -> None:
        while not self.stop.is_set():
            try:
                self.pieces.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if not self.current:
            if self.error is not None:
                raise self.error
            if self.ended:
                return 0
            item = self.pieces.get()
            if isinstance(item, BaseException):
                self.error = item
                raise item
            if not item:
                self.ended = True
                return 0
            self.current = memoryview(item)
        count = min(len(buffer), len(self.current))
        buffer[:count] = self.current[:count]
        self.current = self.current[count:]
        return count

    def close(self) -> None:
        if not self.closed:
            self.stop.set()
            self.thread.join()
            self.raw.close()
        super().close()


MAX_TAR_PADDING = 1 << 20
"""Bytes a tar may hold from its end-of-archive marker on: the marker and the zeros that fill its last record (10 KiB
by default, 1 MiB with tar's largest blocking factor, 2,048). Any more is refused unread (zeros or not: a few bytes
of bzip2 decompress to gigabytes of them)."""


class _CountingReader(io.RawIOBase):
    """Counts the bytes read from a stream, and where the last byte that is not zero ended (to tell a tar's end
    marker from a cut, and from data after it)."""

    def __init__(self, stream: BinaryIO):
        self.stream, self.count, self.data_end = stream, 0, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        count = self.stream.readinto(buffer) or 0  # type: ignore[attr-defined]
        view = memoryview(buffer).cast("B")
        end = count
        while end > 0:  # (from the chunk's end back: a chunk of data ends with data, so this reads a few bytes)
            start = max(0, end - 65_536)
            kept = len(bytes(view[start:end]).rstrip(b"\0"))
            if kept:
                self.data_end = self.count + start + kept
                break
            end = start
        self.count += count
        return count


class _MemberReader(io.RawIOBase):
    """A tar member's content, its truncation reported as SourceError."""

    def __init__(self, content: BinaryIO, name: str):
        self.content, self.name = content, name

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        try:
            return self.content.readinto(buffer)  # type: ignore[attr-defined]
        except tarfile.TarError as error:
            raise SourceError(self.name, f"truncated member: {error}") from error


def _refuse_member(member: tarfile.TarInfo, max_member_bytes: int) -> str | None:
    """Why a tar member may not be read, or None if it is a plain file within the limit."""
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts:
        return "path outside the archive (absolute or with '..')"
    if member.issym() or member.islnk():
        return f"link to {preview(member.linkname)} (links are not allowed)"
    if not member.isfile():
        return "not a regular file (device, fifo or other special member)"
    if member.size > max_member_bytes:
        return f"{member.size:,} bytes, over the limit of {max_member_bytes:,}"
    return None


def iter_tar_members(
    stream: BinaryIO, *, name: str, max_member_bytes: int = MAX_MEMBER_BYTES
) -> Iterator[tuple[str, BinaryIO]]:
    """(member name, file object) for each regular file of a tar read as a stream, in archive order.

    Read each member before asking for the next. Directories are skipped; links, special files,
    paths leaving the archive and members over `max_member_bytes` raise SourceError.
    """
    counted = _CountingReader(stream)
    current = None
    try:
        with tarfile.open(fileobj=counted, mode="r|", bufsize=CHUNK_BYTES) as archive:  # type: ignore[call-overload]
            for member in archive:
                current = member.name
                if member.isdir():
                    continue
                reason = _refuse_member(member, max_member_bytes)
                if reason is not None:
                    raise SourceError(name, f"tar member {preview(member.name)}: {reason}")
                content = archive.extractfile(member)
                assert content is not None
                reader = _MemberReader(content, f"{name}: tar member {preview(member.name)}")
                yield member.name, io.BufferedReader(reader, buffer_size=CHUNK_BYTES)  # type: ignore[misc]
            if counted.count < archive.offset + tarfile.BLOCKSIZE:
                raise SourceError(name, f"truncated tar: no end-of-archive marker after member {preview(current)}")
            end = archive.offset + MAX_TAR_PADDING  # what may follow the marker: a tar's zero padding, no more
            while counted.count < end and counted.read(min(CHUNK_BYTES, end - counted.count)):
                pass
            if counted.data_end > archive.offset or counted.count > end or counted.read(1):
                raise SourceError(name, f"data after the tar's end-of-archive marker (byte {archive.offset:,} of the "
                                        f"uncompressed stream, after member {preview(current)}): another archive "
                                        "joined to it, or a damaged end; none of it would be read")
    except tarfile.TarError as error:
        where = f" after member {preview(current)}" if current else ""
        raise SourceError(name, f"bad or truncated tar{where}: {error}") from error
