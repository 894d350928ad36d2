"""Lines of a byte stream: one at a time (`iter_lines`) or in chunks of whole lines read straight into reused
buffers (`iter_chunks_of_lines`), with every line bounded by MAX_LINE_BYTES and a UTF-8 BOM skipped at the start
only when asked."""

from __future__ import annotations

import codecs
from collections import deque
from collections.abc import Iterator
from typing import BinaryIO

import stringzilla as sz

from ..errors import SourceError
from .strict_json import JSON_WHITESPACE

BLOCK_BYTES = 1 << 20
"""Unit of reading: a buffered reader's buffer, pyarrow's CSV parser block."""
CHUNK_BLOCKS = 2
"""A chunk of JSON lines, parsed on one thread as one pyarrow block, is CHUNK_BLOCKS * BLOCK_BYTES: the chunks in
flight stay in the processor's cache (measured: 8 MB chunks made the BEIR build ~15 % slower, 1 MB ones ~20 % slower,
their Python work per chunk being doubled)."""


MAX_LINE_BYTES = 512 << 20
"""Longest line read: far above any benchmark's (CRAG's reach several MB). A line is held several times over while it
is parsed (a 100 MB JSONL line peaked at 8x its size, a qrels line with a 50 MB id at 15x), so one at this bound may
need 4-8 GB: where memory runs out first, the reader says so naming the file and line (`out_of_memory`)."""


def out_of_memory(name: str, line: int) -> SourceError:
    """The SourceError for memory run out while the lines of file `name` from line `line` on were parsed."""
    return SourceError(name, f"memory ran out parsing the lines from here: a line may be up to {MAX_LINE_BYTES:,} "
                             "bytes long and is held several times over while parsed (see MAX_LINE_BYTES)", line=line)


