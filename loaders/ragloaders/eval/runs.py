r"""Retrieval runs: read a TREC run file or a `query-id`/`corpus-id`/`score` table, and write one.

A run is held as pytrec_eval takes it, `{query id: {document id: score}}`, with ids as the exact
strings of the file. Anything malformed (a short line, a score that is not a finite number, a
document listed twice for one query, bytes that are not UTF-8) is a SourceError naming the file and
the line or record (and the field); nothing is skipped.

An id holding a NUL byte is refused in every format (trec_eval's C code would end the id there).

A TREC run is read by trec_eval's rule, byte by byte (no Unicode notion of space or digit):
- a line ends at LF, the last one at the end of the file; CRs just before that end (the LF, or the end
  of the file) are part of the line end, as trec_eval's `isspace` skips them after the last field and
  every line reader ends a line there. Any other CR, and a vertical tab or form feed (whitespace to
  trec_eval's `isspace`), is refused: tools split on them differently;
- fields are separated by runs of ASCII space and tab (leading and trailing ones ignored), and there
  are six: `query-id Q0 doc-id rank score tag`. Every other byte belongs to a field, so an id may hold
  NBSP or \x1c exactly as written;
- a UTF-8 byte order mark at the very start of the file is skipped (it is never part of the first
  query id); anywhere else it is part of a field;
- rank = `[+-]?[0-9]+` (ASCII digits only: no `1_000`, no Arabic-Indic or full-width digits);
- score = `[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?` (ASCII), finite as a double: no `inf`,
  `nan`, `1e999`, `0x1p3`, `1_000`.
JSONL and Parquet runs hold their fields as JSON or Arrow values: a score is a JSON number or a numeric
column, never text, and a JSONL file's BOM is skipped as in every JSONL ragloaders reads.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import stringzilla as sz

from ..core.errors import ContentError, SourceError, UsageError
from ..core.output_target import write_new_file
from ..core.preview import invalid_utf8, one_line, preview
from ..core.readers.jsonl import Shard, iter_json_records
from ..core.readers.lines import UTF8_BOM, iter_lines
from ..core.readers.values import conform
from ..core.source_files import SourceFiles

Run = dict[str, dict[str, float]]
"""query id -> {document id: score}: the shape pytrec_eval evaluates."""

RUN_ITEM = "corpus-id"
"""The column a retrieval run table ranks: documents (a routing run ranks `dataset`s)."""


def run_table_schema(item: str = RUN_ITEM) -> pa.Schema:
    """The columns of a run table that ranks `item`s: `query-id`, `item`, `score`."""
    return pa.schema([("query-id", pa.string()), (item, pa.string()), ("score", pa.float64())])


RUN_SCHEMA = run_table_schema()
TABLE_FORMATS = {".parquet": "parquet", ".jsonl": "jsonl"}
"""File suffix -> table format; any other suffix is a TREC run (`qid Q0 docid rank score tag`)."""
TREC_FIELDS = "query-id Q0 doc-id rank score tag"
DEFAULT_TAG = "ragloaders"


def run_format(path: str) -> str:
    """`parquet`, `jsonl` or `trec`, from the file's suffix."""
    return TABLE_FORMATS.get(os.path.splitext(path)[1].lower(), "trec")


COMPRESSED = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip"}
"""Leading bytes of compressed files, which no text run begins with."""


def require_run_file(path: str, what: str = "run") -> None:
    """FileNotFoundError when there is nothing at `path`, UsageError when it is a folder or not a regular file (a
    FIFO is never opened, so never waited on), or a TREC or JSONL run that is a compressed file (its first line was
    refused for a control character, with no word of why)."""
    if not os.path.isfile(path):
        if os.path.lexists(path):
            kind = "a folder" if os.path.isdir(path) else "not a regular file"
            raise UsageError(f"{path}: a {what} is a file, and this is {kind}")
        raise FileNotFoundError(f"{path}: no such {what} file")
    if run_format(path) != "parquet":
        with open(path, "rb") as f:
            start = f.read(10)
        compressed = next((name for magic, name in COMPRESSED.items() if start.startswith(magic)), None)
        if compressed is None and start[:3] == b"BZh" and start[4:10] == b"1AY&SY":
            compressed = "bzip2"
        if compressed:
            raise UsageError(f"{path}: a {compressed}-compressed file; a {what} is read as plain text (or .parquet, "
                             ".jsonl): decompress it first")


