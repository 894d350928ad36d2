"""CRAG's mock knowledge graphs (`mock_api/cragkg/`) as `datasets` tables: `crag/mock_kg`.

One config per table (see mock_kg_catalogue), one split, `train`. The mock API server loads these
files whole, with `pickle.load` among others; here they are read without running any code from
them and in bounded batches:

- SqliteDict files (finance): sqlite3 cursor batches over table `unnamed`, each value unpickled
  alone with core.safe_pickle (an error names the file and the ticker);
- nba.sqlite: cursor batches over one table; each column's type is what its values are (one scan
  of SQLite storage classes): integer -> int64, real -> float64 (integer and real -> float64), text
  -> string, blob -> binary, any other mix -> JSON text, no value -> the declared type;
- the movie JSON objects: a streaming parser over the top-level members (ijson);
- open/kg.*.jsonl.bz2: decompressed as a stream (core.compressed.open_bz2), one `[entity,
  attributes]` array per line;
- pickled dicts and DataFrames (music, soccer): core.safe_pickle; the object is in memory (as in
  the server), the rows are written in bounded batches, each item released once written;
- company_name.dict: pyarrow's CSV reader, with the file's text kept as it is (pandas, which the
  server uses, would turn a ticker such as "NA" into NaN).

Values are typed where their shape is fixed and JSON text where it varies (catalogue `Json`).
JSON text is compact, non-ASCII kept; dates and timestamps in it are ISO 8601 strings. NaN
(pandas' and numpy's missing value) is null everywhere, as the API's JSON shows it. A value of a
type not understood is a SourceError naming the file, the key and the place in the value.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import datasets
import ijson
import pyarrow as pa
import pyarrow.csv as pa_csv

from ...core import safe_pickle
from ...core.builder import RagBuilder
from ...core.compressed import open_bz2
from ...core.errors import MissingSourceError, SourceError
from ...core.readers import (
    BLOCK_BYTES,
    UNPAIRED_SURROGATE,
    DuplicateKeyError,
    iter_lines,
    loads_strict,
    refuse_duplicate_keys,
    tables_from_rows,
)
from ...core.sources import Download, download_verified, file_identity, mirror_base
from .catalogue import BASE_URL, BASE_URL_ENV, HOMEPAGE, LICENSE
from .citations import CITATION
from .mock_kg_catalogue import (
    BY_CONFIG,
    FOLDER,
    NBA_TABLES,
    SOURCE_FILES,
    SPLIT,
    STRING,
    TABLES,
    Entries,
    Json,
    ListOf,
    MockKgTable,
    Record,
    Scalar,
    Shape,
)

logger = logging.getLogger(__name__)

BATCH_ROWS = 10_000
BATCH_BYTES = 32 << 20
"""Rows are written in tables of at most this many rows or about this many bytes."""
FETCH_ROWS = 1_000
FETCH_VALUES = 32
"""SqliteDict rows fetched at a time: each value is a pickle of up to a few hundred KB (a ticker's minute prices)."""
MAX_DEPTH = 200
MAX_NODES = 10_000_000
"""Most values (containers and scalars) one key's value may expand to: a pickle whose memo points many times at
the same list could otherwise expand exponentially."""
INT64 = (-(2**63), 2**63 - 1)
PYTHON_BYTES = 400
"""What a container of a converted row costs in memory, with its scalars, as Python objects (measured on the
price and movie records: 300-500 bytes); batches are bounded by this estimate."""
EXACT_FLOAT_INT = 2**53
OTHER = "other"


class Mismatch(ValueError):
    """A value that does not have the declared shape. `where` (its place inside the key's value, such as
    `cast[3].name`) is built on the way up, only when a value fails."""

    def __init__(self, where: str, message: str):
        self.where, self.message = where, message
        super().__init__(message)

    def under(self, step: str) -> Mismatch:
        """The same mismatch, one level up: `step` is `.field`, `[index]` or `['key']`."""
        self.where = step + self.where
        return self

    @property
    def place(self) -> str:
        return self.where.removeprefix(".")


# ---------------------------------------------------------------- shapes -> Arrow


def arrow_type(shape: Shape) -> pa.DataType:
    """The Arrow type a catalogue shape is stored as."""
    if isinstance(shape, Scalar):
        return shape.arrow
    if isinstance(shape, Json):
        return STRING
    if isinstance(shape, ListOf):
        return pa.list_(arrow_type(shape.item))
    if isinstance(shape, Record):
        return pa.struct(record_fields(shape))
    if isinstance(shape, Entries):
        return pa.list_(pa.struct(entry_fields(shape)))
    raise TypeError(f"not a shape: {shape!r}")


def record_fields(record: Record) -> list[pa.Field]:
    fields = [pa.field(name, arrow_type(shape)) for name, shape in record.fields]
    return fields + ([pa.field(OTHER, STRING)] if record.other else [])


def entry_fields(entries: Entries) -> list[pa.Field]:
    key = pa.field(entries.key_name, STRING)
    if entries.value_name is None:
        if not isinstance(entries.value, Record):
            raise TypeError("Entries without value_name need a Record value")
        return [key, *record_fields(entries.value)]
    return [key, pa.field(entries.value_name, arrow_type(entries.value))]


def table_schema(table: MockKgTable) -> pa.Schema | None:
    """The columns of a config, or None when they come from the file (DataFrames, nba.sqlite tables)."""
    if table.reader == "csv":
        return pa.schema([("Name", STRING), ("Symbol", STRING), ("index", pa.int64())])
    if table.value is None:
        return None
    key = pa.field(table.key[0], STRING)
    if table.value_column is not None:
        return pa.schema([key, pa.field(table.value_column, arrow_type(table.value))])
    if not isinstance(table.value, Record):
        raise TypeError(f"{table.config}: a value without value_column must be a Record")
    return pa.schema([key, *record_fields(table.value)])


# ---------------------------------------------------------------- values -> rows


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    kind = type(value).__name__
    return kind in ("NAType", "NaTType") or (kind.startswith("float") and value != value)


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _date_text(value: Any) -> str | None:
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return None


def _kind(arrow: pa.DataType) -> str:
    for kind, check in (("text", pa.types.is_string), ("text", pa.types.is_large_string), ("int", pa.types.is_integer),
                        ("float", pa.types.is_floating), ("bool", pa.types.is_boolean)):
        if check(arrow):
            return kind
    raise TypeError(f"unsupported scalar type {arrow}")


_KINDS: dict[pa.DataType, str] = {}
_EXPECTED = {"text": "a string", "int": "an integer", "float": "a number", "bool": "true or false"}


class Converter:
    """Turns one key's value into row values of the declared shapes, counting the containers it visits."""

    def __init__(self) -> None:
        self.nodes = 0
        self.bytes = 0
        self._open: set[int] = set()

    def _container(self, value: Any, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise Mismatch("", f"value expands to more than {MAX_NODES:,} items (MAX_NODES)")
        if depth > MAX_DEPTH:
            raise Mismatch("", f"value nested deeper than {MAX_DEPTH} levels")
        if id(value) in self._open:
            raise Mismatch("", "the value contains itself (a cycle)")

    def value(self, value: Any, shape: Shape, depth: int = 0) -> Any:
        """`value` as Arrow expects it for `shape`; Mismatch if it does not fit."""
        if type(shape) is Scalar:
            return self.scalar(value, shape.arrow)
        if type(shape) is Json:
            plain = self.plain(value, depth)
            if plain is None:
                return None
            text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            self.bytes += len(text)
            return text
        if _is_missing(value):
            return None
        self._container(value, depth)
        self._open.add(id(value))
        try:
            if isinstance(shape, ListOf):
                return self._list(self._sequence(value), shape.item, depth)
            if isinstance(shape, Record):
                return self.record(value, shape, depth)
            if isinstance(shape, Entries):
                return self._entries(self._mapping(value), shape, depth)
        finally:
            self._open.discard(id(value))
        raise TypeError(f"not a shape: {shape!r}")

    def _list(self, items: list, item: Shape, depth: int) -> list:
        converted = []
        for index, value in enumerate(items):
            try:
                converted.append(self.value(value, item, depth + 1))
            except Mismatch as e:
                raise e.under(f"[{index}]") from None
        return converted

    def _entries(self, mapping: dict, shape: Entries, depth: int) -> list:
        rows = []
        for key, item in mapping.items():
            try:
                row = {shape.key_name: self._key(key)}
                if shape.value_name is None:
                    row.update(self.record(item, shape.value, depth + 1, required=True))  # type: ignore[arg-type]
                else:
                    row[shape.value_name] = self.value(item, shape.value, depth + 1)
            except Mismatch as e:
                raise e.under(f"[{key!r}]") from None
            rows.append(row)
        return rows

    def record(self, value: Any, shape: Record, depth: int, *, required: bool = False) -> dict | None:
        """A dict as the fields of `shape` (missing ones null); undeclared keys go to `other` or are a Mismatch."""
        if _is_missing(value) and not required:
            return None
        mapping = self._mapping(value)
        self.nodes += 1  # (a record reached through Entries is not seen by `value`)
        if self.nodes > MAX_NODES:
            raise Mismatch("", f"value expands to more than {MAX_NODES:,} items (MAX_NODES)")
        row = {}
        for name, field_shape in shape.fields:
            try:
                row[name] = self.value(mapping[name], field_shape, depth + 1) if name in mapping else None
            except Mismatch as e:
                raise e.under(f".{name}") from None
        if len(mapping) > len(row) or any(key not in row for key in mapping):
            names = {name for name, _ in shape.fields}
            extra = {self._key(key): item for key, item in mapping.items() if key not in names}
            if not shape.other:
                raise Mismatch("", f"unexpected field {sorted(extra)[0]!r}; expected only {sorted(names)}")
            try:
                row[OTHER] = self.value(extra, Json(), depth + 1)
            except Mismatch as e:
                raise e.under(f".{OTHER}") from None
        elif shape.other:
            row[OTHER] = None
        return row

    def scalar(self, value: Any, arrow: pa.DataType) -> Any:
        kind = _KINDS.get(arrow) or _KINDS.setdefault(arrow, _kind(arrow))
        python = type(value)
        if python is str and kind == "text":
            self.bytes += len(value)
            return value
        if python is float and kind == "float":
            return None if value != value else value
        if python is int and kind in ("int", "float"):
            if kind == "float":
                return float(value)
            if not INT64[0] <= value <= INT64[1]:
                raise Mismatch("", f"integer {value} does not fit in int64")
            return value
        if python is bool and kind == "bool":
            return value
        if _is_missing(value):
            return None
        if kind == "text":
            if isinstance(value, str):
                self.bytes += len(value)
                return str(value)
            text = _date_text(value)
            if text is not None:
                return text
        elif kind == "int":
            number = self._integer(value)
            if number is not None:
                return self.scalar(number, arrow)
        elif kind == "float":
            number = self._integer(value)
            if number is not None:
                return float(number)
            if self._is_float(value):
                return float(value)
        elif type(value).__name__ in ("bool", "bool_"):
            return bool(value)
        raise Mismatch("", f"expected {_EXPECTED[kind]}, got {_describe(value)}")

    def plain(self, value: Any, depth: int) -> Any:
        """`value` as plain JSON-able Python (dict with string keys, list, str, int, float, bool, None)."""
        python = type(value)
        if python is str:
            self.bytes += len(value)
            return value
        if python is int or python is bool or value is None:
            return value
        if python is float:
            if math.isinf(value):
                raise Mismatch("", f"{value} cannot be written as JSON")
            return None if value != value else value
        if _is_missing(value):
            return None
        if isinstance(value, str):
            self.bytes += len(value)
            return str(value)
        if type(value).__name__ in ("bool", "bool_"):
            return bool(value)
        number = self._integer(value)
        if number is not None:
            return number
        if self._is_float(value):
            return self.plain(float(value), depth)
        text = _date_text(value)
        if text is not None:
            return text
        self._container(value, depth)
        self._open.add(id(value))
        try:
            if isinstance(value, dict):
                converted = {}
                for key, item in value.items():
                    try:
                        converted[self._key(key)] = self.plain(item, depth + 1)
                    except Mismatch as e:
                        raise e.under(f"[{key!r}]") from None
                return converted
            items = []
            for index, item in enumerate(self._sequence(value)):
                try:
                    items.append(self.plain(item, depth + 1))
                except Mismatch as e:
                    raise e.under(f"[{index}]") from None
            return items
        finally:
            self._open.discard(id(value))

    @staticmethod
    def _integer(value: Any) -> int | None:
        if isinstance(value, bool) or type(value).__name__ == "bool_":
            return None
        if isinstance(value, int):
            return int(value)
        module = type(value).__module__
        if module == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iu":
            return int(value)
        return None

    @staticmethod
    def _is_float(value: Any) -> bool:
        if isinstance(value, float):
            return True
        return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind == "f"

    @staticmethod
    def _key(key: Any) -> str:
        if type(key) is str:
            return key
        if not isinstance(key, str):
            raise Mismatch("", f"keys must be strings, got the key {_describe(key)}")
        return str(key)

    @staticmethod
    def _mapping(value: Any) -> dict:
        if not isinstance(value, dict):
            raise Mismatch("", f"expected an object (dict), got {_describe(value)}")
        return value

    @staticmethod
    def _sequence(value: Any) -> list:
        if isinstance(value, (list, tuple)):
            return list(value)
        if isinstance(value, (set, frozenset)):
            try:
                return sorted(value)  # a set has no order: sorted, so that every build writes the same row
            except TypeError:
                raise Mismatch("", "a set whose items cannot be sorted") from None
        if type(value).__name__ == "ndarray" and type(value).__module__ == "numpy" and value.ndim == 1:
            return value.tolist()
        raise Mismatch("", f"expected a list, got {_describe(value)}")


def keyed_row(table: MockKgTable, key: Any, value: Any, name: str, where: str) -> tuple[dict, int]:
    """The row of one (key, value) of a dict-like source, with its approximate size in memory as Python objects."""
    converter = Converter()
    try:
        key = Converter._key(key)
        if table.value_column is not None:
            row = {table.key[0]: key, table.value_column: converter.value(value, table.value)}  # type: ignore[arg-type]
        else:
            row = {table.key[0]: key, **converter.record(value, table.value, 0, required=True)}  # type: ignore[arg-type]
    except Mismatch as e:
        inside = f" at `{e.place}`" if e.place else ""
        raise SourceError(name, f"{where}{inside}: {e.message}") from None
    except RecursionError:
        raise SourceError(name, f"{where}: value nested too deeply") from None
    return row, len(key) + converter.bytes + PYTHON_BYTES * converter.nodes


# ---------------------------------------------------------------- readers


def open_sqlite(path: str) -> sqlite3.Connection:
    """A read-only connection to an untrusted sqlite file (no writes, no journal, untrusted schema)."""
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True)
        connection.execute("PRAGMA trusted_schema = OFF")
        connection.execute("PRAGMA cell_size_check = ON")
        connection.execute("PRAGMA query_only = ON")
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as e:
        raise SourceError(path, f"not a readable sqlite database ({e})") from None
    return connection


def sqlite_tables(connection: sqlite3.Connection) -> dict[str, str]:
    """name -> CREATE statement of each table (sqlite's own tables left out)."""
    rows = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
                              "ESCAPE '\\'").fetchall()
    return {name: sql or "" for name, sql in rows}


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def iter_sqlitedict(path: str, table: MockKgTable) -> Iterator[tuple[dict, int]]:
    """Rows of a SqliteDict file: table `unnamed` (key TEXT, value BLOB holding a pickle), in rowid order."""
    connection = open_sqlite(path)
    try:
        tables = sqlite_tables(connection)
        if set(tables) != {"unnamed"}:
            raise SourceError(path, f"expected a SqliteDict file holding the one table 'unnamed', found tables "
                              f"{sorted(tables)}")
        columns = [row[1] for row in connection.execute('PRAGMA table_info("unnamed")')]
        if columns != ["key", "value"]:
            raise SourceError(path, f"table 'unnamed' has columns {columns}, expected ['key', 'value'] (SqliteDict)")
        cursor = connection.execute('SELECT key, value FROM "unnamed" ORDER BY rowid')
        number = 0
        while rows := _fetch(cursor, path, FETCH_VALUES):
            for key, blob in rows:
                number += 1
                if not isinstance(key, str):
                    raise SourceError(path, f"row {number}: key {key!r} is not text")
                if not isinstance(blob, bytes):
                    raise SourceError(path, f"key {key!r}: value is {_describe(blob)}, expected a pickle (blob)")
                value = safe_pickle.loads(blob, name=path, key=key)
                row, nbytes = keyed_row(table, key, value, path, f"key {key!r}")
                yield row, max(nbytes, len(blob))
    finally:
        connection.close()


