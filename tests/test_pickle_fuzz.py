"""Hostile pickles decoded as crag/mock_kg decodes them, in a child process with a memory and a CPU time limit per
file: byte flips and truncations of real-shaped pickles, and a structure-aware fuzzer that composes shared
references (DAGs of 10^9 leaves), deep nesting, every allowed global called with hostile arguments (wrong types,
shared DAGs, huge lengths, BUILD states) and keys that all hash alike, alone or put in place of a value of a real
pickle. Every outcome is rows or a SourceError naming the file, within the README's bounds: memory within 64 units
per byte of the file (PYTHON_OBJECT_BYTES bytes a unit, plus SLACK), CPU time within SECONDS (a base plus so much per
MB of the file). Seeded: a failing case prints its seed and bytes (`python tests/test_pickle_fuzz.py SEED` writes
them again)."""

from __future__ import annotations

import math
import pickle
import pickletools
import random
import re
import struct
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mock_kg_generated import grammy_frame, soccer_frame
from ragloaders.core.pickle_allow_list import FUNCTIONS
from ragloaders.core.safe_pickle import MULTIPLE
from test_hostile_kg import glob, integer, raw, text
from test_safe_pickle import decoded_in_child

SEED = 20
MUTANTS_PER_BASE = 120
STRUCTURED = 160
"""Structure-aware cases in the default run (a few seconds); the slow run (CI) makes SLOW_STRUCTURED more."""
SLOW_STRUCTURED = 1500
SLACK = 64 << 20
"""Room beyond the bound for the interpreter's own allocations after warm-up (arenas, caches)."""
PYTHON_OBJECT_BYTES = 16
"""Bytes of Python objects per unit of the budget at most (an int is 28 bytes and costs 8 units; a list slot 8)."""
MEMORY = (SLACK, MULTIPLE * PYTHON_OBJECT_BYTES)
"""A file may add SLACK + MULTIPLE x PYTHON_OBJECT_BYTES bytes per byte of it to the child's address space."""
SECONDS = (2.0, 5.0)
"""CPU seconds a file may take: 2 s plus 5 s per MB (the README's time bound; reading the real pickles takes
0.3-0.5 s per MB: the margin is for a loaded machine)."""
OUT_OF_MEMORY = "needs more memory than is available"
"""The SourceError of a MemoryError: under MEMORY's limit, a file that the budget should have refused."""


def bases(protocols: tuple[int, ...] | None = None) -> list[tuple[str, bytes]]:
    """Real shapes: the soccer and Grammy frames, a Series and numpy arrays and scalars in a dict, an artist dict
    (each at its protocol, or at each of `protocols`)."""
    artists = {f"Artist {i}": {"country": np.str_("XW"), "members": np.array(["a", "b"]), "end_date": np.nan,
                               "birth_date": "1987", "rank": np.int64(i), "score": np.float32(1.5)} for i in range(8)}
    arrays = {"floats": np.array([1.5, np.nan, 3.0]), "objects": np.array(["a", None, 3], dtype=object),
              "dates": np.array(["2024-01-01", "NaT"], dtype="M8[D]"), "set": {"b", "a"}}
    series = pd.Series(["a", None, "b"], index=pd.Index(["x", "y", "z"], name="key"), name="s", dtype=object)
    values = [("frame", soccer_frame(6), 5), ("frame", grammy_frame(), 4), ("dict", artists, 2), ("dict", arrays, 5),
              ("series", series, 5), ("series", pd.Series([1.5, np.nan]), 4)]
    return [(kind, pickle.dumps(value, protocol=protocol)) for kind, value, own in values
            for protocol in (protocols or (own,))]


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


# ---------------------------------------------------------------- the structure-aware fuzzer
# Every snippet pushes one value and memoizes nothing (sharing is made with DUP), so that it can stand in for a value
# of a real pickle without moving its memo.

KINDS = sorted(set(FUNCTIONS.values()))
GLOBALS = {kind: sorted(name for name, of in FUNCTIONS.items() if of == kind) for kind in KINDS}
TEXTS = ["", "C", "F", "b", "latin1", "rot13", "O8", "f8", "U8", "U3", "M8", "i8", "S0", "b1", "<", "|", "block",
         "_unpickle", "UTC", "Europe/London", "../../etc/passwd", "string", "large_string", "0.14.1", "_mgr", "data",
         "categories", "name", "start", "stop", "step", "levels", "codes", "names", "_data", "_mask", "_pa_array"]
INTS = [0, 1, -1, 2, 3, 7, 8, 9, 10, 255, 2**31 - 1, -(2**31), 2**62, 2**63 - 1, -(2**63), 2**63, 2**64, 10**30]
MODULUS = 2**61 - 1


