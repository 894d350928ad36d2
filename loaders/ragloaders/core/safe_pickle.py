"""Unpickling files from the internet without running their code.

`pickle.load` calls whatever a pickle names: `os.system`, `builtins.eval`, any importable function.
`load` and `loads` here resolve a pickle's globals from an explicit allow-list only (builtin
containers and scalars, `datetime`, `zoneinfo`, what numpy arrays and the pandas objects of data
files need, for pandas 2.x and 3.x pickles) and refuse any other global with a SourceError that
names the file, the key (for a pickle stored under a key, such as a SqliteDict value) and the
refused global. Nothing named by the pickle is imported before it is found on the list.

The allowed callables cannot be turned against the process either:

- each allowed function is handed to the pickle wrapped, so that the BUILD opcode cannot rewrite
  its defaults or attributes, and the few whose arguments could do harm are checked
  (`_codecs.encode` only with latin-1, `bytearray` only from bytes, numpy's `_reconstruct` only
  as numpy itself calls it, `getattr` only for `ZoneInfo._unpickle`, pyarrow arrays fully validated);
- numpy's `ndarray` class is given as a marker that only `_reconstruct` accepts, so a pickle cannot
  call `ndarray(shape)` to allocate an arbitrary amount of memory;
- an allowed class that a pickle changed (BUILD on a class sets class attributes) is restored
  after the load and the file refused.
"""

from __future__ import annotations

import builtins
import datetime
import importlib
import io
import pickle
from collections.abc import Callable
from typing import Any, BinaryIO

from .errors import SourceError

_NUMPY_CORE = ("numpy.core", "numpy._core")
"""numpy 2 moved `numpy.core` to `numpy._core`; pickles name either."""


class _NdarrayMarker:
    """Stands for `numpy.ndarray` inside a pickle: usable as `_reconstruct`'s first argument only."""

    __slots__ = ()

    def __setstate__(self, state: Any) -> None:
        raise pickle.UnpicklingError("BUILD on numpy.ndarray refused")


NDARRAY = _NdarrayMarker()


class _Allowed:
    """An allowed function as the pickle sees it: callable, but BUILD cannot change it."""

    __slots__ = ("qualified", "function")

    def __init__(self, qualified: str, function: Callable[..., Any]):
        object.__setattr__(self, "qualified", qualified)
        object.__setattr__(self, "function", function)

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)

    def __setattr__(self, name: str, value: Any) -> None:
        raise pickle.UnpicklingError(f"setting {name!r} on {self.qualified} refused")

    def __setstate__(self, state: Any) -> None:
        raise pickle.UnpicklingError(f"BUILD on {self.qualified} refused")

    def __repr__(self) -> str:
        return f"<allowed {self.qualified}>"


def _numpy(submodule: str, name: str) -> Any:
    for package in reversed(_NUMPY_CORE):
        try:
            return getattr(importlib.import_module(f"{package}.{submodule}"), name)
        except (ImportError, AttributeError):
            continue
    raise AttributeError(f"numpy has no {submodule}.{name}")


def _reconstruct(subtype: Any, shape: Any, dtype: Any) -> Any:
    # numpy pickles an array as _reconstruct(ndarray, (0,), b'b') followed by BUILD with the real state.
    if subtype is not NDARRAY or shape != (0,) or dtype not in (b"b", "b"):
        raise pickle.UnpicklingError(
            f"numpy _reconstruct({subtype!r}, {shape!r}, {dtype!r}) refused: numpy only ever writes "
            "_reconstruct(ndarray, (0,), b'b')"
        )
    import numpy

    return _numpy("multiarray", "_reconstruct")(numpy.ndarray, (0,), b"b")


def _codecs_encode(text: Any, encoding: Any = "utf-8", *rest: Any) -> bytes:
    # Protocol 2 writes bytes as _codecs.encode(text, 'latin1'); other codecs (zlib, rot13...) are refused.
    if rest or not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} refused (only latin1 is written)")
    return text.encode("latin-1")


def _bytearray(*args: Any) -> bytearray:
    if len(args) > 1 or (args and not isinstance(args[0], (bytes, bytearray))):
        raise pickle.UnpicklingError("bytearray() refused except from bytes (an integer would allocate memory)")
    return bytearray(*args)


def _getattr(owner: Any, name: Any, *default: Any) -> Any:
    from zoneinfo import ZoneInfo

    if default or owner is not ZoneInfo or name != "_unpickle":
        raise pickle.UnpicklingError(f"getattr({owner!r}, {name!r}) refused (only ZoneInfo._unpickle is allowed)")
    return _Allowed("zoneinfo.ZoneInfo._unpickle", ZoneInfo._unpickle)


def _restore_arrow_array(state: Any) -> Any:
    import pyarrow as pa

    array = pa.lib._restore_array(state)
    array.validate(full=True)  # buffers built from the file's bytes: offsets and UTF-8 checked before any read
    return array


