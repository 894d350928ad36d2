"""Readers shared by every benchmark: JSON lines and TSV into Arrow tables, in bounded batches.

A file is read in chunks of whole lines (`iter_line_chunks`). Each chunk is first parsed by pyarrow
from an in-memory buffer with an explicit schema (ids stay strings, no Python per row); when pyarrow
refuses the chunk, or a check of its result fails, the same chunk is read line by line in Python,
which either pinpoints the bad line in a SourceError or produces the rows itself. Both paths apply
the same rules (below), so a line gets the same verdict whichever path reads it.

pyarrow never gets a Python file object: its streaming readers read ahead on their own threads,
which call back into Python and abort the interpreter when a stream stopped early is finalized at
exit (`Fatal Python error: PyGILState_Release`). JSONL chunks are instead read on one Python thread
(`iter_ahead`) and parsed, each on one thread, by PARSE_THREADS Python threads (`map_ahead`) while the
caller writes the previous tables: pyarrow releases the GIL (stringzilla's line counts, a fraction of a
millisecond per chunk, keep it), so reading, parsing and writing overlap as in pyarrow's own reader, and
these threads are always joined when the reader stops.

Rules for bad input (each a SourceError naming the file and the line or record):
- JSON: invalid UTF-8, invalid JSON, an object with a duplicate key, and an unpaired surrogate
  escape (`"\ud800"`, `"\udce9"`: UTF-8, hence Parquet, cannot hold it) are refused; integers
  of any size are kept exactly (in JSON text columns too); a UTF-8 BOM is skipped at the start of
  a file only. An empty corpus or queries file is refused.
- qrels: a score is an optional `-` followed by ASCII digits that fits int32; a carriage return
  anywhere but just before the line end is refused.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

import ijson
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import stringzilla as sz

from .errors import SourceError
from .sources import RangeReader, SourceFiles, line_aligned_ranges

BLOCK_BYTES = 1 << 20
"""Unit of reading: a buffered reader's buffer, pyarrow's CSV parser block."""
CHUNK_BLOCKS = 2
"""A chunk of JSON lines, parsed on one thread as one pyarrow block, is CHUNK_BLOCKS * BLOCK_BYTES: the chunks in
flight stay in the processor's cache (measured: 8 MB chunks made the BEIR build ~15 % slower, 1 MB ones ~20 % slower,
their Python work per chunk being doubled)."""
SHARD_BYTES = 128 << 20
MAX_LINE_BYTES = 512 << 20
"""Longest line read: far above any benchmark's (CRAG's reach several MB), far below what exhausts memory."""
JSON_FIELD = {b"ragloaders": b"json"}
"""Field metadata marking a string column that holds a JSON value serialised as text."""


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


def iter_lines(stream: BinaryIO, name: str = "<stream>", first: int = 1) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its line end) for every line, numbered from `first`; CRLF tolerated.

    A line longer than MAX_LINE_BYTES raises SourceError instead of filling memory (a decompression bomb
    of one endless line)."""
    number = first - 1
    while line := stream.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise SourceError(name, f"line longer than {MAX_LINE_BYTES:,} bytes (MAX_LINE_BYTES)", line=number)
        yield number, line.rstrip(b"\r\n")


_UTF8_BOM = b"\xef\xbb\xbf"


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


def iter_chunks_of_lines(
    stream: BinaryIO, *, skip_bom: bool = False, spare: deque[bytearray] | None = None
) -> Iterator[memoryview]:
    """Consecutive chunks of whole lines of about CHUNK_BLOCKS * BLOCK_BYTES, each read straight into a buffer
    (only a chunk's incomplete last line is copied, to the next one), as a view of that buffer.

    Every chunk but the last ends with a newline. `skip_bom` drops a UTF-8 BOM at the very start. A line
    longer than MAX_LINE_BYTES raises LineTooLong instead of filling memory.

    A caller done with a chunk may append its buffer (`chunk.obj`) to `spare`: it is then read into again
    instead of a fresh one, which would cost its zeroing and a page fault every 4 KB. Without `spare`,
    every chunk keeps its own buffer."""
    size = min(CHUNK_BLOCKS * BLOCK_BYTES, MAX_LINE_BYTES)
    carry, offset = b"", 0  # offset: the stream position where `carry`, the start of a line, begins
    if skip_bom and (carry := stream.read(len(_UTF8_BOM))) == _UTF8_BOM:
        carry, offset = b"", len(_UTF8_BOM)
    while True:
        long_line = len(carry) > size // 2
        buffer = spare.pop() if spare and not long_line else None
        if buffer is None or len(buffer) != size:
            buffer = bytearray(2 * len(carry) if long_line else size)  # a long line's buffer doubles
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
            carry = bytes(view)
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


