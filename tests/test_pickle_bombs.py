"""Pickles of a few hundred bytes that cost gigabytes or minutes when a value from the file is used unbounded:
formatted into a message with repr(), hashed as a key, inserted as one of many keys that all hash alike. Each is
decoded as crag/mock_kg decodes it, in a child under a memory limit and a CPU time limit per file: a SourceError
naming the file, in bounded time."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap

import pytest
from mock_kg_generated import grammy_frame
from ragloaders.core import preview as preview_module
from ragloaders.core.preview import preview
from test_hostile_kg import call, glob, items, pickle_of, raw, text, tup
from test_pickle_fuzz import MEMORY, SECONDS
from test_safe_pickle import LOADERS, decoded_in_child


def memo_put(number: int) -> bytes:
    """BINPUT `number` and POP: memoize the top of the stack in two bytes."""
    return b"q" + bytes([number]) + b"0"


def memo_get(number: int) -> bytes:
    return b"h" + bytes([number])


def shared(width: int = 10, depth: int = 9, tuples: bool = False) -> tuple[bytes, bytes]:
    """(opcodes that memoize the levels, the opcode that pushes the top): a list (or tuple) of `width` references to
    the level below, `depth` levels: width**depth leaves (10^9) from about 230 bytes."""
    opening, closing = (b"(", b"t") if tuples else (b"](", b"e")
    body = opening + b"K\x00" * width + closing + memo_put(0)
    for level in range(1, depth):
        body += opening + memo_get(level - 1) * width + closing + memo_put(level)
    return body, memo_get(depth - 1)


LISTS, BOMB = shared()
TUPLES, TUPLE_BOMB = shared(tuples=True)
F8 = call(glob("numpy", "dtype"), text("f8"), b"\x89", b"\x88")


def message_bombs() -> dict[str, tuple[str, bytes, str]]:
    """name -> (kind, pickle, what the SourceError says): each formatted a 10^9-leaf value with repr()."""
    zone_info = glob("zoneinfo", "ZoneInfo")
    return {
        "slice of a bomb (integer)": ("frame", pickle_of(LISTS + call(glob("builtins", "slice"), BOMB)),
                                      "expected an integer in"),
        "numpy dtype state": ("dict", pickle_of(LISTS + F8 + BOMB + b"b"), "numpy dtype 'f8' with state [[[["),
        "persistent id": ("dict", pickle_of(LISTS + BOMB + b"Q"), "persistent id [[[["),
        "_codecs.encode encoding": ("dict", pickle_of(LISTS + call(glob("_codecs", "encode"), text("x"), BOMB)),
                                    "_codecs.encode with encoding [[[["),
        "pyarrow type": ("dict", pickle_of(LISTS + call(glob("pyarrow.lib", "type_for_alias"), BOMB)),
                         "pyarrow type [[[["),
        "getattr attribute": ("dict", pickle_of(LISTS + call(glob("builtins", "getattr"), zone_info, BOMB)),
                              "getattr(<global zoneinfo.ZoneInfo>, [[[["),
        "getattr owner": ("dict", pickle_of(LISTS + call(glob("builtins", "getattr"), BOMB, text("_unpickle"))),
                          "getattr([[[["),
        "array shape": ("dict", pickle_of(LISTS + call(glob("numpy.core.numeric", "_frombuffer"), raw(b""), F8, BOMB,
                                                       text("C"))), "numpy array shape [[[["),
        "array order": ("dict", pickle_of(LISTS + call(glob("numpy.core.numeric", "_frombuffer"), raw(b""), F8,
                                                       tup(), BOMB)), "array order [[[["),
    }


def hash_bombs() -> dict[str, tuple[str, bytes, str]]:
    """name -> (kind, pickle, what the SourceError says): each looked a tuple of 10^9 leaves up in a dict."""
    stamp = call(glob("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"), b"K\x00", b"N", b"N", TUPLE_BOMB)
    delta = call(glob("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"), b"K\x00", TUPLE_BOMB)
    return {"timestamp resolution": ("dict", pickle_of(TUPLES + stamp), "pandas resolution (((("),
            "timedelta resolution": ("dict", pickle_of(TUPLES + delta), "pandas resolution ((((")}


COLLIDING = 80_000
MODULUS = 2**61 - 1
"""An int's hash is the int modulo 2**61 - 1: every multiple of it hashes to 0."""


