"""Pickled pandas DataFrames (music's Grammy table, soccer) as Arrow, from safe_pickle's checked descriptions.

Index levels that carry data come first (a MultiIndex's levels, a named or non-default index), then the columns,
typed from their dtype; object and categorical columns by their values (JSON text when mixed). Every cell is
charged to the file's budget before it is made.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...core import pickled_values, safe_pickle
from ...core.errors import SourceError
from ...core.preview import cut, preview
from .catalogue import STRING, Json, Scalar, Shape
from .shapes import Mismatch
from .values import EXACT_FLOAT_INT, Converter, describe_object, is_missing


def load_frame(path: str) -> tuple[pickled_values.Frame, safe_pickle.Budget]:
    """The description of a pickled pandas DataFrame (checked by safe_pickle), with the file's budget."""
    with open(path, "rb") as f:
        data = f.read()
    budget = safe_pickle.Budget(path, len(data))
    frame = safe_pickle.loads(data, name=path, budget=budget)
    if not isinstance(frame, pickled_values.Frame):
        raise SourceError(path, f"expected a pickled pandas DataFrame, got {describe_object(frame)}")
    return frame, budget


def _labels(index: Any, path: str) -> list:
    """The labels of a frame's columns, as Python values."""
    if isinstance(index, pickled_values.RangeIndex):
        return list(range(index.start, index.stop, index.step))
    values = index.values if isinstance(index, pickled_values.Index) else None
    if isinstance(values, pickled_values.ArrowStrings):
        return values.array.to_pylist()
    if isinstance(values, pickled_values.Array) and values.dtype.kind in "OUS":
        return values.items()
    raise SourceError(path, f"the frame's column labels are a {describe_object(values or index)}, expected strings")


def _frame_columns(frame: pickled_values.Frame, path: str) -> list[tuple[str, Any]]:
    """(column name, column description or Arrow array) for the index levels that carry data, then the columns."""
    index = frame.index
    columns: list[tuple[str, Any]] = []
    if isinstance(index, pickled_values.MultiIndex):
        for level, (name, values, codes) in enumerate(zip(index.names, index.levels, index.codes)):
            if not isinstance(name, str):
                raise SourceError(path, f"MultiIndex level {level} has the name {preview(name)}, expected a string")
            columns.append((name, (values.values, codes)))
    elif isinstance(index, pickled_values.RangeIndex):
        if not (index.start == 0 and index.step == 1 and index.name is None):
            columns.append((index.name if isinstance(index.name, str) else "index",
                            pa.array(range(index.start, index.stop, index.step), type=pa.int64())))
    else:
        columns.append((index.name if isinstance(index.name, str) else "index", index.values))
    for position, name in enumerate(_labels(frame.columns, path)):
        if not isinstance(name, str):
            raise SourceError(path, f"column {position} has the name {preview(name)}, expected a string")
        columns.append((name, frame.column(position)))
    counts = Counter(name for name, _ in columns)
    repeated = sorted(name for name, count in counts.items() if count > 1)
    if repeated:
        raise SourceError(path, f"column or index level name {preview(repeated[0])} occurs twice")
    return columns


_ARROW_KINDS = (pa.types.is_boolean, pa.types.is_integer, pa.types.is_floating, pa.types.is_string,
                pa.types.is_large_string, pa.types.is_timestamp)
NAT = -(2**63)


def _native(array: pickled_values.Array) -> Any:
    values = array.numpy()
    return values.astype(values.dtype.newbyteorder("=")) if array.dtype.byteorder == ">" else values


def _timestamps(array: pickled_values.Array, tz: str | None, name: str, path: str) -> pa.Array:
    if array.dtype.unit not in ("s", "ms", "us", "ns"):
        raise SourceError(path, f"column {preview(name)}: datetime64 unit {preview(array.dtype.unit)} is not supported")
    ticks = _native(array).view(f"i{array.dtype.itemsize}")
    return pa.array(ticks, mask=ticks == NAT, type=pa.int64()).view(pa.timestamp(array.dtype.unit, tz=tz))


def _take(categories: pa.Array, codes: pickled_values.Array, budget: safe_pickle.Budget) -> pa.Array:
    """categories[codes], -1 as null; charged (8 units a value plus the bytes of its text) before it is made."""
    positions = pa.array(codes.numpy().astype("int64"))
    positions = pc.if_else(pc.equal(positions, -1), pa.scalar(None, pa.int64()), positions)
    sizes = pc.binary_length(categories) if pa.types.is_string(categories.type) or pa.types.is_large_string(
        categories.type) else None
    text = pc.sum(pc.take(sizes, positions)).as_py() if sizes is not None else 0
    budget.charge(8 * len(positions) + (text or 0))
    return pc.take(categories, positions)


