"""The search indexes' inputs computed over whole Arrow arrays (no Python object per name), equal to search.py's
per-name Python functions on every input.

The Python string functions the official server uses are Unicode-aware (`str.lower`, `str.split` on Unicode
whitespace), and Arrow's UTF-8 kernels are not provably the same on every non-ASCII string. So the Arrow kernels
run only on ASCII names, where each step is exactly the Python one (ASCII lower case; `_` to a space; removing
`string.punctuation`, all ASCII; the ASCII characters `str.split` splits on), and the few non-ASCII names take
the Python functions themselves.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .indexes import sort_order

_PUNCTUATION_CLASS = "[" + "".join(f"\\x{ord(c):02x}" for c in string.punctuation) + "]"
_ASCII_WHITESPACE_RUN = "[" + "".join(f"\\x{c:02x}" for c in range(128) if chr(c).isspace()) + "]+"
"""The ASCII characters `str.split()` splits on: \\t \\n \\v \\f \\r, \\x1c-\\x1f and the space."""


def _ascii_joined(values: pa.Array) -> pa.Array:
    """`" ".join(value.split())` of ASCII values."""
    spaced = pc.replace_substring_regex(values, _ASCII_WHITESPACE_RUN, " ")
    return pc.utf8_trim(spaced, " ")


def _with_python_for_non_ascii(values: pa.Array, fast: pa.Array, slow: Callable[[str], str]) -> pa.Array:
    """`fast` (computed for the ASCII values), with `slow(value)` in place of each non-ASCII value's."""
    non_ascii = pc.invert(pc.string_is_ascii(values))
    non_ascii = pc.fill_null(non_ascii, False)
    if not pc.any(non_ascii).as_py():
        return fast
    replacements = pa.array([slow(value) for value in pc.filter(values, non_ascii).to_pylist()], type=pa.string())
    return pc.replace_with_mask(fast, non_ascii, replacements)


def _string_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], type=values.type)
    return values.cast(pa.string()) if pa.types.is_large_string(values.type) else values


def normalised(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """search.normalise of each (non-null) value."""
    from .search import normalise

    values = _string_array(values)
    lowered = pc.ascii_lower(values)
    spaced = pc.replace_substring(lowered, "_", " ")
    bare = pc.replace_substring_regex(spaced, _PUNCTUATION_CLASS, "")
    return _with_python_for_non_ascii(values, _ascii_joined(bare), normalise)


def whitespace_joined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`" ".join(value.split())` of each (non-null) value: its words, as `str.split()` finds them, one space apart."""
    values = _string_array(values)
    return _with_python_for_non_ascii(values, _ascii_joined(values), lambda value: " ".join(value.split()))


def distinct_in_order(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The distinct non-null values in order of first occurrence (a dict's keys, in the source's order)."""
    return pc.unique(pc.drop_null(_string_array(values)))


def grouped_by_name(keys: pa.Array, names: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The distinct `names` (one per key), sorted, and each one's keys in the
    order given (a list array)."""
    order = sort_order(names)
    sorted_names = names.take(pa.array(order, type=pa.int64()))
    if len(sorted_names):
        changes = pc.not_equal(sorted_names.slice(1), sorted_names.slice(0, len(sorted_names) - 1))
        starts = np.concatenate([[0], np.flatnonzero(np.asarray(changes, dtype=bool)) + 1])
    else:
        starts = np.zeros(0, dtype=np.int64)
    offsets = pa.array(np.append(starts, len(sorted_names)), type=pa.int32())
    grouped = pa.ListArray.from_arrays(offsets, keys.take(pa.array(order, type=pa.int64())),
                                       type=pa.list_(pa.string()))
    return sorted_names.take(pa.array(starts, type=pa.int64())), grouped


def postings_from_joined(joined: pa.Array) -> dict[str, Any]:
    """search.postings_arrays of the documents `[text.split() for text in joined]`, where each text's words are
    one space apart with none before or after (`normalised` or `whitespace_joined` output)."""
    split = pc.split_pattern(joined, " ")
    tokens = pc.list_flatten(split)
    doc_of = np.asarray(pc.list_parent_indices(split), dtype=np.int64)
    present = pc.not_equal(tokens, "")  # an empty text splits into one empty token, `"".split()` into none
    tokens, doc_of = tokens.filter(present), doc_of[np.asarray(present, dtype=bool)]
    size = len(joined)
    encoded = pc.dictionary_encode(tokens) if len(tokens) else pa.DictionaryArray.from_arrays(
        pa.array([], type=pa.int32()), pa.array([], type=pa.string()))
    words = encoded.dictionary  # in order of first occurrence, the order search.postings_arrays numbers terms
    term_of = np.asarray(encoded.indices, dtype=np.int64)
    pairs, freqs = np.unique(term_of * max(size, 1) + doc_of, return_counts=True)  # by term, then document
    terms = pairs // max(size, 1)
    return {"doc_len": np.bincount(doc_of, minlength=size).astype(np.int64),
            "docs": (pairs % max(size, 1)).astype(np.int64), "freqs": freqs.astype(np.int64),
            "starts": np.searchsorted(terms, np.arange(len(words) + 1)),
            "terms": words, "term_order": sort_order(words)}


def last_rows(column: pa.Array | pa.ChunkedArray, keys: pa.Array, lookups: pa.Array) -> np.ndarray:
    """For each of `lookups`: the last row of `column` holding it, or -1; `keys` are the distinct values of
    `column` (distinct_in_order)."""
    values = _string_array(column)
    key_of_row = np.asarray(pc.fill_null(pc.index_in(values, value_set=keys), -1), dtype=np.int64)
    last = np.full(len(keys), -1, dtype=np.int64)
    held = key_of_row >= 0
    np.maximum.at(last, key_of_row[held], np.flatnonzero(held))
    key_of_lookup = np.asarray(pc.fill_null(pc.index_in(lookups, value_set=keys), -1), dtype=np.int64)
    return np.where(key_of_lookup >= 0, last[np.maximum(key_of_lookup, 0)], -1)