def read_run(path: str) -> Run:
    """A run file (TREC, `.parquet` or `.jsonl`) as `{query id: {document id: score}}`."""
    path = os.fspath(path)
    require_run_file(path)
    fmt = run_format(path)
    if fmt == "trec":
        return read_trec_run(path)
    return read_run_table(path)


def read_run_table(path: str, *, item: str = RUN_ITEM, what: str = "run") -> Run:
    """A `.parquet` or `.jsonl` table of `query-id`, `item`, `score` as `{query id: {item: score}}`; `what` names
    the table in errors (`run`, `routing run`)."""
    schema = run_table_schema(item)
    if run_format(path) == "parquet":
        return run_of_rows(path, _parquet_rows(path, schema, what), unit="record", item=item)
    return run_of_rows(path, _jsonl_rows(path, schema), unit="line", item=item)


def checked_run(run: dict) -> Run:
    """A run given in Python, checked: ids are strings (never converted), scores finite numbers (as floats)."""
    checked: Run = {}
    for query_id, docs in run.items():
        if not isinstance(query_id, str) or not isinstance(docs, dict):
            raise UsageError(f"a run maps query ids (strings) to {{document id: score}}; got {preview(query_id)}: "
                             f"{type(docs).__name__}")
        for doc_id, score in docs.items():
            if not isinstance(doc_id, str):
                raise UsageError(f"query {preview(query_id)}: document id {preview(doc_id)} is not a string")
            if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
                raise UsageError(f"query {preview(query_id)}, document {preview(doc_id)}: score must be a finite "
                                 f"number, got {preview(score)}")
        checked[query_id] = {doc_id: float(score) for doc_id, score in docs.items()}
    return checked


_TREC_SEPARATOR = re.compile(rb"[ \t]+")
_TREC_RANK = re.compile(rb"[+-]?[0-9]+")
_TREC_SCORE = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TREC_REFUSED = {b"\r": "a carriage return", b"\x0b": "a vertical tab", b"\x0c": "a form feed"}
"""Bytes trec_eval takes for whitespace that do not separate fields here: refused wherever they are."""


def trec_fields(line: bytes) -> tuple[str, str, float]:
    """(query id, document id, score) of one TREC run line without its line end (module docstring's rule);
    ValueError naming the field and what is wrong."""
    fields = _TREC_SEPARATOR.split(line.strip(b" \t"))
    if fields == [b""]:
        fields = []
    names = TREC_FIELDS.split()
    for byte, what in _TREC_REFUSED.items():
        if byte in line:
            where = next((f"field {i} ({names[i - 1]})" for i, f in enumerate(fields[:6], 1) if byte in f), "a field")
            raise ContentError(f"{where} holds {what}, which does not separate fields (only spaces and tabs do)")
    if len(fields) != 6:
        raise ContentError(f"expected 6 fields separated by spaces or tabs ({TREC_FIELDS}), got {len(fields)}")
    text = []
    for index, field in enumerate(fields, 1):
        try:
            text.append(field.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ContentError(f"field {index} ({names[index - 1]}): "
                               + invalid_utf8(field, e.start, " of the field")) from None
    query_id, _, doc_id, rank, score, _ = text
    if not _TREC_RANK.fullmatch(fields[3]):
        raise ContentError(f"field 4 (rank) must be an integer in ASCII digits, got {preview(rank)}")
    value = float(score) if _TREC_SCORE.fullmatch(fields[4]) else math.nan
    if not math.isfinite(value):
        raise ContentError(f"field 5 (score) must be a finite number in ASCII decimal or exponent notation, "
                           f"got {preview(score)}")
    return query_id, doc_id, value


def read_trec_run(path: str, *, item: str = RUN_ITEM) -> Run:
    """A TREC run: read with Arrow when the file is in the common form (`_read_plain_trec`), else line by line; the
    line-by-line reader also gives every error, so errors are the same in both. `item`: what the run ranks, as a
    run table names its column (errors call a `corpus-id` a document)."""
    run = _read_plain_trec(path)
    return run if run is not None else _read_trec_lines(path, item)


PLAIN_TREC_BLOCK = 16 << 20
"""Bytes read at once by the Arrow reader of a TREC run (and by the scan before it)."""
_NOT_PLAIN = (b"\t", b"\x0b", b"\x0c", b"\x00")
"""Bytes that send a TREC run to the line-by-line reader: separators Arrow's CSV reader does not split on, bytes
that line reader refuses."""
_TREC_COLUMNS = ("query", "q0", "doc", "rank", "score", "tag")
"""The six fields, each converted to a string (so each is checked to be UTF-8, as the line reader checks them)."""
_RANK_PATTERN = "^" + _TREC_RANK.pattern.decode() + "$"
_SCORE_PATTERN = "^" + _TREC_SCORE.pattern.decode() + "$"


def _plain_bytes(path: str) -> bool:
    """Whether the file holds no byte of _NOT_PLAIN, no BOM, and no CR but before an LF (stringzilla counts)."""
    with open(path, "rb") as f:
        if f.read(len(UTF8_BOM)) == UTF8_BOM:
            return False
        f.seek(0)
        while block := f.read(PLAIN_TREC_BLOCK):
            if any(sz.count(block, byte) for byte in _NOT_PLAIN):
                return False
            if sz.count(block, b"\r") != sz.count(block, b"\r\n"):
                return False
    return True


def _open_plain_trec(path: str, block_size: int) -> pa_csv.CSVStreamingReader:
    """pyarrow's streaming CSV reader of a TREC run in the plain form: six fields split by one space, each a string
    (so each is checked to be UTF-8), `block_size` bytes a batch; ArrowInvalid on a line of another form."""
    read = pa_csv.ReadOptions(column_names=list(_TREC_COLUMNS), block_size=block_size)
    parse = pa_csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, double_quote=False,
                                newlines_in_values=False, ignore_empty_lines=False)
    convert = pa_csv.ConvertOptions(column_types={name: pa.string() for name in _TREC_COLUMNS}, null_values=[],
                                    strings_can_be_null=False)
    return pa_csv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert)


