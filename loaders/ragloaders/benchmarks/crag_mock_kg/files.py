"""The mock KG's other files: JSON objects (movie), JSON lines of `[key, value]` (open), pickled dicts (music),
and company_name.dict (CSV).

JSON follows the shared rules (core.readers): a key given twice or an unpaired surrogate escape is refused, naming
the file and the member or line; so is a JSON object file nested deeper than MAX_JSON_DEPTH, before any value is
built from it. Pickles are read by core.safe_pickle; the object is in memory (as in the server),
rows are written in bounded batches, each item released once written. company_name.dict is read with pyarrow's CSV
reader, its text kept as it is (pandas, which the server uses, would turn a ticker such as "NA" into NaN).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import ijson
import pyarrow as pa
import pyarrow.csv as pa_csv
from ijson.common import ObjectBuilder

from ...core import safe_pickle
from ...core.compressed import open_bz2
from ...core.errors import SourceError
from ...core.preview import preview
from ...core.readers.json_array import JSON_ARRAY_BACKEND, json_error_detail
from ...core.readers.lines import BLOCK_BYTES, UTF8_BOM, iter_lines
from ...core.readers.strict_json import (  # KEY_END and count_keys: loads_strict's rule, key-like tokens vs keys parsed
    KEY_END,
    UNPAIRED_SURROGATE,
    DuplicateKeyError,
    UniqueKeyDict,
    count_keys,
    loads_strict,
    refuse_duplicate_keys,
)
from .catalogue import RECORD_JSON, STRING, MockKgTable
from .values import MAX_DEPTH, describe_object, keyed_row

SURROGATE_ESCAPE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
"""An escaped surrogate that is not half of a pair (or text that looks like one: `\\ud800`)."""
ANY_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def scan_json_text(path: str) -> tuple[int, bool]:
    """(how many `"` ws `:` the file holds, an upper bound on its keys; whether it may hold an unpaired surrogate
    escape such as `\\ud800`), read in blocks. yajl, ijson's fast parser, turns such an escape into '?' and keeps
    the last of two equal keys; either answer sends the file to the exact parser, where a false alarm costs time."""
    key_ends, surrogate = 0, False
    with open(path, "rb") as f:
        carry = b""
        while block := f.read(BLOCK_BYTES):
            joined = carry + block
            key_ends += len(KEY_END.findall(joined)) - len(KEY_END.findall(carry))
            if not surrogate and ANY_SURROGATE_ESCAPE.search(joined):
                surrogate = SURROGATE_ESCAPE.search(joined) is not None
            carry = block[-16:] if len(block) >= 16 else joined[-16:]
    return key_ends, surrogate


MAX_JSON_DEPTH = MAX_DEPTH + 2
"""Deepest nesting read (the top-level object, a member, then what the converter reads): yajl's builder keeps a
path string per level, so 20,000 brackets (a 40 KB file) took a gigabyte; Python's json recurses."""


class TooDeep(ijson.JSONError):
    """JSON nested deeper than MAX_JSON_DEPTH."""


