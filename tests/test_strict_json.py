"""core.readers.strict_json.loads_strict against Python's json (object_pairs_hook refusing duplicate keys), the
exact reader it replaces on most records: equal values, and the same refusals, on generated JSON text full of what
fools a scan (escaped quotes, backslash runs, `":` and `\\u003a` in strings, nesting, unicode, big integers) and on
the real CRAG example records."""

from __future__ import annotations

import bz2
import json
import math
import os
import random

import orjson
import pytest
from conftest import assert_names
from hypothesis import given, settings
from hypothesis import strategies as st
from ragloaders.core.readers import strict_json
from ragloaders.core.readers.strict_json import DuplicateKeyError, loads_strict, refuse_duplicate_keys

CRAG_EXAMPLE = os.path.join(os.path.dirname(__file__), "data", "crag", "dev_data.jsonl.bz2")

TRICKY_CHARS = st.sampled_from(['"', "\\", ":", '":', '\\"', "\\\\", "{", "}", "[", "]", ",", " ", "\n", "é", "\u2028",
                                "😀", "\x00", "\x1f", "u003a", "0123456789012345678901"])
KEYS = st.lists(st.one_of(TRICKY_CHARS, st.characters(codec="utf-8")), max_size=4).map("".join)
STRINGS = st.lists(st.one_of(TRICKY_CHARS, st.characters(codec="utf-8")), max_size=12).map("".join)
NUMBERS = st.one_of(st.integers(-10**40, 10**40), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64 - 1, 2**64, 10**19, 0.0, -0.0]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, STRINGS)
# An object is a list of (key, value) pairs, so that keys can repeat.
TREES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4).map(lambda items: ("array", items)),
    st.lists(st.tuples(KEYS, inner), max_size=4).map(lambda pairs: ("object", pairs)),
), max_leaves=25)


def encode_string(text: str, rng: random.Random) -> str:
    """`text` as a JSON string token, each character written plainly, with its short escape or as \\uXXXX (either
    case) at random, so that `:` and `"` also appear as `\\u003a` / `\\u0022` and non-ASCII as surrogate pairs."""
    out = ['"']
    for char in text:
        choice = rng.random()
        if char in '"\\' or char < " " or (choice < 0.3 and ord(char) < 0x10000):
            if choice < 0.5 and char in '"\\\n\t':
                out.append(json.dumps(char)[1:-1])
            else:
                code = ord(char)
                digits = f"{code:04x}" if rng.random() < 0.5 else f"{code:04X}"
                out.append(f"\\u{digits}")
        elif choice < 0.4 and ord(char) >= 0x10000:
            out.append(json.dumps(char)[1:-1])  # a surrogate pair
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def encode(tree, rng: random.Random) -> str:
    """The JSON text of a generated tree, with random whitespace between tokens."""
    space = lambda: rng.choice(["", "", " ", "\n", " \t\r\n"])  # noqa: E731
    if isinstance(tree, tuple):
        kind, items = tree
        if kind == "array":
            return "[" + ",".join(space() + encode(item, rng) + space() for item in items) + "]"
        return "{" + ",".join(space() + encode_string(key, rng) + space() + ":" + space() + encode(value, rng)
                              + space() for key, value in items) + "}"
    if isinstance(tree, str):
        return encode_string(tree, rng)
    if isinstance(tree, float):
        return repr(tree)
    return json.dumps(tree)


def python_parse(text: bytes):
    """The oracle: Python's json refusing duplicate keys; ("error", type) when it refuses."""
    try:
        return json.loads(text, object_pairs_hook=refuse_duplicate_keys)
    except DuplicateKeyError as e:
        return ("duplicate", str(e))
    except ValueError:
        return ("error", None)


def strict_parse(text: bytes):
    try:
        return loads_strict(text)
    except DuplicateKeyError as e:
        return ("duplicate", str(e))
    except ValueError:
        return ("error", None)


def same(a, b) -> bool:
    """Equal JSON values, ints and floats told apart (1 != 1.0 here), -0.0 from 0.0 too."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def check_against_python(tree, seed: int) -> None:
    text = encode(tree, random.Random(seed)).encode("utf-8", "surrogatepass")
    expected = python_parse(text)
    if expected == ("error", None):
        return  # (a lone surrogate from a \\uXXXX escape of half a pair: both refuse, tested below)
    assert same(strict_parse(text), expected)


@settings(max_examples=120, deadline=None)
@given(TREES, st.integers(0, 2**32))
def test_loads_strict_reads_and_refuses_exactly_what_pythons_json_does(tree, seed):
    check_against_python(tree, seed)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None)
@given(TREES, st.integers(0, 2**32))
def test_loads_strict_reads_and_refuses_exactly_what_pythons_json_does_at_length(tree, seed):
    check_against_python(tree, seed)


@pytest.mark.parametrize("text", [
    b'{"a": 1, "a": 2}',
    b'{"a\\": ": 1, "a\\": ": 2}',
    b'{"x": "\\\\", "x": 1}',
    b'{"k": {"b": "\\"b\\":", "b": 1}}',
    b'[{"a:": 1}, {"\\u003a": 1, ":": 2}]',
    b'{"a": [1, {"c": 1, "c": {"d": "\\u003a\\u003A"}}]}',
])
def test_a_duplicate_key_is_refused_naming_it_whatever_the_strings_around_it_hold(text):
    with pytest.raises(DuplicateKeyError) as caught:
        loads_strict(text)
    assert str(caught.value) == python_parse(text)[1]


@pytest.mark.parametrize("text", [
    b'{"a": 123456789012345678901234567890}',
    b'[-9223372036854775809, "12345678901234567890123"]',
    b'{"id": 18446744073709551616}',
])
def test_an_integer_beyond_64_bits_is_kept_exact(text):
    assert same(loads_strict(text), json.loads(text))


PAST_A_DOUBLE = b"1" + b"0" * 400
"""An integer past a double's range, which orjson refuses as "infinity"."""