def colliding_ints(count: int = COLLIDING) -> list[bytes]:
    """LONG1 opcodes of i * (2**61 - 1), all hashing to 0: inserting them all into one dict or set is quadratic."""
    out = []
    for number in range(1, count + 1):
        data = pickle.encode_long(number * MODULUS)  # type: ignore[attr-defined]
        out.append(b"\x8a" + bytes([len(data)]) + data)
    return out


def batches(items: list[bytes], closing: bytes, size: int = 1000) -> bytes:
    return b"".join(b"(" + b"".join(items[i:i + size]) + closing for i in range(0, len(items), size))


def collision_bombs() -> dict[str, tuple[str, bytes, str]]:
    """name -> (kind, pickle, what the SourceError says): 80,000 keys (or set items) that all hash alike, about 1 MB;
    inserting them took 72 s, and only then was the file refused, if it was."""
    ints = colliding_ints()
    singles = [key + b"\x85" for key in ints]  # TUPLE1: (key,) hashes alike too
    int64 = call(glob("numpy", "dtype"), text("i8"), b"\x89", b"\x88") + memo_put(1)
    numpy_ints = [call(glob("numpy.core.multiarray", "scalar"), memo_get(1), raw(n.to_bytes(8, "little")))
                  for n in range(3)]
    value = text("k")
    return {
        "int keys": ("dict", pickle_of(b"}" + batches([key + b"N" for key in ints], b"u")), "of type int"),
        "1-tuple keys": ("dict", pickle_of(b"}" + batches([key + b"N" for key in singles], b"u")), "of type tuple"),
        "int set items": ("dict", pickle_of(b"}" + value + b"\x8f" + batches(ints, b"\x90") + b"s"), "of type int"),
        "int frozenset items": ("dict", pickle_of(b"}" + value + b"(" + b"".join(ints) + b"\x91s"), "of type int"),
        "builtins.set of an int list": ("dict", pickle_of(b"}" + value + call(glob("builtins", "set"),
                                                                               b"]" + batches(ints, b"e")) + b"s"),
                                        "of type int"),
        "numpy ints resolved as set items": ("dict", pickle_of(int64 + b"}" + value + b"\x8f(" + b"".join(numpy_ints)
                                                               + b"\x90s"), "of type int"),
    }


LIMIT = 64 << 20
"""The child's address space beyond its warmed-up size: what MEMORY_BOMBS need, within their budgets, is twice it."""
SHARED_MB, USES = 4, 32


def memory_bombs() -> dict[str, tuple[str, bytes, str]]:
    """name -> (kind, pickle, what the SourceError says): 4 MB expanded 32 times, within the budget's 64 units a
    byte, but more than the child may have: a MemoryError while resolving, and while converting to rows."""
    shared_bytes = raw(bytes(SHARED_MB << 20)) + memo_put(1) + glob("builtins", "bytearray") + memo_put(2)
    copies = items(*[memo_get(2) + b"(" + memo_get(1) + b"tR"] * USES)
    shared_text = text("x" * (SHARED_MB << 20)) + memo_put(1)
    why = "reading the pickle needs more memory than is available"
    return {"bytearray copies": ("dict", pickle_of(shared_bytes + b"}" + text("k") + copies + b"s"), why),
            "JSON of a shared text": ("dict", pickle_of(shared_text + b"}" + text("k") + items(*[memo_get(1)] * USES)
                                                        + b"s"), why)}