def long(value: int) -> bytes:
    data = pickle.encode_long(value)  # type: ignore[attr-defined]
    return b"\x8a" + bytes([len(data)]) + data if len(data) < 256 else b"\x8b" + struct.pack("<i", len(data)) + data


def dag(width: int, depth: int, tuples: bool) -> bytes:
    """width**depth leaves from about 11 x depth bytes: marks first, then each level is the level below and width-1
    DUPs of it."""
    return b"(" * depth + b"K\x00" + (b"2" * (width - 1) + (b"t" if tuples else b"l")) * depth


def nested(depth: int, tuples: bool) -> bytes:
    return b"(" * depth + b"N" + (b"t" if tuples else b"l") * depth


def colliding(rng: random.Random, count: int | None = None) -> bytes:
    """A dict, set, frozenset or list of keys that all hash alike (ints i x (2**61 - 1), or 1-tuples of them)."""
    count = count or rng.choice((10, 1000, 20_000))
    keys = [long(i * MODULUS) + (b"\x85" if rng.random() < 0.3 else b"") for i in range(1, count + 1)]
    form = rng.randrange(4)
    if form == 0:
        return b"}(" + b"".join(key + b"N" for key in keys) + b"u"
    if form == 1:
        return b"\x8f(" + b"".join(keys) + b"\x90"
    if form == 2:
        return b"(" + b"".join(keys) + b"\x91"
    return b"(" + b"".join(keys) + b"l"


def allowed_global(rng: random.Random, kind: str | None = None) -> bytes:
    module, name = rng.choice(GLOBALS[kind or rng.choice(KINDS)])
    return glob(module, name)


def snippet(rng: random.Random, depth: int = 0) -> bytes:
    """Opcodes that push one hostile value."""
    roll = rng.random() if depth < 4 else rng.random() * 0.5
    if roll < 0.08:
        return rng.choice((b"N", b"\x88", b"\x89"))
    if roll < 0.16:
        value = rng.choice(INTS)
        return integer(value) if -(2**31) <= value < 2**31 else long(value)
    if roll < 0.2:
        return rng.choice((b"G" + struct.pack(">d", rng.choice((0.0, 1.5, math.nan, math.inf, -1e308))),
                           long(rng.getrandbits(rng.choice((100, 10_000, 200_000))))))
    if roll < 0.3:
        return text(rng.choice(TEXTS) if rng.random() < 0.85 else "x" * rng.choice((1000, 100_000)))
    if roll < 0.36:
        return raw(bytes(rng.choice((0, 1, 4, 6, 8, 10, 16, 24, 1000, 100_000))))
    if roll < 0.4:
        return allowed_global(rng) if rng.random() < 0.9 else glob("os", "system")
    if roll < 0.45:
        return dag(rng.randrange(2, 13), rng.randrange(2, 10), tuples=rng.random() < 0.5)
    if roll < 0.5:
        return nested(rng.choice((50, 1000, 30_000)), tuples=rng.random() < 0.5)
    if roll < 0.53:
        return colliding(rng)
    if roll < 0.7:
        return container(rng, depth)
    if roll < 0.85:
        return plausible(rng, depth)
    return call(rng, None, depth)


def plausible(rng: random.Random, depth: int) -> bytes:
    """A call as real pickles make it, with one or two of its arguments hostile: it gets past the first checks."""
    def arg(good: bytes) -> bytes:
        return good if rng.random() < 0.8 else snippet(rng, depth + 1)

    def dtype() -> bytes:
        name = rng.choice(("f8", "i8", "i1", "u4", "b1", "O8", "U8", "U4", "S3", "M8"))
        return glob("numpy", "dtype") + b"(" + arg(text(name)) + b"\x89\x88tR"

    form = rng.randrange(5)
    if form == 0:
        return dtype()
    if form == 1:
        shape = b"(" + b"".join(arg(integer(rng.choice((0, 1, 2, 3, 8, 2**30)))) for _ in range(rng.randrange(1, 3)))
        return glob("numpy.core.numeric", "_frombuffer") + b"(" + arg(raw(bytes(rng.choice((0, 8, 16, 24, 48))))) \
            + arg(dtype()) + arg(shape + b"t") + arg(text(rng.choice("CF"))) + b"tR"
    if form == 2:
        fields = b"}(" + b"".join(text(k) + arg(integer(rng.choice((0, 1, 3, 10**9))))
                                  for k in ("start", "stop", "step") if rng.random() < 0.8) + b"u"
        return glob("pandas.core.indexes.base", "_new_Index") + b"(" + glob("pandas", rng.choice(
            ("RangeIndex", "Index", "MultiIndex", "DatetimeIndex"))) + arg(fields) + b"tR"
    if form == 3:
        return glob("pandas._libs.tslibs.timestamps", "_unpickle_timestamp") + b"(" + arg(integer(0)) + b"N" \
            + arg(text(rng.choice(("UTC", "Europe/London")))) + arg(integer(rng.choice((7, 8, 9, 10, 11)))) + b"tR"
    return glob("builtins", "slice") + b"(" + arg(integer(0)) + arg(integer(2)) + arg(b"N") + b"tR"


