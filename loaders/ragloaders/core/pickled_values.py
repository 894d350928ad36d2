"""What a data pickle is read as: the records of the stream (`Global`, `Call`), the budget it may expand to, and the
inert descriptions (`Array`, `Frame`, `Series`, ...) that `pickle_resolver.Resolver` makes of its calls.

A description's fields were checked against each other when it was made; nothing from numpy or pandas is built
here. numpy is used only to view bytes whose length was checked (`Array.numpy`).
"""

from __future__ import annotations

import datetime
import math
import pickle
import struct
from dataclasses import dataclass, field
from typing import Any

from .errors import SourceError
from .preview import preview

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
                           f"its {self.nbytes:,} bytes (8 per value plus the bytes of each text, or the digits of an "
                           "integer written as JSON, shared references counted each time they are used): refused as a "
                           "decompression bomb")


def where(key: str | None) -> str:
    return f"key {preview(key)}: " if key is not None else ""


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
        raise Refused(f"setting {preview(name)} on {self.qualified} refused")

    def __setstate__(self, state: Any) -> None:
        raise Refused(f"BUILD on {self.qualified} refused")

    def __repr__(self) -> str:
        return f"<global {self.qualified}>"

    def preview_text(self) -> str:
        return repr(self)


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
            raise Refused(f"a second BUILD on {preview(self)}")
        self.state, self.built = state, True

    @property
    def name(self) -> str:
        return self.func.qualified if isinstance(self.func, Global) else "a call's result"

    def __repr__(self) -> str:
        return f"<call of {self.name}>"

    def preview_text(self) -> str:
        return repr(self)


def checked_key(value: Any, records: bool = False) -> Any:
    """`value`, refused before it is inserted into a dict or set unless it is a str (every key and set item of the
    real files is). Python randomises a str's hash per process, so a file cannot choose keys that collide; an int's
    hash is the int modulo 2**61 - 1, so 80,000 multiples of it (1 MB) all hash to 0 and inserting them is quadratic
    (72 s; hours at 136 MB), and the hashes of tuples, floats, frozensets and the datetime types can be steered as
    well. While the stream is read (`records`), a `Call` or `Global` (hashed by identity) is accepted too, and its
    resolved value checked again."""
    kind = type(value)
    if kind is str or (records and (kind is Call or kind is Global)):
        return value
    raise Refused(f"a dict key or set item of type {kind.__name__} ({preview(value)}): only strings are read as keys "
                  "(a file can make keys of other types collide, and inserting them takes quadratic time)")



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
        if self.kind == "U":  # numpy counts a str dtype's size in characters, of 4 bytes each
            return numpy.dtype(f"{order}U{self.itemsize // 4}")
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

    def preview_text(self) -> str:
        return f"<numpy array {self.dtype.kind}{self.dtype.itemsize} of shape {self.shape}>"

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
    _where: dict[int, tuple[Block, int]] | None = field(default=None, repr=False)

    def column(self, position: int) -> Any:
        """The values of column `position`: a 1-D Array (a row of a 2-D block) or an extension column."""
        if self._where is None:  # one map, not a search of every block per column: quadratic in a wide frame
            self._where = {p: (block, row) for block in self.blocks for row, p in enumerate(block.placement)}
        if position not in self._where:
            raise Bad(f"no block holds column {position}")
        block, row = self._where[position]
        if isinstance(block.values, Array) and len(block.values.shape) == 2:
            return row_of(block.values, row)
        return block.values


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
        raise Bad(f"unknown time zone {preview(key)} ({preview(str(e))})") from None


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
        raise Bad(f"datetime64 unit {preview(unit)}")
    return Timestamp(value, unit)


# ---------------------------------------------------------------- argument checks shared by the handlers


def integer(value: Any, low: int = -(2**63), high: int = 2**63 - 1) -> int:
    if type(value) is not int or not low <= value <= high:
        raise Bad(f"expected an integer in [{low}, {high}], got {preview(value)}")
    return value


def unit_of(code: Any) -> str:
    """The unit of pandas' resolution `code` (UNITS); Bad for anything else. The type is checked before the lookup:
    hashing a value from the file (a tuple of shared references, 328 bytes) visits every one of its 10^9 leaves."""
    if type(code) is not int or code not in UNITS:
        raise Bad(f"pandas resolution {preview(code)} (expected one of {sorted(UNITS)})")
    return UNITS[code]


def no_state(node: Call) -> None:
    """Bad when the pickle BUILDs (sets the state of) the result of a call whose result takes no state."""
    if node.built:
        raise Bad(f"BUILD on the result of {node.name}")


def arg_count(args: tuple, count: int | tuple[int, ...], name: str) -> None:
    counts = (count,) if isinstance(count, int) else count
    if len(args) not in counts:
        raise Bad(f"{name} with {len(args)} arguments")