T = TypeVar("T")
R = TypeVar("R")
USABLE_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
PARSE_THREADS = max(1, min(4, USABLE_CORES))
"""Threads parsing chunks at once (each chunk on one thread): the cores this process may use, up to 4."""


def iter_ahead(items: Iterator[T]) -> Iterator[T]:
    """`items`, each produced on a worker thread while the caller handles the one before (reading overlaps
    with the caller's work). The worker is always waited for: closing this generator leaves no thread."""
    end = object()
    with ThreadPoolExecutor(1, thread_name_prefix="ragloaders-read") as pool:
        pending = pool.submit(next, items, end)
        while (item := pending.result()) is not end:
            pending = pool.submit(next, items, end)
            yield item


def map_ahead(function: Callable[[T], R], items: Iterable[T], threads: int = PARSE_THREADS) -> Iterator[R]:
    """`function(item)` for each item, in order, computed on `threads` worker threads while the caller reads
    the next items and handles earlier results (at most `threads` + 1 items in flight).

    For work that mostly releases the GIL (pyarrow parsing). An error in `items` comes after the results of the
    items before it (or their own error), as it would without threads. The workers are always waited for: closing
    this generator, or an error, leaves no thread running and no work queued."""
    pool = ThreadPoolExecutor(threads, thread_name_prefix="ragloaders-parse")
    pending: deque[Future[R]] = deque()
    iterator = iter(items)
    try:
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                break
            except Exception:
                while pending:
                    yield pending.popleft().result()
                raise
            pending.append(pool.submit(function, item))
            if len(pending) > threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _describe(value: Any) -> str:
    text = json_text(value)  # integers beyond 64 bits too (orjson.dumps refuses them)
    return text if len(text) <= 60 else text[:57] + "..."


