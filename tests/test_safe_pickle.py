"""core.safe_pickle: pickles of plain data, numpy and pandas load; anything that could run code is refused unrun."""

from __future__ import annotations

import datetime
import json
import os
import pickle
import pickletools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import LOADERS, assert_source_error
from ragloaders.benchmarks.crag_mock_kg import frames
from ragloaders.core import pickle_allow_list, pickle_resolver, pickled_pandas, pickled_values, safe_pickle
from ragloaders.core.errors import SourceError


class Op(bytes):
    """Raw pickle opcodes (no PROTO, no STOP), to write what no well-behaved pickler would."""


def ops(value: object) -> bytes:
    if isinstance(value, Op):
        return value
    if isinstance(value, tuple) and any(isinstance(v, Op) for v in value):
        return b"(" + b"".join(ops(v) for v in value) + b"t"
    data = pickletools.optimize(pickle.dumps(value, protocol=2))  # no memo: pieces can be concatenated
    return data[2:-1]


def glob(module: str, name: str) -> Op:
    return Op(b"c" + module.encode() + b"\n" + name.encode() + b"\n")


def call(module: str, name: str, *args: object) -> Op:
    return Op(glob(module, name) + ops(tuple(args)) + b"R")


def build(target: Op, state: object) -> Op:
    return Op(target + ops(state) + b"b")


def pickled(op: Op) -> bytes:
    return b"\x80\x02" + op + b"."


def refused(data: bytes, key: str | None = "K1") -> SourceError:
    with pytest.raises(SourceError) as caught:
        safe_pickle.loads(data, name="/data/evil.pickle", key=key)
    message = str(caught.value)
    assert message.startswith("/data/evil.pickle: ")
    if key is not None:
        assert f"key {key!r}" in message
    return caught.value


