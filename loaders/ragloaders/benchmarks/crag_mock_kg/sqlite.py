"""The mock KG's sqlite files, read-only: SqliteDict files (a pickle per key) and the tables of nba.sqlite.

nba.sqlite: each column's type is what its values are (one scan of SQLite storage classes): integer -> int64,
real -> float64 (integer and real -> float64 when every integer is exact as a float), text -> string, blob ->
binary, any other mix -> JSON text, no value -> the declared type.

Reading is bounded by the file's size: a value may be no longer than the file (SQLITE_LIMIT_LENGTH), a connection
runs at most STEPS_PER_BYTE sqlite instructions per byte of the file (its progress handler stops it), and nothing is
computed on read: a VIRTUAL generated column (an expression sqlite evaluates for each row read) and a DEFAULT longer
than DEFAULT_TEXT_MAX (its text stands in for each row stored without the column) are refused. A STORED generated
column is data in the file and is read. SIGINT and SIGTERM are held while sqlite runs (sqlite3 would discard what
their handlers raise inside the progress handler), stop the query, and are then delivered.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pyarrow as pa

from ...core import safe_pickle
from ...core.errors import SourceError
from ...core.held_signals import deferred_signals
from ...core.preview import preview
from .catalogue import RECORD_JSON, STRING, MockKgTable
from .values import EXACT_FLOAT_INT, describe_object, keyed_row, plain_json

BATCH_ROWS = 10_000
BATCH_BYTES = 32 << 20
"""Rows are written in tables of at most this many rows or about this many bytes."""
FETCH_ROWS = 1_000
FETCH_VALUES = 32
"""SqliteDict rows fetched at a time: each value is a pickle of up to a few hundred KB (a ticker's minute prices)."""
STEPS_PER_BYTE = 64
STEPS_FLOOR = 10_000_000
"""sqlite instructions one connection may run: STEPS_FLOOR plus STEPS_PER_BYTE per byte of the file (scanning and
reading a table of plain columns takes at most ~3 per byte of it, a table of NULLs being the worst)."""
PROGRESS_EVERY = 10_000
"""sqlite instructions between two calls of the progress handler."""
LENGTH_FLOOR = 1 << 16
"""The least SQLITE_LIMIT_LENGTH (the longest value, in bytes) set on a connection: else the file's size."""
DEFAULT_TEXT_MAX = 64
"""The longest DEFAULT read (characters of its text): sqlite returns it for each row stored without the column."""
T = TypeVar("T")


class BoundedConnection(sqlite3.Connection):
    """A connection whose queries stop once it has run more than `steps_allowed` sqlite instructions, or when
    SIGINT or SIGTERM arrives while sqlite runs (see `_run`)."""

    path: str
    steps_allowed: int
    steps = 0
    received: list[int]

    def _progress(self) -> bool:
        self.steps += PROGRESS_EVERY
        return self.steps > self.steps_allowed or bool(self.received)

    def bound(self, path: str, size: int) -> None:
        """Bound this connection by the size of the file it reads, `path`."""
        self.path, self.received = path, []
        self.steps_allowed = STEPS_FLOOR + STEPS_PER_BYTE * size
        self.set_progress_handler(self._progress, PROGRESS_EVERY)
        if hasattr(self, "setlimit"):  # (Python 3.11+; on 3.10 no value is generated on read, the file bounds it)
            self.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(size, LENGTH_FLOOR))

    @contextmanager
    def _holding_signals(self) -> Iterator[None]:
        """SIGINT and SIGTERM held (`deferred_signals`) while the block runs, which stops the query, then delivered
        to their own handlers."""
        with deferred_signals() as received:
            self.received = received
            try:
                yield
            finally:
                self.received = []


