"""JSON lines into Arrow tables: pyarrow parses each chunk of whole lines when every line is one object
(`object_lines`), and the line path (`loads_strict` + `conform`) reads any chunk pyarrow refuses or gets wrong,
so that a line gets the same verdict on both paths; a shard is a line-aligned byte range of a file."""

from __future__ import annotations

import io
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.json as pa_json
import stringzilla as sz

from ..errors import SourceError
from ..source_files import RangeReader, SourceFiles, line_aligned_ranges
from .arrow_batches import tables_from_rows
from .lines import BLOCK_BYTES, LineTooLong, count_newlines, iter_chunks_of_lines, iter_line_chunks, out_of_memory
from .strict_json import JSON_WHITESPACE, loads_strict
from .threads import iter_ahead, map_ahead
from .values import JSON_FIELD, check_required, conform

SHARD_BYTES = 128 << 20


@dataclass(frozen=True)
class Shard:
    """A source file, or a byte range of it that starts and ends at line boundaries."""

    files: SourceFiles
    relpath: str
    start: int = 0
    end: int | None = None

    @property
    def name(self) -> str:
        return self.files.display(self.relpath)

    def open(self) -> BinaryIO:
        if self.end is None:
            return self.files.open(self.relpath)
        return io.BufferedReader(RangeReader(self.files.local_path(self.relpath), self.start, self.end), BLOCK_BYTES)

    def first_line_number(self) -> int:
        """The file's number of the shard's first line (counted from the file's start)."""
        if self.start == 0:
            return 1
        with open(self.files.local_path(self.relpath), "rb") as f:
            return _newlines_in_first(f, self.start) + 1

    def line_number_at(self, offset: int) -> int:
        """The file's number of the line starting at byte `offset` of the shard."""
        with self.open() as stream:
            return _newlines_in_first(stream, offset) + self.first_line_number()


def _newlines_in_first(stream: BinaryIO, size: int) -> int:
    newlines = 0
    while size > 0 and (block := stream.read(min(BLOCK_BYTES, size))):
        newlines += block.count(b"\n")
        size -= len(block)
    return newlines


def shards_of(files: SourceFiles, relpath: str, shard_bytes: int | None = None) -> list[Shard]:
    """Byte-range shards of a plain file (so that num_proc can split it); a zip member stays whole."""
    shard_bytes = shard_bytes or SHARD_BYTES
    files.require(relpath)
    if not files.is_seekable_file(relpath) or files.size(relpath) <= shard_bytes:
        return [Shard(files, relpath)]
    path = files.local_path(relpath)
    return [Shard(files, relpath, start, end) for start, end in line_aligned_ranges(path, shard_bytes)]


def _shard_chunks(shard: Shard) -> Iterator[tuple[int, bytes]]:
    with shard.open() as stream:
        yield from iter_line_chunks(stream, shard.name, shard.first_line_number(), skip_bom=shard.start == 0)


_NOT_JSON_WHITESPACE = re.compile(b"[^" + re.escape(JSON_WHITESPACE) + b"]")
_BLANK_STARTS = tuple(b"\n" + bytes([space]) for space in JSON_WHITESPACE)
"""A line end followed by JSON whitespace: where a blank line (or one that starts with whitespace) begins."""


def _may_hold_blank_lines(chunk: bytes) -> bool:
    """Whether a line of `chunk` (its final line end aside) is empty or starts with JSON whitespace, which every
    blank line does (a few searches of two bytes, in C)."""
    end = len(chunk) - chunk.endswith(b"\n")
    return not end or chunk[:1] in JSON_WHITESPACE or any(chunk.find(pair, 0, end) >= 0 for pair in _BLANK_STARTS)


def _content_lines(chunk: bytes, first: int) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, whether it is the chunk's last and has no line end) for each line of `chunk` that holds
    more than JSON whitespace, numbered from `first`."""
    if not _may_hold_blank_lines(chunk):  # (most chunks: split is the fastest way to their lines)
        lines = chunk.split(b"\n")
        last = first + len(lines) - 1
        for number, line in enumerate(lines, start=first):
            if line:
                yield number, line, number == last
        return
    # blank lines are skipped by the regular expression's scan, in C (a line at a time, a chunk of nothing but line
    # ends went at 16 MB a second)
    number, counted, position = first, 0, 0
    while found := _NOT_JSON_WHITESPACE.search(chunk, position):
        start = chunk.rfind(b"\n", 0, found.start()) + 1
        end = chunk.find(b"\n", found.start())
        end = len(chunk) if end < 0 else end
        number += chunk.count(b"\n", counted, start)
        counted, position = start, end + 1
        yield number, chunk[start:end], end == len(chunk)


def _json_line_records(chunk: bytes, first: int, name: str) -> Iterator[tuple[int, int, Any]]:
    for number, line, unended in _content_lines(chunk, first):
        try:
            value = loads_strict(line)
        except ValueError as e:
            message = str(e)
            if unended and message.startswith(("invalid JSON", "invalid UTF-8")):
                # only the file's last chunk can end without a line end; a cut can leave bad JSON or a cut character
                if b"\r" in line and line.count(b"\r") > line.count(b"\r\n"):
                    message += ("; the line holds carriage returns with no line feed after them: JSONL lines end "
                                "with LF (or CRLF), and a file with bare CR line ends (old Mac style) must be "
                                "converted")
                else:
                    message += ("; the file's last line has no line end, as when a file is cut short: download it "
                                "again")
            raise SourceError(name, message, line=number) from None
        yield number, len(line), value


def iter_json_records(shard: Shard) -> Iterator[tuple[int, int, Any]]:
    """(line number, line length in bytes, parsed value) for each non-blank line of a JSONL shard (loads_strict)."""
    for first, chunk in _shard_chunks(shard):
        yield from _json_line_records(chunk, first, shard.name)


def _chunk_rows(
    chunk: bytes, first: int, name: str, schema: pa.Schema, required: tuple[str, ...]
) -> Iterator[tuple[dict, int]]:
    for number, nbytes, record in _json_line_records(chunk, first, name):
        try:
            row = conform(record, schema)
            check_required(row, required)
        except ValueError as e:
            raise SourceError(name, str(e), line=number) from None
        yield row, nbytes


def object_lines(chunk: bytes | bytearray | memoryview) -> tuple[int, int | None]:
    """(line ends in `chunk`, its number of lines when every line starts with `{` and ends with `}` (before an
    optional CR), else None).

    pyarrow, given a buffer, reads `}{` on one line as two rows and an object broken across lines as one, where
    the line path refuses both. When every line is `{`...`}`, an object can only cross a line end as `}` newline
    `{` inside an object, which pyarrow refuses (no comma), so pyarrow's rows are then the lines exactly when
    their counts agree. Every line is `{`...`}` when the chunk starts with `{`, its last line ends with `}`, and
    every line end but a final one stands between `}` (or `}` CR) and `{`: counted with stringzilla's SIMD search."""
    if not chunk:
        return 0, None
    text = sz.Str(chunk)
    newlines = count_newlines(chunk)
    complete = chunk[-1] == 0x0A
    lines = newlines + (not complete)
    last = len(chunk) - 1 - complete
    if last >= 0 and chunk[last] == 0x0D:
        last -= 1
    if last < 0 or chunk[0] != 0x7B or chunk[last] != 0x7D:
        return newlines, None
    between = text.count("}\n{")
    if between != lines - 1 and text.find("\r") >= 0:
        between += text.count("}\r\n{")
    return newlines, lines if between == lines - 1 else None