class Runs:
    """An object whose pickle calls `function(*args)`, as a hostile file would."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
@pytest.mark.parametrize("make", [
    lambda marker: Runs(os.system, f"touch {marker}"),
    lambda marker: Runs(subprocess.check_call, ["touch", str(marker)]),
    lambda marker: Runs(subprocess.Popen, ["touch", str(marker)]),
    lambda marker: Runs(eval, f"open({str(marker)!r}, 'w')"),
    lambda marker: Runs(exec, f"open({str(marker)!r}, 'w')"),
    lambda marker: {"ok": [1, 2], "payload": Runs(os.system, f"touch {marker}")},
], ids=["os.system", "check_call", "Popen", "eval", "exec", "nested"])
def test_a_pickle_that_would_run_a_command_is_refused_and_never_runs(tmp_path, protocol, make):
    marker = tmp_path / "ran"
    data = pickle.dumps(make(marker), protocol=protocol)
    pickle.loads(pickle.dumps(1))  # (the real pickle module is not patched by the test)
    error = refused(data)
    assert "refused pickle global `" in str(error)
    assert not marker.exists()


@pytest.mark.parametrize("module,name", [
    ("posix", "system"), ("os", "system"), ("subprocess", "Popen"), ("builtins", "eval"), ("builtins", "exec"),
    ("builtins", "__import__"), ("builtins", "open"), ("builtins", "compile"), ("copyreg", "_reconstructor"),
    ("functools", "partial"), ("operator", "attrgetter"), ("pandas", "read_pickle"), ("pandas", "eval"),
    ("numpy", "load"), ("pandas.io.pickle", "read_pickle"), ("numpy.testing._private.utils", "runstring"),
    ("sys", "modules"), ("runpy", "run_path"), ("pydoc", "locate"),
])
def test_every_global_off_the_list_is_refused_by_name(module, name):
    error = refused(pickled(call(module, name, "id")), key="AAPL")
    assert f"refused pickle global `{module}.{name}`" in str(error)


def test_the_refused_global_is_named_even_when_protocol_4_spells_it_with_stack_global(tmp_path):
    data = pickle.dumps(Runs(os.system, "true"), protocol=4)
    assert b"\x93" in data  # STACK_GLOBAL
    error = refused(data, key=None)
    assert "refused pickle global `posix.system`" in str(error)


def test_getattr_is_only_allowed_for_zoneinfo_unpickle():
    # getattr(builtins.__import__('os'), 'system')('id'): the import is refused first
    hidden = call("builtins", "getattr", call("builtins", "__import__", "os"), "system")
    assert "`builtins.__import__`" in str(refused(pickled(Op(hidden + ops(("id",)) + b"R"))))
    # getattr on an allowed class, to reach a method that evaluates strings
    frame_eval = call("builtins", "getattr", glob("pandas", "DataFrame"), "eval")
    assert "getattr" in str(refused(pickled(frame_eval)))
    for owner, attribute in ((glob("pandas", "Index"), "__init_subclass__"), (glob("zoneinfo", "ZoneInfo"), "__new__"),
                             (glob("zoneinfo", "ZoneInfo"), "_unpickle")):
        data = pickled(call("builtins", "getattr", owner, attribute))
        if attribute == "_unpickle":  # what a tz-aware timestamp pickles: read as the zone's key, nothing called
            zone = Op(call("builtins", "getattr", owner, attribute) + ops(("Europe/London", 1)) + b"R")
            assert safe_pickle.loads(pickled(zone), name="f") == "Europe/London"
        else:
            assert "refused" in str(refused(data))


@pytest.mark.parametrize("op,why", [
    (call("_codecs", "encode", "x" * 100, "zlib_codec"), "only latin1"),
    (call("_codecs", "encode", "abc", "rot13"), "only latin1"),
    (call("numpy.core.multiarray", "_reconstruct", glob("numpy", "ndarray"), (10**10,), b"b"), "_reconstruct"),
    (call("numpy._core.multiarray", "_reconstruct", glob("pandas", "DataFrame"), (0,), b"b"), "_reconstruct"),
    (call("builtins", "bytearray", 10**12), "bytearray"),
    (call("numpy", "ndarray", (10**10,)), "not callable"),
    (call("pandas.core.indexes.base", "_new_Index", glob("numpy", "ndarray"), {"shape": (10**10,)}), "not a pandas"),
    (call("pandas.core.indexes.base", "_new_Index", glob("pandas", "DataFrame"), {"data": [1]}), "not a pandas"),
], ids=["zlib", "rot13", "reconstruct-shape", "reconstruct-type", "bytearray-size", "ndarray-call", "new-index-array",
        "new-index-frame"])
def test_allowed_callables_refuse_malicious_arguments(op, why):
    assert why in str(refused(pickled(op)))


def test_build_cannot_rewrite_an_allowed_function_or_class():
    poison_function = build(glob("pandas._libs.internals", "_unpickle_block"), (None, {"__defaults__": (1,)}))
    assert "BUILD on pandas._libs.internals._unpickle_block refused" in str(refused(pickled(poison_function)))
    before = dict(vars(pd.Index))
    poison_class = build(glob("pandas.core.indexes.base", "Index"), (None, {"evil": 1, "__len__": 7}))
    message = str(refused(pickled(poison_class)))
    assert "BUILD on pandas.core.indexes.base.Index refused" in message  # (no pandas class is ever handed over)
    assert not hasattr(pd.Index, "evil") and dict(vars(pd.Index)) == before
    assert len(pd.Index([1, 2])) == 2
    marker = build(glob("numpy", "ndarray"), {"x": 1})
    assert "BUILD on numpy.ndarray refused" in str(refused(pickled(marker)))


def test_numpy_refuses_object_arrays_forged_from_raw_bytes():
    array = call("numpy.core.multiarray", "_reconstruct", glob("numpy", "ndarray"), (0,), b"b")
    dtype = call("numpy", "dtype", "O8", False, True)
    forged = build(array, (1, (2,), dtype, False, b"\x41" * 16))
    refused(pickled(forged))
    from_buffer = call("numpy.core.numeric", "_frombuffer", b"\x41" * 16, dtype, (2,), "C")
    refused(pickled(from_buffer))


def test_damaged_pickles_are_source_errors():
    good = pickle.dumps({"a": [1, 2, 3]}, protocol=4)
    for data in (good[: len(good) // 2], b"", b"not a pickle", good[:-1]):
        assert "not a readable pickle" in str(refused(data))
    persistent = b"\x80\x02P1\n."
    assert "persistent id" in str(refused(persistent))


def _sample() -> dict:
    return {
        "str": "Émile 🙂", "int": 2**70, "float": 1.5, "nan": float("nan"), "none": None, "bool": True,
        "list": [1, "2", [3.0]], "tuple": (1, 2), "set": {"b", "a"}, "frozenset": frozenset({"1"}),
        "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"), "slice": slice(1, 5, 2),
        "date": datetime.date(2024, 3, 9), "datetime": datetime.datetime(2024, 3, 9, 12, 30, tzinfo=datetime.UTC),
        "time": datetime.time(12, 30), "timedelta": datetime.timedelta(days=2),
        "np": [np.int64(3), np.float32(2.5), np.bool_(True), np.str_("x"), np.array([1.0, 2.0]),
               np.array(["a", None], dtype=object), np.datetime64("2024-03-09")],
        "pd": [pd.Timestamp("2024-03-09 12:30"), pd.NaT, pd.NA, pd.Timedelta(1, "s")],
    }


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_plain_data_numpy_and_pandas_scalars_round_trip(protocol):
    sample = _sample()
    loaded = safe_pickle.loads(pickle.dumps(sample, protocol=protocol), name="f", key="k")
    assert loaded.keys() == sample.keys()
    for key in sample:
        if key == "nan":
            assert loaded[key] != loaded[key]
        elif key not in ("np", "pd"):
            assert loaded[key] == sample[key] and type(loaded[key]) is type(sample[key]), key
    # numpy scalars are read as Python's, arrays as descriptions; nothing of numpy or pandas is built
    assert loaded["np"][:4] == [3, 2.5, True, "x"] and [type(v) for v in loaded["np"][:4]] == [int, float, bool, str]
    assert loaded["np"][4].items() == [1.0, 2.0] and loaded["np"][5].items() == ["a", None]
    assert loaded["np"][6] == datetime.date(2024, 3, 9)
    assert loaded["pd"][0].isoformat() == sample["pd"][0].isoformat() and loaded["pd"][1] is None
    assert loaded["pd"][2] is None


def soccer_like() -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples(
        [("ENG-Premier League", "2324", "Everton", "2024-03-09 Manchester Utd-Everton"),
         (None, "2324", "Almería", "2024-03-01 Celta Vigo-Almería")], names=["league", "season", "team", "game"])
    return pd.DataFrame({"date": pd.to_datetime(["2024-03-09", None]), "GF": pd.Series(["0", 1], dtype=object),
                         "xG": [1.6, np.nan], "Poss": [49, 51], "Notes": [None, "x"], "flag": [True, False],
                         "cat": pd.Categorical(["a", "b"]), "n": pd.array([1, None], dtype="Int64"),
                         "tz": pd.to_datetime(["2024-01-01", "2024-01-02"]).tz_localize("Europe/London"),
                         "s": pd.array(["a", None], dtype="string")}, index=index)


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("make", [soccer_like, lambda: soccer_like().reset_index(drop=True),
                                  lambda: pd.DataFrame({"v": [1, 2]}, index=pd.date_range("2024-01-01", periods=2)),
                                  lambda: pd.Series([1.0, 2.0], name="x"),
                                  lambda: pd.DataFrame({"c": pd.Categorical([0, 2, 0], categories=pd.RangeIndex(3))})])
def test_pandas_frames_round_trip(protocol, make, tmp_path):
    frame = make()
    data = pickle.dumps(frame, protocol=protocol)
    loaded = safe_pickle.loads(data, name="f")
    if isinstance(frame, pd.Series):
        assert isinstance(loaded, pickled_values.Series) and loaded.name == "x"
        assert loaded.values.items() == [1.0, 2.0] and len(loaded.index) == 2
        return
    assert isinstance(loaded, pickled_values.Frame)
    path = tmp_path / "frame.pkl"
    path.write_bytes(data)
    assert frames.frame_table(str(path)).to_pylist() == expected_rows(frame)


def expected_rows(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as pandas itself gives them, in the form frame_table writes (index levels first, text for
    categories, None for every missing value)."""
    flat = frame.reset_index() if not isinstance(frame.index, pd.RangeIndex) else frame
    if "index" in flat and isinstance(frame.index, pd.DatetimeIndex):
        flat = flat.rename(columns={"index": "index"})
    rows = []
    for record in flat.astype(object).to_dict("records"):
        rows.append({k: None if v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v) else
                     v.to_pydatetime() if isinstance(v, pd.Timestamp) else v for k, v in record.items()})
    for row in rows:
        if row.get("GF") is not None:  # an object column mixing strings and integers is JSON text
            row["GF"] = json.dumps(row["GF"])
    return rows


