"""A key's value (plain Python values, or safe_pickle descriptions) as row values of the catalogue's shapes.

NaN (pandas' and numpy's missing value) is null everywhere; dates and timestamps in JSON text are ISO 8601
strings; a value of a type not understood is a Mismatch, named by the caller with the file, the key and the place
in the value. What a pickled value expands to is charged to its file's budget (safe_pickle.Budget).
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import pyarrow as pa

from ...core import pickled_values, safe_pickle
from ...core.errors import SourceError
from ...core.preview import preview
from .catalogue import OTHER, Entries, Json, ListOf, MockKgTable, Record, Scalar, Shape
from .shapes import Mismatch

MAX_DEPTH = 200
INT64 = (-(2**63), 2**63 - 1)
PYTHON_BYTES = 400
"""What a container of a converted row costs in memory, with its scalars, as Python objects (measured on the
price and movie records: 300-500 bytes); batches are bounded by this estimate."""
EXACT_FLOAT_INT = 2**53

def is_missing(value: Any) -> bool:
    return value is None or (type(value) is float and value != value)


def describe_object(value: Any) -> str:
    if isinstance(value, pickled_values.Array):
        return f"numpy array of shape {value.shape}"
    if type(value).__module__ == pickled_values.__name__:
        return f"pickled {type(value).__name__}"
    return f"{type(value).__name__} {preview(value)}"


def _date_text(value: Any) -> str | None:
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, pickled_values.Timestamp):
        try:
            return value.isoformat()
        except pickled_values.Bad as e:
            raise Mismatch("", str(e)) from None
    return None


def _int_text(value: int) -> str:
    """An integer as text for a message (Python refuses to write one of more than 4,300 digits)."""
    return str(value) if value.bit_length() <= 64 else f"of {value.bit_length():,} bits"


def decimal_length(value: int) -> int:
    """An upper bound on the length of `value` written in decimal, sign included (at most one more), from its
    number of bits: writing it out to count its digits would cost as much as the conversion being bounded."""
    return value.bit_length() * 30103 // 100_000 + 1 + (value < 0)


def _float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        raise Mismatch("", f"integer {_int_text(value)} does not fit in a float64") from None


def _kind(arrow: pa.DataType) -> str:
    for kind, check in (("text", pa.types.is_string), ("text", pa.types.is_large_string), ("int", pa.types.is_integer),
                        ("float", pa.types.is_floating), ("bool", pa.types.is_boolean)):
        if check(arrow):
            return kind
    raise TypeError(f"unsupported scalar type {arrow}")


_KINDS: dict[pa.DataType, str] = {}
_EXPECTED = {"text": "a string", "int": "an integer", "float": "a number", "bool": "true or false"}


def _unbounded(units: int) -> None:
    """The budget of a value parsed from JSON text, which has no shared references to expand."""


class Converter:
    """Turns one key's value into row values of the declared shapes, counting the containers it visits and charging
    each value it produces (8 units, plus the length of a text, or of an integer's digits where it is written as
    JSON text) to the pickle's budget, if it came from a pickle."""

    def __init__(self, budget: safe_pickle.Budget | None = None) -> None:
        self.nodes = 0
        self.bytes = 0
        self._open: set[int] = set()
        self.charge = budget.charge if budget is not None else _unbounded

    def _container(self, value: Any, depth: int) -> None:
        self.nodes += 1
        self.charge(8)
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
        if is_missing(value):
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
                row = {shape.key_name: self.key(key)}
                if shape.value_name is None:
                    row.update(self.record(item, shape.value, depth + 1, required=True))  # type: ignore[arg-type]
                else:
                    row[shape.value_name] = self.value(item, shape.value, depth + 1)
            except Mismatch as e:
                raise e.under(f"[{preview(key)}]") from None
            rows.append(row)
        return rows

    def record(self, value: Any, shape: Record, depth: int, *, required: bool = False) -> dict | None:
        """A dict as the fields of `shape` (missing ones null); undeclared keys go to `other` or are a Mismatch."""
        if is_missing(value) and not required:
            return None
        mapping = self._mapping(value)
        self.nodes += 1  # (a record reached through Entries is not seen by `value`)
        self.charge(8)
        row = {}
        for name, field_shape in shape.fields:
            try:
                row[name] = self.value(mapping[name], field_shape, depth + 1) if name in mapping else None
            except Mismatch as e:
                raise e.under(f".{name}") from None
        if len(mapping) > len(row) or any(key not in row for key in mapping):
            names = {name for name, _ in shape.fields}
            extra = {self.key(key): item for key, item in mapping.items() if key not in names}
            if not shape.other:
                raise Mismatch("", f"unexpected field {preview(sorted(extra)[0])}; expected only {sorted(names)}")
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
        if python is str:
            self.charge(8 + len(value))
            if kind == "text":
                self.bytes += len(value)
                return value
        else:
            self.charge(8)
        if python is float and kind == "float":
            return None if value != value else value
        if python is int and kind in ("int", "float"):
            if kind == "float":
                return _float(value)
            if not INT64[0] <= value <= INT64[1]:
                raise Mismatch("", f"integer {_int_text(value)} does not fit in int64")
            return value
        if python is bool and kind == "bool":
            return value
        if is_missing(value):
            return None
        if kind == "text":
            if isinstance(value, str):
                self.bytes += len(value)
                return str(value)
            text = _date_text(value)
            if text is not None:
                return text
        elif kind == "int":
            number = self.integer(value)
            if number is not None:
                return self.scalar(number, arrow)
        elif kind == "float":
            number = self.integer(value)
            if number is not None:
                return _float(number)
            if self.is_float(value):
                return float(value)
        elif python is bool:
            return value
        raise Mismatch("", f"expected {_EXPECTED[kind]}, got {describe_object(value)}")

    def plain(self, value: Any, depth: int) -> Any:
        """`value` as plain JSON-able Python (dict with string keys, list, str, int, float, bool, None)."""
        python = type(value)
        if python is str:
            self.charge(8 + len(value))
            self.bytes += len(value)
            return value
        self.charge(8)
        if python is int or python is bool or value is None:
            if python is int:
                if value.bit_length() > 10_000:
                    raise Mismatch("", f"an integer of {value.bit_length():,} bits cannot be written as JSON")
                self.charge(decimal_length(value))  # its JSON text: a shared big int is written out at each use
            return value
        if python is float:
            if math.isinf(value):
                raise Mismatch("", f"{value} cannot be written as JSON")
            return None if value != value else value
        if is_missing(value):
            return None
        if isinstance(value, str):
            self.bytes += len(value)
            return str(value)
        number = self.integer(value)
        if number is not None:
            return number
        if self.is_float(value):
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
                        converted[self.key(key)] = self.plain(item, depth + 1)
                    except Mismatch as e:
                        raise e.under(f"[{preview(key)}]") from None
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
    def integer(value: Any) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        return None

    @staticmethod
    def is_float(value: Any) -> bool:
        return isinstance(value, float)

    @staticmethod
    def key(key: Any) -> str:
        if type(key) is str:
            return key
        if not isinstance(key, str):
            raise Mismatch("", f"keys must be strings, got the key {describe_object(key)}")
        return str(key)

    @staticmethod
    def _mapping(value: Any) -> dict:
        if not isinstance(value, dict):
            raise Mismatch("", f"expected an object (dict), got {describe_object(value)}")
        return value

    def _sequence(self, value: Any) -> list:
        if isinstance(value, (list, tuple)):
            return list(value)
        if isinstance(value, (set, frozenset)):
            try:
                return sorted(value)  # a set has no order: sorted, so that every build writes the same row
            except TypeError:
                raise Mismatch("", "a set whose items cannot be sorted") from None
        if isinstance(value, pickled_values.Array) and len(value.shape) == 1:
            self.charge(8 * value.size)  # before the items are made: a shared array is expanded each time
            try:
                return value.items()
            except pickled_values.Bad as e:
                raise Mismatch("", str(e)) from None
        raise Mismatch("", f"expected a list, got {describe_object(value)}")