def _conform_value(value: Any, field: pa.Field, where: str) -> Any:
    if value is None:
        return None
    if field.metadata == JSON_FIELD:
        return json_text(value)
    kind = field.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if isinstance(value, str):
            return value
        expected = "a string"
    elif pa.types.is_integer(kind):
        if isinstance(value, int) and not isinstance(value, bool):
            bits = kind.bit_width
            low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if pa.types.is_signed_integer(kind) else (0, 2**bits)
            if low <= value < high:
                return value
            raise ValueError(f"`{where}` = {value} does not fit in {kind}")
        expected = "an integer"
    elif pa.types.is_floating(kind):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
            raise ValueError(f"`{where}` = {value} cannot be held exactly in {kind}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        expected = "a number"
    elif pa.types.is_boolean(kind):
        if isinstance(value, bool):
            return value
        expected = "true or false"
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        if isinstance(value, list):
            item = kind.value_field
            return [_conform_value(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        expected = "a list"
    elif pa.types.is_struct(kind):
        if isinstance(value, dict):
            return conform(value, list(kind), where)
        expected = "an object"
    else:
        raise TypeError(f"unsupported type {kind}")
    raise ValueError(f"`{where}` must be {expected}, got {_describe(value)}")


def conform(record: Any, fields: Iterable[pa.Field], where: str = "") -> dict:
    """Check a parsed JSON record against the declared fields and return the row for Arrow.

    Raises ValueError naming the offending key; unknown keys are an error, never dropped.
    """
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object{' at `' + where + '`' if where else ''}, got {_describe(record)}")
    fields = list(fields)
    names = {field.name for field in fields}
    unknown = [key for key in record if key not in names]
    if unknown:
        place = f" in `{where}`" if where else ""
        raise ValueError(f"unexpected key {unknown[0]!r}{place}; expected only {sorted(names)}")
    prefix = f"{where}." if where else ""
    return {f.name: _conform_value(record.get(f.name), f, prefix + f.name) for f in fields}


def check_required(row: dict, required: Iterable[str]) -> None:
    for name in required:
        if row.get(name) is None:
            raise ValueError(f"missing required field `{name}`")


_JSON_WHITESPACE = b" \t\r\n"
_KEY_END = re.compile(rb'"[ \t\r\n]*:')
"""Ends a key (and, rarely, an escaped quote in a string): its count bounds the number of keys in the text."""
_LONG_INTEGER = re.compile(rb"[0-9]{19}")
"""19 digits or more: a number that orjson may turn into a float (beyond int64 / uint64)."""


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (which value a reader keeps is arbitrary)."""


class UniqueKeyDict(dict):
    """A dict that refuses to set a key twice: the `map_type` for ijson, so that a duplicate key is refused."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self:
            raise DuplicateKeyError(f"duplicate key {key!r} in a JSON object")
        super().__setitem__(key, value)


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    """`object_pairs_hook` for `json.loads`: the object as a dict, or DuplicateKeyError naming the repeated key."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {key!r} in a JSON object")
            seen.add(key)
    return result


def _count_keys(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


UNPAIRED_SURROGATE = "unpaired surrogate escape such as \\ud800 in a string, which UTF-8 cannot hold"


def _json_problem(line: bytes, error: Exception) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at byte {e.start} of the line ({line[e.start:e.start + 4]!r})"
    if "surrogate" in str(error):
        return f"{UNPAIRED_SURROGATE} ({error})"
    return f"invalid JSON ({error})"


def loads_strict(text: bytes) -> Any:
    """One JSON value under the shared rules: ValueError (saying what is wrong) for invalid UTF-8 or JSON, an
    unpaired surrogate escape or a duplicate key; integers of any size kept exact.

    orjson parses; the standard library parses again, refusing duplicate keys and keeping big integers as
    int, only when the text may hold either (more key-like tokens than keys parsed, or a 19-digit run)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ValueError(_json_problem(text, e)) from None
    if _LONG_INTEGER.search(text) or len(_KEY_END.findall(text)) != _count_keys(value):
        value = json.loads(text, object_pairs_hook=refuse_duplicate_keys)
    return value


def json_text(value: Any) -> str:
    """A parsed JSON value as compact JSON text; integers beyond 64 bits stay exact."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _shard_chunks(shard: Shard) -> Iterator[tuple[int, bytes]]:
    with shard.open() as stream:
        yield from iter_line_chunks(stream, shard.name, shard.first_line_number(), skip_bom=shard.start == 0)


def _json_line_records(chunk: bytes, first: int, name: str) -> Iterator[tuple[int, int, Any]]:
    lines = chunk.split(b"\n")
    for number, line in enumerate(lines, start=first):
        if not line.strip(_JSON_WHITESPACE):
            continue
        try:
            value = loads_strict(line)
        except ValueError as e:
            message = str(e)
            if number == first + len(lines) - 1 and message.startswith(("invalid JSON", "invalid UTF-8")):
                # only the file's last chunk can end without a line end; a cut can leave bad JSON or a cut character
                message += "; the file's last line has no line end, as when a file is cut short: download it again"
            raise SourceError(name, message, line=number) from None
        yield number, len(line), value


def iter_json_records(shard: Shard) -> Iterator[tuple[int, int, Any]]:
    """(line number, line length in bytes, parsed value) for each non-blank line of a JSONL shard (loads_strict)."""
    for first, chunk in _shard_chunks(shard):
        yield from _json_line_records(chunk, first, shard.name)


class RowBatcher:
    """Rows gathered into tables of `schema`, each bounded by rows and by bytes; `add` returns a full table."""

    def __init__(self, schema: pa.Schema, *, max_rows: int = 10_000, max_bytes: int = 32 << 20):
        self.schema, self.max_rows, self.max_bytes = schema, max_rows, max_bytes
        self.rows: list[dict] = []
        self.size = 0

    def add(self, row: dict, nbytes: int) -> pa.Table | None:
        """Add one row of about `nbytes` bytes; the batch as a table once it is full, else None."""
        self.rows.append(row)
        self.size += nbytes
        return self.flush() if len(self.rows) >= self.max_rows or self.size >= self.max_bytes else None

    def flush(self) -> pa.Table | None:
        """The rows gathered so far as a table (None if there are none)."""
        if not self.rows:
            return None
        table = pa.Table.from_pylist(self.rows, schema=self.schema)
        self.rows, self.size = [], 0
        return table


def tables_from_rows(
    rows: Iterable[tuple[dict, int]], schema: pa.Schema, *, max_rows: int = 10_000, max_bytes: int = 32 << 20
) -> Iterator[pa.Table]:
    """Group (row, size in bytes) pairs into tables bounded by rows and by bytes."""
    batcher = RowBatcher(schema, max_rows=max_rows, max_bytes=max_bytes)
    for row, nbytes in rows:
        if (table := batcher.add(row, nbytes)) is not None:
            yield table
    if (table := batcher.flush()) is not None:
        yield table


def iter_ipc_batches(paths: Iterable[str]) -> Iterator[pa.RecordBatch]:
    """The record batches of Arrow IPC stream files (datasets' cache files, spools), in order, read with plain
    reads: a memory map would count every page read in the process's RSS, up to the files' size."""
    for path in paths:
        with pa.OSFile(path, "rb") as source:
            yield from pa.ipc.open_stream(source)


def literal_string_list(text: str) -> list[str] | None:
    """A Python list literal of strings ("['a', \"b's\"]") as a list, read with `ast.literal_eval` (never `eval`);
    None when `text` is not such a literal."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


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
    try:  # lines numbered from the shard's start; the file's line number is counted only for an error
        with shard.open() as stream:
            first = 1
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
    except SourceError as e:
        if e.line is None or shard.start == 0:
            raise
        raise SourceError(e.path, e.message, line=e.line + shard.first_line_number() - 1) from None
    if rows == 0 and shard.end is None:
        raise SourceError(shard.name, "no records: the file is empty or holds only blank lines")


def fits_int32(value: int) -> bool:
    return -(2**31) <= value < 2**31


QRELS_SCHEMA = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()), ("score", pa.int32())])
QRELS_HEADER = b"query-id\tcorpus-id\tscore"
_QRELS_TEXT = pa.schema([(name, pa.string()) for name in QRELS_SCHEMA.names])
_SCORE = re.compile(r"-?[0-9]+")


def qrels_fields(line: bytes) -> tuple[str, str, int]:
    """(query-id, corpus-id, score) of one qrels line without its line end; ValueError says what is wrong.

    A score is an optional `-` followed by ASCII digits and fits int32."""
    if b"\r" in line:
        raise ValueError("carriage return inside the line (only a CRLF line end is allowed)")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"invalid UTF-8 at byte {e.start} of the line ({line[e.start:e.start + 4]!r})") from None
    columns = text.split("\t")
    if len(columns) != 3:
        raise ValueError(f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(columns)}")
    query, doc, score = columns
    if not _SCORE.fullmatch(score):
        raise ValueError(f"score must be an integer (an optional '-' followed by ASCII digits), got {score!r}")
    if len(score) > 11 or not fits_int32(int(score)):
        raise ValueError(f"score {score} does not fit in int32")
    return query, doc, int(score)