def test_to_pickle_frames_load(tmp_path: Path):
    path = tmp_path / "frame.pkl"
    soccer_like().to_pickle(path)
    assert frames.frame_table(str(path)).to_pylist() == expected_rows(soccer_like())


def test_every_allow_list_entry_resolves_and_none_is_a_code_runner():
    # each allowed global is read by a handler of pickled_values.Resolver: our code, which builds no library object
    ours = {pickle_resolver.__name__, pickled_pandas.__name__}
    for (module, name), kind in pickle_allow_list.FUNCTIONS.items():
        handler = pickle_resolver.HANDLERS[kind]
        assert handler.__module__ in ours, f"{module}.{name}"
    assert set(pickle_resolver.HANDLERS) == set(pickle_allow_list.FUNCTIONS.values())  # no handler nothing names
    marker = pickled_values.Global("os", "system")
    assert pickle_allow_list.kind_of(marker) is None


# --- attacks on the state handed to library internals (each crashed, leaked memory or allocated GBs before) ------

CHILD = Path(__file__).parent / "pickle_child.py"


def decoded_in_child(cases: list[tuple[str, bytes]], folder: Path, limit: int = 256 << 20,
                     timeout: float = 300, seconds: tuple[float, float] | None = None,
                     memory: tuple[float, float] | None = None) -> list[dict]:
    """The outcome of decoding each (kind, pickle) as crag/mock_kg does, in one child process under an address-space
    limit of `limit` bytes beyond its warmed-up size; a crash or running past `timeout` seconds is an outcome too
    (for the case it stopped at). `seconds` (base, per MB): each case's CPU time limit; `memory` (base, per byte):
    each case's address-space limit (pickle_child.py)."""
    args = [] if seconds is None else ["--seconds", *map(str, seconds)]
    args += [] if memory is None else ["--memory", *map(str, memory)]
    for number, (kind, data) in enumerate(cases):
        path = folder / f"{number}.{kind}.pickle"
        path.write_bytes(data)
        args += [kind, str(path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADERS), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run([sys.executable, str(CHILD), str(limit), *args], capture_output=True, text=True, env=env,
                              timeout=timeout)
        stdout, failure = done.stdout, {"error": f"crash (exit {done.returncode})", "message": done.stderr[-500:]}
    except subprocess.TimeoutExpired as e:
        stdout, failure = (e.stdout or b"").decode(), {"error": f"still running after {timeout} s"}
    outcomes = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    if len(outcomes) < len(cases):
        outcomes.append(failure)
        outcomes += [{"error": "not run"}] * (len(cases) - len(outcomes))
    return outcomes


def edited(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, old
    return data.replace(old, new)


FIVE_COLUMNS = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [1.5, 2.5], "d": [3, 4], "e": [5, 6]})
"""Its int64 block sits at columns 0, 3, 4: a placement pickled as an integer array."""
PLACEMENT = b"".join(n.to_bytes(8, "little") for n in (0, 3, 4))
NOMINEES = pd.DataFrame({"nominee": pd.Categorical(["Adele", "Billie Eilish", "Adele"])})
SHARED = ["x" * 1000] * 1000
"""One string a thousand times: 1 MB of text from a few KB of pickle, per reference to the list."""