def container(rng: random.Random, depth: int) -> bytes:
    items = [snippet(rng, depth + 1) for _ in range(rng.randrange(5))]
    form = rng.randrange(6)
    if form == 0:
        return b"(" + b"".join(items) + b"l"
    if form == 1:
        return b"(" + b"".join(items) + b"t"
    if form == 2:  # string keys, or now and then a key of another type
        keys = [text(rng.choice(TEXTS)) if rng.random() < 0.97 else snippet(rng, 4) for _ in items]
        return b"}(" + b"".join(k + v for k, v in zip(keys, items)) + b"u"
    if form == 3:  # strings, or now and then an item of another type
        return b"\x8f(" + b"".join(text(rng.choice(TEXTS)) if rng.random() < 0.97 else item for item in items) \
            + b"\x90"
    if form == 4:  # one value shared by a container (DUP)
        return b"(" + snippet(rng, depth + 1) + b"2" * rng.randrange(1, 10) + b"l"
    return b"(" + b"".join(text(rng.choice(TEXTS)) if rng.random() < 0.97 else item for item in items) + b"\x91"


def call(rng: random.Random, kind: str | None, depth: int) -> bytes:
    """A call of an allowed global (of `kind`) with hostile arguments: REDUCE or NEWOBJ, maybe a BUILD state."""
    arguments = b"(" + b"".join(snippet(rng, depth + 1) for _ in range(rng.randrange(5))) + b"t"
    made = allowed_global(rng, kind) + arguments + (b"R" if rng.random() < 0.7 else b"\x81")
    if rng.random() < 0.3:
        made += snippet(rng, depth + 1) + b"b"
    return made


VALUE_OPS = {"BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE", "SHORT_BINUNICODE",
             "BINUNICODE", "SHORT_BINBYTES", "BINBYTES", "BINGET", "LONG_BINGET", "EMPTY_TUPLE", "EMPTY_LIST",
             "EMPTY_DICT", "SHORT_BINSTRING", "BINSTRING"}


def replaced(data: bytes, rng: random.Random) -> bytes:
    """`data` (protocol 2: its memo indexes are explicit) with one to three values, or shared references, replaced
    by snippets: a hostile value where a real one was, shared wherever the pickle memoizes it."""
    ops = list(pickletools.genops(data))
    spans = [(pos, ops[i + 1][2]) for i, (op, _, pos) in enumerate(ops[:-1]) if op.name in VALUE_OPS]
    for start, end in sorted(rng.sample(spans, min(len(spans), rng.randrange(1, 4))), reverse=True):
        data = data[:start] + snippet(rng, 2) + data[end:]
    return data


PROTOCOL_2_BASES = bases(protocols=(2,))


