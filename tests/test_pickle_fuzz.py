"""Random byte flips and truncations of real-shaped pickles, decoded as crag/mock_kg decodes them, in a child process
under a memory limit: every outcome is rows or a SourceError naming the file, never a crash, another exception or
memory beyond the bound."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pandas as pd
from mock_kg_generated import grammy_frame, soccer_frame
from ragloaders.core.safe_pickle import MULTIPLE
from test_safe_pickle import decoded_in_child

SEED = 20
MUTANTS_PER_BASE = 120
SLACK = 64 << 20
"""Room beyond the bound for the interpreter's own allocations after warm-up (arenas, caches)."""
PYTHON_OBJECT_BYTES = 16
"""Bytes of Python objects per unit of the budget at most (an int is 28 bytes and costs 8 units; a list slot 8)."""


def bases() -> list[tuple[str, bytes]]:
    """Real shapes: the soccer and Grammy frames, a Series and numpy arrays and scalars in a dict, an artist dict."""
    artists = {f"Artist {i}": {"country": np.str_("XW"), "members": np.array(["a", "b"]), "end_date": np.nan,
                               "birth_date": "1987", "rank": np.int64(i), "score": np.float32(1.5)} for i in range(8)}
    arrays = {"floats": np.array([1.5, np.nan, 3.0]), "objects": np.array(["a", None, 3], dtype=object),
              "dates": np.array(["2024-01-01", "NaT"], dtype="M8[D]"), "set": {"b", "a"}}
    series = pd.Series(["a", None, "b"], index=pd.Index(["x", "y", "z"], name="key"), name="s", dtype=object)
    return [("frame", pickle.dumps(soccer_frame(6), protocol=5)), ("frame", pickle.dumps(grammy_frame(), protocol=4)),
            ("dict", pickle.dumps(artists, protocol=2)), ("dict", pickle.dumps(arrays, protocol=5)),
            ("series", pickle.dumps(series, protocol=5)),
            ("series", pickle.dumps(pd.Series([1.5, np.nan]), protocol=4))]


def mutants(data: bytes, rng: random.Random) -> list[bytes]:
    out = []
    for number in range(MUTANTS_PER_BASE):
        if number % 6 == 0:
            out.append(data[: rng.randrange(len(data))])  # cut short
            continue
        mutant = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4))):
            position = rng.randrange(len(mutant))
            mutant[position] = rng.choice((rng.randrange(256), mutant[position] ^ (1 << rng.randrange(8)), 0, 0xFF))
        out.append(bytes(mutant))
    return out


def test_flipped_and_truncated_pickles_give_rows_or_a_source_error(tmp_path):
    rng = random.Random(SEED)
    cases = []
    for kind, data in bases():
        cases.append((kind, data))
        cases += [(kind, mutant) for mutant in mutants(data, rng)]
    largest = max(len(data) for _, data in cases)
    limit = MULTIPLE * PYTHON_OBJECT_BYTES * largest + SLACK
    outcomes = decoded_in_child(cases, tmp_path, limit=limit)
    assert all("rows" in outcome for outcome in outcomes[:: MUTANTS_PER_BASE + 1])  # the unmutated bases read
    wrong = [(number, outcome) for number, outcome in enumerate(outcomes)
             if "rows" not in outcome and not (outcome.get("error") == "SourceError"
                                               and outcome["message"].startswith(str(tmp_path)))]
    assert not wrong, wrong[:5]
    assert sum("rows" in outcome for outcome in outcomes) > len(bases())  # some flips leave a readable pickle