def attacks() -> dict[str, tuple[str, bytes, str]]:
    """name -> (kind, pickle, what the SourceError must say)."""
    frame, nominees = pickle.dumps(FIVE_COLUMNS, protocol=5), pickle.dumps(NOMINEES, protocol=5)
    cases = {
        "placement one past": ("frame", edited(frame, PLACEMENT, PLACEMENT[:16] + (5).to_bytes(8, "little")),
                               "outside the frame's 5 columns"),
        "placement huge": ("frame", edited(frame, PLACEMENT, PLACEMENT[:16] + (2**40).to_bytes(8, "little")),
                           "outside the frame's 5 columns"),
        "huge range index": ("frame", pickle.dumps(pd.DataFrame(index=pd.RangeIndex(300_000_000, name="row"))),
                             "expands to more than 64 units per byte"),
        "shared references": ("dict", pickle.dumps({f"k{i}": {"members": SHARED} for i in range(100)}, protocol=4),
                              "expands to more than 64 units per byte"),
        "object array longer than its items": (
            "dict", edited(pickle.dumps({"A": np.array(["a", None], dtype=object)}, protocol=5), b"K\x02\x85",
                           b"J\x00\xe1\xf5\x05\x85"), "object array of shape (100000000,) holding 2 items"),
        "float array longer than its bytes": (
            "dict", edited(pickle.dumps({"A": np.array([1.5, 2.5])}, protocol=5), b"K\x02\x85", b"K\x03\x85"),
            "needs 24 bytes, the file gives 16"),
    }
    for code in (2, 100, -2, -128):
        cases[f"categorical code {code}"] = (
            "frame", edited(nominees, b"\x00\x01\x00", b"\x00" + code.to_bytes(1, "little", signed=True) + b"\x00"),
            f"categorical code {code} outside -1..1")
    return cases


