"""Parsed values checked against declared Arrow fields (`conform`), and the small value rules shared by the
readers: int32 scores, Python list literals of strings."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from ..errors import ContentError
from ..preview import preview as repr_preview
from .strict_json import json_text

JSON_FIELD = {b"ragloaders": b"json"}
"""Field metadata marking a string column that holds a JSON value serialised as text."""


def preview(value: Any) -> str:
    """A value read from JSON as JSON text, cut to 60 characters: what error messages show of it (a value too deep
    for JSON text as core.preview shows it)."""
    try:
        text = json_text(value)  # integers beyond 64 bits too (orjson.dumps refuses them)
    except ContentError:
        return repr_preview(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _conform_value(value: Any, field: pa.Field, where: str) -> Any:
    if value is None:
        return None
    if field.metadata == JSON_FIELD:
        return json_text(value)
    kind = field.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if isinstance(value, str):
            return value
        expected = "a string"
    elif pa.types.is_integer(kind):
        if isinstance(value, int) and not isinstance(value, bool):
            bits = kind.bit_width
            low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if pa.types.is_signed_integer(kind) else (0, 2**bits)
            if low <= value < high:
                return value
            raise ContentError(f"`{where}` = {value} does not fit in {kind}")
        expected = "an integer"
    elif pa.types.is_floating(kind):
        if isinstance(value, int) and not isinstance(value, bool) and not _exact_in(value, kind.bit_width):
            raise ContentError(f"`{where}` = {preview(value)} cannot be held exactly in {kind}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        expected = "a number"
    elif pa.types.is_boolean(kind):
        if isinstance(value, bool):
            return value
        expected = "true or false"
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        if isinstance(value, list):
            item = kind.value_field
            return [_conform_value(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        expected = "a list"
    elif pa.types.is_struct(kind):
        if isinstance(value, dict):
            return conform(value, list(kind), where)
        expected = "an object"
    else:
        raise TypeError(f"unsupported type {kind}")
    raise ContentError(f"`{where}` must be {expected}, got {preview(value)}")


def conform(record: Any, fields: Iterable[pa.Field], where: str = "") -> dict:
    """Check a parsed JSON record against the declared fields and return the row for Arrow.

    Raises ValueError naming the offending key; unknown keys are an error, never dropped.
    """
    if not isinstance(record, dict):
        raise ContentError(f"expected a JSON object{' at `' + where + '`' if where else ''}, got {preview(record)}")
    fields = list(fields)
    names = {field.name for field in fields}
    unknown = [key for key in record if key not in names]
    if unknown:
        place = f" in `{where}`" if where else ""
        raise ContentError(f"unexpected key {repr_preview(unknown[0])}{place}; expected only {sorted(names)}")
    prefix = f"{where}." if where else ""
    return {f.name: _conform_value(record.get(f.name), f, prefix + f.name) for f in fields}


def check_required(row: dict, required: Iterable[str]) -> None:
    for name in required:
        if row.get(name) is None:
            raise ContentError(f"missing required field `{name}`")


def literal_string_list(text: str) -> list[str] | None:
    """A Python list literal of strings ("['a', \"b's\"]") as a list, read with `ast.literal_eval` (never `eval`);
    None when `text` is not such a literal."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def fits_int32(value: int) -> bool:
    return -(2**31) <= value < 2**31


FLOAT_BITS = {16: (11, 16), 32: (24, 128), 64: (53, 1024)}
"""Bit width of a float -> (its significand's bits, the bits of the largest integer below its range)."""


def _exact_in(value: int, width: int) -> bool:
    """Whether the integer `value` is one a float of `width` bits holds exactly (2**63 is; 2**53 + 1 is not)."""
    significand, largest = FLOAT_BITS[width]
    magnitude = abs(value)
    if magnitude == 0:
        return True
    odd = magnitude >> ((magnitude & -magnitude).bit_length() - 1)
    return odd.bit_length() <= significand and magnitude.bit_length() <= largest