def _qrels_fast(chunk: bytes) -> pa.Table | None:
    """The chunk parsed by pyarrow, or None (then the line path decides): pyarrow also ends a line at a lone
    CR and skips a BOM at a buffer's start, so such chunks go to the line path."""
    if chunk.count(b"\r") != chunk.count(b"\r\n") or chunk.startswith(_UTF8_BOM):
        return None
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(chunk),
            read_options=pa_csv.ReadOptions(column_names=QRELS_SCHEMA.names, block_size=BLOCK_BYTES, use_threads=False),
            parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False, ignore_empty_lines=True),
            convert_options=pa_csv.ConvertOptions(
                column_types=_QRELS_TEXT, strings_can_be_null=False, quoted_strings_can_be_null=False
            ),
        )
        score = table.column("score")
        if not pc.all(pc.match_substring_regex(score, r"^-?[0-9]+$")).as_py():
            return None
        return table.set_column(2, "score", pc.cast(score, pa.int32())).cast(QRELS_SCHEMA)
    except pa.ArrowInvalid:
        return None


def _qrels_by_line(chunk: bytes, first: int, name: str) -> pa.Table:
    columns: tuple[list, list, list] = ([], [], [])
    for number, line in enumerate(chunk.split(b"\n"), start=first):
        line = line.removesuffix(b"\r")
        if not line:
            continue
        try:
            fields = qrels_fields(line)
        except ValueError as e:
            raise SourceError(name, str(e), line=number) from None
        for column, value in zip(columns, fields):
            column.append(value)
    return pa.Table.from_arrays([pa.array(column, type=f.type) for column, f in zip(columns, QRELS_SCHEMA)],
                                schema=QRELS_SCHEMA)


def _qrels_chunks(shard: Shard) -> Iterator[tuple[int, bytes]]:
    with shard.open() as stream:
        header = stream.readline(len(QRELS_HEADER) + 2)
        if header.removesuffix(b"\n").removesuffix(b"\r") != QRELS_HEADER:
            raise SourceError(shard.name, f"expected the header {QRELS_HEADER.decode()!r}, got {header[:80]!r}", line=1)
        yield from iter_line_chunks(stream, shard.name, 2)