def _read_plain_trec(path: str) -> Run | None:
    """A TREC run whose lines are 6 fields separated by one space each, read with pyarrow's CSV reader and checked
    with Arrow kernels (UTF-8, the rank and score patterns, finite scores); None when the file is not in that form
    or breaks any rule (a duplicate document included), for the line-by-line reader to read or to name the line.
    What it returns equals what that reader returns: ids as the bytes decoded, scores as `float` parses them
    (both round correctly)."""
    if not _plain_bytes(path):
        return None
    run: Run = {}
    try:
        with _open_plain_trec(path, PLAIN_TREC_BLOCK) as reader:
            for batch in reader:
                if not _add_plain_batch(run, batch):
                    return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # a line of another form; invalid UTF-8; empty file
        return None
    return run


def _plain_values(batch: pa.RecordBatch) -> tuple[pa.Array, pa.Array, pa.Array] | None:
    """(query ids, document ids, scores as float64) of a batch of `_read_plain_trec`'s CSV reader; None if a rank or
    score breaks the rules or a score is not finite."""
    if any(pc.any(pc.equal(pc.binary_length(column), 0)).as_py() for column in batch.columns):
        return None  # an empty field: a space too many (at the start or end of a line), which the line reader names
    query, doc, rank, score = (batch.column(name) for name in ("query", "doc", "rank", "score"))
    plain_ranks = pc.all(pc.ascii_is_decimal(rank)).as_py()  # (the usual ranks, 10x faster than the regex)
    for column, pattern in ((score, _SCORE_PATTERN), *(() if plain_ranks else ((rank, _RANK_PATTERN),))):
        if not pc.all(pc.match_substring_regex(column, pattern)).as_py():
            return None
    values = pc.cast(score, pa.float64())
    if not pc.all(pc.is_finite(values)).as_py():
        return None
    return query, doc, values


def _add_plain_batch(run: Run, batch: pa.RecordBatch) -> bool:
    """Add one batch of `_read_plain_trec` to `run`; False if a field breaks the rules or a document repeats."""
    checked = _plain_values(batch)
    if checked is None:
        return False
    query, doc, values = checked
    # (No field is empty: two separators in a row, or one at either end of a line, make a 7th column.)
    starts = [0, *(np.flatnonzero(pc.not_equal(query[1:], query[:-1]).to_numpy(zero_copy_only=False)) + 1).tolist()]
    queries, docs, scores = query.take(starts).to_pylist(), doc.to_pylist(), values.to_pylist()
    for query_id, start, end in zip(queries, starts, [*starts[1:], len(docs)]):
        ranked = dict(zip(docs[start:end], scores[start:end]))
        if len(ranked) != end - start:
            return False
        known = run.setdefault(query_id, ranked)
        if known is not ranked:
            if not known.keys().isdisjoint(ranked):
                return False
            known.update(ranked)
    return True


