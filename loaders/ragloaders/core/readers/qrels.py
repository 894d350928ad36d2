"""BEIR qrels TSV (header `query-id<TAB>corpus-id<TAB>score`, after a UTF-8 BOM if the file starts with one) into
(string, string, int32) tables.

A score is an optional `-` followed by ASCII digits that fits int32; fields are separated by tabs only; a carriage
return anywhere but just before the line end is refused. pyarrow's CSV reader parses a chunk; the line path decides
any chunk it refuses or could read differently."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ..errors import ContentError, SourceError
from ..preview import invalid_utf8, preview
from .jsonl import Shard
from .lines import BLOCK_BYTES, UTF8_BOM, iter_line_chunks, out_of_memory
from .values import fits_int32

QRELS_SCHEMA = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()), ("score", pa.int32())])
QRELS_HEADER = b"query-id\tcorpus-id\tscore"
_QRELS_TEXT = pa.schema([(name, pa.string()) for name in QRELS_SCHEMA.names])
_SCORE = re.compile(r"-?[0-9]+")


def qrels_fields(line: bytes) -> tuple[str, str, int]:
    """(query-id, corpus-id, score) of one qrels line without its line end; ValueError says what is wrong.

    A score is an optional `-` followed by ASCII digits and fits int32."""
    if b"\r" in line:
        raise ContentError("carriage return inside the line (only a CRLF line end is allowed)")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ContentError(invalid_utf8(line, e.start, " of the line")) from None
    if (count := text.count("\t") + 1) != 3:  # (counted, not split: a line of tabs would be a list of them)
        raise ContentError(f"expected 3 tab-separated columns (query-id, corpus-id, score), got {count}: "
                           f"{preview(text)}")
    query, doc, score = text.split("\t")
    if not _SCORE.fullmatch(score):
        raise ContentError(f"score must be an integer (an optional '-' followed by ASCII digits), got {preview(score)}")
    digits = score.lstrip("-").lstrip("0") or "0"  # leading zeros are no part of the value's size
    value = int(digits) if len(digits) <= 10 else None  # never int() of a long digit string (quadratic, then refused)
    if value is None or not fits_int32(value := -value if score.startswith("-") else value):
        raise ContentError(f"score {preview(score)} does not fit in int32")
    return query, doc, value


def _qrels_fast(chunk: bytes) -> pa.Table | None:
    """The chunk parsed by pyarrow, or None (then the line path decides): pyarrow also ends a line at a lone
    CR and skips a BOM at a buffer's start, so such chunks go to the line path."""
    if chunk.count(b"\r") != chunk.count(b"\r\n") or chunk.startswith(UTF8_BOM):
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
        header = stream.readline(len(UTF8_BOM) + len(QRELS_HEADER) + 2).removeprefix(UTF8_BOM)
        if header.removesuffix(b"\n").removesuffix(b"\r") != QRELS_HEADER:
            raise SourceError(shard.name, f"expected the header {QRELS_HEADER.decode()!r}, got {preview(header)}",
                              line=1)
        yield from iter_line_chunks(stream, shard.name, 2)


def read_qrels(shard: Shard) -> Iterator[pa.Table]:
    """A BEIR qrels TSV (header `query-id<TAB>corpus-id<TAB>score`) as (string, string, int32) tables; a file with
    no judgement (its header alone) is refused: a split with no row is not published, so it would be left out in
    silence."""
    first, rows = 2, 0
    try:
        for first, chunk in _qrels_chunks(shard):
            table = _qrels_fast(chunk)
            if table is None:
                table = _qrels_by_line(chunk, first, shard.name)
            if table.num_rows:
                rows += table.num_rows
                yield table
    except MemoryError:
        raise out_of_memory(shard.name, first) from None
    if not rows:
        raise SourceError(shard.name, "no judgements: the file holds its header alone (or blank lines after it); a "
                                      "split with no row cannot be published: add its rows (or remove the file, where "
                                      "the benchmark does not require that split)")