def iter_lines(stream: BinaryIO, name: str = "<stream>", first: int = 1, *, skip_bom: bool = False,
               skip_blank: bool = False) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its line end) for every line, numbered from `first`; CRLF tolerated.
    `skip_bom` drops a UTF-8 BOM at the very start (of a file); `skip_blank` leaves out lines of JSON whitespace
    alone (counted all the same), a run of them skipped in the stream's buffer at once (a line at a time, a
    decompressed flood of line ends went at 4 MB a second).

    A line longer than MAX_LINE_BYTES raises SourceError instead of filling memory (a decompression bomb
    of one endless line), and so does memory run out reading one (`out_of_memory`)."""
    number = first - 1
    peek = getattr(stream, "peek", None) if skip_blank else None
    while True:
        try:
            line = stream.readline(MAX_LINE_BYTES + 1)
        except MemoryError:
            raise out_of_memory(name, number + 1) from None
        if not line:
            break
        number += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise SourceError(name, f"line longer than {MAX_LINE_BYTES:,} bytes (MAX_LINE_BYTES)", line=number)
        if skip_bom and number == first:
            line = line.removeprefix(UTF8_BOM)
        if skip_blank and not line.strip(JSON_WHITESPACE):
            while peek is not None and (ahead := peek(BLOCK_BYTES)):  # the blank lines after it, from the buffer
                run = len(ahead) - len(ahead.lstrip(JSON_WHITESPACE))
                whole = ahead.rfind(b"\n", 0, run) + 1  # (up to a line end: a line's own leading spaces stay)
                if not whole:
                    break
                number += ahead.count(b"\n", 0, whole)
                stream.read(whole)
                if run < len(ahead):
                    break
            continue
        yield number, line.rstrip(b"\r\n")


UTF8_BOM = b"\xef\xbb\xbf"


def first_invalid_utf8(stream: BinaryIO) -> tuple[int, int, UnicodeDecodeError] | None:
    """(byte offset in `stream`, line number there, the decoder's error) of the first bytes that are not UTF-8, or
    None; read a block at a time (a text-mode reader's UnicodeDecodeError counts from its last read, not the file)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = newlines = 0
    while True:
        block = stream.read(BLOCK_BYTES)
        try:
            decoder.decode(block, final=not block)
        except UnicodeDecodeError as error:
            at = offset + error.start - (len(error.object) - len(block))  # the decoder holds a cut character back
            return at, newlines + block.count(b"\n", 0, max(0, at - offset)) + 1, error
        if not block:
            return None
        offset, newlines = offset + len(block), newlines + block.count(b"\n")


class LineTooLong(Exception):
    """A line longer than MAX_LINE_BYTES starts at byte `offset` of the stream, after `newlines` line ends of the
    chunk being read."""

    def __init__(self, offset: int, newlines: int):
        super().__init__(f"line longer than {MAX_LINE_BYTES:,} bytes (MAX_LINE_BYTES)")
        self.offset, self.newlines = offset, newlines


def fill(stream: BinaryIO, view: memoryview) -> int:
    """Read into `view` until it is full or the stream ends; the number of bytes read."""
    filled = 0
    while filled < len(view) and (count := stream.readinto(view[filled:])):
        filled += count
    return filled


def append(stream: BinaryIO, buffer: bytearray, count: int) -> int:
    """Read up to `count` more bytes onto the end of `buffer`, a block at a time; the number read.

    The bytearray is resized in place (a large one by the allocator's remapping), so growing a long line's buffer
    never holds it twice."""
    start = len(buffer)
    while (missing := start + count - len(buffer)) > 0 and (block := stream.read(min(missing, BLOCK_BYTES))):
        buffer += block
    return len(buffer) - start


def iter_chunks_of_lines(
    stream: BinaryIO, *, skip_bom: bool = False, spare: deque[bytearray] | None = None
) -> Iterator[memoryview]:
    """Consecutive chunks of whole lines of about CHUNK_BLOCKS * BLOCK_BYTES, each read straight into a buffer
    (only a chunk's incomplete last line is copied, to the next one), as a view of that buffer.

    Every chunk but the last ends with a newline. `skip_bom` drops a UTF-8 BOM at the very start. A line
    longer than MAX_LINE_BYTES raises LineTooLong once MAX_LINE_BYTES + 1 bytes of it are buffered, instead of
    filling memory.

    A caller done with a chunk may append its buffer (`chunk.obj`) to `spare`: it is then read into again
    instead of a fresh one, which would cost its zeroing and a page fault every 4 KB. Without `spare`,
    every chunk keeps its own buffer."""
    size = min(CHUNK_BLOCKS * BLOCK_BYTES, MAX_LINE_BYTES)
    carry, offset = b"", 0  # offset: the stream position where `carry`, the start of a line, begins
    if skip_bom and (carry := stream.read(len(UTF8_BOM))) == UTF8_BOM:
        carry, offset = b"", len(UTF8_BOM)
    while True:
        if isinstance(carry, bytearray):  # the last buffer held one unfinished line: it grows in place
            buffer, carry = carry, b""
            room = min(2 * len(buffer), MAX_LINE_BYTES + 1)
            filled = len(buffer) + append(stream, buffer, room - len(buffer))
            ended = filled < room
            view = memoryview(buffer)
        else:
            long_line = len(carry) > size // 2
            buffer = spare.pop() if spare and not long_line else None
            if buffer is None or len(buffer) != size:  # a long line's buffer doubles, up to one byte past the cap
                buffer = bytearray(min(2 * len(carry), MAX_LINE_BYTES + 1) if long_line else size)
            view = memoryview(buffer)
            view[:len(carry)] = carry
            filled = len(carry) + fill(stream, view[len(carry):])
            ended = filled < len(buffer)
        view = view[:filled]
        if filled > MAX_LINE_BYTES and buffer.find(b"\n", 0, MAX_LINE_BYTES + 1) < 0:
            raise LineTooLong(offset, 0)
        if ended:
            last_start = buffer.rfind(b"\n", 0, filled) + 1
            if filled - last_start > MAX_LINE_BYTES:
                raise LineTooLong(offset + last_start, count_newlines(view))
            if filled:
                yield view
            return
        cut = buffer.rfind(b"\n", 0, filled) + 1
        if cut == 0:
            if len(buffer) <= size:  # a chunk's buffer, maybe a spare one a caller still has a view of: copied
                carry = bytes(view)
            else:  # a long line's own buffer: carried itself, to grow without a second one beside it
                view.release()
                carry = buffer
            continue
        carry = bytes(view[cut:])
        yield view[:cut]
        offset += cut


def iter_line_chunks(
    stream: BinaryIO, name: str = "<stream>", first: int = 1, *, skip_bom: bool = False
) -> Iterator[tuple[int, bytes]]:
    """(number of its first line, bytes) for the chunks of `iter_chunks_of_lines`, lines numbered from `first`.

    A line longer than MAX_LINE_BYTES raises SourceError naming its line."""
    number = first
    try:
        for chunk in iter_chunks_of_lines(stream, skip_bom=skip_bom):
            yield number, chunk.tobytes()
            number += count_newlines(chunk)
    except LineTooLong as e:
        raise SourceError(name, str(e), line=number + e.newlines) from None


def count_newlines(data: bytes | bytearray | memoryview) -> int:
    """The number of `\\n` bytes in `data` (stringzilla's SIMD count is several times `bytes.count`)."""
    return sz.Str(data).count("\n")
