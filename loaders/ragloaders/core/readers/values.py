"""Parsed values checked against declared Arrow fields (`conform`), and the small value rules shared by the
readers: int32 scores, Python list literals of strings."""

from __future__ import annotations

import ast
import re
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


_SPACE_RUN = re.compile(r"[ \t\f\r\n]*")
_RAW_IN_NO_STRING = re.compile(r"[\r\n\x00\ud800-\udfff]")
"""Characters Python's tokenizer refuses raw inside a '...' string (a line end ends it; the others, anywhere)."""
SYNTAX_TREE_LIMIT = 64 << 10
"""Characters of a literal at most that the general path (`ast.literal_eval`) reads: its syntax tree costs about
250 bytes of memory per character of a list of short strings."""


def literal_string_list(text: str) -> list[str] | None:
    """A Python list literal of strings ("['a', \"b's\"]") as a list (never `eval`); None when `text` is not such
    a literal. The common form (`[`, then '...' or "..." strings separated by commas, an optional trailing comma,
    `]`; spaces and line ends between) is read in time and memory linear in its length, an item with a backslash
    decoded by `ast.literal_eval` of that item alone; any other form (prefixes, implicit concatenation, comments)
    by `ast.literal_eval` of the whole, if at most SYNTAX_TREE_LIMIT characters (a longer one gives None)."""
    try:
        items = _plain_list_items(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):  # an escape Python refuses, such as '\x'
        return None
    if items is not None:
        return items
    if len(text) > SYNTAX_TREE_LIMIT:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def _plain_list_items(text: str) -> list[str] | None:
    """The items of `text` when it is a list literal of the common form (see literal_string_list), else None."""
    if not text.startswith("["):
        return None
    items: list[str] = []
    position = _SPACE_RUN.match(text, 1).end()
    while not text.startswith("]", position):
        quote = text[position:position + 1]
        if quote not in ("'", '"'):
            return None
        close = _closing_quote(text, position + 1, quote)
        if close < 0 or _RAW_IN_NO_STRING.search(text, position + 1, close):
            return None
        body = text[position + 1:close]
        items.append(body if "\\" not in body else ast.literal_eval(text[position:close + 1]))
        position = _SPACE_RUN.match(text, close + 1).end()
        if text.startswith(",", position):
            position = _SPACE_RUN.match(text, position + 1).end()
        elif not text.startswith("]", position):
            return None
    return items if position + 1 == len(text) else None


def _closing_quote(text: str, start: int, quote: str) -> int:
    """The index of the `quote` that ends a string whose text starts at `start` (a backslash escapes the character
    after it), or -1. Each character is looked at a bounded number of times."""
    position, close = start, -1
    while True:
        if close < position:
            close = text.find(quote, position)
            if close < 0:
                return -1
        backslash = text.find("\\", position, close)
        if backslash < 0:
            return close
        position = backslash + 2


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
