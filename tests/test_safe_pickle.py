"""core.safe_pickle: pickles of plain data, numpy and pandas load; anything that could run code is refused unrun."""

from __future__ import annotations

import datetime
import os
import pickle
import pickletools
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ragloaders.core import safe_pickle
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
        if attribute == "_unpickle":
            assert callable(safe_pickle.loads(data, name="f"))
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
    assert "changes the class pandas" in message and "Index (restored)" in message
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
        "list": [1, "2", [3.0]], "tuple": (1, 2), "set": {"b", "a"}, "frozenset": frozenset({1}),
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
    assert [type(v) for v in loaded["np"]] == [type(v) for v in sample["np"]]
    assert loaded["np"][4].tolist() == [1.0, 2.0] and loaded["np"][5].tolist() == ["a", None]
    assert loaded["pd"][0] == sample["pd"][0] and loaded["pd"][1] is pd.NaT and loaded["pd"][2] is pd.NA


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
                                  lambda: pd.Series([1.0, 2.0], name="x")])
def test_pandas_frames_round_trip(protocol, make):
    frame = make()
    loaded = safe_pickle.loads(pickle.dumps(frame, protocol=protocol), name="f")
    assert type(loaded) is type(frame)
    assert loaded.equals(frame)


def test_to_pickle_frames_load(tmp_path: Path):
    path = tmp_path / "frame.pkl"
    soccer_like().to_pickle(path)
    with open(path, "rb") as f:
        assert safe_pickle.load(f, name=str(path)).equals(soccer_like())


def test_every_allow_list_entry_resolves_and_none_is_a_code_runner():
    dangerous = {eval, exec, compile, open, __import__, getattr, setattr, os.system, subprocess.Popen}
    for (module, name), resolve in safe_pickle.ALLOWED.items():
        value = resolve()
        assert value not in dangerous, f"{module}.{name}"
        assert not isinstance(value, type(os)), f"{module}.{name} is a module"