def _fetch(cursor: sqlite3.Cursor, path: str, most: int = FETCH_ROWS) -> list:
    try:
        return cursor.fetchmany(max(1, min(FETCH_ROWS, most)))
    except sqlite3.Error as e:
        raise SourceError(path, f"cannot read the database ({e})") from None


def iter_json_object(path: str, table: MockKgTable) -> Iterator[tuple[dict, int]]:
    """Rows of a file holding one JSON object, one per top-level member, parsed as a stream."""
    with open(path, "rb") as f:
        head = f.read(BLOCK_BYTES).removeprefix(b"\xef\xbb\xbf")
        start = head.lstrip(b" \t\r\n")[:1]
        if start != b"{":
            found = repr(start.decode("latin-1")) if start else "an empty file"
            raise SourceError(path, f"expected a JSON object (a file starting with '{{'), found {found}")
        f.seek(0)
        stream = _SkipBom(f)
        number = 0
        try:
            for key, value in ijson.kvitems(stream, "", use_float=True):
                number += 1
                yield keyed_row(table, key, value, path, f"member {number} (key {key!r})")
        except ijson.JSONError as e:
            detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SourceError(path, f"invalid or truncated JSON after member {number} ({detail})") from None


class _SkipBom:
    """A binary file read without its UTF-8 byte order mark."""

    def __init__(self, f: Any):
        self.f, self.first = f, True

    def read(self, size: int = -1) -> bytes:
        data = self.f.read(size)
        if self.first:
            self.first = False
            data = data.removeprefix(b"\xef\xbb\xbf")
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
                    line = line.removeprefix(b"\xef\xbb\xbf")  # a BOM is skipped at the start of a file only
                if not line.strip():
                    continue
                pair = _json_line(line, path, number)
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise SourceError(path, f"expected a JSON array [entity name, attributes], got "
                                      f"{_describe(pair)}", line=number)
                row, nbytes = keyed_row(table, pair[0], pair[1], path, f"line {number} (entity {pair[0]!r})")
                yield row, max(nbytes, len(line))


