"""The shapes of the catalogue as Arrow types, and the Mismatch a value that does not fit them raises."""

from __future__ import annotations

import pyarrow as pa

from .catalogue import (
    OTHER,
    RECORD_JSON,
    STRING,
    TEXT,
    Entries,
    Json,
    ListOf,
    MockKgTable,
    Reader,
    Record,
    Scalar,
    Shape,
)


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
    if table.reader is Reader.CSV:
        return pa.schema([("Name", STRING), ("Symbol", STRING), ("index", pa.int64())])
    if table.value is None:
        return None
    key = pa.field(table.key[0], STRING)
    if table.record_json and table.reader not in (Reader.JSON_OBJECT, Reader.SQLITEDICT):
        raise TypeError(f"{table.config}: record_json is kept by the JSON object and SqliteDict readers only")
    whole = [pa.field(RECORD_JSON, TEXT)] if table.record_json else []
    if table.value_column is not None:
        return pa.schema([key, pa.field(table.value_column, arrow_type(table.value)), *whole])
    if not isinstance(table.value, Record):
        raise TypeError(f"{table.config}: a value without value_column must be a Record")
    return pa.schema([key, *record_fields(table.value), *whole])