def _depth_checked(events: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """`events` (ijson basic_parse), refused with a JSONError once nested deeper than MAX_JSON_DEPTH."""
    depth = 0
    for event in events:
        kind = event[0]
        if kind == "start_map" or kind == "start_array":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise TooDeep(f"nested deeper than {MAX_JSON_DEPTH} levels")
        elif kind == "end_map" or kind == "end_array":
            depth -= 1
        yield event


def _members(events: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """(key, value) of each member of the top-level JSON object of `events` (ijson basic_parse), values built with
    UniqueKeyDict: a key given twice in any object raises DuplicateKeyError."""
    if next(events, (None, None))[0] != "start_map":
        raise ijson.JSONError("expected a JSON object")
    for event, key in events:
        if event == "end_map":
            for _ in events:  # the parser refuses data after the object at the end of the stream
                raise ijson.JSONError("data after the end of the JSON object")
            return
        builder, depth = ObjectBuilder(map_type=UniqueKeyDict), 0
        for event, value in events:
            builder.event(event, value)
            depth += event in ("start_map", "start_array")
            depth -= event in ("end_map", "end_array")
            if depth == 0:
                break
        yield key, builder.value


def _json_members(path: str, exact: bool) -> Iterator[tuple[int, str, Any]]:
    """(member number, key, value) of the JSON object in `path`: with yajl's own builder (fast), or, when `exact`,
    with ijson's Python parser (which keeps a lone surrogate) and a builder that refuses a key given twice."""
    with open(path, "rb") as f:
        head = f.read(BLOCK_BYTES).removeprefix(UTF8_BOM)
        start = head.lstrip(b" \t\r\n")[:1]
        if start != b"{":
            found = repr(start.decode("latin-1")) if start else "an empty file"
            raise SourceError(path, f"expected a JSON object (a file starting with '{{'), found {found}")
        f.seek(0)
        number = 0
        seen: set[str] = set()
        try:
            if exact:
                members = _members(_depth_checked(ijson.get_backend("python").basic_parse(_SkipBom(f),
                                                                                        use_float=True)))
            else:
                try:  # a pass of the fast parser alone: its builder must not see a deep file
                    for _ in _depth_checked(JSON_ARRAY_BACKEND.basic_parse(_SkipBom(f), use_float=True)):
                        pass
                except TooDeep:
                    raise
                except ijson.JSONError:
                    pass  # reported by the pass below, which knows the member
                f.seek(0)
                members = JSON_ARRAY_BACKEND.kvitems(_SkipBom(f), "", use_float=True)
            for key, value in members:
                number += 1
                if key in seen:
                    raise SourceError(path, f"member {number} (key {preview(key)}): duplicate key {preview(key)} in "
                                            f"the JSON object "
                                      "(a reader keeps one of the two values, which one is arbitrary)", record=number)
                seen.add(key)
                if exact:
                    try:
                        json.dumps([key, value], ensure_ascii=False).encode()
                    except UnicodeEncodeError:
                        raise SourceError(path, f"member {number} (key {preview(key)}): {UNPAIRED_SURROGATE}",
                                          record=number) from None
                yield number, key, value
        except DuplicateKeyError as e:
            raise SourceError(path, f"member {number + 1}: {e}", record=number + 1) from None
        except ijson.JSONError as e:
            detail = json_error_detail(e)
            raise SourceError(path, f"invalid or truncated JSON after member {number} ({detail})") from None


def iter_json_object(path: str, table: MockKgTable) -> Iterator[tuple[dict, int]]:
    """Rows of a file holding one JSON object, one per top-level member, parsed as a stream under the shared JSON
    rules: a key given twice (at the top level or inside a member) or an unpaired surrogate escape is refused,
    naming the member. yajl parses; the exact parser reads the file again only when the file may hold a lone
    surrogate, or holds more key-like tokens than the keys parsed (as `loads_strict` decides for a line)."""
    key_ends, surrogate = scan_json_text(path)
    keys = 0
    for number, key, value in _json_members(path, exact=surrogate):
        keys += 1 + count_keys(value)
        row, nbytes = keyed_row(table, key, value, path, f"member {number} (key {preview(key)})",
                                record=number)
        if table.record_json:
            row[RECORD_JSON] = record_json(value)
            nbytes += len(row[RECORD_JSON])
        yield row, nbytes
    if not surrogate and keys != key_ends:
        for _ in _json_members(path, exact=True):  # a key given twice raises; key-like text in strings does not
            pass


def record_json(value: Any) -> str:
    """A member's parsed value as JSON text that `json.loads` reads back equal, key order, nulls, and integers
    vs floats included (catalogue's module docstring). The parsers refuse NaN, Infinity and numbers out of a
    float's range, so the text is strict JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class _SkipBom:
    """A binary file read without its UTF-8 byte order mark."""

    def __init__(self, f: Any):
        self.f, self.first = f, True

    def read(self, size: int = -1) -> bytes:
        data = self.f.read(size)
        if self.first and data:  # (ijson first reads 0 bytes, to learn the file's type)
            self.first = False
            data = data.removeprefix(UTF8_BOM)
        return data


def _json_line(line: bytes, name: str, number: int) -> Any:
    """One line under the shared JSON rules (loads_strict), except that NaN and Infinity, which Python's json wrote
    into these files, are read (as floats)."""
    try:
        return loads_strict(line)
    except ValueError as e:  # parsed again by Python's json, which reads NaN and refuses a duplicate key
        try:  # decoded first: given bytes, json would also read UTF-16, UTF-32 and a BOM on any line
            value = json.loads(line.decode("utf-8"), object_pairs_hook=refuse_duplicate_keys)
        except DuplicateKeyError as duplicate:
            raise SourceError(name, str(duplicate), line=number) from None
        except ValueError:
            raise SourceError(name, str(e), line=number) from None
        except RecursionError:
            raise SourceError(name, "invalid JSON (nested too deeply for Python's json)", line=number) from None
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise SourceError(name, UNPAIRED_SURROGATE, line=number) from None
        return value


def iter_jsonl_pairs(paths: list[str], table: MockKgTable) -> Iterator[tuple[dict, int]]:
    """Rows of bzip2 JSON lines `[key, value]`, file after file (the server reads kg.0 then kg.1)."""
    for path in paths:
        with open_bz2(path, name=path) as stream:
            for number, line in iter_lines(stream, path):
                if number == 1:
                    line = line.removeprefix(UTF8_BOM)  # a BOM is skipped at the start of a file only
                if not line.strip():
                    continue
                pair = _json_line(line, path, number)
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise SourceError(path, f"expected a JSON array [entity name, attributes], got "
                                      f"{describe_object(pair)}", line=number)
                row, nbytes = keyed_row(table, pair[0], pair[1], path, f"line {number} (entity {preview(pair[0])})",
                                        line=number)
                yield row, max(nbytes, len(line))


def iter_pickle_dict(path: str, table: MockKgTable) -> Iterator[tuple[dict, int]]:
    """Rows of a pickled dict, in its order; each item is released once converted."""
    with open(path, "rb") as f:
        data = f.read()
    budget = safe_pickle.Budget(path, len(data))
    mapping = safe_pickle.loads(data, name=path, budget=budget)
    del data
    if type(mapping) is not dict:
        raise SourceError(path, f"expected a pickled dict, got {describe_object(mapping)}")
    with safe_pickle.named_errors(path):
        for number, key in enumerate(list(mapping), start=1):
            value = mapping.pop(key)
            yield keyed_row(table, key, value, path, f"item {number} (key {preview(key)})", budget,
                            record=number)


def read_company_csv(path: str) -> Iterator[pa.Table]:
    """company_name.dict: header `,Name,Symbol` (pandas' `to_csv` with its index), text kept as in the file."""
    with open(path, "rb") as f:
        header = f.readline().rstrip(b"\r\n").removeprefix(UTF8_BOM)
    if header != b",Name,Symbol":
        raise SourceError(path, f"expected the header ',Name,Symbol', got {header[:80]!r}", line=1)
    names = ["index", "Name", "Symbol"]
    try:
        reader = pa_csv.open_csv(
            path,
            read_options=pa_csv.ReadOptions(skip_rows=1, column_names=names, block_size=BLOCK_BYTES),
            parse_options=pa_csv.ParseOptions(newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                column_types={"index": pa.int64(), "Name": STRING, "Symbol": STRING}, null_values=[],
                strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )
        for batch in reader:
            yield pa.Table.from_batches([batch]).select(["Name", "Symbol", "index"])
    except (pa.ArrowInvalid, UnicodeDecodeError) as e:
        raise SourceError(path, f"bad CSV ({e})") from None