def _run(connection: BoundedConnection, path: str, what: str, query: Callable[[], T], *,
         failure: str = "cannot read the database") -> T:
    """`query()`, a call of `connection` (execute, fetch), its errors a SourceError naming `path` and `what` is read
    (`what` ends with ': ', or is empty): an sqlite error (`failure`, then sqlite's message), a value longer than the
    connection allows, more memory than is available, more steps than the file's size allows. A signal received
    meanwhile is delivered once sqlite has stopped."""
    with connection._holding_signals():
        try:
            return query()
        except MemoryError:
            raise SourceError(path, f"{what}reading the database needs more memory than is available") from None
        except (sqlite3.Error, UnicodeDecodeError) as e:  # (sqlite3 decodes a damaged schema's error message too)
            if connection.steps > connection.steps_allowed:
                raise SourceError(path, f"{what}reading it took more than {connection.steps_allowed:,} sqlite steps "
                                  f"({STEPS_PER_BYTE} per byte of the file, plus {STEPS_FLOOR:,}): the file is damaged "
                                  "or built to be slow") from None
            raise SourceError(path, f"{what}{failure} ({e})") from None


def open_sqlite(path: str) -> BoundedConnection:
    """A read-only connection to an untrusted sqlite file (no writes, no journal, untrusted schema), bounded by the
    file's size (`BoundedConnection`). Opened `immutable`, sqlite would not read committed rows still in a `-wal`
    beside it: a non-empty `-wal` or `-journal` is refused, naming it (it is never opened writable to replay it: the
    user's files stay as they are)."""
    for suffix in ("-wal", "-journal"):
        beside = path + suffix
        if os.path.exists(beside) and os.path.getsize(beside) > 0:
            raise SourceError(beside, f"{os.path.getsize(beside):,} bytes of sqlite {suffix[1:]} beside {path}: rows "
                              "may be committed there and not yet in the database, which is read without it; "
                              "checkpoint it (sqlite3 DB 'PRAGMA wal_checkpoint(TRUNCATE)') or remove it, then build "
                              "again")
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True, factory=BoundedConnection)
    except sqlite3.Error as e:
        raise SourceError(path, f"not a readable sqlite database ({e})") from None
    try:
        connection.bound(path, os.path.getsize(path))
        _run(connection, path, "", lambda: [connection.execute(pragma) for pragma in (
            "PRAGMA trusted_schema = OFF", "PRAGMA cell_size_check = ON", "PRAGMA query_only = ON")],
             failure="not a readable sqlite database")
        _run(connection, path, "",  # (all of the schema's text)
             lambda: connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall(),
             failure="not a readable sqlite database")
    except BaseException:
        connection.close()
        raise
    return connection


def sqlite_tables(connection: BoundedConnection) -> dict[str, str]:
    """name -> CREATE statement of each table (sqlite's own tables left out)."""
    rows = _run(connection, connection.path, "", lambda: connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    ).fetchall())
    return {name: sql or "" for name, sql in rows}


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def table_columns(connection: BoundedConnection, path: str, name: str) -> list[tuple[str, str]]:
    """(name, declared type) of each column of table `name` that `SELECT *` returns, STORED generated ones included;
    a SourceError for a table that is not there or not read: a virtual table, a VIRTUAL generated column, a DEFAULT
    longer than DEFAULT_TEXT_MAX (see the module's docstring)."""
    tables = sqlite_tables(connection)
    if name not in tables:
        raise SourceError(path, f"no table {preview(name)}; the file's tables are {preview(sorted(tables))}")
    if tables[name].lstrip().upper().startswith("CREATE VIRTUAL"):
        raise SourceError(path, f"table {preview(name)} is a virtual table, which is not read")
    info = _run(connection, path, f"table {preview(name)}, its columns: ",
                lambda: connection.execute(f"PRAGMA table_xinfo({quote(name)})").fetchall())
    columns = []
    for _, column, declared, _, default, _, hidden in info:
        if hidden == 2:
            raise SourceError(path, f"table {preview(name)}, column {preview(column)}: a VIRTUAL generated column "
                              "(sqlite computes it for each row read, at any cost in time and memory) is not read")
        if default is not None and len(default) > DEFAULT_TEXT_MAX:
            raise SourceError(path, f"table {preview(name)}, column {preview(column)}: a DEFAULT of {len(default):,} "
                              f"characters (sqlite returns it for each row stored without the column; at most "
                              f"{DEFAULT_TEXT_MAX} are read): {preview(default)}")
        if hidden != 1:  # (1: a virtual table's hidden column; 3: a STORED generated column, data in the file)
            columns.append((column, declared or ""))
    return columns