def structured(seed: str) -> tuple[str, bytes]:
    """The case of `seed`: a real pickle with values replaced, or a dict or frame of a call of an allowed global of
    the kind the seed's number picks (so that every kind is called in a run of len(KINDS) cases or more)."""
    rng = random.Random(seed)
    number = int(seed.rsplit("-", 1)[1])
    if number % 2:
        kind, data = rng.choice(PROTOCOL_2_BASES)
        return kind, replaced(data, rng)
    made = call(rng, KINDS[number // 2 % len(KINDS)], 0)
    if rng.random() < 0.5:
        return "dict", b"\x80\x04}(" + text("k") + made + b"u."
    return rng.choice(("frame", "series")), b"\x80\x04" + made + b"."


def seeds(count: int, offset: int = 0) -> list[str]:
    return [f"{SEED}-{number}" for number in range(offset, offset + count)]


def wrong(outcome: dict, data: bytes, folder: str) -> bool:
    """Not rows or a SourceError naming the file; or out of memory or time (beyond the bounds)."""
    if outcome.get("error") not in (None, "SourceError"):
        return True
    if outcome.get("error") and (not outcome["message"].startswith(folder) or OUT_OF_MEMORY in outcome["message"]):
        return True
    return outcome["seconds"] > SECONDS[0] + SECONDS[1] * len(data) / 1e6


def report(failures: list[tuple[str, bytes, dict]]) -> str:
    """The first failures: name (the seed of a composed case), outcome and bytes (the first 2,000; the seed makes
    them all again)."""
    lines = []
    for name, data, outcome in failures[:5]:
        shown = data if len(data) <= 2000 else data[:2000]
        lines.append(f"{name}: {outcome}\n  {len(data)} bytes{' (first 2000)' if shown is not data else ''}: "
                     f"{shown!r}")
    return f"{len(failures)} cases out of bounds:\n" + "\n".join(lines)


def decoded(named: list[tuple[str, str, bytes]], folder, timeout: float) -> list[tuple[str, bytes, dict]]:
    """(name, pickle, outcome) of each (name, kind, pickle), decoded in one child under MEMORY and SECONDS."""
    largest = max(len(data) for _, _, data in named)
    outcomes = decoded_in_child([(kind, data) for _, kind, data in named], folder,
                                limit=MEMORY[0] + MEMORY[1] * largest, timeout=timeout, seconds=SECONDS, memory=MEMORY)
    return [(name, data, outcome) for (name, _, data), outcome in zip(named, outcomes)]


def flips() -> list[tuple[str, str, bytes]]:
    """(name, kind, pickle): each base, then its mutants."""
    rng = random.Random(SEED)
    cases = []
    for number, (kind, data) in enumerate(bases()):
        cases.append((f"base {number}", kind, data))
        cases += [(f"base {number} flip {i}", kind, mutant) for i, mutant in enumerate(mutants(data, rng))]
    return cases


@pytest.fixture(scope="module")
def default_run(tmp_path_factory) -> tuple[list[tuple[str, bytes, dict]], str]:
    """The flips and STRUCTURED composed cases, in one child (its warm-up takes seconds)."""
    folder = tmp_path_factory.mktemp("fuzz")
    named = flips() + [(f"seed {seed}", *structured(seed)) for seed in seeds(STRUCTURED)]
    return decoded(named, folder, timeout=120), str(folder)


@pytest.mark.slow
def test_flipped_and_truncated_pickles_give_rows_or_a_source_error(default_run):
    outcomes, folder = default_run
    ours = outcomes[:len(flips())]
    assert all("rows" in outcome for _, _, outcome in ours[:: MUTANTS_PER_BASE + 1])  # the unmutated bases read
    failures = [case for case in ours if wrong(case[2], case[1], folder)]
    assert not failures, report(failures)
    assert sum("rows" in outcome for _, _, outcome in ours) > len(bases())  # some flips leave a readable pickle


@pytest.mark.slow
def test_composed_hostile_pickles_give_rows_or_a_source_error_within_the_bounds(default_run):
    """On the previous reader, 5 of these 160 cases ran out of their CPU time (a repr, a hash or colliding keys)."""
    outcomes, folder = default_run
    ours = outcomes[len(flips()):]
    assert len(ours) == STRUCTURED
    failures = [case for case in ours if wrong(case[2], case[1], folder)]
    assert not failures, report(failures)


@pytest.mark.slow
def test_many_more_composed_hostile_pickles(tmp_path):
    """SLOW_STRUCTURED more seeds (on the previous reader, 11 of seeds 0-399 ran out of CPU time or memory)."""
    named = [(f"seed {seed}", *structured(seed)) for seed in seeds(SLOW_STRUCTURED, offset=STRUCTURED)]
    failures = [case for case in decoded(named, tmp_path, timeout=600) if wrong(case[2], case[1], str(tmp_path))]
    assert not failures, report(failures)


def test_the_fuzzer_composes_what_it_says():
    """Every kind of allowed global is called in the default run; the snippets share and nest as they say."""
    made = [structured(seed) for seed in seeds(STRUCTURED)]
    assert len(KINDS) * 2 <= STRUCTURED
    for kind in KINDS:
        assert any(glob(*name) in data for name in GLOBALS[kind] for _, data in made), kind
    assert pickle.loads(b"\x80\x02" + dag(10, 3, tuples=False) + b".") == [[[0] * 10] * 10] * 10
    leaves = pickle.loads(b"\x80\x02" + dag(10, 9, tuples=True) + b".")
    assert leaves[3][9] is leaves[0][0] and len(dag(10, 9, tuples=True)) < 120
    value = pickle.loads(b"\x80\x02" + nested(1000, tuples=False) + b".")
    for _ in range(1000):
        value = value[0]
    assert value is None
    for number in range(8):
        keys = pickle.loads(b"\x80\x04" + colliding(random.Random(number), count=50) + b".")
        assert len(keys) == 50 and len({hash(key) for key in keys}) <= 2


def test_the_readme_states_the_bounds_the_fuzzer_enforces():
    readme = " ".join((Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8").split())
    assert f"at most {MULTIPLE} units per byte of the file" in readme
    stated = re.search(r"linear in the file, at most (\d+) s plus (\d+) s of CPU per MB", readme)
    assert stated and tuple(map(float, stated.groups())) == SECONDS


if __name__ == "__main__":
    kind, data = structured(sys.argv[1])
    sys.stdout.buffer.write(data)
