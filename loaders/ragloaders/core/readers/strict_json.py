"""One JSON value under the shared rules (`loads_strict`): invalid UTF-8, invalid JSON, an object with a
duplicate key and an unpaired surrogate escape (`"\\ud800"`: UTF-8, hence Parquet, cannot hold it) are refused;
integers of any size are kept exactly (in JSON text too, `json_text`)."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

JSON_WHITESPACE = b" \t\r\n"
KEY_END = re.compile(rb'"[ \t\r\n]*:')
"""Ends a key (and, rarely, an escaped quote in a string): its count bounds the number of keys in the text."""
_LONG_INTEGER = re.compile(rb"[0-9]{19}")
"""19 digits or more: a number that orjson may turn into a float (beyond int64 / uint64)."""


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (which value a reader keeps is arbitrary)."""


class UniqueKeyDict(dict):
    """A dict that refuses to set a key twice: the `map_type` for ijson, so that a duplicate key is refused."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self:
            raise DuplicateKeyError(f"duplicate key {key!r} in a JSON object")
        super().__setitem__(key, value)


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    """`object_pairs_hook` for `json.loads`: the object as a dict, or DuplicateKeyError naming the repeated key."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {key!r} in a JSON object")
            seen.add(key)
    return result


def count_keys(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


UNPAIRED_SURROGATE = "unpaired surrogate escape such as \\ud800 in a string, which UTF-8 cannot hold"


def _json_problem(line: bytes, error: Exception) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at byte {e.start} of the line ({line[e.start:e.start + 4]!r})"
    if "surrogate" in str(error):
        return f"{UNPAIRED_SURROGATE} ({error})"
    return f"invalid JSON ({error})"


def loads_strict(text: bytes) -> Any:
    """One JSON value under the shared rules: ValueError (saying what is wrong) for invalid UTF-8 or JSON, an
    unpaired surrogate escape or a duplicate key; integers of any size kept exact.

    orjson parses; the standard library parses again, refusing duplicate keys and keeping big integers as
    int, only when the text may hold either (more key-like tokens than keys parsed, or a 19-digit run)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ValueError(_json_problem(text, e)) from None
    if _LONG_INTEGER.search(text) or len(KEY_END.findall(text)) != count_keys(value):
        try:
            value = json.loads(text, object_pairs_hook=refuse_duplicate_keys)
        except RecursionError:  # orjson reads 1,024 levels, Python's json recurses fewer
            raise ValueError("invalid JSON (nested too deeply for Python's json)") from None
    return value


def json_text(value: Any) -> str:
    """A parsed JSON value as compact JSON text; integers beyond 64 bits stay exact."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