def _read_trec_lines(path: str, item: str = RUN_ITEM) -> Run:
    """A TREC run read line by line (trec_fields), every error naming its line."""
    run: Run = {}
    with open(path, "rb") as stream:
        for number, line in iter_lines(stream, path):
            if number == 1:
                line = line.removeprefix(UTF8_BOM)
            try:
                query_id, doc_id, value = trec_fields(line)
            except ValueError as e:
                raise SourceError(path, str(e), line=number) from None
            _add(run, query_id, doc_id, value, path, _ranked(item), line=number)
    return run


def _ranked(item: str) -> str:
    """What errors call an `item` a run ranks: a document (`corpus-id`), else the column's name (`dataset`)."""
    return "document" if item == RUN_ITEM else item


def _add(run: Run, query_id: str, doc_id: str, score: float, path: str, ranked: str = "document",
         **where: int) -> None:
    for what, value in (("query id", query_id), (f"{ranked} id", doc_id)):
        if "\0" in value:
            raise SourceError(path, f"{what} {preview(value)} holds a NUL byte, which trec_eval cannot hold", **where)
    docs = run.setdefault(query_id, {})
    if doc_id in docs:
        raise SourceError(path, f"{ranked} {preview(doc_id)} is listed twice for query {preview(query_id)}", **where)
    docs[doc_id] = score


Row = tuple[int, str | None, str | None, float | None]
"""(record or line number, query id, ranked item, score) of a run table, None where the table holds null."""


def run_of_rows(path: str, rows: Iterable[Row], *, unit: str, item: str = RUN_ITEM) -> Run:
    """The run of a table's rows: every value present (`item` names the ranked column in errors), scores finite,
    no item twice for a query; a SourceError naming the file and the `unit` (`record`, `line`) otherwise."""
    run: Run = {}
    for index, query_id, doc_id, score in rows:
        where = {unit: index}
        for name, value in (("query-id", query_id), (item, doc_id), ("score", score)):
            if value is None:
                raise SourceError(path, f"`{name}` is missing (null)", **where)
        if not math.isfinite(score):
            raise SourceError(path, f"score must be a finite number, got {preview(score)}", **where)
        _add(run, query_id, doc_id, score, path, _ranked(item), **where)
    return run


STREAM_BLOCK = 1 << 20
"""Bytes of a TREC run parsed at once by `iter_run` (its Arrow batches; Parquet is read 65,536 records at once)."""


def iter_run(path: str) -> Iterator[tuple[str, dict[str, float]]]:
    """The queries of a run file (TREC, `.parquet` or `.jsonl`) one at a time, in the file's order, each with its
    `{document id: score}` in the file's order: what `read_run` gives, item by item, without holding the run.

    Every line or record is checked by the rules of `read_run`, in the file's order, with the same errors (a
    SourceError naming the file and the line or record). One more rule: the lines of a query must be together, as
    every TREC tool writes them; a query that comes back after another is a SourceError naming the line and the
    last line of its earlier block (sort the run by query id first). Memory: one batch of lines (STREAM_BLOCK
    bytes, or 65,536 Parquet records), one query's documents, and the ids of the queries already given."""
    path = os.fspath(path)
    require_run_file(path)
    fmt = run_format(path)
    if fmt == "trec":
        return _grouped(path, _trec_rows(path), "line")
    if fmt == "parquet":
        return _grouped(path, _parquet_rows(path, RUN_SCHEMA, "run"), "record")
    return _grouped(path, _jsonl_rows(path, RUN_SCHEMA), "line")


def _grouped(path: str, rows: Iterable[Row], unit: str) -> Iterator[tuple[str, dict[str, float]]]:
    """`rows` as (query id, {document id: score}) per block of one query, each row checked as `run_of_rows` checks
    it, when it is read; a query id met again after a block of another is a SourceError."""
    ended: dict[str, int] = {}
    block: Run = {}
    current: str | None = None
    last = 0
    for row in rows:
        number, query_id, doc_id, score = row
        if query_id is None or doc_id is None or score is None or not math.isfinite(score):
            run_of_rows(path, [row], unit=unit)  # raises the error of that row
        if query_id != current or not block:
            if block:
                yield current, block.pop(current)
                ended[current] = last
            if query_id in ended:
                raise SourceError(path, f"query {preview(query_id)} comes back after other queries (its earlier "
                                        f"{unit}s end at {unit} {ended[query_id]:,}); the run is read one query at a "
                                        "time, so each query's lines must be together: sort the run by query id "
                                        "first (`LC_ALL=C sort -s -k1,1` keeps each query's order)", **{unit: number})
            current = query_id
        _add(block, query_id, doc_id, score, path, **{unit: number})
        last = number
    if block:
        yield current, block.pop(current)


