"""The mock KG's sqlite files, read-only: SqliteDict files (a pickle per key) and the tables of nba.sqlite.

nba.sqlite: each column's type is what its values are (one scan of SQLite storage classes): integer -> int64,
real -> float64 (integer and real -> float64 when every integer is exact as a float), text -> string, blob ->
binary, any other mix -> JSON text, no value -> the declared type.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator

import pyarrow as pa

from ...core import safe_pickle
from ...core.errors import SourceError
from ...core.preview import preview
from .catalogue import RECORD_JSON, STRING, MockKgTable
from .values import EXACT_FLOAT_INT, describe_object, keyed_row, plain_json

BATCH_ROWS = 10_000
BATCH_BYTES = 32 << 20
"""Rows are written in tables of at most this many rows or about this many bytes."""
FETCH_ROWS = 1_000
FETCH_VALUES = 32
"""SqliteDict rows fetched at a time: each value is a pickle of up to a few hundred KB (a ticker's minute prices)."""

def open_sqlite(path: str) -> sqlite3.Connection:
    """A read-only connection to an untrusted sqlite file (no writes, no journal, untrusted schema). Opened
    `immutable`, sqlite would not read committed rows still in a `-wal` beside it: a non-empty `-wal` or
    `-journal` is refused, naming it (it is never opened writable to replay it: the user's files stay as they are)."""
    for suffix in ("-wal", "-journal"):
        beside = path + suffix
        if os.path.exists(beside) and os.path.getsize(beside) > 0:
            raise SourceError(beside, f"{os.path.getsize(beside):,} bytes of sqlite {suffix[1:]} beside {path}: rows "
                              "may be committed there and not yet in the database, which is read without it; "
                              "checkpoint it (sqlite3 DB 'PRAGMA wal_checkpoint(TRUNCATE)') or remove it, then build "
                              "again")
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True)
        connection.execute("PRAGMA trusted_schema = OFF")
        connection.execute("PRAGMA cell_size_check = ON")
        connection.execute("PRAGMA query_only = ON")
        connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()  # (all of its text)
    except (sqlite3.Error, UnicodeDecodeError) as e:  # (sqlite3 decodes a damaged schema's error message too)
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
                              f"{preview(sorted(tables))}")
        try:
            columns = [row[1] for row in connection.execute('PRAGMA table_info("unnamed")')]
            cursor = connection.execute('SELECT key, value FROM "unnamed" ORDER BY rowid')
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise SourceError(path, f"cannot read the database ({e})") from None
        if columns != ["key", "value"]:
            raise SourceError(path, f"table 'unnamed' has columns {columns}, expected ['key', 'value'] (SqliteDict)")
        number = 0
        while rows := _fetch(cursor, path, FETCH_VALUES):
            for key, blob in rows:
                number += 1
                if not isinstance(key, str):
                    raise SourceError(path, f"row {number}: key {preview(key)} is not text")
                if not isinstance(blob, bytes):
                    raise SourceError(path, f"key {preview(key)}: value is {describe_object(blob)}, "
                                            "expected a pickle (blob)")
                budget = safe_pickle.Budget(path, len(blob), key)
                value = safe_pickle.loads(blob, name=path, key=key, budget=budget)
                with safe_pickle.named_errors(path, key):
                    row, nbytes = keyed_row(table, key, value, path, f"key {preview(key)}", budget)
                    if table.record_json:
                        row[RECORD_JSON] = plain_json(value, path, f"key {preview(key)}")
                        nbytes += len(row[RECORD_JSON])
                yield row, max(nbytes, len(blob))
    finally:
        connection.close()


def _fetch(cursor: sqlite3.Cursor, path: str, most: int = FETCH_ROWS) -> list:
    try:
        return cursor.fetchmany(max(1, min(FETCH_ROWS, most)))
    except (sqlite3.Error, UnicodeDecodeError) as e:
        raise SourceError(path, f"cannot read the database ({e})") from None


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
        raise SourceError(path, f"no table {preview(name)}; the file's tables are {preview(sorted(tables))}")
    if tables[name].lstrip().upper().startswith("CREATE VIRTUAL"):
        raise SourceError(path, f"table {preview(name)} is a virtual table, which is not read")
    table = quote(name)
    try:
        info = connection.execute(f"PRAGMA table_xinfo({table})").fetchall()
    except (sqlite3.Error, UnicodeDecodeError) as e:
        raise SourceError(path, f"table {preview(name)}: cannot read its columns ({e})") from None
    # table_info leaves out generated columns, which `SELECT *` (the server's query) returns: hidden 2 and 3
    columns = [(row[1], row[2] or "") for row in info if row[6] != 1]
    if not columns:
        raise SourceError(path, f"table {preview(name)} has no columns")
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
    except (sqlite3.Error, UnicodeDecodeError) as e:
        raise SourceError(path, f"table {preview(name)}: cannot scan ({e})") from None
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
            raise SourceError(path, f"table {preview(name)}, column {preview(column)}: blobs mixed with "
                                    f"{sorted(kinds_of - {'blob'})}"
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
        try:
            cursor = connection.execute(f"SELECT {', '.join(quote(f.name) for f in schema)} FROM {quote(name)}")
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise SourceError(path, f"table {preview(name)}: cannot read the database ({e})") from None
        columns: list[list] = [[] for _ in schema]
        text_like = [pa.types.is_string(f.type) or pa.types.is_binary(f.type) for f in schema]
        size = count = 0
        while rows := _fetch(cursor, f"{path}, table {preview(name)}", BATCH_ROWS - count):
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
        raise SourceError(path, f"table {preview(name)}: a value does not fit its column's type ({e}); "
                          "the file changed since its types were scanned?") from None