@pytest.fixture(scope="module")
def attack_outcomes(tmp_path_factory) -> dict[str, tuple[dict, str]]:
    folder = tmp_path_factory.mktemp("attacks")
    cases = attacks()
    good = [("frame", pickle.dumps(FIVE_COLUMNS, protocol=5)), ("frame", pickle.dumps(NOMINEES, protocol=5))]
    outcomes = decoded_in_child(good + [(kind, data) for kind, data, _ in cases.values()], folder)
    assert [outcome.get("rows") for outcome in outcomes[:2]] == [2, 3], outcomes[:2]  # the unedited pickles read
    return {name: (outcome, why) for (name, (_, _, why)), outcome in zip(cases.items(), outcomes[2:])}


@pytest.mark.parametrize("name", list(attacks()))
def test_hostile_state_is_refused_in_a_child_that_neither_crashes_nor_runs_out_of_memory(attack_outcomes, name):
    """Edited block placements (glibc abort, segfault), categorical codes past the categories (process memory read
    as a value, segfault), a RangeIndex of 300M rows from a few hundred bytes, 1 MB per shared reference, an array
    whose shape disagrees with its items (segfault): each a SourceError naming the file, under a 256 MB limit."""
    outcome, why = attack_outcomes[name]
    assert outcome.get("error") == "SourceError", outcome
    assert ".pickle: " in outcome["message"] and why in outcome["message"], outcome


def test_a_series_over_a_huge_range_index_is_refused_when_described():
    index = call("pandas.core.indexes.base", "_new_Index", glob("pandas", "RangeIndex"), {"stop": 300_000_000})
    assert len(pickled(index)) < 100
    with pytest.raises(SourceError) as caught:
        safe_pickle.loads(pickled(index), name="s.pickle")
    assert_source_error(caught.value, "s.pickle", f"{pickled_values.MULTIPLE} units", f"{len(pickled(index)):,} bytes")


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_deeply_nested_tuple_as_a_key_is_refused_not_hashed():
    nested = b"N" + b"\x85" * 1_000_000  # a tuple 1,000,000 deep: hashing it recurses in C until the stack overflows
    data = b"\x80\x04}" + nested + b"Ns."
    assert "a dict key or set item of type tuple" in str(refused(data, key=None))


PANDAS2 = Path(__file__).parent / "data" / "pickles-pandas2"


@pytest.mark.parametrize("protocol", [2, 5])
def test_pandas_2_pickles_with_numpy_1_names_and_pytz_zones_read_as_pandas_2_shows_them(protocol):
    expected = json.loads((PANDAS2 / "soccer_like.expected.json").read_text(encoding="utf-8"))
    rows = frames.frame_table(str(PANDAS2 / f"soccer_like.{protocol}.pkl")).to_pylist()
    assert [{k: v.isoformat() if isinstance(v, datetime.datetime) else v for k, v in row.items()} for row in rows] \
        == expected
    data = (PANDAS2 / "dict.2.pkl").read_bytes()
    assert b"numpy.core.multiarray" in data
    value = safe_pickle.loads(data, name="dict.2.pkl")["a"]
    assert (value["x"], value["m"].items(), value["d"], value["t"].isoformat()) == (
        1.5, ["a", "b"], datetime.date(2020, 1, 2), "2024-01-01T10:00:00")


def test_a_time_zone_the_database_does_not_know_is_refused():
    stamp = call("pandas._libs.tslibs.timestamps", "_unpickle_timestamp", 0, None, "../../etc/passwd", 10)
    assert "time zone" in str(refused(pickled(stamp), key=None))
    assert safe_pickle.loads(pickled(call("pandas._libs.tslibs.timestamps", "_unpickle_timestamp", 0, None,
                                          "Europe/London", 10)), name="f").isoformat() == "1970-01-01T01:00:00+01:00"


def test_a_zero_size_item_cannot_make_any_shape_fit_no_bytes():
    dtype = build(call("numpy", "dtype", "S0", False, True), (3, "|", None, None, None, 0, 1, 0))
    empty = call("numpy.core.numeric", "_frombuffer", b"", dtype, (10**12,), "C")
    assert "numpy dtype 'S0'" in str(refused(pickled(empty), key=None))


def test_protocol_2_empty_arrays_and_bytes_read():
    data = pickle.dumps({"e": np.array([], dtype=float), "b": b"", "s": pd.Series([], dtype=float)}, protocol=2)
    assert b"bytes" in data  # protocol 2 writes b'' as __builtin__.bytes()
    loaded = safe_pickle.loads(data, name="f")
    assert loaded["e"].items() == [] and loaded["b"] == b"" and loaded["s"].values.items() == []
    assert "bytes() refused" in str(refused(pickled(call("builtins", "bytes", 10**12)), key=None))