def iter_pickle_dict(path: str, table: MockKgTable) -> Iterator[tuple[dict, int]]:
    """Rows of a pickled dict, in its order; each item is released once converted."""
    with open(path, "rb") as f:
        mapping = safe_pickle.load(f, name=path)
    if type(mapping) is not dict:
        raise SourceError(path, f"expected a pickled dict, got {type(mapping).__module__}.{type(mapping).__name__}")
    for number, key in enumerate(list(mapping), start=1):
        value = mapping.pop(key)
        yield keyed_row(table, key, value, path, f"item {number} (key {key!r})")


def read_company_csv(path: str) -> Iterator[pa.Table]:
    """company_name.dict: header `,Name,Symbol` (pandas' `to_csv` with its index), text kept as in the file."""
    with open(path, "rb") as f:
        header = f.readline().rstrip(b"\r\n").removeprefix(b"\xef\xbb\xbf")
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


# ---------------------------------------------------------------- DataFrames


def load_frame(path: str) -> Any:
    """A pickled pandas DataFrame, refused if it is anything else or hides methods behind instance attributes."""
    import pandas

    with open(path, "rb") as f:
        frame = safe_pickle.load(f, name=path)
    if type(frame) is not pandas.DataFrame:
        raise SourceError(path, f"expected a pickled pandas DataFrame, got {type(frame).__module__}."
                          f"{type(frame).__name__}")
    for name in vars(frame):
        if callable(getattr(type(frame), name, None)):
            raise SourceError(path, f"refused DataFrame: its instance attribute {name!r} hides a method")
    return frame


