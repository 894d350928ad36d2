"""One JSON value under the shared rules (`loads_strict`): invalid UTF-8, invalid JSON, an object with a
duplicate key and an unpaired surrogate escape (`"\\ud800"`: UTF-8, hence Parquet, cannot hold it) are refused;
integers of any size are kept exactly (in JSON text too, `json_text`)."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import orjson
import stringzilla as sz

from ..errors import ContentError
from ..preview import invalid_utf8, preview

JSON_WHITESPACE = b" \t\r\n"
KEY_END = re.compile(rb'"[ \t\r\n]*:')
"""Ends a key (and, rarely, an escaped quote in a string): its count bounds the number of keys in the text."""


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (which value a reader keeps is arbitrary)."""


class UniqueKeyDict(dict):
    """A dict that refuses to set a key twice: the `map_type` for ijson, so that a duplicate key is refused."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self:
            raise DuplicateKeyError(f"duplicate key {preview(key)} in a JSON object")
        super().__setitem__(key, value)


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    """`object_pairs_hook` for `json.loads`: the object as a dict, or DuplicateKeyError naming the repeated key."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {preview(key)} in a JSON object")
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
        return invalid_utf8(line, e.start, " of the line")
    if "surrogate" in str(error):
        return f"{UNPAIRED_SURROGATE} ({error}){text_at(error)}"
    return f"invalid JSON ({error}){text_at(error)}"


def text_at(error: Exception) -> str:
    """`; at '…' after '…'`: the text at and before where a JSONDecodeError (orjson's) points, at most 40 and 30
    characters of it (a line can be megabytes), or "" when the error does not say."""
    doc, pos = getattr(error, "doc", None), getattr(error, "pos", None)
    if not isinstance(doc, str) or not isinstance(pos, int) or not 0 <= pos <= len(doc):
        return ""
    at, before = doc[pos : pos + 40], doc[max(0, pos - 30) : pos]
    if not at:
        return f"; at the end, after {preview(before)}" if before else ""
    return f"; at {preview(at)}" + (f" after {preview(before)}" if before else "")


STRICT_RECHECK_DEPTH = 200
"""Values nested deeper than this are parsed again by Python's json (which recurses, and refuses what it cannot
nest), so that whether a deep value is read never depends on what its strings hold."""
BIG_FLOAT = float(2**63)
"""orjson gives a float for an integer beyond 64 bits; every such float is at least this large in magnitude."""
COLON_ESCAPES = (b"\\u003a", b"\\u003A")
"""The only JSON escapes that decode to `:` (a literal `:` in a string is never part of an escape)."""


def _needs_exact_parse(text: bytes, value: Any) -> bool:
    """Whether `text`, which orjson parsed into `value`, may hold a duplicate key, an integer orjson turned into a
    float, or nesting deeper than STRICT_RECHECK_DEPTH: exact for the first two, with no second parse.

    Keys: every member of an object is followed by one `:` outside strings, and each `:` of a decoded string is a
    `:` or a `\\u003a` escape of its string token. So with no duplicate key, the text's colons and `\\u003a`
    escapes minus the colons of every string in `value` (keys included) equal the number of keys in `value`'s
    dicts; a duplicate key drops a member (and its strings) from `value`, which makes the difference larger."""
    keys = string_colons = depth = 0
    level = [value]
    while level:
        depth += 1
        if depth > STRICT_RECHECK_DEPTH:
            return True
        below: list = []
        for item in level:
            kind = type(item)
            if kind is str:
                string_colons += item.count(":")
            elif kind is dict:
                keys += len(item)
                string_colons += "".join(item).count(":")
                below.extend(item.values())
            elif kind is list:
                below.extend(item)
            elif kind is float and not -BIG_FLOAT < item < BIG_FLOAT:
                return True
        level = below
    return sz.count(text, b":") + _colon_escapes(text) - string_colons != keys


