"""The mock API's vectorised index building (mock_api/name_arrays.py) against the per-name Python it replaced and
against rank_bm25, on random names mixing ASCII, non-ASCII, punctuation, every kind of whitespace, empty strings,
nulls and duplicates. The comparisons run in one subprocess, so a crash in an Arrow kernel fails the tests."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from ragloaders.mock_api import name_arrays
from ragloaders.mock_api.search import normalise, postings_arrays, with_cutoff_idf, with_okapi_idf

ALPHABET = (
    list("abcXYZ09_ _-") + list("!\"#$%&'()*+,./:;<=>?@[\\]^`{|}~") + list("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x00\x7f")
    + list("\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000")  # non-ASCII whitespace (str.split splits on these)
    + list("ÉéßİıΣσςﬁÅ\u0307日本ǅ¡¿«»\u2014\U0001f600")  # case and punctuation outside ASCII
)


def random_names(rng: random.Random, count: int) -> list[str | None]:
    names: list[str | None] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.05:
            names.append(None)
        elif roll < 0.1:
            names.append("")
        elif roll < 0.3 and names:
            names.append(rng.choice(names))  # a duplicate
        elif roll < 0.6:
            names.append("".join(rng.choice("abc _-.,") for _ in range(rng.randint(1, 12))))  # ASCII, colliding
        else:
            names.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12))))
    return names


def python_grouped(keys: list[str]) -> tuple[list[str], list[list[str]]]:
    """The grouping the per-name build made: distinct normalised names sorted, each with its keys in order."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(normalise(key), []).append(key)
    names = sorted(groups)
    return names, [groups[name] for name in names]


def assert_same_arrays(ours: dict, theirs: dict) -> None:
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        if isinstance(value, np.ndarray):
            assert ours[key].dtype == value.dtype, key
            assert np.array_equal(ours[key], value), key
        else:
            assert ours[key].equals(value), key


def compare(seed: int, count: int) -> None:
    """Every vectorised step equals the Python one on `count` random names (seeded)."""
    rng = random.Random(seed)
    names = random_names(rng, count)
    column = pa.chunked_array([pa.array(names[: count // 2], pa.string()), pa.array(names[count // 2:], pa.string())])
    present = [name for name in names if name is not None]

    assert name_arrays.normalised(pa.array(present, pa.string())).to_pylist() == [normalise(n) for n in present]
    assert name_arrays.whitespace_joined(pa.array(present, pa.large_string())).to_pylist() == [
        " ".join(n.split()) for n in present]
    distinct = list(dict.fromkeys(present))
    keys = name_arrays.distinct_in_order(column)
    assert keys.to_pylist() == distinct

    names_sorted, grouped = name_arrays.grouped_by_name(keys, name_arrays.normalised(keys))
    assert (names_sorted.to_pylist(), grouped.to_pylist()) == python_grouped(distinct)
    documents = [name.split() for name in names_sorted.to_pylist()]
    assert_same_arrays(name_arrays.postings_from_joined(names_sorted), postings_arrays(documents))

    joined = name_arrays.whitespace_joined(keys)
    assert_same_arrays(name_arrays.postings_from_joined(joined), postings_arrays([k.split() for k in distinct]))
    last = {key: row for row, key in enumerate(names) if key is not None}
    assert name_arrays.last_rows(column, keys, joined).tolist() == [last.get(" ".join(k.split()), -1) for k in distinct]


def compare_idf_with_rank_bm25(seed: int) -> None:
    """The idfs, bit for bit: BM25Okapi's (rank_bm25 itself), and the music BM25's formula by math.log."""
    from rank_bm25 import BM25Okapi

    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(300)]
    documents = [[rng.choice(vocabulary[: rng.randint(1, 300)]) for _ in range(rng.randint(1, 6))]
                 for _ in range(2000)]
    arrays = postings_arrays(documents)
    terms = arrays["terms"].to_pylist()
    official = BM25Okapi(documents).idf
    assert with_okapi_idf(arrays)["idf"].tolist() == [official[term] for term in terms]
    size = len(documents)
    counts = np.diff(arrays["starts"]).tolist()
    assert with_cutoff_idf(arrays)["idf"].tolist() == [math.log(size - n + 0.5) - math.log(n + 0.5) for n in counts]


IN_A_CHILD = {
    "random names": "for seed in range(40): t.compare(seed, 400)",
    "empty and all-null columns": "t.compare(0, 0); t.compare(1, 1); t.compare(2, 2)",
    "idf": "t.compare_idf_with_rank_bm25(0); t.compare_idf_with_rank_bm25(1)",
}
"""The comparisons run in one child: name -> the calls (`t` is this module)."""


@pytest.fixture(scope="module")
def compared_in_a_child() -> dict[str, str]:
    """name -> "" when the calls of IN_A_CHILD ran without error in the child, else their traceback; the child
    crashing fails every test that reads it."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = textwrap.dedent(f"""
        import json, sys, traceback
        sys.path.insert(0, {here!r})
        import test_mock_api_name_arrays as t
        failures = {{}}
        for name, call in t.IN_A_CHILD.items():
            try:
                exec(call)
                failures[name] = ""
            except Exception:
                failures[name] = traceback.format_exc()[-3000:]
        print(json.dumps(failures))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def test_vectorised_building_equals_the_python_one_on_random_names(compared_in_a_child):
    assert compared_in_a_child["random names"] == ""


def test_vectorised_building_on_empty_and_all_null_columns(compared_in_a_child):
    assert compared_in_a_child["empty and all-null columns"] == ""
    keys = name_arrays.distinct_in_order(pa.chunked_array([pa.array([None, None], pa.string())]))
    names, grouped = name_arrays.grouped_by_name(keys, name_arrays.normalised(keys))
    assert len(names) == 0 and len(grouped) == 0
    assert_same_arrays(name_arrays.postings_from_joined(names), postings_arrays([]))


def test_okapi_and_cutoff_idf_equal_rank_bm25_bit_for_bit(compared_in_a_child):
    assert compared_in_a_child["idf"] == ""