def _jsonl_fast(chunk: memoryview, lines: int | None, schema: pa.Schema, required: tuple[str, ...]
                ) -> pa.Table | None:
    """The chunk, of `lines` lines each `{`...`}` (see object_lines), parsed by pyarrow; None when a line is
    otherwise (blank, padded, not an object), pyarrow refuses it, or its result breaks a rule: then the line path
    decides."""
    if lines is None:
        return None
    try:
        table = pa_json.read_json(
            pa.py_buffer(chunk),
            # One block: the table has one chunk per column, which writers need not copy into one.
            read_options=pa_json.ReadOptions(block_size=len(chunk), use_threads=False),
            parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
        )
        table.validate(full=True)  # pyarrow's JSON reader lets invalid UTF-8 through; this refuses it
    except pa.ArrowInvalid:
        return None
    if any(table.column(name).null_count for name in required):
        return None
    if table.num_rows != lines:
        return None
    return table


def parse_object_lines(chunk: bytes | memoryview, schema: pa.Schema, required: Iterable[str] = ()) -> pa.Table | None:
    """Whole JSON lines parsed by pyarrow into a table of `schema`, one row a line, when every line is one object
    that the line path (`loads_strict` + `conform` + `check_required`) would read into the same row; None when the
    line path must decide (a blank, padded or non-object line, anything pyarrow refuses, a null `required` value)."""
    return _jsonl_fast(memoryview(chunk), object_lines(chunk)[1], schema, tuple(required))


def read_jsonl(shard: Shard, schema: pa.Schema, required: Iterable[str] = ()) -> Iterator[pa.Table]:
    """Tables of `schema` from a JSONL shard; `required` columns may not be missing or null; a file with
    no record is refused."""
    required = tuple(required)
    line_by_line = any(field.metadata == JSON_FIELD for field in schema)
    rows = 0

    def parse(chunk: memoryview) -> tuple[memoryview, int, pa.Table | None]:
        newlines, lines = object_lines(chunk)
        return chunk, newlines, None if line_by_line else _jsonl_fast(chunk, lines, schema, required)

    spare: deque[bytearray] = deque()  # buffers of chunks done with, read into again
    first = 1
    try:  # lines numbered from the shard's start; the file's line number is counted only for an error
        with shard.open() as stream:
            chunks = iter_chunks_of_lines(stream, skip_bom=shard.start == 0, spare=spare)
            for chunk, newlines, table in map_ahead(parse, iter_ahead(chunks)):
                tables = [table] if table is not None else tables_from_rows(
                    _chunk_rows(chunk.tobytes(), first, shard.name, schema, required), schema
                )
                for table in tables:
                    rows += table.num_rows
                    yield table
                first += newlines
                spare.append(chunk.obj)  # pyarrow copied what it parsed: the tables do not use the buffer
    except LineTooLong as e:
        raise SourceError(shard.name, str(e), line=shard.line_number_at(e.offset)) from None
    except MemoryError:
        raise out_of_memory(shard.name, first + shard.first_line_number() - 1) from None
    except SourceError as e:
        if e.line is None or shard.start == 0:
            raise
        raise SourceError(e.path, e.message, line=e.line + shard.first_line_number() - 1) from None
    if rows == 0 and shard.start == 0 and not _holds_more_than_whitespace_after(shard):
        raise SourceError(shard.name, "no records: the file is empty or holds only blank lines")


def _holds_more_than_whitespace_after(shard: Shard) -> bool:
    """Whether the file of `shard` holds a byte other than JSON whitespace after the shard's end (a whole file has
    nothing after it): the first shard of a file cut into several says whether the whole file is blank, reading no
    further than the first such byte."""
    if shard.end is None:
        return False
    with open(shard.files.local_path(shard.relpath), "rb") as f:
        f.seek(shard.end)
        while block := f.read(BLOCK_BYTES):
            if _NOT_JSON_WHITESPACE.search(block):
                return True
    return False