def _colon_escapes(text: bytes) -> int:
    """How many `\\u003a` (either case) in `text` are escapes: their backslash is the last of an odd run."""
    count = 0
    for escape in COLON_ESCAPES:
        if not sz.count(text, escape):  # SIMD; the loop below only for text that has one
            continue
        at = text.find(escape)
        while at >= 0:
            start = at
            while start and text[start - 1] == 0x5C:
                start -= 1
            count += (at - start) % 2 == 0
            at = text.find(escape, at + 1)
    return count


def loads_strict(text: bytes) -> Any:
    """One JSON value under the shared rules: ValueError (saying what is wrong) for invalid UTF-8 or JSON, an
    unpaired surrogate escape or a duplicate key; integers of any size kept exact.

    orjson parses; the standard library parses again, refusing duplicate keys and keeping big integers as
    int, only when the text may hold either or is deeply nested (`_needs_exact_parse`, exact without a second
    parse for the first two)."""
    try:
        value = orjson.loads(text)
    except SystemError as e:  # an allocation orjson could not make, set as an error it then returned past
        if isinstance(e.__cause__, MemoryError):
            raise MemoryError(str(e.__cause__)) from None
        raise
    except orjson.JSONDecodeError as e:
        if BEYOND_DOUBLE in str(e):  # an integer past a double's range: valid JSON, kept exact
            return _loads_beyond_double(text, e)
        if str(e).startswith(OUT_OF_MEMORY):  # (no fault of the text's: the reader says so, naming the line)
            raise MemoryError(str(e)) from None
        raise ContentError(_json_problem(text, e)) from None
    if _needs_exact_parse(text, value):
        try:
            value = json.loads(text, object_pairs_hook=refuse_duplicate_keys)
        except RecursionError:  # orjson reads 1,024 levels, Python's json recurses fewer
            raise ContentError("invalid JSON (nested too deeply for Python's json)") from None
    return value


OUT_OF_MEMORY = "Not enough memory"
"""How orjson's refusal starts when it could not allocate its buffer."""
BEYOND_DOUBLE = "number is infinity when parsed as double"
"""orjson's refusal of a number past a double's range, an integer of 309 digits included."""


def _loads_beyond_double(text: bytes, error: Exception) -> Any:
    """`text`, which orjson refused for a number past a double's range, read by Python's json under the same rules:
    integers exact (up to Python's bound on digits converted, 4,300 by default); a float past a double's range, NaN
    and Infinity, invalid UTF-8, an unpaired surrogate escape and a duplicate key refused."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        raise ContentError(_json_problem(text, error)) from None

    def finite(literal: str) -> float:
        number = float(literal)
        if number in (float("inf"), float("-inf")):
            raise ContentError(f"invalid JSON (the number {preview(literal)} is past a double's range)")
        return number

    def no_constant(name: str) -> Any:
        raise ContentError(f"invalid JSON ({name} is not a JSON value)")

    try:
        value = json.loads(decoded, object_pairs_hook=refuse_duplicate_keys, parse_float=finite,
                           parse_constant=no_constant)
    except RecursionError:
        raise ContentError("invalid JSON (nested too deeply for Python's json)") from None
    except json.JSONDecodeError as e:
        raise ContentError(f"invalid JSON ({e.msg}){text_at(e)}") from None
    except ValueError as e:  # int() of more than sys.get_int_max_str_digits() digits (its time is their square)
        if "integer string conversion" not in str(e):  # (a duplicate key, a float past the range: said already)
            raise
        raise ContentError(f"an integer of more than {sys.get_int_max_str_digits():,} digits, more than Python "
                           "converts (the time it takes grows with the square of their number)") from None
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ContentError(UNPAIRED_SURROGATE) from None
    return value


def json_text(value: Any) -> str:
    """A parsed JSON value as compact JSON text; integers beyond 64 bits stay exact. ContentError for a value nested
    deeper than Python's json writes (orjson writes 255 levels, JSON readers give up to 1,024)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except RecursionError:
            raise ContentError("a value nested too deeply to be written as JSON text") from None