def keyed_row(table: MockKgTable, key: Any, value: Any, name: str, where: str,
              budget: safe_pickle.Budget | None = None, *, line: int | None = None,
              record: int | None = None) -> tuple[dict, int]:
    """The row of one (key, value) of a dict-like source, with its approximate size in memory as Python objects;
    what it expands to is charged to `budget` (a pickle's). A value refused is a SourceError naming `name`, `where`
    and the `line` or `record` it is at (None: not known)."""
    converter = Converter(budget)
    try:
        key = Converter.key(key)
        if table.value_column is not None:
            row = {table.key[0]: key, table.value_column: converter.value(value, table.value)}  # type: ignore[arg-type]
        else:
            row = {table.key[0]: key, **converter.record(value, table.value, 0, required=True)}  # type: ignore[arg-type]
    except Mismatch as e:
        inside = f" at `{e.place}`" if e.place else ""
        raise SourceError(name, f"{where}{inside}: {e.message}", line=line, record=record) from None
    except RecursionError:
        raise SourceError(name, f"{where}: value nested too deeply", line=line, record=record) from None
    return row, len(key) + converter.bytes + PYTHON_BYTES * converter.nodes


def plain_json(value: Any, name: str, where: str) -> str:
    """`value` (an unpickled object already converted once by `keyed_row`, so its size is known to be bounded) as
    compact JSON text keeping its key order and integers vs floats; NaN, pandas' missing value, is null, as in the
    typed columns. A SourceError naming `name` and `where` when it cannot be written as JSON."""
    try:
        plain = Converter().plain(value, 0)
    except Mismatch as e:
        inside = f" at `{e.place}`" if e.place else ""
        raise SourceError(name, f"{where}{inside}: {e.message}") from None
    return json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
