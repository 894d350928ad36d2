"""Bounded text of a value read from a file, for error messages.

`repr()` costs what the value expands to: a list that holds ten references to a list that holds ten references ...
nine levels deep is 230 bytes of pickle and 10^9 items of repr (minutes, gigabytes, then a MemoryError), and
`f"{value!r:.40}"` cuts the text only after making all of it. `preview` stops after a number of characters and
a number of values visited (a shared reference counts at each visit), whatever the value holds.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Iterator, Sequence
from typing import Any

CHARS = 80
"""Characters of a preview at most (then `…`)."""
NODES = 40
"""Values a preview visits at most: items of containers, each visit of a shared one counted."""
ATOMS = (bool, float, type(None), datetime.timedelta)
"""Types whose repr is short whatever the file holds."""


class _Spent(Exception):
    """The preview's budget of values is used up."""


def preview(value: Any, chars: int = CHARS, nodes: int = NODES) -> str:
    """repr-like text of `value`, at most `chars` characters (cut with `…`), made from at most `nodes` values.

    Text and bytes are cut before they are quoted; an integer of more than 64 bits is written as its size (Python
    writes no more than 4,300 digits, and takes quadratic time to); lists, tuples, sets and dicts as brackets around
    their first items; other objects as their `preview_text()` or their type's name."""
    left = [nodes]
    pieces: list[str] = []
    size = 0
    try:
        for piece in _pieces(value, left, chars):
            pieces.append(piece)
            size += len(piece)
            if size > chars:
                break
    except _Spent:
        size = chars + 1
    text = "".join(pieces)
    return text if size <= chars else text[:chars] + "…"


def previews(values: Sequence[Any], count: int, chars: int = CHARS) -> str:
    """The first `count` of `values` (paths, ids: as long and odd as whoever made them), each a bounded `preview`
    (of `chars` characters at most), joined by commas, then `...` if there are more."""
    return ", ".join(preview(value, chars) for value in values[:count]) + (" ..." if len(values) > count else "")


def one_line(text: object, chars: int = CHARS) -> str:
    """`str(text)` (an exception's words, say) on one line, its runs of whitespace made one space, cut to `chars`
    characters with `…`."""
    return cut(" ".join(str(text).split()), chars)


def did_you_mean(name: str, known: list[str]) -> str:
    """` (did you mean 'beir/scifact'?)` for the known names closest to a misspelt one; "" when none is close."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.75)
    return f" (did you mean {' or '.join(map(preview, close))}?)" if close else ""


def cut(text: str, chars: int = CHARS) -> str:
    """`text` (made by the reader, such as a global's name from the file) cut to `chars` characters with `…`."""
    return text if len(text) <= chars else text[:chars] + "…"


_BRACKETS = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), frozenset: ("frozenset({", "})"),
             dict: ("{", "}")}


def _pieces(value: Any, left: list[int], chars: int) -> Iterator[str]:
    left[0] -= 1
    if left[0] < 0:
        raise _Spent
    kind = type(value)
    if kind is str:
        yield repr(value[: chars + 1])
    elif kind is bytes or kind is bytearray:
        yield repr(bytes(value[: chars + 1]))
    elif kind is int:
        yield repr(value) if value.bit_length() <= 64 else f"<int of {value.bit_length():,} bits>"
    elif kind in ATOMS:
        yield repr(value)
    elif kind in (datetime.date, datetime.datetime, datetime.time):
        yield f"{kind.__name__}({value.isoformat()})"  # (a timezone's name, in its repr, is as long as the file)
    elif kind in _BRACKETS:
        opening, closing = _BRACKETS[kind]
        yield opening
        for number, item in enumerate(value.items() if kind is dict else value):
            if number:
                yield ", "
            if kind is dict:
                yield from _pieces(item[0], left, chars)
                yield ": "
                item = item[1]
            yield from _pieces(item, left, chars)
        yield "," + closing if kind is tuple and len(value) == 1 else closing
    elif kind is slice:
        yield "slice("
        for number, item in enumerate((value.start, value.stop, value.step)):
            yield ", " if number else ""
            yield from _pieces(item, left, chars)
        yield ")"
    else:
        yield _named(value, chars)


def _named(value: Any, chars: int) -> str:
    """An object other than a builtin value: its own `preview_text()` (the pickle reader's records and descriptions
    have one), else its type's name."""
    own = getattr(type(value), "preview_text", None)
    if callable(own):
        return cut(own(value), chars)
    return f"<{type(value).__name__}>"


def invalid_utf8(data: bytes, start: int, where: str = "", at: int | None = None) -> str:
    """`invalid UTF-8 at byte N<where> (<the bytes there>)`: how a message names the bytes at `start` of `data`
    that do not decode; `where` says of what (" of the line"), `at` is N when `data` is a piece of it."""
    return f"invalid UTF-8 at byte {start if at is None else at}{where} ({preview(data[start:start + 4])})"