def _new_index(function_name: str) -> Callable[..., Any]:
    def new_index(cls: Any, state: Any) -> Any:
        import pandas

        if not (isinstance(cls, type) and issubclass(cls, pandas.Index)):
            raise pickle.UnpicklingError(f"{function_name} of {cls!r} refused (not a pandas Index class)")
        module = "pandas.core.indexes.datetimes" if "Datetime" in function_name else "pandas.core.indexes.base"
        return getattr(importlib.import_module(module), function_name)(cls, state)

    return new_index


def _attribute(module: str, name: str) -> Callable[[], Any]:
    return lambda: getattr(importlib.import_module(module), name)


def _checked(function: Callable[..., Any]) -> Callable[[], Any]:
    return lambda: function


_PANDAS_CLASSES_2 = {
    "pandas.core.frame": ("DataFrame",),
    "pandas.core.series": ("Series",),
    "pandas.core.internals.managers": ("BlockManager", "SingleBlockManager"),
    "pandas.core.indexes.base": ("Index",),
    "pandas.core.indexes.range": ("RangeIndex",),
    "pandas.core.indexes.multi": ("MultiIndex",),
    "pandas.core.indexes.datetimes": ("DatetimeIndex",),
    "pandas.core.arrays.datetimes": ("DatetimeArray",),
    "pandas.core.arrays.timedeltas": ("TimedeltaArray",),
    "pandas.core.arrays.categorical": ("Categorical",),
    "pandas.core.arrays.integer": ("IntegerArray", "Int8Dtype", "Int16Dtype", "Int32Dtype", "Int64Dtype",
                                   "UInt8Dtype", "UInt16Dtype", "UInt32Dtype", "UInt64Dtype"),
    "pandas.core.arrays.floating": ("FloatingArray", "Float32Dtype", "Float64Dtype"),
    "pandas.core.arrays.boolean": ("BooleanArray", "BooleanDtype"),
    "pandas.core.arrays.string_": ("StringArray", "StringDtype"),
    "pandas.core.arrays.string_arrow": ("ArrowStringArray",),
    "pandas.core.dtypes.dtypes": ("CategoricalDtype", "DatetimeTZDtype"),
}
_PANDAS_TOP_LEVEL = (
    "DataFrame", "Series", "Index", "RangeIndex", "MultiIndex", "DatetimeIndex", "Categorical", "CategoricalDtype",
    "DatetimeTZDtype", "StringDtype", "BooleanDtype", "Int8Dtype", "Int16Dtype", "Int32Dtype", "Int64Dtype",
    "UInt8Dtype", "UInt16Dtype", "UInt32Dtype", "UInt64Dtype", "Float32Dtype", "Float64Dtype", "NA", "NaT",
)
_PANDAS_ARRAYS = ("DatetimeArray", "TimedeltaArray", "IntegerArray", "FloatingArray", "BooleanArray", "StringArray",
                  "ArrowStringArray")
