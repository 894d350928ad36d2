"""A top-level JSON array parsed as a stream (ijson), in batches of about one read each, under the shared JSON
rules (duplicate keys, invalid UTF-8, unpaired surrogates, nesting past orjson's 1,024 levels refused), with errors
naming the element's index."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from ..errors import SourceError
from ..preview import cut, preview
from .lines import BLOCK_BYTES, UTF8_BOM
from .strict_json import JSON_WHITESPACE, DuplicateKeyError, UniqueKeyDict


def _ijson_backend() -> Any:
    """The fastest ijson backend installed; the C one parses a big array about twice as fast as `json.load`."""
    for name in ("yajl2_c", "yajl2_cffi", "yajl2"):
        try:
            return ijson.get_backend(name)
        except ImportError:
            continue
    return ijson.get_backend("python")


JSON_ARRAY_BACKEND = _ijson_backend()
MAX_DEPTH = 1024
"""Arrays and objects open at once at most, the top-level array included: orjson's limit, so that every reader of a
file gives it the same verdict."""
TOO_DEEP = f"depth limit exceeded: nested deeper than {MAX_DEPTH:,} levels"


class TooDeep(ValueError):
    """A value nested past MAX_DEPTH."""


class ArrayElements:
    """The elements of a top-level JSON array, built from ijson's basic events (the target of `basic_parse_coro`:
    `send` each event) and appended to `elements` as each is completed; objects are UniqueKeyDicts (a duplicate key
    raises DuplicateKeyError), numbers as ijson gives them. An array or object opened past MAX_DEPTH raises TooDeep
    at once, so the memory of a deep value stays linear in its depth (ijson's own `items` keeps the path of every
    open level: memory the square of the depth, gigabytes for a few kilobytes of `[`)."""

    def __init__(self, elements: list):
        self.elements = elements
        self.open = 0
        """Arrays and objects open, the top-level array included."""
        self.stack: list[tuple[Any, Any]] = []
        """The open values below the top-level array, each with the key it goes under in its parent."""
        self.key: Any = None

    def send(self, event: tuple[str, Any]) -> None:
        kind, value = event
        if kind == "map_key":
            self.key = value
            return
        if kind == "start_map" or kind == "start_array":
            if self.open >= MAX_DEPTH:
                raise TooDeep(TOO_DEEP)
            self.open += 1
            if self.open > 1:
                self.stack.append((UniqueKeyDict() if kind == "start_map" else [], self.key))
            return
        key = self.key
        if kind == "end_map" or kind == "end_array":
            self.open -= 1
            if not self.stack:  # the top-level array is closed
                return
            value, key = self.stack.pop()
        if not self.stack:
            self.elements.append(value)
        elif isinstance(parent := self.stack[-1][0], list):
            parent.append(value)
        else:
            parent[key] = value


def array_parser(elements: list) -> Any:
    """An ijson parser of a top-level JSON array (`send` its bytes, `close` at the end) that appends each element
    to `elements` as it is completed (ArrayElements)."""
    return JSON_ARRAY_BACKEND.basic_parse_coro(ArrayElements(elements), use_float=True)


def _first_bytes(stream: BinaryIO, buf_size: int) -> bytes:
    """The first block of a stream that holds something other than whitespace (b"" if none), BOM dropped."""
    head = stream.read(buf_size)
    if len(head) < len(UTF8_BOM):
        head += stream.read(len(UTF8_BOM))
    head = head.removeprefix(UTF8_BOM)
    while not head.strip(JSON_WHITESPACE):
        head = stream.read(buf_size)
        if not head:
            break
    return head


_UNEXPECTED_SYMBOL = re.compile(r"Unexpected symbol (.*) at (\d+)", re.DOTALL)
"""ijson's Python parser's error: the token (which can be as long as the file) and its character offset."""


INTEGER_PAST_64_BITS = "an integer past 64 bits, which this array reader (yajl's) cannot hold exactly"
NUMBER_PAST_A_DOUBLE = "a number out of a double's range (as 1e400), refused as for every benchmark's JSON"


def json_error_detail(error: ijson.JSONError) -> str:
    """What an ijson error says, bounded: its first line; the offset and the token of the Python parser's; the text
    near the error for yajl's, which shows the 30 bytes either side of where it stopped (the line's 41st byte,
    above the `^` of a third line), within the piece of the file it was given."""
    text = error.args[0] if error.args else ""
    raw = text if isinstance(text, bytes) else str(text).encode("utf-8", "replace")
    lines = raw.strip(b"\r\n").split(b"\n")
    first = lines[0].strip().decode("utf-8", "replace")
    if not first:
        return type(error).__name__
    symbol = _UNEXPECTED_SYMBOL.fullmatch(first)
    if symbol:
        return f"unexpected symbol {cut(symbol[1])} at character {int(symbol[2]):,}"
    detail = cut(first)
    if "integer overflow" in first:  # yajl's words for valid numbers it cannot hold
        detail = INTEGER_PAST_64_BITS
    elif "floating point) overflow" in first:
        detail = NUMBER_PAST_A_DOUBLE
    if len(lines) >= 3 and lines[2].strip().startswith(b"(right here)") and b"^" in lines[2]:
        column = lines[2].index(b"^")
        near = lines[1][:column].lstrip(b" ") + lines[1][column:]
        if near.strip():
            try:
                detail += f"; near {preview(near.decode('utf-8'))}"
            except UnicodeDecodeError:  # invalid UTF-8 (or a character cut by yajl's 30 bytes): shown as bytes
                detail += f"; near {preview(near)}"
    return detail


_SURROGATE_HINT = re.compile(rb"\\u[dD]")
"""Where a surrogate escape may be (most blocks hold none, and are scanned no further; faster than `in`)."""
_BEFORE_U = re.compile(rb"(?<!\\)\\+(?=u[dD])")
"""A run of backslashes before `ud` or `uD`: the last begins an escape when the run is odd. (One repeated byte, which
`re` matches in constant memory; `(?:\\\\)*` kept a frame per pair, 250 MB for a 16 MB run.)"""
_SURROGATE_ESCAPE = re.compile(
    rb"\\u[dD](?:(?P<high>[89abAB][0-9a-fA-F]{2})(?P<low>\\u[dD][c-fC-F][0-9a-fA-F]{2})?|[c-fC-F][0-9a-fA-F]{2})")
"""A surrogate escape, matched where one begins: a high one with the low one after it, a high one, a low one."""
_HELD = 12
"""Bytes at the end of a block kept for the next (a high escape and its low one)."""
_LOW_BEGUN = re.compile(rb"(?:\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]?)?)?)?)?")
"""What fewer than 6 bytes after a high escape can be, at the end of a block, when a low one may follow."""
_BEFORE = 30
"""Bytes before an unpaired escape shown with it."""
UNPAIRED = "invalid UTF-8 or an unpaired surrogate escape (such as \\ud800)"


class SurrogateEscapes:
    """The bytes of a JSON text, pushed a block at a time, checked for an unpaired surrogate escape (`\\ud800` with
    no low one after it, or a low one alone), which yajl does not refuse: it reads a lone high one as `?` and two
    high ones as a character of its own making. `push` gives what may go to the parser now: a block less at most
    _HELD bytes (and an even run of backslashes before them), kept back until what follows them is known."""

    def __init__(self) -> None:
        self.kept = b""
        self.sent = b""  # the last bytes given to the parser, for the text before an escape in a message

    def push(self, block: bytes | None) -> tuple[bytes, str | None]:
        """(bytes for the parser, None) or, for an unpaired escape, (the bytes before it, the escape and the text
        before it, bounded). `block` None: the end of the text."""
        final = block is None
        data = self.kept + (block or b"") if self.kept else block or b""
        hold = len(data)
        if not final and b"\\" in data[-_HELD:]:  # (else what ends the block is no escape, and none begun)
            hold = _even_cut(data, max(0, len(data) - _HELD))
        if _SURROGATE_HINT.search(data):
            paired = 0  # where the last pair ends (the backslash of its low one begins no escape of its own)
            for run in _BEFORE_U.finditer(data):
                at = run.end() - 1
                if at >= hold:
                    break
                if run.start() < paired or (at - run.start()) % 2 or not (found := _SURROGATE_ESCAPE.match(data, at)):
                    continue
                if found["low"]:  # a pair: sent whole, so the next block does not begin inside it
                    paired = found.end()
                    hold = max(hold, paired)
                    continue
                end = found.end()
                if not found["high"] or final or len(data) - end >= 6 or not _LOW_BEGUN.fullmatch(data, end):
                    return data[:at], _lone(self.sent + data, len(self.sent) + at)
                hold = _even_cut(data, at)  # a low escape may follow in the next block
                break
        self.kept = data[hold:]
        self.sent = (self.sent + data[max(0, hold - _BEFORE) : hold])[-_BEFORE:]
        return (data if hold == len(data) else data[:hold]), None


def _lone(data: bytes, at: int) -> str:
    """The unpaired escape at `at` and the text before it, bounded."""
    return f"the lone surrogate {data[at : at + 6].decode('ascii').lower()}{_after(data, at)}"


def _after(data: bytes, at: int) -> str:
    """` after '…'`: the _BEFORE bytes before `at`, bounded ("" at the start)."""
    before = data[max(0, at - _BEFORE) : at].decode("utf-8", "replace")
    return f" after {preview(before)}" if before else ""


def _even_cut(data: bytes, at: int) -> int:
    """`at`, or one byte before it where that leaves an even run of backslashes before the cut (so the bytes after
    it, scanned alone, are escapes as they are in the whole)."""
    if data[at - 1 : at] != b"\\":
        return at
    run = at - len(data[:at].rstrip(b"\\"))
    return at - 1 if run % 2 else at


def iter_json_array_batches(
    stream: BinaryIO, name: str, *, buf_size: int = BLOCK_BYTES
) -> Iterator[tuple[int, list[Any]]]:
    """(index of the first, values) for the elements of a top-level JSON array completed by each `buf_size` read.

    The array is parsed as a stream (ijson, pushed one block at a time), so memory stays flat whatever the
    file size, compact or pretty-printed, and a batch holds about `buf_size` bytes of input. Indexes are
    0-based, as in `json.load(f)[index]`. A file that is not an array, is cut short, is not valid JSON or
    has data after the closing bracket raises SourceError naming `name` and the index of the element concerned.
    """
    chunk = _first_bytes(stream, buf_size)
    start = chunk.lstrip(JSON_WHITESPACE)[:1]
    if start != b"[":
        found = repr(start.decode("latin-1")) if start else "an empty file"
        raise SourceError(name, f"expected a JSON array (a file starting with '['), found {found}")
    parsed: list[Any] = []
    parser = array_parser(parsed)
    escapes = SurrogateEscapes()
    done, size = 0, buf_size
    while chunk:
        batch = _send(parser, parsed, escapes, chunk, name, done)
        if batch:
            yield done, batch
            done += len(batch)
        # A read that completes no element is followed by one twice its size (back to buf_size after one that
        # does): yajl lexes a token cut by a read again from its start at each read, so a 50 MB string read 64 KB
        # at a time took minutes, as the square of its length; doubling reads make that linear, and are never
        # larger than the element read so far, which the parser holds anyway.
        size = buf_size if batch else 2 * size
        chunk = stream.read(size)
    if batch := _send(parser, parsed, escapes, None, name, done):
        yield done, batch


def _send(parser: Any, parsed: list, escapes: SurrogateEscapes | None, chunk: bytes | None, name: str, done: int
          ) -> list[Any]:
    """Push `chunk` (None: the end) into the array parser, through `escapes` (None: unchecked); the elements it
    completed. Errors become SourceError naming the element: invalid JSON, invalid UTF-8 or an unpaired surrogate
    escape, a duplicate key."""
    ready, unpaired = escapes.push(chunk) if escapes is not None else (chunk, None)
    try:
        if ready:
            parser.send(ready)
        if unpaired is not None:
            index = done + len(parsed)
            raise SourceError(name, f"{UNPAIRED} in record {index} ({unpaired})", record=index)
        if chunk is None:
            parser.close()
    except ijson.JSONError as e:
        index = done + len(parsed)
        raise SourceError(name, _array_error(json_error_detail(e), index), record=index) from None
    except DuplicateKeyError as e:
        index = done + len(parsed)
        raise SourceError(name, f"{e} in record {index}", record=index) from None
    except TooDeep as e:
        index = done + len(parsed)
        raise SourceError(name, _array_error(str(e), index), record=index) from None
    except UnicodeDecodeError as e:
        index = done + len(parsed)
        raise SourceError(name, f"{UNPAIRED} in record {index} ({_undecodable(e)})", record=index) from None
    batch = list(parsed)
    del parsed[:]
    return batch


def _undecodable(error: UnicodeDecodeError) -> str:
    """What Python could not decode in a string yajl gave it (yajl writes an escape such as \\udce9 as its 3 bytes
    of UTF-8 form, and lets those bytes through): the surrogate, or the bytes and the reason, and the text before
    it, bounded (the string can be megabytes)."""
    data = error.object
    if not isinstance(data, bytes):
        return error.reason
    piece = data[error.start : error.start + 3]
    try:
        char = piece.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        char = ""
    if len(char) == 1 and 0xD800 <= ord(char) <= 0xDFFF:
        what = f"the lone surrogate \\u{ord(char):04x}"
    else:
        what = f"{error.reason}: {preview(data[error.start : max(error.end, error.start + 1)])}"
    return what + (_after(data, error.start) or " at the start of a string")


def _array_error(detail: str, index: int) -> str:
    if "premature EOF" in detail or "Incomplete" in detail:
        return f"truncated JSON array: the file ends inside record {index} or before the closing ']' ({detail})"
    if "trailing garbage" in detail or "Additional data" in detail:
        return f"data after the end of the JSON array, which holds {index} records ({detail})"
    if detail.startswith((INTEGER_PAST_64_BITS, NUMBER_PAST_A_DOUBLE)):  # (valid JSON; the error names the record)
        return detail
    return f"invalid JSON in record {index} ({detail})"


def iter_json_array(stream: BinaryIO, name: str, *, buf_size: int = BLOCK_BYTES) -> Iterator[tuple[int, Any]]:
    """(index, value) for each element of a top-level JSON array, parsed as a stream (see iter_json_array_batches)."""
    for first, values in iter_json_array_batches(stream, name, buf_size=buf_size):
        yield from enumerate(values, start=first)


def array_elements_before(stream: BinaryIO, name: str, limit: int, *, buf_size: int = BLOCK_BYTES) -> int:
    """How many elements of the top-level JSON array in `stream` are complete within its first `limit` bytes:
    the index of the element holding byte `limit`. Errors before it raise SourceError as in iter_json_array,
    but for an unpaired surrogate escape (not looked for: this locates what orjson refused)."""
    parsed: list[Any] = []
    parser = array_parser(parsed)
    done, left, first, size = 0, limit, True, buf_size
    while left > 0 and (chunk := stream.read(min(size, left))):
        left -= len(chunk)
        if first:
            chunk, first = chunk.removeprefix(UTF8_BOM), False
        completed = len(_send(parser, parsed, None, chunk, name, done))  # (counting only: every byte sent as read)
        done += completed
        size = buf_size if completed else 2 * size  # (as in iter_json_array_batches: linear in a long token)
    return done + len(parsed)