def all_bombs() -> dict[str, tuple[str, bytes, str]]:
    return {**message_bombs(), **hash_bombs(), **collision_bombs(), **memory_bombs()}


@pytest.fixture(scope="module")
def bomb_outcomes(tmp_path_factory) -> tuple[dict[str, dict], str]:
    folder = tmp_path_factory.mktemp("bombs")
    cases = all_bombs()
    outcomes = decoded_in_child([(kind, data) for kind, data, _ in cases.values()], folder, limit=LIMIT,
                                timeout=120, seconds=SECONDS)
    return dict(zip(cases, outcomes)), str(folder)


def assert_refused_in_time(bomb_outcomes, name: str) -> None:
    outcome, folder = bomb_outcomes[0][name], bomb_outcomes[1]
    kind, data, why = all_bombs()[name]
    assert outcome.get("error") == "SourceError", outcome
    assert outcome["message"].startswith(folder) and why in outcome["message"], outcome
    assert outcome["seconds"] < SECONDS[0] + SECONDS[1] * len(data) / 1e6


@pytest.mark.parametrize("name", list(message_bombs()))
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_a_message_about_a_shared_reference_bomb_is_bounded(bomb_outcomes, name):
    """Before, each formatted its argument with repr() before cutting it: 10^9 leaves from ~250 bytes, tens of
    seconds and gigabytes, then a bare MemoryError (no file named) under the child's limit."""
    assert len(all_bombs()[name][1]) < 400
    assert_refused_in_time(bomb_outcomes, name)


@pytest.mark.parametrize("name", list(hash_bombs()))
def test_a_resolution_code_is_checked_to_be_an_integer_before_it_is_looked_up(bomb_outcomes, name):
    """Before, `UNITS.get(args[3])` hashed the tuple leaf by leaf: the load never ended (out of CPU time here)."""
    assert len(all_bombs()[name][1]) < 400
    assert_refused_in_time(bomb_outcomes, name)


@pytest.mark.parametrize("name", list(collision_bombs()))
def test_a_key_other_than_a_string_is_refused_before_it_is_inserted(bomb_outcomes, name):
    """Before, 80,000 colliding keys (1 MB) were inserted in quadratic time (out of the child's CPU time here), and
    numpy ints as set items were read."""
    assert_refused_in_time(bomb_outcomes, name)
    assert "a dict key or set item of type" in bomb_outcomes[0][name]["message"]


@pytest.mark.parametrize("name", list(memory_bombs()))
def test_running_out_of_memory_while_reading_a_pickle_names_the_file(bomb_outcomes, name):
    """Before, a bare MemoryError escaped the resolver and the conversion to rows (no file named)."""
    assert (SHARED_MB * USES) << 20 >= 2 * LIMIT
    assert_refused_in_time(bomb_outcomes, name)


def test_preview_is_bounded_in_characters_and_in_values_visited():
    nested: list = [0] * 10
    for _ in range(8):
        nested = [nested] * 10  # 10^9 leaves
    text_of = preview(nested)
    assert len(text_of) == preview_module.CHARS + 1 and text_of.startswith("[[[[[[[[[0, 0") and text_of.endswith("…")
    assert preview(nested, chars=10_000, nodes=30).count("0") < 30  # the visits ran out, not the characters
    assert preview("x" * 10**7) == repr("x" * preview_module.CHARS)[:preview_module.CHARS] + "…"
    assert preview(b"\x00" * 10**7).startswith("b'\\x00")
    assert preview(7**100_000) == f"<int of {(7**100_000).bit_length():,} bits>"  # str() refuses 4,300+ digits
    assert preview({"a": (1,), "b": {2.5}, "c": None, "d": slice(1, None)}) == \
        "{'a': (1,), 'b': {2.5}, 'c': None, 'd': slice(1, None, None)}"


# ---------------------------------------------------------------- through ragloaders.load