_PANDAS_FUNCTIONS = {
    ("pandas._libs.internals", "_unpickle_block"): _attribute("pandas._libs.internals", "_unpickle_block"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"):
        _attribute("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
    ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"):
        _attribute("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"),
    ("pandas._libs.tslibs.nattype", "_nat_unpickle"): _attribute("pandas._libs.tslibs.nattype", "_nat_unpickle"),
    ("pandas._libs.tslibs.nattype", "__nat_unpickle"): _attribute("pandas._libs.tslibs.nattype", "_nat_unpickle"),
    ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"):
        _attribute("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"),
    ("pandas.core.indexes.base", "_new_Index"): _checked(_new_index("_new_Index")),
    ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"): _checked(_new_index("_new_DatetimeIndex")),
}


def _allow_list() -> dict[tuple[str, str], Callable[[], Any]]:
    allowed: dict[tuple[str, str], Callable[[], Any]] = {}
    for module in ("builtins", "__builtin__"):
        for name in ("slice", "set", "frozenset"):
            allowed[(module, name)] = _checked(getattr(builtins, name))
        allowed[(module, "bytearray")] = _checked(_bytearray)
        allowed[(module, "getattr")] = _checked(_getattr)
    allowed[("_codecs", "encode")] = _checked(_codecs_encode)
    for name in ("date", "datetime", "time", "timedelta", "timezone"):
        allowed[("datetime", name)] = _checked(getattr(datetime, name))
    allowed[("zoneinfo", "ZoneInfo")] = _attribute("zoneinfo", "ZoneInfo")
    for package in _NUMPY_CORE:
        allowed[(f"{package}.multiarray", "_reconstruct")] = _checked(_reconstruct)
        allowed[(f"{package}.multiarray", "scalar")] = lambda: _numpy("multiarray", "scalar")
        allowed[(f"{package}.numeric", "_frombuffer")] = lambda: _numpy("numeric", "_frombuffer")
    allowed[("numpy", "ndarray")] = _checked(NDARRAY)
    allowed[("numpy", "dtype")] = _attribute("numpy", "dtype")
    for module, names in _PANDAS_CLASSES_2.items():
        for name in names:
            allowed[(module, name)] = _attribute(module, name)
    for name in _PANDAS_TOP_LEVEL:
        allowed[("pandas", name)] = _attribute("pandas", name)
    for name in _PANDAS_ARRAYS:
        allowed[("pandas.arrays", name)] = _attribute("pandas.arrays", name)
    allowed[("pandas._libs.missing", "NA")] = _attribute("pandas._libs.missing", "NA")
    allowed[("pandas._libs.tslibs.offsets", "Day")] = _attribute("pandas._libs.tslibs.offsets", "Day")
    allowed.update(_PANDAS_FUNCTIONS)
    allowed[("pyarrow.lib", "_restore_array")] = _checked(_restore_arrow_array)
    allowed[("pyarrow.lib", "type_for_alias")] = _attribute("pyarrow.lib", "type_for_alias")
    allowed[("pyarrow.lib", "py_buffer")] = _attribute("pyarrow.lib", "py_buffer")
    return allowed


ALLOWED: dict[tuple[str, str], Callable[[], Any]] = _allow_list()
"""(module, name) as a pickle writes it -> how to get the object handed to the pickle. Nothing else resolves."""


def _handed(qualified: str, value: Any) -> Any:
    if isinstance(value, type) or value is NDARRAY or not callable(value):
        return value  # classes (NEWOBJ needs real ones) and plain values such as pandas.NA
    return _Allowed(qualified, value)


class _ClassGuard:
    """Remembers the attributes of each class handed to a pickle, to undo and report a BUILD on a class."""

    def __init__(self) -> None:
        self.snapshots: dict[type, dict[str, Any]] = {}

    def watch(self, cls: type) -> None:
        if cls not in self.snapshots:
            self.snapshots[cls] = dict(vars(cls))

    def changed(self) -> list[str]:
        changed = []
        for cls, before in self.snapshots.items():
            after = dict(vars(cls))
            if after.keys() == before.keys() and all(after[k] is before[k] for k in before):
                continue
            changed.append(f"{cls.__module__}.{cls.__qualname__}")
            for name in after.keys() - before.keys():
                try:
                    delattr(cls, name)
                except (AttributeError, TypeError):
                    pass
            for name, value in before.items():
                if after.get(name, _MISSING) is not value and name not in ("__dict__", "__weakref__"):
                    try:
                        setattr(cls, name, value)
                    except (AttributeError, TypeError):
                        pass
        return changed


_MISSING = object()


class RestrictedUnpickler(pickle.Unpickler):
    """A `pickle.Unpickler` whose `find_class` resolves only the globals in ALLOWED."""

    def __init__(self, file: BinaryIO, *, name: str, key: str | None = None):
        super().__init__(file)
        self.name, self.key = name, key
        self.guard = _ClassGuard()
        self.refused: str | None = None

    def find_class(self, module: str, name: str) -> Any:
        resolve = ALLOWED.get((module, name))
        if resolve is None:
            self.refused = f"{module}.{name}"
            raise pickle.UnpicklingError(f"global {module}.{name} is not on the allow-list")
        try:
            value = resolve()
        except (ImportError, AttributeError) as e:
            missing = f"allowed global {module}.{name} is missing from this installation ({e})"
            raise pickle.UnpicklingError(missing) from e
        if isinstance(value, type):
            self.guard.watch(value)
        return _handed(f"{module}.{name}", value)

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError(f"persistent id {pid!r} refused (the file refers to objects outside itself)")


def _where(key: str | None) -> str:
    return f"key {key!r}: " if key is not None else ""


def load(file: BinaryIO, *, name: str, key: str | None = None) -> Any:
    """The object pickled in `file`, read with RestrictedUnpickler; SourceError names `name` and `key`.

    Any failure (a refused global, a truncated or malformed pickle, an allowed constructor refusing
    its arguments) is a SourceError; a pickle that changed an allowed class is refused after the
    class is restored.
    """
    unpickler = RestrictedUnpickler(file, name=name, key=key)
    try:
        value = unpickler.load()
    except RecursionError:
        raise SourceError(name, f"{_where(key)}pickle nested too deeply to read") from None
    except MemoryError:
        raise SourceError(name, f"{_where(key)}pickle asks for more memory than is available") from None
    except Exception as e:
        changed = unpickler.guard.changed()
        if unpickler.refused is not None:
            message = (f"{_where(key)}refused pickle global `{unpickler.refused}`: only builtin containers and "
                       "scalars, datetime, numpy arrays and pandas frames may be unpickled (the file would run code "
                       "or import a module)")
        else:
            message = f"{_where(key)}not a readable pickle of allowed types ({type(e).__name__}: {e})"
        if changed:
            message += f"; it also tried to change {', '.join(changed)} (restored)"
        raise SourceError(name, message) from None
    changed = unpickler.guard.changed()
    if changed:
        raise SourceError(name, f"{_where(key)}refused pickle: it changes the class {', '.join(changed)} (restored)")
    return value


def loads(data: bytes, *, name: str, key: str | None = None) -> Any:
    """`load` of a pickle held in memory (a SqliteDict value)."""
    return load(io.BytesIO(data), name=name, key=key)