def iter_sqlitedict(path: str, table: MockKgTable) -> Iterator[tuple[dict, int]]:
    """Rows of a SqliteDict file: table `unnamed` (key TEXT, value BLOB holding a pickle), in rowid order."""
    connection = open_sqlite(path)
    try:
        tables = sqlite_tables(connection)
        if set(tables) != {"unnamed"}:
            raise SourceError(path, f"expected a SqliteDict file holding the one table 'unnamed', found tables "
                              f"{preview(sorted(tables))}")
        columns = [column for column, _ in table_columns(connection, path, "unnamed")]
        if columns != ["key", "value"]:
            raise SourceError(path, f"table 'unnamed' has columns {preview(columns)}, expected ['key', 'value'] "
                              "(SqliteDict)")
        cursor = _run(connection, path, "",
                      lambda: connection.execute('SELECT key, value FROM "unnamed" ORDER BY rowid'))
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


def _fetch(cursor: sqlite3.Cursor, path: str, most: int = FETCH_ROWS, what: str = "") -> list:
    return _run(cursor.connection, path, what, lambda: cursor.fetchmany(max(1, min(FETCH_ROWS, most))))


def _affinity_type(declared: str) -> pa.DataType:
    declared = declared.upper()
    if "INT" in declared:
        return pa.int64()
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return STRING


def sqlite_table_schema(connection: BoundedConnection, path: str, name: str) -> tuple[pa.Schema, list[str]]:
    """The Arrow schema of table `name` from one scan of its values' storage classes; and which columns are JSON."""
    columns = table_columns(connection, path, name)
    if not columns:
        raise SourceError(path, f"table {preview(name)} has no columns")
    table = quote(name)
    probes = ", ".join(f"group_concat(DISTINCT typeof({quote(c)}))" for c, _ in columns)
    found = _run(connection, path, f"table {preview(name)}: ",
                 lambda: connection.execute(f"SELECT {probes} FROM {table}").fetchone())
    present = [set((kinds or "").split(",")) - {"null", ""} for kinds in found]
    mixed = [c for (c, _), kinds in zip(columns, present) if kinds == {"integer", "real"}]
    ranges: tuple = ()
    if mixed:  # integers stored beside reals: float64 only if every integer is exact as a float
        integer = [f"CASE WHEN typeof({quote(c)}) = 'integer' THEN {quote(c)} END" for c in mixed]
        bounds = ", ".join(f"min({i}), max({i})" for i in integer)
        ranges = _run(connection, path, f"table {preview(name)}: ",
                      lambda: connection.execute(f"SELECT {bounds} FROM {table}").fetchone())
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
                      connection: BoundedConnection | None = None) -> Iterator[pa.Table]:
    """The rows of table `name` in scan order, as tables of `schema`, fetched in cursor batches."""
    own = connection is None
    connection = connection or open_sqlite(path)
    as_json = [field.name in json_columns for field in schema]
    what = f"table {preview(name)}: "
    try:
        table_columns(connection, path, name)  # (refuses what is computed on read, if the file changed since)
        cursor = _run(connection, path, what, lambda: connection.execute(
            f"SELECT {', '.join(quote(f.name) for f in schema)} FROM {quote(name)}"))
        columns: list[list] = [[] for _ in schema]
        text_like = [pa.types.is_string(f.type) or pa.types.is_binary(f.type) for f in schema]
        size = count = 0
        while rows := _fetch(cursor, path, BATCH_ROWS - count, what):
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