def _column_array(values: Any, name: str, path: str, budget: safe_pickle.Budget) -> pa.Array:
    """One column as Arrow: typed from its dtype; object columns by their values (JSON when mixed)."""
    if isinstance(values, pa.Array):
        array = values
    elif isinstance(values, tuple):  # a MultiIndex level and its codes
        array = _take(_column_array(values[0], name, path, budget), values[1], budget)
    elif isinstance(values, pickled_values.Categorical):
        array = _take(_column_array(values.categories, name, path, budget), values.codes, budget)
    elif isinstance(values, pickled_values.Datetimes):
        array = _timestamps(values.data, values.tz, name, path)
    elif isinstance(values, pickled_values.ArrowStrings):
        array = values.array
    elif isinstance(values, pickled_values.Masked):
        array = pa.array(_native(values.data), mask=values.mask.numpy().view("u1") != 0)
    elif isinstance(values, pickled_values.Array) and values.dtype.kind in "OUS":
        budget.charge(8 * values.size)
        return _object_array(values.items(), name, path, budget)
    elif isinstance(values, pickled_values.Array) and values.dtype.kind == "M":
        array = _timestamps(values, None, name, path)
    elif isinstance(values, pickled_values.Array):
        array = pa.array(_native(values), from_pandas=True)  # NaN -> null
    else:
        raise SourceError(path, f"column {preview(name)}: a {describe_object(values)} is not supported")
    budget.charge(8 * len(array) + (array.nbytes if not isinstance(values, pickled_values.Array) else 0))
    if pa.types.is_large_string(array.type):  # pandas 3's string dtype: stored as pandas 2's object strings are
        array = array.cast(STRING)
    if not any(check(array.type) for check in _ARROW_KINDS):
        raise SourceError(path, f"column {preview(name)}: Arrow {array.type} is not supported")
    return array


def _object_array(values: list, name: str, path: str, budget: safe_pickle.Budget | None = None) -> pa.Array:
    converter = Converter(budget)
    kinds = set()
    for value in values:
        if is_missing(value):
            continue
        if isinstance(value, str):
            kinds.add("string")
        elif type(value) is bool:
            kinds.add("bool")
        elif Converter.integer(value) is not None:
            kinds.add("int")
        elif Converter.is_float(value):
            kinds.add("float")
        else:
            kinds.add("other")
    typed = {frozenset(): STRING, frozenset({"string"}): STRING, frozenset({"bool"}): pa.bool_(),
             frozenset({"int"}): pa.int64(), frozenset({"float"}): pa.float64()}
    if frozenset(kinds) == {"int", "float"} and all(
            abs(v) <= EXACT_FLOAT_INT for v in values if Converter.integer(v) is not None):
        typed[frozenset(kinds)] = pa.float64()
    kind = typed.get(frozenset(kinds))
    shape: Shape = Scalar(kind) if kind is not None else Json()
    converted = []
    for row, value in enumerate(values):
        try:
            converted.append(converter.value(value, shape))
        except Mismatch as e:
            inside = f" at `{e.place}`" if e.place else ""
            raise SourceError(path, f"column {preview(name)}, row {row}{inside}: {e.message}") from None
    return pa.array(converted, type=kind or STRING)


def frame_table(path: str, none_cells: str | None = None) -> pa.Table:
    """The whole DataFrame of `path` as one Arrow table: index levels that carry data first, then the columns; with
    `none_cells`, then a column of that name listing per row the object columns whose cell is None (every null of
    the table is NaN or None in the frame, and `str()` of the two differs)."""
    frame, budget = load_frame(path)
    arrays, names, nones = [], [], {}
    try:
        with safe_pickle.named_errors(path):
            for name, values in _frame_columns(frame, path):
                names.append(name)
                arrays.append(_column_array(values, name, path, budget))
                if none_cells is not None and isinstance(values, pickled_values.Array) and values.dtype.kind == "O":
                    nones[name] = [item is None for item in values.items()]
    except SourceError:
        raise
    except (ValueError, pa.ArrowException) as e:  # Bad, and numpy's or Arrow's own refusal of the values
        raise SourceError(path, f"column {preview(names[-1]) if names else '?'}: {cut(str(e))}") from None
    if none_cells is not None:
        if none_cells in names:
            raise SourceError(path, f"the frame has a column {preview(none_cells)}, the name this table gives its "
                                    "None cells")
        rows = len(arrays[0]) if arrays else 0
        listed = [[name for name, flags in nones.items() if flags[row]] for row in range(rows)]
        budget.charge(8 * rows + sum(8 + len(name) for cells in listed for name in cells))
        names.append(none_cells)
        arrays.append(pa.array(listed, type=pa.list_(STRING)))
    return pa.Table.from_arrays(arrays, names=names) if names else pa.table({})
