"""Tables from byte ranges of a top-level JSON array of flat objects, parsed on several threads.

The ranges are cut at element boundaries (json_array_cuts.cut_ranges, where the argument for why such cuts are safe
is); each range is read piece by piece (json_array_cuts.iter_pieces) and each piece parsed by pyarrow's JSON reader on
PARSE_THREADS threads (map_ahead) while the next pieces are read and the previous tables used. Anything the fast
path does not accept as is goes to the caller's exact path, which raises the precise error; a range with a piece
that holds no element boundary within json_array_cuts.MAX_RECORD_BYTES is read on by the caller's streaming reader.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import BinaryIO

import pyarrow as pa
import pyarrow.json as pa_json

from .json_array_cuts import WHITESPACE, NotCut, array_body, cut_ranges, elements_as_lines, iter_pieces, joined
from .readers.threads import map_ahead


def array_ranges(path: str, boundary: re.Pattern[bytes], range_bytes: int) -> list[tuple[int, int]] | None:
    """Byte ranges of about `range_bytes` of the array in `path`, cut at `boundary`; None when the file is not one
    array (`[` ... `]`)."""
    body = array_body(path)
    return None if body is None else cut_ranges(path, body, boundary, range_bytes)


def parse_piece(piece: bytes | memoryview, separator: re.Pattern[bytes], parse_options: pa_json.ParseOptions,
                memory_pool: pa.MemoryPool | None = None) -> pa.Table | None:
    """The elements of one piece as a table of `parse_options`' explicit schema; None for a piece of whitespace.

    NotCut when the piece does not begin with an object (pyarrow is never given one that does not), when pyarrow
    refuses the piece (which covers duplicate keys, unpaired surrogates, unexpected fields and values of another
    type), when it holds invalid UTF-8 (which pyarrow's JSON reader lets through), or when two elements have no
    comma between them."""
    lines, separators = elements_as_lines(piece, separator)
    if not (stripped := lines.lstrip(WHITESPACE)):
        return None
    if stripped[:1] != b"{":  # pyarrow 26's JSON reader crashes the process (SIGSEGV) on a buffer that begins with null
        raise NotCut("an element that is not an object")
    try:
        parsed = pa_json.read_json(
            pa.py_buffer(lines),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(lines)),
            parse_options=parse_options,
            memory_pool=memory_pool,
        )
        parsed.validate(full=True)
    except pa.ArrowInvalid as e:
        raise NotCut(str(e)) from None
    if parsed.num_rows != separators + 1:
        raise NotCut("two elements without a comma between them")
    return parsed


def read_ranges(
    path: str,
    ranges: list[tuple[int, int]],
    boundary: re.Pattern[bytes],
    parse: Callable[[memoryview], pa.Table | None],
    raise_exact_error: Callable[[int, memoryview], None],
    read_stream: Callable[[BinaryIO], Iterator[pa.Table]],
) -> Iterator[pa.Table]:
    """The tables of every range, in order.

    `parse(piece)` gives a piece's table (None: no element) or raises NotCut; for a refused piece at byte `offset`,
    `raise_exact_error(offset, piece)` raises the precise error (if it returns, the piece was only ambiguous); what
    remains of a range after a piece that cannot be cut or parsed is read by `read_stream`, given the rest of the
    range as a stream of one array."""

    def attempt(item: tuple[int, memoryview]) -> tuple[int, memoryview, pa.Table | None | NotCut]:
        offset, piece = item
        try:
            return offset, piece, parse(piece)
        except NotCut as refused:
            return offset, piece, refused

    for start, end in ranges:
        resume = start
        try:
            for offset, piece, table in map_ahead(attempt, iter_pieces(path, start, end, boundary)):
                if isinstance(table, NotCut):
                    raise_exact_error(offset, piece)
                    raise table
                if table is not None:
                    yield table
                resume = offset + len(piece)
        except NotCut:
            if resume > start:
                resume += 1  # past the comma after the last piece read
            yield from read_stream(joined(b"[", (path, resume, end), b"]"))
