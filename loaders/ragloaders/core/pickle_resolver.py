"""Turns the recorded calls of a data pickle into plain values and checked descriptions (see safe_pickle).

Each recorded call of an allowed global goes to the handler its kind names (`_set`, `_reconstruct`, ...):
builtins, datetime and numpy here, pandas in `pickled_pandas`. A handler checks every argument before it uses
one, and builds only Python values and `pickled_values` records.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any

from .errors import SourceError
from .pickle_allow_list import kind_of
from .pickled_pandas import PandasHandlers
from .pickled_values import (
    DATE_UNITS,
    NUMERIC_KINDS,
    PER_SECOND,
    Array,
    Bad,
    Budget,
    Call,
    DType,
    Global,
    Refused,
    arg_count,
    checked_key,
    integer,
    no_state,
    scalar,
    where,
    zone,
)
from .preview import cut, preview

PLAIN = frozenset({str, int, float, bool, bytes, type(None)})
"""Values that stand for themselves: nothing to resolve inside them."""


class Resolver(PandasHandlers):
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
        except (TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError) as e:
            raise SourceError(self.name, f"{where(self.key)}not a readable pickle of allowed types "
                              f"({type(e).__name__}: {cut(str(e))})") from None

    def refused(self, global_: Global) -> Bad:
        return Bad(f"{global_.qualified} is not read")

    def resolve(self, node: Any) -> Any:
        kind = type(node)
        if kind in PLAIN:
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
        resolve = self.resolve
        if kind is list:
            for index, item in enumerate(node):
                if type(item) not in PLAIN:
                    node[index] = resolve(item)
            return node
        if kind is dict:
            if all(type(key) in PLAIN for key in node):
                for key, value in node.items():
                    if type(value) not in PLAIN:
                        node[key] = resolve(value)
                return node
            items = [(resolve(k), resolve(v)) for k, v in node.items()]
            node.clear()
            for k, v in items:
                node[checked_key(k)] = v
            return node
        if kind is tuple:
            return tuple(self.resolve(item) for item in node)
        if kind is set or kind is frozenset:
            items = [checked_key(self.resolve(item)) for item in node]
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
        handler = HANDLERS[what]
        args = tuple(self.resolve(a) for a in node.args)
        state = self.resolve(node.state) if node.built else None
        return handler(self, args, state, node)

    # ------------------------------------------------------------ helpers

    def copied(self, data: bytes | bytearray) -> bytes:
        """`data` as bytes, charged to the budget when that copies it: a bytearray the file shares between calls
        would otherwise be copied once per call, unbounded by the file's size."""
        if type(data) is bytes:
            return data
        self.budget.charge(8 + len(data))
        return bytes(data)

    def text(self, value: Any) -> str:
        value = self.resolve(value)
        if type(value) is not str:
            raise Bad(f"expected a string, got {type(value).__name__}")
        return value

    # ------------------------------------------------------------ builtins and datetime

    def _set(self, args: tuple, state: Any, node: Call) -> set:
        no_state(node)
        arg_count(args, (0, 1), "set")
        items = list(args[0]) if args else []
        self.budget.charge(8 * len(items))  # each call copies its argument, which the file may share between calls
        return {checked_key(item) for item in items}

    def _frozenset(self, args: tuple, state: Any, node: Call) -> frozenset:
        return frozenset(self._set(args, state, node))

    def _slice(self, args: tuple, state: Any, node: Call) -> slice:
        no_state(node)
        arg_count(args, (1, 2, 3), "slice")
        for value in args:
            if value is not None:
                integer(value)
        return slice(*args)

    def _bytearray(self, args: tuple, state: Any, node: Call) -> bytes:
        no_state(node)
        if len(args) > 1 or (args and not isinstance(args[0], (bytes, bytearray))):
            raise Bad("bytearray() refused except from bytes (an integer would allocate memory)")
        if not args:
            return bytearray()
        self.budget.charge(8 + len(args[0]))  # a copy per call, of bytes the file may share between calls
        return bytearray(args[0])

    def _bytes(self, args: tuple, state: Any, node: Call) -> bytes:
        """Protocol 2 writes b'' as `bytes()`; from an integer, bytes() would allocate memory."""
        no_state(node)
        if len(args) > 1 or (args and not isinstance(args[0], (bytes, bytearray))):
            raise Bad("bytes() refused except empty or from bytes")
        return self.copied(args[0]) if args else b""

    def _encode(self, args: tuple, state: Any, node: Call) -> bytes:
        no_state(node)
        if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
            raise Bad(f"_codecs.encode with encoding {preview(args[1] if len(args) > 1 else None)} refused (only "
                      "latin1 is written)")
        self.budget.charge(8 + len(args[0]))
        return args[0].encode("latin-1")

    def _getattr(self, args: tuple, state: Any, node: Call) -> str:
        no_state(node)
        owner = node.args[0] if node.args else None
        if len(args) != 2 or not isinstance(owner, Global) or kind_of(owner) != "zoneinfo" or args[1] != "_unpickle":
            raise Bad(f"getattr({preview(owner)}, {preview(args[1] if len(args) > 1 else None)}) refused (only "
                      "ZoneInfo._unpickle is allowed)")
        return "zoneinfo._unpickle"

    def _pytz(self, args: tuple, state: Any, node: Call) -> str:
        """A pytz zone (pandas 2's default): its name, never pytz itself (`_UTC()` is UTC)."""
        no_state(node)
        if not args:
            return "UTC"
        if type(args[0]) is not str or not all(type(a) in (int, str) for a in args[1:]):
            raise Bad("pytz zone except (name, offsets...)")
        return args[0]

    def _zoneinfo(self, args: tuple, state: Any, node: Call) -> str:
        no_state(node)
        arg_count(args, 1, "ZoneInfo")
        return self.text(args[0])

    def _date(self, args: tuple, state: Any, node: Call) -> datetime.date:
        no_state(node)
        data = args[0] if len(args) == 1 else None
        if not isinstance(data, bytes) or len(data) != 4:
            raise Bad("datetime.date except from its 4 pickled bytes")
        return datetime.date(data[0] * 256 + data[1], data[2], data[3])

    def _datetime(self, args: tuple, state: Any, node: Call) -> datetime.datetime:
        no_state(node)
        arg_count(args, (1, 2), "datetime.datetime")
        data, tz = args[0], args[1] if len(args) == 2 else None
        if not isinstance(data, bytes) or len(data) != 10:
            raise Bad("datetime.datetime except from its 10 pickled bytes")
        fold, month = divmod(data[2], 128)
        return datetime.datetime(data[0] * 256 + data[1], month, data[3], data[4], data[5], data[6],
                                 int.from_bytes(data[7:10], "big"), tzinfo=self.tzinfo(tz), fold=fold)

    def _time(self, args: tuple, state: Any, node: Call) -> datetime.time:
        no_state(node)
        arg_count(args, (1, 2), "datetime.time")
        data, tz = args[0], args[1] if len(args) == 2 else None
        if not isinstance(data, bytes) or len(data) != 6:
            raise Bad("datetime.time except from its 6 pickled bytes")
        fold, hour = divmod(data[0], 128)
        return datetime.time(hour, data[1], data[2], int.from_bytes(data[3:6], "big"), tzinfo=self.tzinfo(tz),
                             fold=fold)

    def _timedelta(self, args: tuple, state: Any, node: Call) -> datetime.timedelta:
        no_state(node)
        arg_count(args, 3, "datetime.timedelta")
        days, seconds, micro = (integer(a, -(10**9), 10**9) for a in args)
        return datetime.timedelta(days, seconds, micro)

    def _timezone(self, args: tuple, state: Any, node: Call) -> datetime.timezone:
        no_state(node)
        arg_count(args, (1, 2), "datetime.timezone")
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
                raise Bad(f"numpy dtype {name!r} with state {preview(state)}")
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
                    raise Bad(f"datetime64 unit {preview(unit)}")
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
        if itemsize <= 0:  # (a zero-size item would let any shape pass the byte count)
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
        no_state(node)
        arg_count(args, 4, "numpy _frombuffer")
        data, dtype, shape, order = args
        if order not in ("C", "F"):
            raise Bad(f"array order {preview(order)}")
        return self.array(dtype, shape, data, order == "F")

    def array(self, dtype: Any, shape: Any, data: Any, fortran: Any) -> Array:
        """An Array whose shape, dtype and data agree; anything else is refused."""
        if not isinstance(dtype, DType):
            raise Bad("a numpy array without a dtype")
        if type(shape) is not tuple or len(shape) > 2 or not all(type(n) is int and 0 <= n < 2**62 for n in shape):
            raise Bad(f"numpy array shape {preview(shape)} (one or two non-negative dimensions)")
        count = math.prod(shape)
        if isinstance(data, bytearray):
            data = self.copied(data)
        if dtype.kind == "O":
            if type(data) is not list or len(data) != count:
                raise Bad(f"object array of shape {shape} holding {len(data) if type(data) is list else 'no'} items")
        elif not isinstance(data, bytes) or len(data) != count * dtype.itemsize:
            size = len(data) if isinstance(data, bytes) else type(data).__name__
            raise Bad(f"numpy array of shape {shape} and dtype {dtype.kind}{dtype.itemsize} needs "
                      f"{count * dtype.itemsize} bytes, the file gives {size}")
        return Array(dtype, shape, data, bool(fortran))

    def _scalar(self, args: tuple, state: Any, node: Call) -> Any:
        no_state(node)
        if len(args) != 2 or not isinstance(args[0], DType) or not isinstance(args[1], (bytes, bytearray)) \
                or args[0].kind == "O":
            raise Bad("numpy scalar except (dtype, bytes)")
        self.budget.charge(8 + len(args[1]))  # a str scalar is as long as its bytes, which the file may share
        return scalar(args[0], bytes(args[1]))


