"""Reading rows of the memory-mapped tables back into the values the official server returns."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from ..core.errors import SourceError
from ..core.preview import one_line, preview
from .indexes import KeyIndex, key_index
from .tables import Tables

OTHER = "other"


def json_value(text: str, where: str, column: str) -> Any:
    """`json.loads` of a JSON-text cell of `column` in the config folder `where` (the value the source held): a
    SourceError naming both when it is not JSON or nests past Python's recursion limit, which only a damaged or
    hostile build holds (a build writes what it parsed, at most 202 levels deep)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise SourceError(where, f"column {column}: a value is not the JSON text a build writes "
                                 f"({type(e).__name__}: {one_line(e, 100)}): {preview(text)}") from None


def row(table: pa.Table, index: int) -> dict[str, Any]:
    """Row `index` of `table` as a dict of Python values."""
    return table.slice(index, 1).to_pylist()[0]


def take_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """The rows (ascending row numbers) of `table`, read batch by batch: Arrow's `take` on a table of many
    record batches first concatenates every batch, which would read the whole memory-mapped table."""
    parts, start = [], 0
    for batch in table.to_batches():
        end = start + batch.num_rows
        low, high = np.searchsorted(rows, [start, end])
        if high > low:
            parts.append(batch.take(pa.array(rows[low:high] - start, type=pa.int64())))
        start = end
    return pa.Table.from_batches(parts, schema=table.schema)


def cell(table: pa.Table, column: str, index: int) -> Any:
    return table.column(column)[index].as_py()


def record(values: dict[str, Any], key_columns: tuple[str, ...], where: str, *,
           json_fields: tuple[str, ...] = ()) -> dict[str, Any]:
    """A row of a record table (mock_kg's `Record` with `other`) as the source's dict: the declared fields that are
    not null (`json_fields` parsed from their JSON text), then the undeclared ones kept in `other` (JSON text).

    The table keeps neither the order of a record's keys nor whether a null field was absent or null: keys come in
    the table's order, and null fields are left out."""
    found = {}
    for name, value in values.items():
        if name in key_columns or name == OTHER or value is None:
            continue
        found[name] = json_value(value, where, name) if name in json_fields else _without_nulls(value)
    other = values.get(OTHER)
    if other is not None:
        undeclared = json_value(other, where, OTHER)
        if not isinstance(undeclared, dict):
            raise SourceError(where, f"column {OTHER}: a value is not a JSON object, as a build writes it: "
                                     f"{preview(other)}")
        found.update(undeclared)
    return found


def _without_nulls(value: Any) -> Any:
    """Nested records (structs) with their null fields left out."""
    if isinstance(value, dict):
        return {name: item for name, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def keyed(tables: Tables, config: str, column: str) -> tuple[pa.Table, KeyIndex]:
    """A table and the index of its key column (its sorted order kept in the tables' store)."""
    table = tables[config]
    return table, key_index(tables.store, f"{config}.{column}", table.column(column))