LOAD_CHILD = textwrap.dedent("""
    import json, os, resource, signal, sys, time
    import ragloaders
    from ragloaders.core.errors import SourceError

    def virtual_memory():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")

    class Timeout(BaseException):
        pass

    def out_of_time(signum, frame):
        raise Timeout

    (base_s, per_mb), (base_b, per_byte), cases = json.loads(sys.argv[1])
    signal.signal(signal.SIGPROF, out_of_time)
    for config, folder, path in cases:  # the first is a real frame: everything the load needs is imported
        size = os.path.getsize(path)
        if cases.index([config, folder, path]):
            limit = virtual_memory() + int(base_b + per_byte * size)
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
            signal.setitimer(signal.ITIMER_PROF, base_s + per_mb * size / 1e6)
        start = time.process_time()
        try:
            rows = len(ragloaders.load("crag/mock_kg", config, split="train", data_dir=folder,
                                       cache_dir=os.path.join(folder, "cache")))
            outcome = {"rows": rows}
        except SourceError as e:
            outcome = {"error": "SourceError", "path": e.path, "message": str(e)[:500]}
        except Timeout:
            outcome = {"error": "timeout"}
        except BaseException as e:
            outcome = {"error": type(e).__name__, "message": str(e)[:500]}
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        outcome["seconds"] = time.process_time() - start
        print(json.dumps(outcome), flush=True)
""")
CONFIGS = {"frame": ("music_grammy", "music/grammy_df.pickle"),
           "dict": ("music_artists", "music/artist_dict_simplified.pickle")}


@pytest.fixture(scope="module")
def load_outcomes(tmp_path_factory) -> dict[str, dict]:
    """Each hostile file in a data_dir of its own, loaded by ragloaders.load in one child, each under MEMORY (64
    units a byte) and SECONDS; a real Grammy frame first."""
    named = {"real grammy frame": ("frame", pickle.dumps(grammy_frame(), protocol=5), ""), **all_bombs()}
    cases = []
    for number, (kind, data, _) in enumerate(named.values()):
        config, file = CONFIGS[kind]
        folder = tmp_path_factory.mktemp(f"kg{number}")
        (folder / file).parent.mkdir(parents=True)
        (folder / file).write_bytes(data)
        cases.append([config, str(folder), str(folder / file)])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADERS), os.environ.get("PYTHONPATH", "")]),
           "HF_DATASETS_OFFLINE": "1"}
    try:
        done = subprocess.run([sys.executable, "-c", LOAD_CHILD, json.dumps([SECONDS, MEMORY, cases])],
                              capture_output=True, text=True, env=env, timeout=300)
        stdout, failure = done.stdout, f"exit {done.returncode}: {done.stderr[-300:]}"
    except subprocess.TimeoutExpired as e:
        stdout, failure = (e.stdout or b"").decode(), "still running after 300 s"
    outcomes = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    outcomes += [{"error": f"not run ({failure})"}] * (len(cases) - len(outcomes))
    return {name: {**outcome, "file": case[2]} for name, outcome, case in zip(named, outcomes, cases)}


@pytest.mark.parametrize("name", list(all_bombs()))
@pytest.mark.slow
def test_load_of_a_hostile_file_is_a_source_error_naming_it_in_seconds_within_the_bound(load_outcomes, name):
    """ragloaders.load("crag/mock_kg", ...) of each file above, as the file of its config: a SourceError naming it,
    in SECONDS of CPU, within 64 units a byte of memory (MEMORY) beyond what the load had after a real frame."""
    assert load_outcomes["real grammy frame"].get("rows") == len(grammy_frame()), load_outcomes["real grammy frame"]
    outcome, data = load_outcomes[name], all_bombs()[name][1]
    assert outcome.get("error") == "SourceError" and outcome["path"] == outcome["file"], outcome
    assert outcome["seconds"] < SECONDS[0] + SECONDS[1] * len(data) / 1e6, outcome