HANDLERS: dict[str, Callable[..., Any]] = {
    "arrow_array": Resolver._arrow_array, "arrow_buffer": Resolver._arrow_buffer,
    "arrow_strings": Resolver._arrow_strings, "arrow_type": Resolver._arrow_type, "block": Resolver._block,
    "bytearray": Resolver._bytearray, "bytes": Resolver._bytes, "categorical": Resolver._categorical,
    "date": Resolver._date, "datetime": Resolver._datetime, "datetimes": Resolver._datetimes,
    "dtype": Resolver._dtype, "encode": Resolver._encode, "frame": Resolver._frame,
    "frombuffer": Resolver._frombuffer, "frozenset": Resolver._frozenset, "getattr": Resolver._getattr,
    "index": Resolver._index, "manager": Resolver._manager, "masked": Resolver._masked, "missing": Resolver._missing,
    "multi": Resolver._multi, "nat": Resolver._nat, "ndarray": Resolver._ndarray,
    "ndarray_backed": Resolver._ndarray_backed, "new_index": Resolver._new_index,
    "numpy_dtype": Resolver._numpy_dtype, "offset": Resolver._offset, "pytz": Resolver._pytz,
    "range": Resolver._range, "reconstruct": Resolver._reconstruct, "scalar": Resolver._scalar,
    "series": Resolver._series, "set": Resolver._set, "slice": Resolver._slice, "strings": Resolver._strings,
    "time": Resolver._time, "timedelta": Resolver._timedelta, "timedelta64": Resolver._timedelta64,
    "timestamp": Resolver._timestamp, "timezone": Resolver._timezone, "zoneinfo": Resolver._zoneinfo,
}
"""Each kind of the allow list (pickle_allow_list.FUNCTIONS) -> the Resolver method that builds its value."""
