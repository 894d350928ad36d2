"""What the recorded calls of a data pickle (`safe_pickle.Call`) stand for, as plain values and inert descriptions.

`Resolver` replaces each call of an allowed global by a Python value (a set, a date, a numpy scalar's
int, float, bool or str) or a description (`Array`, `Frame`, `Series`, ...): plain records whose
fields were checked against each other here, before anything reads them. Nothing from numpy or pandas
is built; numpy is used only to view bytes whose length was checked (`Array.numpy`).
"""

from __future__ import annotations

import datetime
import math
import pickle
import struct
from dataclasses import dataclass, field
from typing import Any

from .errors import SourceError

UNITS = {7: "s", 8: "ms", 9: "us", 10: "ns"}
"""pandas' resolution codes (numpy's datetime unit enum) for the units a timestamp may have."""
PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
DATE_UNITS = {"D": 86_400}
EPOCH = datetime.datetime(1970, 1, 1)
NUMERIC_KINDS = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8)}


class Bad(ValueError):
    """A recorded call whose arguments are not what the global's real pickles hold."""


MULTIPLE = 64
"""Units (8 per value, plus the bytes of text) a pickle may expand to, per byte of the file."""
MAX_KEY_DEPTH = 16
"""Deepest tuple allowed as a dict key or set item: hashing a tuple recurses in C without a guard, so a key
nested a million deep would crash the interpreter."""


class Budget:
    """How much a pickle may still expand to: MULTIPLE units per byte of the file it came from."""

    def __init__(self, name: str, nbytes: int, key: str | None = None):
        self.name, self.key, self.nbytes = name, key, nbytes
        self.limit = MULTIPLE * nbytes
        self.spent = 0

    def charge(self, units: int) -> None:
        """Count `units` more; SourceError naming the file once the total passes the limit."""
        self.spent += units
        if self.spent > self.limit:
            raise self.exceeded()

    def exceeded(self) -> SourceError:
        return SourceError(self.name, f"{where(self.key)}the pickle expands to more than {MULTIPLE} units per byte of "
                           f"its {self.nbytes:,} bytes (8 per value plus the bytes of each text, shared references "
                           "counted each time they are used): refused as a decompression bomb")


def where(key: str | None) -> str:
    return f"key {key!r}: " if key is not None else ""


class Refused(pickle.UnpicklingError):
    """The stream asks for something the reader does not do; the message says what."""