def _trec_rows(path: str) -> Iterator[Row]:
    """The rows of a TREC run: read with Arrow while the file is in the common form (`_read_plain_trec`'s checks,
    a batch at a time), and from the first batch that is not, line by line (`trec_fields`), which names every
    error."""
    done = 0
    if _plain_bytes(path):
        try:
            with _open_plain_trec(path, STREAM_BLOCK) as reader:
                for batch in reader:
                    values = _plain_values(batch)
                    if values is None:
                        break
                    query, doc, score = (column.to_pylist() for column in values)
                    yield from zip(range(done + 1, done + len(query) + 1), query, doc, score)
                    done += len(query)
                else:
                    return
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    with open(path, "rb") as stream:
        for number, line in iter_lines(stream, path):
            if number <= done:
                continue
            if number == 1:
                line = line.removeprefix(UTF8_BOM)
            try:
                yield (number, *trec_fields(line))
            except ValueError as e:
                raise SourceError(path, str(e), line=number) from None


def _check_columns(path: str, schema: pa.Schema, expected: pa.Schema, what: str) -> None:
    names = schema.names
    unexpected = [name for name in names if name not in expected.names]
    missing = [name for name in expected.names if name not in names]
    if missing or unexpected:
        raise SourceError(path, f"a {what} table has the columns {', '.join(expected.names)}; "
                                f"missing {missing}, unexpected {unexpected}")
    for name in expected.names[:2]:
        kind = schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise SourceError(path, f"column `{name}` must hold strings (ids are strings byte for byte), got {kind}")
    kind = schema.field("score").type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        raise SourceError(path, f"column `score` must be numeric, got {kind}")


def _table_rows(tables: Iterable[pa.Table], schema: pa.Schema) -> Iterator[Row]:
    index = 0
    for table in tables:
        columns = [table.column(name).to_pylist() for name in schema.names]
        for query_id, doc_id, score in zip(*columns):
            index += 1
            yield index, query_id, doc_id, None if score is None else float(score)


def _parquet_rows(path: str, schema: pa.Schema, what: str) -> Iterator[Row]:
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise SourceError(path, f"not a readable Parquet file ({e})") from None
    _check_columns(path, parquet.schema_arrow, schema, what)
    return _table_rows(_parquet_tables(path, parquet, schema.names), schema)


def _parquet_tables(path: str, parquet: pq.ParquetFile, columns: list[str]) -> Iterator[pa.Table]:
    """The file's rows in tables of up to 65,536; a SourceError naming the file and the first row not read where
    its data is damaged (pyarrow says only 'Unexpected end of stream')."""
    rows = 0
    batches = parquet.iter_batches(batch_size=65_536, columns=columns)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as e:
            raise SourceError(path, f"a damaged Parquet file: its rows from row {rows + 1} do not read "
                                    f"({one_line(e, 200)})") from None
        rows += batch.num_rows
        yield pa.Table.from_batches([batch])


def _jsonl_rows(path: str, schema: pa.Schema) -> Iterator[Row]:
    folder, name = os.path.split(os.path.abspath(path))
    for number, _, record in iter_json_records(Shard(SourceFiles(folder), name)):
        unknown = [key for key in record if key not in schema.names] if isinstance(record, dict) else []
        if unknown:
            raise SourceError(path, f"expected an object with exactly the keys {', '.join(schema.names)}; "
                                    f"unexpected key {preview(unknown[0])}", line=number)
        try:
            row = conform(record, schema)
        except ValueError as e:
            raise SourceError(path, str(e), line=number) from None
        query_id, item, score = (row[name] for name in schema.names)
        yield number, query_id, item, None if score is None else float(score)


_TREC_UNWRITABLE = re.compile(r"[ \t\n\r\x0b\x0c\x00]")
"""What `trec_fields` splits on (space, tab), ends a line at (LF) or refuses (CR, VT, FF, and NUL, which trec_eval
cannot hold). Any other character, NBSP or U+001C included, is read back inside its field."""


NUL_UNSCORABLE = ("holds a NUL byte, which no run format carries to `ragloaders eval` (trec_eval ends an id there); "
                  "give it another id")