def read_qrels(shard: Shard) -> Iterator[pa.Table]:
    """A BEIR qrels TSV (header `query-id<TAB>corpus-id<TAB>score`) as (string, string, int32) tables."""
    for first, chunk in _qrels_chunks(shard):
        table = _qrels_fast(chunk)
        if table is None:
            table = _qrels_by_line(chunk, first, shard.name)
        if table.num_rows:
            yield table


def _ijson_backend() -> Any:
    """The fastest ijson backend installed; the C one parses a big array about twice as fast as `json.load`."""
    for name in ("yajl2_c", "yajl2_cffi", "yajl2"):
        try:
            return ijson.get_backend(name)
        except ImportError:
            continue
    return ijson.get_backend("python")


JSON_ARRAY_BACKEND = _ijson_backend()


def _first_bytes(stream: BinaryIO, buf_size: int) -> bytes:
    """The first block of a stream that holds something other than whitespace (b"" if none), BOM dropped."""
    head = stream.read(buf_size)
    if len(head) < len(_UTF8_BOM):
        head += stream.read(len(_UTF8_BOM))
    head = head.removeprefix(_UTF8_BOM)
    while not head.strip(_JSON_WHITESPACE):
        head = stream.read(buf_size)
        if not head:
            break
    return head


def _json_error_detail(error: Exception) -> str:
    detail = error.args[0] if error.args else ""
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    lines = str(detail).strip().splitlines()
    return lines[0] if lines else type(error).__name__


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
    start = chunk.lstrip(_JSON_WHITESPACE)[:1]
    if start != b"[":
        found = repr(start.decode("latin-1")) if start else "an empty file"
        raise SourceError(name, f"expected a JSON array (a file starting with '['), found {found}")
    parsed = ijson.sendable_list()
    parser = JSON_ARRAY_BACKEND.items_coro(parsed, "item", use_float=True, map_type=UniqueKeyDict)
    done = 0
    while chunk:
        batch = _send(parser, parsed, chunk, name, done)
        if batch:
            yield done, batch
            done += len(batch)
        chunk = stream.read(buf_size)
    if batch := _send(parser, parsed, None, name, done):
        yield done, batch


def _send(parser: Any, parsed: list, chunk: bytes | None, name: str, done: int) -> list[Any]:
    """Push `chunk` (None: the end) into the array parser; the elements it completed. Errors become SourceError
    naming the element: invalid JSON, invalid UTF-8 or an unpaired surrogate escape, a duplicate key."""
    try:
        if chunk is None:
            parser.close()
        else:
            parser.send(chunk)
    except ijson.JSONError as e:
        index = done + len(parsed)
        raise SourceError(name, _array_error(_json_error_detail(e), index), record=index) from None
    except DuplicateKeyError as e:
        index = done + len(parsed)
        raise SourceError(name, f"{e} in record {index}", record=index) from None
    except UnicodeDecodeError as e:
        index = done + len(parsed)
        message = f"invalid UTF-8 or an unpaired surrogate escape (such as \\ud800) in record {index} ({e.reason})"
        raise SourceError(name, message, record=index) from None
    batch = list(parsed)
    del parsed[:]
    return batch


def _array_error(detail: str, index: int) -> str:
    if "premature EOF" in detail or "Incomplete" in detail:
        return f"truncated JSON array: the file ends inside record {index} or before the closing ']' ({detail})"
    if "trailing garbage" in detail or "Additional data" in detail:
        return f"data after the end of the JSON array, which holds {index} records ({detail})"
    return f"invalid JSON in record {index} ({detail})"


def iter_json_array(stream: BinaryIO, name: str, *, buf_size: int = BLOCK_BYTES) -> Iterator[tuple[int, Any]]:
    """(index, value) for each element of a top-level JSON array, parsed as a stream (see iter_json_array_batches)."""
    for first, values in iter_json_array_batches(stream, name, buf_size=buf_size):
        yield from enumerate(values, start=first)


def array_elements_before(stream: BinaryIO, name: str, limit: int, *, buf_size: int = BLOCK_BYTES) -> int:
    """How many elements of the top-level JSON array in `stream` are complete within its first `limit` bytes:
    the index of the element holding byte `limit`. Errors before it raise SourceError as in iter_json_array."""
    parsed = ijson.sendable_list()
    parser = JSON_ARRAY_BACKEND.items_coro(parsed, "item", use_float=True, map_type=UniqueKeyDict)
    done, left, first = 0, limit, True
    while left > 0 and (chunk := stream.read(min(buf_size, left))):
        left -= len(chunk)
        if first:
            chunk, first = chunk.removeprefix(_UTF8_BOM), False
        done += len(_send(parser, parsed, chunk, name, done))
    return done + len(parsed)