class Global:
    """A global named by the pickle, as an inert marker: calling it records the call."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "name", name)

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"

    def __call__(self, *args: Any) -> Call:
        return Call(self, args)

    def __setattr__(self, name: str, value: Any) -> None:
        raise Refused(f"setting {name!r} on {self.qualified} refused")

    def __setstate__(self, state: Any) -> None:
        raise Refused(f"BUILD on {self.qualified} refused")

    def __repr__(self) -> str:
        return f"<global {self.qualified}>"


class Call:
    """`func(*args)` (REDUCE, or NEWOBJ when `new`) as the pickle wrote it, with the state a BUILD gave it."""

    __slots__ = ("func", "args", "new", "state", "built")

    def __init__(self, func: Any, args: tuple, new: bool = False):
        self.func, self.args, self.new = func, args, new
        self.state: Any = None
        self.built = False

    def __call__(self, *args: Any) -> Call:
        return Call(self, args)

    def __setstate__(self, state: Any) -> None:
        if self.built:
            raise Refused(f"a second BUILD on {self!r}")
        self.state, self.built = state, True

    @property
    def name(self) -> str:
        return self.func.qualified if isinstance(self.func, Global) else "a call's result"

    def __repr__(self) -> str:
        return f"<call of {self.name}>"


def hashable(value: Any, depth: int = 0) -> bool:
    """Whether `value` may be a dict key or set item: hashing it cannot recurse deeply."""
    if depth > MAX_KEY_DEPTH:
        return False
    if isinstance(value, tuple):
        return all(hashable(item, depth + 1) for item in value)
    return isinstance(value, (str, int, float, bytes, frozenset, Global, Call)) or value is None


def hashable_key(value: Any) -> Any:
    if not hashable(value):
        raise Refused(f"a {type(value).__name__} nested deeper than {MAX_KEY_DEPTH} levels (or unhashable) as a "
                      "dict key or set item")
    return value



# ---------------------------------------------------------------- descriptions


@dataclass(frozen=True)
class DType:
    """A numpy dtype: kind ('b', 'i', 'u', 'f', 'U', 'S', 'M', 'O'), bytes per item, byte order, datetime unit."""

    kind: str
    itemsize: int
    byteorder: str = "<"
    unit: str | None = None

    def numpy(self) -> Any:
        import numpy

        order = ">" if self.byteorder == ">" else "<"
        if self.kind == "M":
            return numpy.dtype(f"{order}M8[{self.unit}]")
        return numpy.dtype(f"{order}{self.kind}{self.itemsize}")


@dataclass(eq=False)
class Array:
    """A numpy array: `data` holds exactly itemsize x prod(shape) bytes (a list of prod(shape) items if object)."""

    dtype: DType
    shape: tuple[int, ...]
    data: bytes | list
    fortran: bool = False

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def numpy(self) -> Any:
        """The array as numpy (read-only, over `data`); not for object arrays."""
        import numpy

        return numpy.frombuffer(self.data, dtype=self.dtype.numpy()).reshape(self.shape, order="F" if self.fortran
                                                                              else "C")

    def items(self) -> list:
        """The items of a 1-D array as Python values (object arrays: the items as they are)."""
        if isinstance(self.data, list):
            return list(self.data)
        return [scalar(self.dtype, bytes(self.data[i * self.dtype.itemsize:(i + 1) * self.dtype.itemsize]))
                for i in range(self.size)]


@dataclass(frozen=True)
class Timestamp:
    """A pandas or numpy datetime: `value` units since the epoch, in time zone `tz` (None: naive)."""

    value: int
    unit: str
    tz: str | None = None

    def isoformat(self) -> str:
        """As pandas' `Timestamp.isoformat`: microseconds when there are some, nanoseconds when there are some."""
        per = PER_SECOND[self.unit]
        seconds, fraction = divmod(self.value, per)
        try:
            moment = EPOCH + datetime.timedelta(seconds=seconds, microseconds=fraction * 1_000_000 // per)
            if self.tz is not None:
                moment = moment.replace(tzinfo=datetime.timezone.utc).astimezone(zone(self.tz))
        except OverflowError:
            raise Bad(f"timestamp {self.value} {self.unit} is out of range") from None
        text = moment.isoformat()
        if per > 1_000_000 and fraction % (per // 1_000_000):
            naive = moment.replace(tzinfo=None, microsecond=0).isoformat()
            text = f"{naive}.{fraction:09d}{text[len(moment.replace(tzinfo=None).isoformat()):]}"
        return text


@dataclass(frozen=True)
class Timedelta:
    value: int
    unit: str


@dataclass(eq=False)
class Masked:
    """A pandas masked array (nullable integer, float, boolean): `data` with `mask` True where missing."""

    data: Array
    mask: Array

    def __len__(self) -> int:
        return self.data.size


@dataclass(eq=False)
class Categorical:
    """Codes into categories, checked: -1 (missing) <= code < len(categories)."""

    codes: Array
    categories: Any

    def __len__(self) -> int:
        return self.codes.size


@dataclass(eq=False)
class Datetimes:
    """A pandas datetime array: an M8 `Array`, naive or in time zone `tz`."""

    data: Array
    tz: str | None = None

    def __len__(self) -> int:
        return self.data.size


@dataclass(eq=False)
class ArrowStrings:
    """pandas' pyarrow-backed strings: a pyarrow (large) string array, validated in full."""

    array: Any

    def __len__(self) -> int:
        return len(self.array)


@dataclass(eq=False)
class Index:
    values: Any
    name: Any = None

    def __len__(self) -> int:
        return column_length(self.values)


@dataclass(eq=False)
class RangeIndex:
    start: int
    stop: int
    step: int
    name: Any = None

    def __len__(self) -> int:
        return len(range(self.start, self.stop, self.step))


@dataclass(eq=False)
class MultiIndex:
    levels: list[Index]
    codes: list[Array]
    names: list

    def __len__(self) -> int:
        return self.codes[0].size if self.codes else 0


@dataclass(eq=False)
class Block:
    """Columns `placement` of a frame: a 2-D `Array` of shape (len(placement), rows), or one 1-D column."""

    values: Any
    placement: list[int]


@dataclass(eq=False)
class Frame:
    """A DataFrame: column labels, row index and blocks whose placements are a permutation of the columns."""

    columns: Any
    index: Any
    blocks: list[Block] = field(default_factory=list)

    def column(self, position: int) -> Any:
        """The values of column `position`: a 1-D Array (a row of a 2-D block) or an extension column."""
        for block in self.blocks:
            if position in block.placement:
                row = block.placement.index(position)
                if isinstance(block.values, Array) and len(block.values.shape) == 2:
                    return row_of(block.values, row)
                return block.values
        raise Bad(f"no block holds column {position}")


@dataclass(eq=False)
class Series:
    values: Any
    index: Any
    name: Any = None


def row_of(array: Array, row: int) -> Array:
    """Row `row` of a 2-D array as a 1-D array."""
    count, width = array.shape
    if isinstance(array.data, list):
        items = array.data[row::count] if array.fortran else array.data[row * width:(row + 1) * width]
        return Array(array.dtype, (width,), items)
    return Array(array.dtype, (width,), array.numpy()[row].tobytes())


def column_length(values: Any) -> int:
    if isinstance(values, Array):
        if len(values.shape) != 1:
            raise Bad(f"a column of shape {values.shape}, expected one dimension")
        return values.size
    if isinstance(values, (Masked, Categorical, Datetimes, ArrowStrings)):
        return len(values)
    raise Bad(f"not a column: {type(values).__name__}")


def zone(key: str) -> datetime.tzinfo:
    """The time zone named `key` (from the system's time zone database; the name is validated by zoneinfo)."""
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(key)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError, OSError) as e:
        raise Bad(f"unknown time zone {key!r} ({e})") from None


# ---------------------------------------------------------------- scalars


def scalar(dtype: DType, data: bytes) -> Any:
    """One numpy item of `dtype` from its bytes, as a Python value (datetimes as Timestamp, NaT as None)."""
    if len(data) != dtype.itemsize:
        raise Bad(f"a {dtype.kind}{dtype.itemsize} scalar of {len(data)} bytes")
    order = "big" if dtype.byteorder == ">" else "little"
    if dtype.kind == "b":
        return data != b"\x00"
    if dtype.kind in "iu":
        return int.from_bytes(data, order, signed=dtype.kind == "i")
    if dtype.kind == "f":
        return struct.unpack((">" if order == "big" else "<") + {2: "e", 4: "f", 8: "d"}[dtype.itemsize], data)[0]
    if dtype.kind == "U":
        try:
            return data.decode("utf-32-be" if order == "big" else "utf-32-le").rstrip("\x00")
        except UnicodeDecodeError as e:
            raise Bad(f"a numpy string that is not UTF-32 ({e.reason})") from None
    if dtype.kind == "S":
        return data.rstrip(b"\x00")
    if dtype.kind == "M":
        value = int.from_bytes(data, order, signed=True)
        return None if value == -(2**63) else datetime64(value, dtype.unit or "")
    raise Bad(f"numpy scalar of kind {dtype.kind!r}")


def datetime64(value: int, unit: str) -> Any:
    if unit in DATE_UNITS:
        try:
            return datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
        except OverflowError:
            raise Bad(f"date {value} days from 1970 is out of range") from None
    if unit not in PER_SECOND:
        raise Bad(f"datetime64 unit {unit!r}")
    return Timestamp(value, unit)


# ---------------------------------------------------------------- the resolver


def _module(module: str) -> str:
    """numpy 1 names `numpy.core`, numpy 2 `numpy._core`; pandas' classes are named from several modules."""
    if module.startswith("numpy.core"):
        return "numpy._core" + module[len("numpy.core"):]
    return module


PANDAS_NAMES = {
    "DataFrame": "frame", "Series": "series", "BlockManager": "manager", "SingleBlockManager": "manager",
    "Index": "index", "RangeIndex": "range", "MultiIndex": "multi", "DatetimeIndex": "index",
    "DatetimeArray": "datetimes", "Categorical": "categorical", "CategoricalDtype": "dtype",
    "DatetimeTZDtype": "dtype", "StringDtype": "dtype", "BooleanDtype": "dtype", "Int8Dtype": "dtype",
    "Int16Dtype": "dtype", "Int32Dtype": "dtype", "Int64Dtype": "dtype", "UInt8Dtype": "dtype", "UInt16Dtype": "dtype",
    "UInt32Dtype": "dtype", "UInt64Dtype": "dtype", "Float32Dtype": "dtype", "Float64Dtype": "dtype",
    "IntegerArray": "masked", "FloatingArray": "masked", "BooleanArray": "masked", "StringArray": "strings",
    "ArrowStringArray": "arrow_strings", "NA": "missing", "NaT": "missing",
}
PANDAS_MODULES = (
    "pandas", "pandas.arrays", "pandas.core.frame", "pandas.core.series", "pandas.core.internals.managers",
    "pandas.core.indexes.base", "pandas.core.indexes.range", "pandas.core.indexes.multi",
    "pandas.core.indexes.datetimes", "pandas.core.arrays.datetimes", "pandas.core.arrays.categorical",
    "pandas.core.arrays.integer", "pandas.core.arrays.floating", "pandas.core.arrays.boolean",
    "pandas.core.arrays.string_", "pandas.core.arrays.string_arrow", "pandas.core.dtypes.dtypes",
    "pandas._libs.missing",
)
FUNCTIONS = {
    ("builtins", "set"): "set", ("builtins", "frozenset"): "frozenset", ("builtins", "slice"): "slice",
    ("builtins", "bytearray"): "bytearray", ("builtins", "getattr"): "getattr", ("_codecs", "encode"): "encode",
    ("datetime", "date"): "date", ("datetime", "datetime"): "datetime", ("datetime", "time"): "time",
    ("datetime", "timedelta"): "timedelta", ("datetime", "timezone"): "timezone", ("zoneinfo", "ZoneInfo"): "zoneinfo",
    ("numpy._core.multiarray", "_reconstruct"): "reconstruct", ("numpy._core.multiarray", "scalar"): "scalar",
    ("numpy._core.numeric", "_frombuffer"): "frombuffer", ("numpy", "dtype"): "numpy_dtype",
    ("numpy", "ndarray"): "ndarray",
    ("pandas._libs.internals", "_unpickle_block"): "block",
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"): "ndarray_backed",
    ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"): "timestamp",
    ("pandas._libs.tslibs.nattype", "_nat_unpickle"): "nat", ("pandas._libs.tslibs.nattype", "__nat_unpickle"): "nat",
    ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"): "timedelta64",
    ("pandas.core.indexes.base", "_new_Index"): "new_index",
    ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"): "new_index",
    ("pyarrow.lib", "_restore_array"): "arrow_array", ("pyarrow.lib", "type_for_alias"): "arrow_type",
    ("pyarrow.lib", "py_buffer"): "arrow_buffer",
    **{("pandas._libs.tslibs.offsets", name): "offset" for name in ("Day", "Hour", "Minute", "Second", "Milli", "Micro",
                                                                      "Nano")},
    **{(module, name): kind for module in PANDAS_MODULES for name, kind in PANDAS_NAMES.items()},
}


def kind_of(global_: Global) -> str | None:
    """What an allowed global is (a key of Resolver's handlers); None if it is not allowed."""
    return FUNCTIONS.get((_module(global_.module), global_.name))


KEY_VALUES = (datetime.date, datetime.time, datetime.timedelta, Timestamp, Timedelta)
"""Values resolved from calls that may be dict keys (their hash does not recurse)."""
ARROW_STRING_TYPES = ("string", "utf8", "large_string", "large_utf8")


class Resolver:
    """Turns the recorded calls of one pickle into values and descriptions, each call once (shared ones are
    resolved once and shared)."""

    def __init__(self, name: str, key: str | None, budget: Budget):
        self.name, self.key, self.budget = name, key, budget
        self.done: dict[int, Any] = {}
        self.busy: set[int] = set()
        self.keep: list[Any] = []  # keeps resolved nodes alive, so that their ids stay theirs

    def resolve_root(self, tree: Any) -> Any:
        try:
            return self.resolve(tree)
        except SourceError:
            raise
        except (Bad, Refused) as e:
            raise SourceError(self.name, f"{where(self.key)}not a readable pickle of allowed types ({e})") from None
        except RecursionError:
            raise SourceError(self.name, f"{where(self.key)}pickle nested too deeply to read") from None
        except (TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError) as e:
            raise SourceError(self.name, f"{where(self.key)}not a readable pickle of allowed types "
                              f"({type(e).__name__}: {e})") from None

    def refused(self, global_: Global) -> Bad:
        return Bad(f"{global_.qualified} is not read")

    def resolve(self, node: Any) -> Any:
        kind = type(node)
        if kind in (str, int, float, bool, bytes, type(None)):
            return node
        ident = id(node)
        if ident in self.done:
            return self.done[ident]
        if ident in self.busy:
            if kind is list or kind is dict:
                return node  # a container that holds itself: left as the cycle it is, for the reader to refuse
            raise Bad("a value that contains itself through a call")
        self.busy.add(ident)
        self.keep.append(node)
        try:
            result = self._resolve(node, kind)
        finally:
            self.busy.discard(ident)
        self.done[ident] = result
        return result

    def _resolve(self, node: Any, kind: type) -> Any:
        if kind is list:
            node[:] = [self.resolve(item) for item in node]
            return node
        if kind is dict:
            items = [(self.resolve(k), self.resolve(v)) for k, v in node.items()]
            node.clear()
            for k, v in items:
                if not (hashable(k) or isinstance(k, KEY_VALUES)):
                    raise Bad(f"a dict key of type {type(k).__name__}")
                node[k] = v
            return node
        if kind is tuple:
            return tuple(self.resolve(item) for item in node)
        if kind is set or kind is frozenset:
            items = [self.resolve(item) for item in node]
            if not all(hashable(item) for item in items):
                raise Bad("a set item that cannot be hashed")
            return kind(items)
        if kind is bytearray:
            return node
        if kind is Global:
            what = kind_of(node)
            if what is None:
                raise self.refused(node)
            return None if what == "missing" else node  # a class as an argument (`_new_Index(Index, ...)`)
        if kind is Call:
            return self.call(node)
        raise Bad(f"a value of type {kind.__name__}")

    def call(self, node: Call) -> Any:
        func = node.func
        if isinstance(func, Call):  # getattr(ZoneInfo, '_unpickle')(key, from_cache)
            inner = self.resolve(func)
            if inner != "zoneinfo._unpickle" or node.built or len(node.args) != 2:
                raise Bad("a call of a call other than ZoneInfo._unpickle(key, flag)")
            return self.text(node.args[0])
        what = kind_of(func)
        if what is None:
            raise self.refused(func)
        handler = getattr(self, f"_{what}")
        args = tuple(self.resolve(a) for a in node.args)
        state = self.resolve(node.state) if node.built else None
        return handler(args, state, node)

    # ------------------------------------------------------------ helpers

    def text(self, value: Any) -> str:
        value = self.resolve(value)
        if type(value) is not str:
            raise Bad(f"expected a string, got {type(value).__name__}")
        return value

    @staticmethod
    def integer(value: Any, low: int = -(2**63), high: int = 2**63 - 1) -> int:
        if type(value) is not int or not low <= value <= high:
            raise Bad(f"expected an integer in [{low}, {high}], got {value!r:.40}")
        return value

    @staticmethod
    def no_state(node: Call, state: Any) -> None:
        if node.built:
            raise Bad(f"BUILD on the result of {node.name}")

    @staticmethod
    def args(args: tuple, count: int | tuple[int, ...], name: str) -> None:
        counts = (count,) if isinstance(count, int) else count
        if len(args) not in counts:
            raise Bad(f"{name} with {len(args)} arguments")

    # ------------------------------------------------------------ builtins and datetime

    def _set(self, args: tuple, state: Any, node: Call) -> set:
        self.no_state(node, state)
        self.args(args, (0, 1), "set")
        items = list(args[0]) if args else []
        if not all(hashable(item) for item in items):
            raise Bad("a set item that cannot be hashed")
        return set(items)

    def _frozenset(self, args: tuple, state: Any, node: Call) -> frozenset:
        return frozenset(self._set(args, state, node))

    def _slice(self, args: tuple, state: Any, node: Call) -> slice:
        self.no_state(node, state)
        self.args(args, (1, 2, 3), "slice")
        for value in args:
            if value is not None:
                self.integer(value)
        return slice(*args)

    def _bytearray(self, args: tuple, state: Any, node: Call) -> bytes:
        self.no_state(node, state)
        if len(args) > 1 or (args and not isinstance(args[0], (bytes, bytearray))):
            raise Bad("bytearray() refused except from bytes (an integer would allocate memory)")
        return bytearray(args[0]) if args else bytearray()

    def _encode(self, args: tuple, state: Any, node: Call) -> bytes:
        self.no_state(node, state)
        if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
            raise Bad(f"_codecs.encode with encoding {args[1] if len(args) > 1 else None!r} refused (only latin1 is "
                      "written)")
        return args[0].encode("latin-1")

    def _getattr(self, args: tuple, state: Any, node: Call) -> str:
        self.no_state(node, state)
        owner = node.args[0] if node.args else None
        if len(args) != 2 or not isinstance(owner, Global) or kind_of(owner) != "zoneinfo" or args[1] != "_unpickle":
            raise Bad(f"getattr({owner!r}, {args[1] if len(args) > 1 else None!r}) refused (only ZoneInfo._unpickle is "
                      "allowed)")
        return "zoneinfo._unpickle"

    def _zoneinfo(self, args: tuple, state: Any, node: Call) -> str:
        self.no_state(node, state)
        self.args(args, 1, "ZoneInfo")
        return self.text(args[0])

    def _date(self, args: tuple, state: Any, node: Call) -> datetime.date:
        self.no_state(node, state)
        data = args[0] if len(args) == 1 else None
        if not isinstance(data, bytes) or len(data) != 4:
            raise Bad("datetime.date except from its 4 pickled bytes")
        return datetime.date(data[0] * 256 + data[1], data[2], data[3])

    def _datetime(self, args: tuple, state: Any, node: Call) -> datetime.datetime:
        self.no_state(node, state)
        self.args(args, (1, 2), "datetime.datetime")
        data, tz = args[0], args[1] if len(args) == 2 else None
        if not isinstance(data, bytes) or len(data) != 10:
            raise Bad("datetime.datetime except from its 10 pickled bytes")
        fold, month = divmod(data[2], 128)
        return datetime.datetime(data[0] * 256 + data[1], month, data[3], data[4], data[5], data[6],
                                 int.from_bytes(data[7:10], "big"), tzinfo=self.tzinfo(tz), fold=fold)

    def _time(self, args: tuple, state: Any, node: Call) -> datetime.time:
        self.no_state(node, state)
        self.args(args, (1, 2), "datetime.time")
        data, tz = args[0], args[1] if len(args) == 2 else None
        if not isinstance(data, bytes) or len(data) != 6:
            raise Bad("datetime.time except from its 6 pickled bytes")
        fold, hour = divmod(data[0], 128)
        return datetime.time(hour, data[1], data[2], int.from_bytes(data[3:6], "big"), tzinfo=self.tzinfo(tz),
                             fold=fold)

    def _timedelta(self, args: tuple, state: Any, node: Call) -> datetime.timedelta:
        self.no_state(node, state)
        self.args(args, 3, "datetime.timedelta")
        days, seconds, micro = (self.integer(a, -(10**9), 10**9) for a in args)
        return datetime.timedelta(days, seconds, micro)

    def _timezone(self, args: tuple, state: Any, node: Call) -> datetime.timezone:
        self.no_state(node, state)
        self.args(args, (1, 2), "datetime.timezone")
        if not isinstance(args[0], datetime.timedelta) or (len(args) == 2 and type(args[1]) is not str):
            raise Bad("datetime.timezone except of a timedelta and a name")
        return datetime.timezone(*args)

    def tzinfo(self, tz: Any) -> datetime.tzinfo | None:
        if tz is None or isinstance(tz, datetime.tzinfo):
            return tz
        if type(tz) is str:
            return zone(tz)
        raise Bad(f"a time zone of type {type(tz).__name__}")

    # ------------------------------------------------------------ numpy

    def _numpy_dtype(self, args: tuple, state: Any, node: Call) -> DType:
        if len(args) != 3 or type(args[0]) is not str or len(args[0]) > 8:
            raise Bad("numpy.dtype except (name, False, True)")
        name = args[0]
        kind, size = name[:1], name[1:]
        if not size.isdigit() and not (kind in "US" and size == ""):
            raise Bad(f"numpy dtype {name!r}")
        itemsize = int(size) if size else 0
        byteorder, unit = "<", None
        if node.built:
            if type(state) is not tuple or len(state) not in (8, 9) or state[1] not in ("<", ">", "|", "="):
                raise Bad(f"numpy dtype {name!r} with state {state!r:.80}")
            byteorder = state[1]
            if state[3] is not None or state[4] is not None:
                raise Bad("structured numpy dtypes are not read")
            if kind in "US" and type(state[5]) is int and state[5] > 0:
                itemsize = state[5]
            if kind == "M":
                metadata = state[8] if len(state) == 9 else None
                if (type(metadata) is not tuple or len(metadata) != 2 or type(metadata[1]) is not tuple
                        or not metadata[1] or not isinstance(metadata[1][0], bytes)):
                    raise Bad("datetime64 dtype without its unit")
                unit = metadata[1][0].decode("ascii", "replace")
                if metadata[1][1:] not in ((1, 1, 1), (1,)) and len(metadata[1]) != 4:
                    raise Bad("datetime64 dtype with a multiple of its unit")
                if unit not in PER_SECOND and unit not in DATE_UNITS:
                    raise Bad(f"datetime64 unit {unit!r}")
        if kind == "O":
            return DType("O", 8, "|")
        if kind in NUMERIC_KINDS:
            if itemsize not in NUMERIC_KINDS[kind]:
                raise Bad(f"numpy dtype {name!r}")
        elif kind == "U":
            if itemsize % 4:
                raise Bad(f"numpy str dtype of {itemsize} bytes")
        elif kind == "S":
            pass
        elif kind == "M":
            if itemsize != 8 or unit is None:
                raise Bad(f"numpy dtype {name!r}")
        else:
            raise Bad(f"numpy dtype {name!r} is not read (only bool, int, uint, float, str, bytes, datetime64, "
                      "object)")
        if itemsize <= 0 and kind not in "US":
            raise Bad(f"numpy dtype {name!r}")
        return DType(kind, itemsize, byteorder, unit)

    def _ndarray(self, args: tuple, state: Any, node: Call) -> Any:
        raise Bad("numpy.ndarray is not callable here (only _reconstruct's first argument)")

    def _reconstruct(self, args: tuple, state: Any, node: Call) -> Array:
        if len(args) != 3 or not (isinstance(node.args[0], Global) and kind_of(node.args[0]) == "ndarray") \
                or args[1] != (0,) or args[2] not in (b"b", "b"):
            raise Bad("numpy _reconstruct except (ndarray, (0,), b'b')")
        if type(state) is not tuple or len(state) != 5:
            raise Bad("numpy array state of the wrong form")
        _, shape, dtype, fortran, data = state
        return self.array(dtype, shape, data, fortran)

    def _frombuffer(self, args: tuple, state: Any, node: Call) -> Array:
        self.no_state(node, state)
        self.args(args, 4, "numpy _frombuffer")
        data, dtype, shape, order = args
        if order not in ("C", "F"):
            raise Bad(f"array order {order!r}")
        return self.array(dtype, shape, data, order == "F")

    def array(self, dtype: Any, shape: Any, data: Any, fortran: Any) -> Array:
        """An Array whose shape, dtype and data agree; anything else is refused."""
        if not isinstance(dtype, DType):
            raise Bad("a numpy array without a dtype")
        if type(shape) is not tuple or len(shape) > 2 or not all(type(n) is int and 0 <= n < 2**62 for n in shape):
            raise Bad(f"numpy array shape {shape!r:.60} (one or two non-negative dimensions)")
        count = math.prod(shape)
        if isinstance(data, bytearray):
            data = bytes(data)
        if dtype.kind == "O":
            if type(data) is not list or len(data) != count:
                raise Bad(f"object array of shape {shape} holding {len(data) if type(data) is list else 'no'} items")
        elif not isinstance(data, bytes) or len(data) != count * dtype.itemsize:
            size = len(data) if isinstance(data, bytes) else type(data).__name__
            raise Bad(f"numpy array of shape {shape} and dtype {dtype.kind}{dtype.itemsize} needs "
                      f"{count * dtype.itemsize} bytes, the file gives {size}")
        return Array(dtype, shape, data, bool(fortran))

    def _scalar(self, args: tuple, state: Any, node: Call) -> Any:
        self.no_state(node, state)
        if len(args) != 2 or not isinstance(args[0], DType) or not isinstance(args[1], (bytes, bytearray)) \
                or args[0].kind == "O":
            raise Bad("numpy scalar except (dtype, bytes)")
        return scalar(args[0], bytes(args[1]))

    # ------------------------------------------------------------ pandas scalars

    def _timestamp(self, args: tuple, state: Any, node: Call) -> Timestamp | None:
        self.no_state(node, state)
        self.args(args, (3, 4), "pandas Timestamp")
        value = self.integer(args[0])
        unit = UNITS.get(args[3], "") if len(args) == 4 else "ns"
        if unit not in PER_SECOND:
            raise Bad(f"pandas Timestamp resolution {args[3]!r}")
        tz = args[2]
        if tz is not None and type(tz) is not str:
            tz = getattr(tz, "key", None) or (str(tz) if isinstance(tz, datetime.timezone) else None)
            if tz is None:
                raise Bad("a timestamp's time zone")
        return None if value == -(2**63) else Timestamp(value, unit, tz)

    def _nat(self, args: tuple, state: Any, node: Call) -> None:
        self.no_state(node, state)
        return None

    def _timedelta64(self, args: tuple, state: Any, node: Call) -> Timedelta:
        self.no_state(node, state)
        self.args(args, (1, 2), "pandas Timedelta")
        return Timedelta(self.integer(args[0]), UNITS.get(args[1], "ns") if len(args) == 2 else "ns")

    def _offset(self, args: tuple, state: Any, node: Call) -> None:
        """A DatetimeIndex's frequency (`Day(1)`): not data, read as nothing."""
        if not all(type(a) in (int, bool) or a is None for a in args) or (node.built and type(state) is not dict):
            raise Bad("a pandas offset except of integers")
        return None

    def _missing(self, args: tuple, state: Any, node: Call) -> None:
        raise Bad("pandas.NA called")

    # ------------------------------------------------------------ pandas dtypes and arrays

    def _dtype(self, args: tuple, state: Any, node: Call) -> dict:
        """A pandas dtype as the dict of what it says (categories, time zone, storage)."""
        described: dict = {"dtype": node.func.name}
        if node.func.name == "StringDtype":
            if args and type(args[0]) is not str:
                raise Bad("StringDtype storage")
            return described
        if state is not None:
            if type(state) is not dict:
                raise Bad(f"pandas {node.func.name} state")
            described.update(state)
        return described

    def _ndarray_backed(self, args: tuple, state: Any, node: Call) -> Any:
        if len(node.args) != 3 or not isinstance(node.args[0], Global):
            raise Bad("NDArrayBacked unpickle except (class, checksum, None)")
        what = kind_of(node.args[0])
        if type(state) is not tuple or len(state) not in (2, 3) or not isinstance(state[1], Array):
            raise Bad("NDArrayBacked state except (dtype, array[, attributes])")
        dtype, data = state[:2]
        if len(data.shape) == 2 and data.shape[0] == 1:  # one column of a frame's block: (1, rows)
            data = Array(data.dtype, data.shape[1:], data.data)
        if len(data.shape) != 1:
            raise Bad(f"a pandas array of shape {data.shape}")
        if what == "datetimes":
            if data.dtype.kind != "M":
                raise Bad("a DatetimeArray that does not hold datetime64")
            tz = dtype.get("tz") if isinstance(dtype, dict) else None
            if tz is not None and type(tz) is not str:
                tz = getattr(tz, "key", None)
                if tz is None:
                    raise Bad("a DatetimeTZDtype's time zone")
            return Datetimes(data, tz)
        if what == "categorical":
            if not isinstance(dtype, dict) or "categories" not in dtype:
                raise Bad("a Categorical without its categories")
            return self.categorical(data, dtype["categories"])
        if what == "strings":
            if data.dtype.kind != "O":
                raise Bad("a StringArray that does not hold objects")
            return data
        raise Bad(f"NDArrayBacked of {node.args[0].qualified}")

    def categorical(self, codes: Array, categories: Any) -> Categorical:
        """Codes checked: each -1 (missing) or the position of a category."""
        values = categories.values if isinstance(categories, Index) else None
        if values is None or codes.dtype.kind != "i" or len(codes.shape) != 1:
            raise Bad("a Categorical needs integer codes and an Index of categories")
        count = column_length(values)
        low, high = -1, count - 1
        for code in codes.numpy().tolist():
            if not low <= code <= high:
                raise Bad(f"categorical code {code} outside -1..{high} ({count} categories)")
        return Categorical(codes, values)

    def _masked(self, args: tuple, state: Any, node: Call) -> Masked:
        if node.new and args == () and type(state) is dict:
            data, mask = state.get("_data"), state.get("_mask")
        elif len(args) == 2 and not node.built:
            data, mask = args
        else:
            raise Bad("a masked array except (data, mask)")
        if not isinstance(data, Array) or not isinstance(mask, Array) or mask.dtype.kind != "b" \
                or data.dtype.kind not in "biuf" or data.shape != mask.shape or len(data.shape) != 1:
            raise Bad("a masked array whose data and mask differ in shape or kind")
        return Masked(data, mask)

    def _strings(self, args: tuple, state: Any, node: Call) -> Array:
        raise Bad("StringArray except through NDArrayBacked")

    def _arrow_type(self, args: tuple, state: Any, node: Call) -> str:
        self.no_state(node, state)
        if len(args) != 1 or args[0] not in ARROW_STRING_TYPES:
            raise Bad(f"pyarrow type {args[0] if args else None!r} (only strings are read)")
        return "large_string" if args[0].startswith("large") else "string"

    def _arrow_buffer(self, args: tuple, state: Any, node: Call) -> bytes:
        self.no_state(node, state)
        if len(args) != 1 or not isinstance(args[0], (bytes, bytearray)):
            raise Bad("pyarrow py_buffer except of bytes")
        return bytes(args[0])

    def _arrow_array(self, args: tuple, state: Any, node: Call) -> Any:
        self.no_state(node, state)
        if len(args) != 1 or type(args[0]) is not tuple or len(args[0]) != 7:
            raise Bad("pyarrow array state of the wrong form")
        type_name, length, null_count, offset, buffers, children, dictionary = args[0]
        if type_name not in ("string", "large_string") or children != [] or dictionary is not None:
            raise Bad("pyarrow array other than strings")
        for value in (length, offset):
            self.integer(value, 0, 2**40)
        self.integer(null_count, -1, length)
        if type(buffers) is not list or len(buffers) != 3 or not all(b is None or isinstance(b, bytes)
                                                                      for b in buffers):
            raise Bad("pyarrow string array buffers")
        validity, offsets, data = buffers
        width = 8 if type_name == "large_string" else 4
        if offsets is None or len(offsets) < (offset + length + 1) * width:
            raise Bad(f"pyarrow string array of {length} strings at offset {offset} with "
                      f"{len(offsets or b'')} bytes of offsets")
        if validity is not None and len(validity) * 8 < offset + length:
            raise Bad("pyarrow string array with a short validity bitmap")
        import pyarrow as pa

        arrow_type = pa.large_string() if width == 8 else pa.string()
        array = pa.Array.from_buffers(arrow_type, length, [None if b is None else pa.py_buffer(b) for b in buffers],
                                      null_count=null_count, offset=offset)
        try:
            array.validate(full=True)
        except pa.ArrowInvalid as e:
            raise Bad(f"pyarrow string array: {e}") from None
        return array

    def _arrow_strings(self, args: tuple, state: Any, node: Call) -> ArrowStrings:
        import pyarrow as pa

        array = state.get("_pa_array") if node.new and type(state) is dict else None
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if not isinstance(array, pa.Array):
            raise Bad("ArrowStringArray without its array")
        return ArrowStrings(array)

    # ------------------------------------------------------------ pandas indexes

    def _new_index(self, args: tuple, state: Any, node: Call) -> Any:
        self.no_state(node, state)
        if len(node.args) != 2 or not isinstance(node.args[0], Global) or type(args[1]) is not dict:
            raise Bad("_new_Index except (class, dict)")
        what, fields = kind_of(node.args[0]), args[1]
        name = fields.get("name")
        if what == "range":
            start, stop, step = (self.integer(fields.get(k, d)) for k, d in (("start", 0), ("stop", 0), ("step", 1)))
            if step == 0:
                raise Bad("RangeIndex step 0")
            index = RangeIndex(start, stop, step, name)
            self.budget.charge(8 * len(index))
            return index
        if what == "multi":
            levels, codes, names = fields.get("levels"), fields.get("codes"), fields.get("names")
            if type(levels) is not list or type(codes) is not list or len(levels) != len(codes) or not levels \
                    or not all(isinstance(level, Index) for level in levels) \
                    or not all(isinstance(c, Array) and c.dtype.kind == "i" and len(c.shape) == 1 for c in codes) \
                    or len({c.size for c in codes}) != 1:
                raise Bad("MultiIndex levels and codes do not match")
            names = list(names) if isinstance(names, (list, tuple)) else [None] * len(levels)
            if len(names) != len(levels):
                raise Bad("MultiIndex names do not match its levels")
            for level, level_codes in zip(levels, codes):
                top = len(level) - 1
                for code in level_codes.numpy().tolist():
                    if not -1 <= code <= top:
                        raise Bad(f"MultiIndex code {code} outside -1..{top}")
            return MultiIndex(levels, codes, names)
        if what == "index":
            data = fields.get("data")
            if isinstance(data, Datetimes) or isinstance(data, Array) and len(data.shape) == 1 \
                    or isinstance(data, (Masked, Categorical, ArrowStrings)):
                return Index(data, name)
            raise Bad(f"an Index of {type(data).__name__}")
        raise Bad(f"_new_Index of {node.args[0].qualified} refused (not a pandas Index class)")

    def _range(self, args: tuple, state: Any, node: Call) -> Any:
        raise Bad("RangeIndex except through _new_Index")

    _multi = _index = _range

    def _datetimes(self, args: tuple, state: Any, node: Call) -> Any:
        raise Bad("DatetimeArray except through NDArrayBacked")

    def _categorical(self, args: tuple, state: Any, node: Call) -> Any:
        raise Bad("Categorical except through NDArrayBacked")

    # ------------------------------------------------------------ pandas frames

    def _block(self, args: tuple, state: Any, node: Call) -> tuple:
        self.no_state(node, state)
        self.args(args, (2, 3), "_unpickle_block")
        return ("block", args[0], args[1])

    def _manager(self, args: tuple, state: Any, node: Call) -> tuple:
        """(axes, [(values, placement)]) from pandas 3's reduce (blocks, axes) or the '0.14.1' state."""
        if not node.built and len(args) >= 2 and type(args[0]) is tuple and type(args[1]) is list:
            blocks = []
            for block in args[0]:
                if type(block) is not tuple or len(block) != 3 or block[0] != "block":
                    raise Bad("a BlockManager holding something other than blocks")
                blocks.append((block[1], block[2]))
            return ("manager", args[1], blocks)
        if node.new and type(state) is tuple and len(state) == 4 and type(state[3]) is dict:
            saved = state[3].get("0.14.1")
            if type(saved) is not dict or type(saved.get("axes")) is not list or type(saved.get("blocks")) is not list:
                raise Bad("BlockManager state without its '0.14.1' axes and blocks")
            blocks = []
            for block in saved["blocks"]:
                if type(block) is not dict:
                    raise Bad("a BlockManager block that is not a dict")
                blocks.append((block.get("values"), block.get("mgr_locs")))
            return ("manager", saved["axes"], blocks)
        raise Bad("a BlockManager of an unknown layout")

    def _frame(self, args: tuple, state: Any, node: Call) -> Frame:
        manager = self.manager_of(node, state)
        axes, blocks = manager[1], manager[2]
        if len(axes) != 2:
            raise Bad(f"a DataFrame with {len(axes)} axes")
        columns, index = axes
        for axis in axes:
            if not isinstance(axis, (Index, RangeIndex, MultiIndex)):
                raise Bad(f"a DataFrame axis of type {type(axis).__name__}")
        width, rows = len(columns), len(index)
        placed: list[int] = []
        frame = Frame(columns, index)
        for values, placement in blocks:
            positions = self.placement(placement, width)
            if isinstance(values, Array):
                if len(values.shape) == 1 and len(positions) == 1:
                    values = Array(values.dtype, (1, values.shape[0]), values.data, values.fortran)
                if values.shape != (len(positions), rows):
                    raise Bad(f"a block of shape {values.shape} for {len(positions)} columns of {rows} rows")
            elif isinstance(values, (Masked, Categorical, Datetimes, ArrowStrings)):
                if len(positions) != 1 or len(values) != rows:
                    raise Bad(f"a column of {len(values)} rows placed at {positions} in a frame of {rows} rows")
            else:
                raise Bad(f"a block of {type(values).__name__}")
            placed.extend(positions)
            frame.blocks.append(Block(values, positions))
        if sorted(placed) != list(range(width)):
            raise Bad(f"block placements {placed[:20]} are not a permutation of the frame's {width} columns")
        return frame

    def _series(self, args: tuple, state: Any, node: Call) -> Series:
        manager = self.manager_of(node, state)
        axes, blocks = manager[1], manager[2]
        if len(axes) != 1 or len(blocks) != 1 or not isinstance(axes[0], (Index, RangeIndex, MultiIndex)):
            raise Bad("a Series needs one axis and one block")
        values = blocks[0][0]
        if isinstance(values, Array) and len(values.shape) != 1:
            raise Bad(f"a Series of shape {values.shape}")
        if column_length(values) != len(axes[0]):
            raise Bad(f"a Series of {column_length(values)} values over an index of {len(axes[0])}")
        return Series(values, axes[0], state.get("_name"))

    def manager_of(self, node: Call, state: Any) -> tuple:
        manager = state.get("_mgr") if node.new and type(state) is dict else None
        if type(manager) is not tuple or manager[:1] != ("manager",):
            raise Bad(f"a {node.func.name} without its block manager")
        return manager

    def placement(self, placement: Any, width: int) -> list[int]:
        """Column positions of a block: a slice or integer array, each in range."""
        if isinstance(placement, slice):
            start, stop, step = placement.start or 0, placement.stop, placement.step or 1
            if stop is None or step <= 0 or start < 0 or stop > width or start > stop:
                raise Bad(f"block placement {placement} in a frame of {width} columns")
            return list(range(start, stop, step))
        if isinstance(placement, Array) and placement.dtype.kind in "iu" and len(placement.shape) == 1 \
                and placement.size <= width:
            positions = placement.numpy().tolist()
        elif type(placement) is int:
            positions = [placement]
        else:
            raise Bad(f"block placement of type {type(placement).__name__}")
        if not all(0 <= p < width for p in positions):
            raise Bad(f"block placement {positions[:20]} outside the frame's {width} columns")
        return positions