def refuse_nul(value: str, what: str) -> None:
    """UsageError for an id holding a NUL, which eval refuses in a run of any format (trec_eval ends an id there)."""
    if "\0" in value:
        raise UsageError(f"{what} {preview(value)} {NUL_UNSCORABLE}")


def check_trec_id(value: str, what: str, *, starts_file: bool = False) -> None:
    """Refuse exactly the ids a TREC run could not give back as written: empty, holding a character of
    _TREC_UNWRITABLE or a lone surrogate (not UTF-8), or, `starts_file`, beginning with U+FEFF (read as the BOM)."""
    refuse_nul(value, what)
    if not value or _TREC_UNWRITABLE.search(value):
        raise UsageError(f"{what} {preview(value)} is empty or holds a space, tab, line end, vertical tab or form "
                         "feed, which a TREC run cannot hold; write the run as .parquet or .jsonl instead")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{what} {preview(value)} holds a lone surrogate, which UTF-8 cannot encode") from None
        if starts_file and value.startswith("\ufeff"):
            raise UsageError(f"{what} {preview(value)} starts with U+FEFF, which a reader takes for the byte order "
                             f"mark "
                             "at the start of a TREC run; write the run as .parquet or .jsonl instead")


def write_run(
    path: str, rankings: Iterable[tuple[str, Sequence[str], Sequence[float]]], *, tag: str = DEFAULT_TAG
) -> int:
    """Write (query id, document ids in rank order, their scores) as a TREC run, or as a table when `path` ends
    in `.parquet` or `.jsonl`; returns the number of lines or rows. The file appears only when complete, and never
    over an existing file."""
    path = os.fspath(path)
    fmt = run_format(path)
    writer = {"trec": _write_trec, "parquet": _write_parquet, "jsonl": _write_jsonl}[fmt]
    return write_new_file(path, lambda partial: writer(partial, rankings, tag))


def _write_trec(path: str, rankings: Iterable[tuple[str, Sequence[str], Sequence[float]]], tag: str) -> int:
    check_trec_id(tag, "run tag")
    count = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for query_id, doc_ids, scores in rankings:
            check_trec_id(query_id, "query id", starts_file=count == 0 and bool(doc_ids))
            for doc_id in doc_ids:
                check_trec_id(doc_id, "document id")
            # %.9g: distinct float32 scores stay distinct and equal ones equal (ties survive the round trip)
            f.writelines([f"{query_id} Q0 {doc_id} {rank} {score:.9g} {tag}\n"
                          for rank, (doc_id, score) in enumerate(zip(doc_ids, scores), start=1)])
            count += len(doc_ids)
    return count


def _table_batches(rankings: Iterable[tuple[str, Sequence[str], Sequence[float]]]) -> Iterator[pa.Table]:
    columns: tuple[list, list, list] = ([], [], [])
    for query_id, doc_ids, scores in rankings:
        refuse_nul(query_id, "query id")
        for doc_id in doc_ids:
            refuse_nul(doc_id, "document id")
        columns[0].extend([query_id] * len(doc_ids))
        columns[1].extend(doc_ids)
        columns[2].extend(float(s) for s in scores)
        if len(columns[0]) >= 100_000:
            yield pa.Table.from_arrays([pa.array(c, t.type) for c, t in zip(columns, RUN_SCHEMA)], schema=RUN_SCHEMA)
            columns = ([], [], [])
    yield pa.Table.from_arrays([pa.array(c, t.type) for c, t in zip(columns, RUN_SCHEMA)], schema=RUN_SCHEMA)


def _write_parquet(path: str, rankings: Iterable[tuple[str, Sequence[str], Sequence[float]]], tag: str) -> int:
    count = 0
    with pq.ParquetWriter(path, RUN_SCHEMA) as writer:
        for table in _table_batches(rankings):
            writer.write_table(table)
            count += table.num_rows
    return count


def _write_jsonl(path: str, rankings: Iterable[tuple[str, Sequence[str], Sequence[float]]], tag: str) -> int:
    count = 0
    with open(path, "wb") as f:
        for query_id, doc_ids, scores in rankings:
            refuse_nul(query_id, "query id")
            for doc_id, score in zip(doc_ids, scores):
                refuse_nul(doc_id, "document id")
                f.write(orjson.dumps({"query-id": query_id, "corpus-id": doc_id, "score": float(score)}) + b"\n")
                count += 1
    return count
