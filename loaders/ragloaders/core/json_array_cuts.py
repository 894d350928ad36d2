"""A top-level JSON array of flat objects cut into byte ranges at element boundaries, parsed piece by piece.

Why the cuts are safe without parsing from the start: inside a JSON string every `"` is escaped, so
`,` ws `{` ws `"<key>"` ws `:` (with `<key>` one of the keys every element starts with) can only be
structural in valid JSON: were the `,` inside a string, the quote before `<key>` would close that
string and be followed by a letter, which is invalid. For an array of flat objects such a match is
the start of an element. A wrong cut on invalid input leaves a range that the parser refuses (an open
string or bracket at its end), so any doubt ends in the caller's exact, streaming path.

The same argument lets `elements_as_lines` turn a piece into whitespace-separated objects (the `,` between
two elements becomes a newline) for pyarrow's JSON reader, which then parses it without Python objects.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator, Sequence
from typing import BinaryIO

import orjson

from .preview import preview
from .readers.lines import UTF8_BOM, fill
from .readers.strict_json import UNPAIRED_SURROGATE
from .source_files import RangeReader

WHITESPACE = b" \t\r\n"
PIECE_BYTES = 2 << 20
"""Bytes of input per parsed piece: memory per worker is a few times this."""
MAX_RECORD_BYTES = 256 << 20
"""A piece grows until it holds a boundary; past this, the caller's streaming path reads the rest."""


class NotCut(ValueError):
    """This range cannot be read by the fast path (invalid, ambiguous, or no boundary): use the exact path."""


def _element_start(keys: Sequence[str]) -> bytes:
    """ws `{` ws `"key"` ws `:` for any of `keys`, the `{` in group 1."""
    names = b"|".join(re.escape(key.encode()) for key in keys)
    return rb'[ \t\r\n]*(\{)[ \t\r\n]*"(?:' + names + rb')"[ \t\r\n]*:'


def boundary_pattern(keys: Sequence[str]) -> re.Pattern[bytes]:
    """`,` ws `{` ws `"key"` ws `:` for any of `keys`: group 1 is the `{`."""
    return re.compile(b"," + _element_start(keys))


def separator_pattern(keys: Sequence[str]) -> re.Pattern[bytes]:
    """The `,` between two elements, each starting with one of `keys` (the element's start is not consumed)."""
    return re.compile(b",(?=" + _element_start(keys) + b")")


def array_body(path: str) -> tuple[int, int] | None:
    """(offset after the opening `[`, offset of the closing `]`) of a file holding one JSON array, or None when
    the file does not start with `[` (after a BOM and whitespace) and end with `]` (before whitespace) within
    its first and last 64 KB."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(1 << 16)
        f.seek(max(0, size - (1 << 16)))
        tail_start = f.tell()
        tail = f.read().rstrip(WHITESPACE)
    skip = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
    stripped = head[skip:].lstrip(WHITESPACE)
    if not stripped.startswith(b"[") or not tail.endswith(b"]"):
        return None
    body = (len(head) - len(stripped) + 1, tail_start + len(tail) - 1)
    return body if body[0] <= body[1] else None


def cut_ranges(path: str, body: tuple[int, int], pattern: re.Pattern[bytes], target_bytes: int
               ) -> list[tuple[int, int]]:
    """Byte ranges of the array's body, each from an element's `{` to just before the `,` that follows its last
    element; about `target_bytes` each (fewer when no boundary is found near a cut)."""
    start, end = body
    ranges, begin = [], start
    with open(path, "rb") as f:
        cut = begin + target_bytes
        while cut < end:
            f.seek(cut)
            window = f.read(min(1 << 20, end - cut))
            match = pattern.search(window)
            if match is None:
                cut += len(window)
                if not window:
                    break
                continue
            comma, brace = cut + match.start(), cut + match.start(1)
            ranges.append((begin, comma))
            begin = brace
            cut = begin + target_bytes
    ranges.append((begin, end))
    return ranges


def _last_boundary(buffer: bytes | bytearray, pattern: re.Pattern[bytes]) -> tuple[int, int] | None:
    """(offset of the `,`, offset of the `{`) of the last boundary in `buffer`, or None."""
    position = len(buffer)
    while (position := buffer.rfind(b"{", 0, position)) > 0:
        comma = position - 1
        while comma >= 0 and buffer[comma] in WHITESPACE:
            comma -= 1
        if comma >= 0 and buffer[comma] == 0x2C and pattern.match(buffer, comma) is not None:  # 0x2C: ","
            return comma, position
    return None


def iter_pieces(path: str, start: int, end: int, pattern: re.Pattern[bytes], piece_bytes: int = PIECE_BYTES
                ) -> Iterator[tuple[int, memoryview]]:
    """(offset, bytes) of consecutive pieces of bytes [start, end), each whole elements separated by commas.

    Each piece is read straight into its own buffer (only the start of its last, incomplete element is copied,
    to the next one); a piece that holds no boundary grows by doubling. Raises NotCut when a piece would exceed
    MAX_RECORD_BYTES without a boundary."""
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        left, carry, offset = end - start, b"", start
        while left > 0 or carry:
            size = min(max(piece_bytes, len(carry)), left)
            buffer = bytearray(len(carry) + size)
            buffer[:len(carry)] = carry
            got = fill(f, memoryview(buffer)[len(carry):])
            left = left - got if got == size else 0  # a file shorter than `end` ends here
            del buffer[len(carry) + got:]
            if left <= 0:
                yield offset, memoryview(buffer)
                return
            found = _last_boundary(buffer, pattern)
            if found is None:
                if len(buffer) > MAX_RECORD_BYTES:
                    raise NotCut(f"no element boundary in {len(buffer):,} bytes from offset {offset:,}")
                carry = buffer
                continue
            comma, brace = found
            view = memoryview(buffer)
            yield offset, view[:comma]
            carry, offset = bytes(view[brace:]), offset + brace


def elements_as_lines(piece: bytes | memoryview, separator: re.Pattern[bytes]) -> tuple[bytes, int]:
    """(`piece` with the `,` between its elements turned into newlines, how many were) for a line-delimited
    JSON reader; in valid input the elements are that count plus one."""
    return separator.subn(b"\n", piece)


class _Joined(io.RawIOBase):
    """Byte strings and byte ranges of a file, read as one stream."""

    def __init__(self, parts: Sequence[bytes | tuple[str, int, int]]):
        self.parts, self.index, self.current = list(parts), 0, None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        while self.index < len(self.parts):
            if self.current is None:
                part = self.parts[self.index]
                self.current = io.BytesIO(part) if isinstance(part, bytes) else RangeReader(*part)
            count = self.current.readinto(view)
            if count:
                return count
            self.current.close()
            self.current, self.index = None, self.index + 1
        return 0

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
        super().close()


def joined(*parts: bytes | tuple[str, int, int]) -> BinaryIO:
    """A binary stream of byte strings and (path, start, end) file ranges, in order."""
    return io.BufferedReader(_Joined(parts), 1 << 20)  # type: ignore[return-value]


def orjson_problem(document: bytes, error: orjson.JSONDecodeError) -> tuple[int, str]:
    """(byte offset in `document`, what is wrong) for orjson's refusal of `document`."""
    try:
        text = document.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start, f"invalid UTF-8 ({preview(document[e.start:e.start + 4])})"
    offset = len(text[:error.pos].encode("utf-8", "surrogatepass"))
    if "surrogate" in str(error):
        return offset, f"{UNPAIRED_SURROGATE} ({error})"
    return offset, f"invalid JSON ({error})"
