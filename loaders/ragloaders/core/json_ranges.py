"""A top-level JSON array of flat objects cut into byte ranges at element boundaries, each parsed with orjson.

Why the cuts are safe without parsing from the start: inside a JSON string every `"` is escaped, so
`,` ws `{` ws `"<key>"` ws `:` (with `<key>` one of the keys every element starts with) can only be
structural in valid JSON: were the `,` inside a string, the quote before `<key>` would close that
string and be followed by a letter, which is invalid. For an array of flat objects such a match is
the start of an element. A wrong cut on invalid input leaves a range that orjson refuses (an open
string or bracket at its end), so any doubt ends in the caller's exact, streaming path.

orjson refuses invalid UTF-8 and unpaired surrogate escapes (`"\\ud800"`), and keeps the last value of
a duplicate key; `may_hold_duplicate_key` (counts of key-ending tokens, then an exact parse only when
they are off) lets the caller refuse duplicates.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import orjson

from .sources import RangeReader

WHITESPACE = b" \t\r\n"
UTF8_BOM = b"\xef\xbb\xbf"
PIECE_BYTES = 2 << 20
"""Bytes of input per parsed piece: memory per worker is a few times this."""
MAX_RECORD_BYTES = 256 << 20
"""A piece grows until it holds a boundary; past this, the caller's streaming path reads the rest."""
_SPACED_KEY_END = re.compile(rb'"[ \t\r\n]+:')
"""A key with whitespace before its colon (or, rarely, an escaped quote in a string before a spaced colon)."""


class NotCut(ValueError):
    """This range cannot be read by the fast path (invalid, ambiguous, or no boundary): use the exact path."""


def boundary_pattern(keys: Sequence[str]) -> re.Pattern[bytes]:
    """`,` ws `{` ws `"key"` ws `:` for any of `keys`: group 1 is the `{`."""
    names = b"|".join(re.escape(key.encode()) for key in keys)
    return re.compile(rb',[ \t\r\n]*(\{)[ \t\r\n]*"(?:' + names + rb')"[ \t\r\n]*:')


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


def _last_boundary(buffer: bytes, pattern: re.Pattern[bytes]) -> tuple[int, int] | None:
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
                ) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of consecutive pieces of bytes [start, end), each whole elements separated by commas.

    Raises NotCut when a piece would exceed MAX_RECORD_BYTES without a boundary."""
    with open(path, "rb") as f:
        f.seek(start)
        left, carry, offset = end - start, b"", start
        while left > 0 or carry:
            data = f.read(min(piece_bytes, left))
            left -= len(data)
            buffer = carry + data if carry else data
            if left <= 0:
                yield offset, buffer
                return
            found = _last_boundary(buffer, pattern)
            if found is None:
                if len(buffer) > MAX_RECORD_BYTES:
                    raise NotCut(f"no element boundary in {len(buffer):,} bytes from offset {offset:,}")
                carry = buffer
                continue
            comma, brace = found
            yield offset, buffer[:comma]
            carry, offset = buffer[brace:], offset + brace


def parse_piece(piece: bytes) -> list[Any]:
    """The elements of one piece (`[` + piece + `]`) with orjson; NotCut if orjson refuses it."""
    try:
        return orjson.loads(b"[" + piece + b"]")
    except orjson.JSONDecodeError as e:
        raise NotCut(str(e)) from None


def may_hold_duplicate_key(piece: bytes, keys: int) -> bool:
    """False when `piece`, a valid array of objects holding `keys` keys in all, none of which ends in a backslash,
    surely has no duplicate key: its key tokens are then exactly the `"` + `:` pairs not escaped, plus those
    with whitespace before the colon, which are looked for (and, if any, left to `has_duplicate_key`)."""
    adjacent = piece.count(b'":') - piece.count(b'\\":')
    return adjacent != keys or _SPACED_KEY_END.search(piece) is not None


def has_duplicate_key(piece: bytes) -> bool:
    """Whether any object in `piece` names a key twice (an exact parse with the standard library)."""
    duplicate = False

    def pairs(items: list[tuple[str, Any]]) -> dict:
        nonlocal duplicate
        result = dict(items)
        duplicate = duplicate or len(result) != len(items)
        return result

    json.loads(b"[" + piece + b"]", object_pairs_hook=pairs)
    return duplicate


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


def comma_before(path: str, offset: int) -> int:
    """The offset of the `,` that precedes `offset` across whitespace (the end of the previous element)."""
    window = max(0, offset - (1 << 16))
    with open(path, "rb") as f:
        f.seek(window)
        before = f.read(offset - window).rstrip(WHITESPACE)
    if not before.endswith(b","):
        raise ValueError(f"{path}: no ',' before offset {offset}")
    return window + len(before) - 1


def orjson_problem(document: bytes, error: orjson.JSONDecodeError) -> tuple[int, str]:
    """(byte offset in `document`, what is wrong) for orjson's refusal of `document`."""
    try:
        text = document.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start, f"invalid UTF-8 ({document[e.start:e.start + 4]!r})"
    offset = len(text[:error.pos].encode("utf-8", "surrogatepass"))
    if "surrogate" in str(error):
        return offset, f"unpaired surrogate escape such as \\ud800 in a string, which UTF-8 cannot hold ({error})"
    return offset, f"invalid JSON ({error})"
