"""Readers shared by every benchmark: JSON lines and TSV into Arrow tables, in bounded batches.

Clean files go through pyarrow's streaming readers with an explicit schema (ids stay strings, no
Python per row). When pyarrow refuses a block, the same shard is read again line by line with
orjson, which either pinpoints the bad line in a SourceError or, for a legal file pyarrow cannot
handle (a line longer than its block), produces the remaining rows itself.
"""

from __future__ import annotations

import ast
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import ijson
import orjson
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json

from .errors import SourceError
from .sources import RangeReader, SourceFiles, line_aligned_ranges

BLOCK_BYTES = 1 << 20
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
        if self.start == 0:
            return 1
        with open(self.files.local_path(self.relpath), "rb") as f:
            newlines, left = 0, self.start
            while left > 0:
                chunk = f.read(min(BLOCK_BYTES, left))
                newlines += chunk.count(b"\n")
                left -= len(chunk)
        return newlines + 1


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


def _describe(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _conform_value(value: Any, field: pa.Field, where: str) -> Any:
    if value is None:
        return None
    if field.metadata == JSON_FIELD:
        return orjson.dumps(value).decode()
    kind = field.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if isinstance(value, str):
            return value
        expected = "a string"
    elif pa.types.is_integer(kind):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        expected = "an integer"
    elif pa.types.is_floating(kind):
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


def _json_problem(line: bytes, error: orjson.JSONDecodeError) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at byte {e.start} of the line ({line[e.start:e.start + 4]!r})"
    return f"invalid JSON ({error})"


def iter_json_records(shard: Shard) -> Iterator[tuple[int, int, Any]]:
    """(line number, line length in bytes, parsed value) for each non-blank line of a JSONL shard."""
    first = shard.first_line_number()
    with shard.open() as stream:
        for number, line in iter_lines(stream, shard.name, first):
            if not line.strip():
                continue
            try:
                yield number, len(line), orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise SourceError(shard.name, _json_problem(line, e), line=number) from None


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


def conformed_rows(
    shard: Shard, schema: pa.Schema, required: Iterable[str], skip: int = 0
) -> Iterator[tuple[dict, int]]:
    required = tuple(required)
    for index, (number, nbytes, record) in enumerate(iter_json_records(shard)):
        if index < skip:
            continue
        try:
            row = conform(record, schema)
            check_required(row, required)
        except ValueError as e:
            raise SourceError(shard.name, str(e), line=number) from None
        yield row, nbytes


def read_jsonl(shard: Shard, schema: pa.Schema, required: Iterable[str] = ()) -> Iterator[pa.Table]:
    """Tables of `schema` from a JSONL shard; `required` columns may not be missing or null."""
    required = tuple(required)
    if any(field.metadata == JSON_FIELD for field in schema):
        yield from tables_from_rows(conformed_rows(shard, schema, required), schema)
        return
    rows_done = 0
    parse_options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    try:
        with shard.open() as stream:
            reader = pa_json.open_json(
                stream, read_options=pa_json.ReadOptions(block_size=BLOCK_BYTES, use_threads=True),
                parse_options=parse_options,
            )
            for batch in reader:
                if any(batch.column(name).null_count for name in required):
                    raise pa.ArrowInvalid("null in a required column")
                batch.validate(full=True)  # pyarrow's JSON reader lets invalid UTF-8 through; this refuses it
                rows_done += batch.num_rows
                yield pa.Table.from_batches([batch])
    except pa.ArrowInvalid:
        yield from tables_from_rows(conformed_rows(shard, schema, required, skip=rows_done), schema)


def fits_int32(value: int) -> bool:
    return -(2**31) <= value < 2**31


QRELS_SCHEMA = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()), ("score", pa.int32())])
QRELS_HEADER = b"query-id\tcorpus-id\tscore"


def _check_qrels_line(line: bytes) -> None:
    text = line.decode("utf-8")
    columns = text.split("\t")
    if len(columns) != 3:
        raise ValueError(f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(columns)}")
    try:
        score = int(columns[2])
    except ValueError:
        raise ValueError(f"score must be an integer, got {columns[2]!r}") from None
    if not fits_int32(score):
        raise ValueError(f"score {score} does not fit in int32")


def read_qrels(shard: Shard) -> Iterator[pa.Table]:
    """A BEIR qrels TSV (header `query-id<TAB>corpus-id<TAB>score`) as (string, string, int32) tables."""
    with shard.open() as stream:
        header = stream.readline().rstrip(b"\r\n")
    if header != QRELS_HEADER:
        raise SourceError(shard.name, f"expected the header {QRELS_HEADER.decode()!r}, got {header[:80]!r}", line=1)
    try:
        with shard.open() as stream:
            reader = pa_csv.open_csv(
                stream,
                read_options=pa_csv.ReadOptions(
                    skip_rows=1, column_names=QRELS_SCHEMA.names, block_size=BLOCK_BYTES, use_threads=True
                ),
                parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False, ignore_empty_lines=True),
                convert_options=pa_csv.ConvertOptions(
                    column_types=QRELS_SCHEMA, strings_can_be_null=False, quoted_strings_can_be_null=False
                ),
            )
            for batch in reader:
                yield pa.Table.from_batches([batch]).cast(QRELS_SCHEMA)
    except (pa.ArrowInvalid, UnicodeDecodeError):
        _raise_qrels_error(shard)
        raise


def _raise_qrels_error(shard: Shard) -> None:
    with shard.open() as stream:
        for number, line in iter_lines(stream, shard.name):
            if number == 1 or not line:
                continue
            try:
                _check_qrels_line(line)
            except (ValueError, UnicodeDecodeError) as e:
                raise SourceError(shard.name, str(e), line=number) from None




def _ijson_backend() -> Any:
    """The fastest ijson backend installed; the C one parses a big array about twice as fast as `json.load`."""
    for name in ("yajl2_c", "yajl2_cffi", "yajl2"):
        try:
            return ijson.get_backend(name)
        except ImportError:
            continue
    return ijson.get_backend("python")


JSON_ARRAY_BACKEND = _ijson_backend()
_JSON_WHITESPACE = b" \t\r\n"
_UTF8_BOM = b"\xef\xbb\xbf"


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
    parser = JSON_ARRAY_BACKEND.items_coro(parsed, "item", use_float=True)
    done = 0
    try:
        while chunk:
            parser.send(chunk)
            if parsed:
                batch = list(parsed)
                del parsed[:]
                yield done, batch
                done += len(batch)
            chunk = stream.read(buf_size)
        parser.close()
    except ijson.JSONError as e:
        index = done + len(parsed)
        raise SourceError(name, _array_error(_json_error_detail(e), index), record=index) from None
    if parsed:
        yield done, list(parsed)


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