@pytest.mark.parametrize(("text", "refused"), [
    (b'{"n": ' + PAST_A_DOUBLE + b', "m": [-' + PAST_A_DOUBLE + b', 1.5, "\\ud83d\\ude00"]}', None),
    (b"[" + PAST_A_DOUBLE + b", 1e400]", "the number '1e400' is past a double's range"),
    (b"[" + PAST_A_DOUBLE + b", NaN]", "NaN is not a JSON value"),
    (b"[" + PAST_A_DOUBLE + b', "\\udc00"]', "unpaired surrogate"),
    (b'{"a": ' + PAST_A_DOUBLE + b', "a": 2}', "duplicate key 'a'"),
    (b"[" + PAST_A_DOUBLE + b', "\xff"]', "invalid UTF-8"),
    (b"[" + PAST_A_DOUBLE + b", 1,, 2]", "invalid JSON (Expecting value)"),
    (b"[1" + b"0" * 5_000 + b"]", "an integer of more than 4,300 digits"),
])
def test_an_integer_past_a_doubles_range_is_kept_exact_under_the_same_rules(text, refused):
    """orjson refuses an integer of 309 digits or more ("number is infinity when parsed as double"): such a value,
    which the rules keep exact, was refused as invalid JSON. Python's json reads it, and what else the line holds
    is refused as orjson would refuse it."""
    if refused is None:
        assert same(loads_strict(text), json.loads(text))
        return
    with pytest.raises(ValueError) as caught:
        loads_strict(text)
    assert_names(caught.value, refused)


@pytest.mark.parametrize("text", [
    b'{"a": "\\\\u003a", "b": 1}',
    b'{"a": "\\\\\\u003a:", "b": "\\u003A"}',
    b'{"12345678901234567890123": "x", "\\"": "\\\\\\\\\\""}',
    '{"é:": "😀\\ud83d\\ude00:", "u003a": "\\\\"}'.encode(),
])
def test_text_that_only_looks_like_a_key_or_a_long_integer_needs_no_second_parse(text):
    """The scan is exact: no duplicate key and no long integer, so orjson's value is kept without Python's parse."""
    value = orjson.loads(text)
    assert not strict_json._needs_exact_parse(text, value)
    assert same(loads_strict(text), json.loads(text))


def test_a_lone_surrogate_escape_is_refused():
    with pytest.raises(ValueError, match="unpaired surrogate"):
        loads_strict(b'{"a": "\\ud800"}')
    with pytest.raises(ValueError) as caught:
        loads_strict(b'{"a": "' + "é".encode() * 100_000 + b'\\ud800 and more"}')
    assert_names(caught.value, "unpaired surrogate", "at '\\\\ud800 and more", "after 'éééé")
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize(("text", "shown"), [
    (b'{"a": 1,, "b": 2}', ("at ', \"b\": 2}'", "after '{\"a\": 1,'")),
    (b'{"a": "' + "é".encode() * 1_000_000 + b'" "b": 2}', ("at '\"b\": 2}'", "after 'ééé")),
    (b'{"a": [1, 2', ("at the end, after '{\"a\": [1, 2'",)),
    (b'{"a": "\xff"}', ("invalid UTF-8 at byte 7", "b'\\xff\"}'")),
])
def test_invalid_json_shows_the_text_at_the_error_bounded(text, shown):
    with pytest.raises(ValueError) as caught:
        loads_strict(text)
    assert_names(caught.value, *shown)
    assert len(str(caught.value)) < 400


@pytest.fixture(scope="module")
def crag_lines() -> list[bytes]:
    """The official example file's 10 JSON lines (decompressed once: bz2 takes seconds on a loaded machine)."""
    with open(CRAG_EXAMPLE, "rb") as f:
        lines = [line for line in bz2.decompress(f.read()).split(b"\n") if line.strip()]
    assert len(lines) == 10
    return lines


def test_the_real_crag_records_are_read_as_pythons_json_reads_them_with_no_second_parse(crag_lines):
    """On the 10 official example records (HTML full of `":`, escaped quotes and `\\\\u003A`), every record used to
    be parsed twice."""
    for line in crag_lines:
        assert not strict_json._needs_exact_parse(line, orjson.loads(line))
        assert same(loads_strict(line), python_parse(line))


def test_a_duplicate_key_added_to_a_real_crag_record_is_found(crag_lines):
    line = crag_lines[0]
    doubled = line[:-1] + b', "query": "again"}'
    with pytest.raises(DuplicateKeyError, match="'query'"):
        loads_strict(doubled)
    inner = line.replace(b'"page_name":', b'"page_name": "x", "page_name":', 1)
    with pytest.raises(DuplicateKeyError, match="'page_name'"):
        loads_strict(inner)