def _frame_columns(frame: Any, path: str) -> list[tuple[str, Any]]:
    """(column name, pandas Series or Index) for the index levels that carry data, then the columns."""
    import pandas

    index = frame.index
    columns: list[tuple[str, Any]] = []
    if isinstance(index, pandas.MultiIndex):
        for level, name in enumerate(index.names):
            if not isinstance(name, str):
                raise SourceError(path, f"MultiIndex level {level} has the name {name!r}, expected a string")
            columns.append((name, index.get_level_values(level)))
    elif not (isinstance(index, pandas.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None):
        columns.append((index.name if isinstance(index.name, str) else "index", index))
    for position, name in enumerate(frame.columns):
        if not isinstance(name, str):
            raise SourceError(path, f"column {position} has the name {name!r}, expected a string")
        columns.append((name, frame.iloc[:, position]))
    names = [name for name, _ in columns]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise SourceError(path, f"column or index level name {repeated[0]!r} occurs twice")
    return columns


_ARROW_KINDS = (pa.types.is_boolean, pa.types.is_integer, pa.types.is_floating, pa.types.is_string,
                pa.types.is_large_string, pa.types.is_timestamp)


def _column_array(values: Any, name: str, path: str) -> pa.Array:
    """One DataFrame column as Arrow: typed from its dtype; object columns by their values (JSON when mixed)."""
    import pandas

    dtype = values.dtype
    if isinstance(dtype, pandas.CategoricalDtype) or dtype == object:  # noqa: E721 (numpy dtype equality)
        return _object_array(list(values.astype(object)), name, path)
    if getattr(dtype, "kind", "") == "m" or isinstance(dtype, (pandas.PeriodDtype, pandas.IntervalDtype)):
        raise SourceError(path, f"column {name!r}: dtype {dtype} is not supported")
    try:
        array = pa.array(values, from_pandas=True)  # NaN and NaT -> null
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
        raise SourceError(path, f"column {name!r}: dtype {dtype} cannot be stored ({e})") from None
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_large_string(array.type):  # pandas 3's string dtype: stored as pandas 2's object strings are
        array = array.cast(STRING)
    if not any(check(array.type) for check in _ARROW_KINDS):
        raise SourceError(path, f"column {name!r}: dtype {dtype} (Arrow {array.type}) is not supported")
    return array


def _object_array(values: list, name: str, path: str) -> pa.Array:
    converter = Converter()
    kinds = set()
    for value in values:
        if _is_missing(value):
            continue
        if isinstance(value, str):
            kinds.add("string")
        elif type(value).__name__ in ("bool", "bool_"):
            kinds.add("bool")
        elif Converter._integer(value) is not None:
            kinds.add("int")
        elif Converter._is_float(value):
            kinds.add("float")
        else:
            kinds.add("other")
    typed = {frozenset(): STRING, frozenset({"string"}): STRING, frozenset({"bool"}): pa.bool_(),
             frozenset({"int"}): pa.int64(), frozenset({"float"}): pa.float64()}
    if frozenset(kinds) == {"int", "float"} and all(
            abs(v) <= EXACT_FLOAT_INT for v in values if Converter._integer(v) is not None):
        typed[frozenset(kinds)] = pa.float64()
    kind = typed.get(frozenset(kinds))
    shape: Shape = Scalar(kind) if kind is not None else Json()
    converted = []
    for row, value in enumerate(values):
        try:
            converted.append(converter.value(value, shape))
        except Mismatch as e:
            inside = f" at `{e.place}`" if e.place else ""
            raise SourceError(path, f"column {name!r}, row {row}{inside}: {e.message}") from None
    return pa.array(converted, type=kind or STRING)


def frame_table(path: str) -> pa.Table:
    """The whole DataFrame of `path` as one Arrow table: index levels that carry data first, then the columns."""
    frame = load_frame(path)
    arrays, names = [], []
    for name, values in _frame_columns(frame, path):
        names.append(name)
        arrays.append(_column_array(values, name, path))
    return pa.Table.from_arrays(arrays, names=names) if names else pa.table({})


# ---------------------------------------------------------------- nba.sqlite


def _affinity_type(declared: str) -> pa.DataType:
    declared = declared.upper()
    if "INT" in declared:
        return pa.int64()
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return STRING


def sqlite_table_schema(connection: sqlite3.Connection, path: str, name: str) -> tuple[pa.Schema, list[str]]:
    """The Arrow schema of table `name` from one scan of its values' storage classes; and which columns are JSON."""
    tables = sqlite_tables(connection)
    if name not in tables:
        raise SourceError(path, f"no table {name!r}; the file's tables are {sorted(tables)}")
    if tables[name].lstrip().upper().startswith("CREATE VIRTUAL"):
        raise SourceError(path, f"table {name!r} is a virtual table, which is not read")
    info = connection.execute(f"PRAGMA table_info({quote(name)})").fetchall()
    columns = [(row[1], row[2] or "") for row in info]
    if not columns:
        raise SourceError(path, f"table {name!r} has no columns")
    table = quote(name)
    try:
        probes = ", ".join(f"group_concat(DISTINCT typeof({quote(c)}))" for c, _ in columns)
        present = [set((found or "").split(",")) - {"null", ""}
                   for found in connection.execute(f"SELECT {probes} FROM {table}").fetchone()]
        mixed = [c for (c, _), kinds in zip(columns, present) if kinds == {"integer", "real"}]
        ranges: tuple = ()
        if mixed:  # integers stored beside reals: float64 only if every integer is exact as a float
            integer = [f"CASE WHEN typeof({quote(c)}) = 'integer' THEN {quote(c)} END" for c in mixed]
            bounds = ", ".join(f"min({i}), max({i})" for i in integer)
            ranges = connection.execute(f"SELECT {bounds} FROM {table}").fetchone()
    except sqlite3.Error as e:
        raise SourceError(path, f"table {name!r}: cannot scan ({e})") from None
    exact = {c: abs(low) <= EXACT_FLOAT_INT and abs(high) <= EXACT_FLOAT_INT
             for c, low, high in zip(mixed, ranges[0::2], ranges[1::2])}
    fields, json_columns = [], []
    for (column, declared), kinds_of in zip(columns, present):
        if not kinds_of:
            kind = _affinity_type(declared)
        elif kinds_of == {"integer"}:
            kind = pa.int64()
        elif kinds_of == {"real"} or (kinds_of == {"integer", "real"} and exact[column]):
            kind = pa.float64()
        elif kinds_of == {"text"}:
            kind = STRING
        elif kinds_of == {"blob"}:
            kind = pa.binary()
        elif "blob" in kinds_of:
            raise SourceError(path, f"table {name!r}, column {column!r}: blobs mixed with {sorted(kinds_of - {'blob'})}"
                              " cannot be stored in one column")
        else:
            kind = STRING
            json_columns.append(column)
        fields.append(pa.field(column, kind))
    return pa.schema(fields), json_columns


def iter_sqlite_table(path: str, name: str, schema: pa.Schema, json_columns: list[str],
                      connection: sqlite3.Connection | None = None) -> Iterator[pa.Table]:
    """The rows of table `name` in scan order, as tables of `schema`, fetched in cursor batches."""
    own = connection is None
    connection = connection or open_sqlite(path)
    as_json = [field.name in json_columns for field in schema]
    try:
        cursor = connection.execute(f"SELECT {', '.join(quote(f.name) for f in schema)} FROM {quote(name)}")
        columns: list[list] = [[] for _ in schema]
        text_like = [pa.types.is_string(f.type) or pa.types.is_binary(f.type) for f in schema]
        size = count = 0
        while rows := _fetch(cursor, f"{path}, table {name!r}", BATCH_ROWS - count):
            count += len(rows)
            size += 8 * len(schema) * len(rows)
            for index, values in enumerate(zip(*rows)):
                if as_json[index]:
                    values = [None if v is None else json.dumps(v, ensure_ascii=False) for v in values]
                if text_like[index]:
                    size += sum(map(len, filter(None, values)))
                columns[index].extend(values)
            if count >= BATCH_ROWS or size >= BATCH_BYTES:
                yield _sqlite_batch(columns, schema, path, name)
                columns, size, count = [[] for _ in schema], 0, 0
        if count:
            yield _sqlite_batch(columns, schema, path, name)
    finally:
        if own:
            connection.close()


def _sqlite_batch(columns: list[list], schema: pa.Schema, path: str, name: str) -> pa.Table:
    try:
        return pa.Table.from_arrays([pa.array(values, type=f.type) for values, f in zip(columns, schema)],
                                    schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
        raise SourceError(path, f"table {name!r}: a value does not fit its column's type ({e}); the file changed "
                          "since its types were scanned?") from None


# ---------------------------------------------------------------- the builder


def _rows_reader(table: MockKgTable) -> Callable[[list[str], MockKgTable], Iterator[tuple[dict, int]]]:
    readers: dict[str, Callable[[list[str], MockKgTable], Iterator[tuple[dict, int]]]] = {
        "sqlitedict": lambda paths, t: iter_sqlitedict(paths[0], t),
        "json_object": lambda paths, t: iter_json_object(paths[0], t),
        "jsonl_pairs": iter_jsonl_pairs,
        "pickle_dict": lambda paths, t: iter_pickle_dict(paths[0], t),
    }
    return readers[table.reader]


def local_path(data_dir: str, relpath: str) -> str | None:
    """Where `relpath` (e.g. `finance/finance_price.sqlite`) is under `data_dir`: the `cragkg/` folder itself, or a
    folder holding `cragkg/` or `mock_api/cragkg/` (the repository)."""
    for prefix in ("", "cragkg", FOLDER):
        candidate = os.path.join(data_dir, prefix, relpath)
        if os.path.isfile(candidate):
            return candidate
    return None


class MockKgBuilder(RagBuilder):
    """Builder for `crag/mock_kg`: one config per table of CRAG's mock knowledge graphs, split `train`."""

    BUILDER_CONFIGS = [datasets.BuilderConfig(name=t.config, version=RagBuilder.VERSION, description=t.holds)
                       for t in TABLES]
    DEFAULT_WRITER_BATCH_SIZE = 1_000

    @property
    def table(self) -> MockKgTable:
        return BY_CONFIG[self.config.name]

    def source_identity(self, data_dir: str | None, config: datasets.BuilderConfig) -> Any:
        table = BY_CONFIG[config.name]
        if data_dir is None:
            return [(download.url, download.size) for download in self.downloads(table)]
        return [file_identity(local_path(data_dir, f) or os.path.join(data_dir, f)) for f in table.files]

    @staticmethod
    def downloads(table: MockKgTable) -> list[Download]:
        base = mirror_base(BASE_URL, BASE_URL_ENV)
        return [Download(SOURCE_FILES[f].url(base), size=SOURCE_FILES[f].size, mirror_env=BASE_URL_ENV)
                for f in table.files]

    def _info(self) -> datasets.DatasetInfo:
        schema = table_schema(BY_CONFIG[self.config.name])
        return datasets.DatasetInfo(
            description=f"CRAG mock knowledge graph: {self.config.name} ({self.config.description})",
            features=datasets.Features.from_arrow_schema(schema) if schema is not None else None,
            citation=CITATION,
            homepage=HOMEPAGE,
            license=LICENSE,
        )

    def source_paths(self, dl_manager: Any) -> list[str]:
        """The local files of this config: from data_dir, or downloaded (sizes checked)."""
        table = self.table
        if self.config.data_dir:
            paths = []
            for relpath in table.files:
                path = local_path(self.config.data_dir, relpath)
                if path is None:
                    url = SOURCE_FILES[relpath].url(BASE_URL)
                    raise MissingSourceError(
                        f"{self.config.data_dir}: {self.config.name} needs {relpath} (the `cragkg/` folder of CRAG's "
                        f"mock API, or the repository holding it); get it from {url}, or build without data_dir to "
                        "download it")
                paths.append(path)
            return paths
        manager = self.download_manager(dl_manager)
        return [download_verified(manager, download) for download in self.downloads(table)]

    def source_files_read(self) -> list[str]:
        return self.source_paths(None)

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        paths = self.source_paths(dl_manager)
        table = self.table
        if table.reader == "sqlite_table":
            connection = open_sqlite(paths[0])
            try:
                schema, json_columns = sqlite_table_schema(connection, paths[0], table.sqlite_table or "")
                undeclared = sorted(set(sqlite_tables(connection)) - set(NBA_TABLES))
            finally:
                connection.close()
            if undeclared:
                logger.warning("%s holds tables with no config in crag/mock_kg, so not published: %s (declare them "
                               "in mock_kg_catalogue.NBA_TABLES)", paths[0], ", ".join(undeclared))
            self.info.features = datasets.Features.from_arrow_schema(schema)
            # a tuple: datasets shards list arguments over num_proc workers, and `paths` is the only list to split
            kwargs = {"paths": paths, "schema": schema, "json_columns": tuple(json_columns)}
        elif table.reader == "pickle_frame":
            frame = frame_table(paths[0])
            self.info.features = datasets.Features.from_arrow_schema(frame.schema)
            kwargs = {"paths": paths, "schema": frame.schema}
        else:
            kwargs = {"paths": paths, "schema": table_schema(table)}
        return [datasets.SplitGenerator(name=SPLIT, gen_kwargs=kwargs)]

    def _generate_tables(self, paths: list[str], schema: pa.Schema,
                         json_columns: tuple[str, ...] = ()) -> Iterator[tuple[int, pa.Table]]:
        table = self.table
        if table.reader == "csv":
            tables: Iterable[pa.Table] = read_company_csv(paths[0])
        elif table.reader == "sqlite_table":
            tables = iter_sqlite_table(paths[0], table.sqlite_table or "", schema, list(json_columns))
        elif table.reader == "pickle_frame":
            whole = frame_table(paths[0])
            if whole.schema != schema:
                raise SourceError(paths[0], "the DataFrame changed while the dataset was being built")
            tables = (whole.slice(start, BATCH_ROWS) for start in range(0, whole.num_rows, BATCH_ROWS))
        else:
            tables = tables_from_rows(_rows_reader(table)(paths, table), schema, max_rows=BATCH_ROWS,
                                      max_bytes=BATCH_BYTES)
        yield from enumerate(tables)
