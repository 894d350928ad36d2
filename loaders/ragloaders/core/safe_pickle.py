"""Reading pickles from the internet as data: no code from the file runs, no pandas or numpy object is built.

`pickle.load` calls whatever a pickle names (`os.system`, `builtins.eval`, any importable function),
and even the constructors a data pickle names (pandas' `BlockManager.__setstate__`, numpy's
`_reconstruct`) trust the state they are given: an edited block placement writes out of bounds, a
categorical code past its categories reads process memory. So `load` builds nothing from the stream.
It reads the opcodes with an unpickler (Python's own, not the C one, whose memo is an array that a
9-byte `LONG_BINPUT 2**28` grows to gigabytes) whose globals are inert markers: a REDUCE, NEWOBJ or
BUILD on one records the call as data (`Call`), and nothing is called; INST and OBJ (protocol 0/1
instances) are refused. Then `pickle_resolver.Resolver` (pandas' globals: `pickled_pandas`) turns each
recorded call of a global on the allow-list (`pickle_allow_list`) into a plain Python value or an inert
description (`pickled_values`), checking every field before it is used:

- builtins (`set`, `frozenset`, `slice`, `bytearray`), `_codecs.encode` (latin-1 only), `datetime`
  values (re-validated by their constructors), `zoneinfo` keys: the plain Python values;
- numpy arrays: `Array` (dtype, shape, raw bytes) with itemsize x prod(shape) == len(bytes), only
  bool, int, uint, float, str, bytes, datetime64 and object dtypes (object arrays as lists); numpy
  scalars become Python scalars;
- pandas (2.x and 3.x layouts; numpy 1 `numpy.core` and numpy 2 `numpy._core` names): frames and
  series as axes plus blocks whose placements are a permutation of the columns and whose shapes
  match the axes; categoricals with `-1 <= code < len(categories)`; `RangeIndex` as start, stop,
  step; masked, string, datetime arrays as their arrays; pyarrow string arrays with their buffers'
  sizes checked against length and offset before pyarrow validates them in full.

Any other global, a recorded call with arguments of the wrong shape, a persistent id, a malformed or
truncated stream, a dict key or set item other than a string (`checked_key`, before it is inserted): a SourceError
naming the file, the key (for a pickle stored under a key, such as a SqliteDict value) and what is wrong.

Memory is bounded by the file. Reading keeps the file's bytes and the objects its opcodes make (each
opcode makes at most one; a length field is checked against the bytes left before anything is
allocated). What a pickle expands to is counted by `Budget`: every value produced (a row, a list
item, a scalar, a cell of a frame, each row of a `RangeIndex` when it is described) costs 8 units
plus its length if it is text or bytes, counted each time a shared reference is expanded, and the
total may not exceed MULTIPLE (64) units per byte of the file: beyond it, a SourceError naming the
file. The resolver charges what it describes (a RangeIndex's rows, each cell of each block of a frame) and
what a call copies or checks of its arguments (bytes, a set's items, categorical codes), on every call: the file
may pass one argument to many calls. Whoever expands the values further (crag_mock_kg's conversion to rows and
Arrow) charges the same `Budget`, passed to `load`.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from .errors import SourceError
from .pickle_allow_list import kind_of
from .pickle_resolver import Resolver
from .pickled_values import MULTIPLE, Budget, Call, Global, Refused, checked_key, where
from .preview import cut, preview

__all__ = ["MULTIPLE", "Budget", "load", "loads", "named_errors", "read_tree"]

class DataUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """Python's own unpickler, with globals as `Global` markers and REDUCE, NEWOBJ, BUILD recorded as `Call`s."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data))
        self.size = len(data)
        self.refused: str | None = None

    def key(self, value: Any) -> Any:
        """`value`, checked to be a dict key or set item the reader accepts (`checked_key`) before it is inserted."""
        return checked_key(value, records=True)

    def find_class(self, module: str, name: str) -> Global:
        if self.proto < 3 and (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif self.proto < 3:
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        found = Global(module, name)
        if kind_of(found) is None:
            self.refused = cut(found.qualified)
            raise Refused(f"global {self.refused} is not on the allow-list")
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise Refused(f"persistent id {preview(pid)} refused (the file refers to objects outside itself)")

    def load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if not isinstance(func, (Global, Call)) or type(args) is not tuple:
            raise Refused(f"REDUCE of {type(func).__name__} refused")
        self.stack[-1] = Call(func, args)

    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        if not isinstance(cls, Global) or type(args) is not tuple:
            raise Refused(f"NEWOBJ of {type(cls).__name__} refused")
        self.append(Call(cls, args, new=True))

    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        if kwargs != {}:
            raise Refused("NEWOBJ_EX with keyword arguments refused")
        self.load_newobj()

    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def load_build(self) -> None:
        state = self.stack.pop()
        target = self.stack[-1]
        if not isinstance(target, Call):
            what = target.qualified if isinstance(target, Global) else type(target).__name__
            raise Refused(f"BUILD on {what} refused")
        target.__setstate__(state)

    dispatch[pickle.BUILD[0]] = load_build

    def load_inst(self) -> None:
        raise Refused("INST / OBJ (protocol 0 and 1 instances) refused")

    dispatch[pickle.INST[0]] = load_inst
    dispatch[pickle.OBJ[0]] = load_inst

    def load_bytearray8(self) -> None:
        (size,) = pickle.unpack("<Q", self.read(8))  # type: ignore[attr-defined]
        if size > self.size:
            raise Refused(f"BYTEARRAY8 of {size} bytes in a file of {self.size}")
        data = self.read(size)
        if len(data) != size:
            raise Refused("pickle data was truncated")
        self.append(bytearray(data))

    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8

    def load_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self.stack[-1][self.key(key)] = value

    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self) -> None:
        items = self.pop_mark()
        mapping = self.stack[-1]
        for i in range(0, len(items) - 1, 2):
            mapping[self.key(items[i])] = items[i + 1]

    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_dict(self) -> None:
        items = self.pop_mark()
        self.append({self.key(items[i]): items[i + 1] for i in range(0, len(items) - 1, 2)})

    dispatch[pickle.DICT[0]] = load_dict

    def load_additems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        if not isinstance(target, set):
            raise Refused(f"ADDITEMS on {type(target).__name__} refused")
        target.update(self.key(item) for item in items)

    dispatch[pickle.ADDITEMS[0]] = load_additems

    def load_frozenset(self) -> None:
        items = self.pop_mark()
        self.append(frozenset(self.key(item) for item in items))

    dispatch[pickle.FROZENSET[0]] = load_frozenset


def refused_global(qualified: str, key: str | None) -> str:
    return (f"{where(key)}refused pickle global `{qualified}`: only builtin containers and scalars, datetime, numpy "
            "arrays and pandas frames may be unpickled (the file would run code or import a module)")


def read_tree(data: bytes, *, name: str, key: str | None = None) -> Any:
    """The pickle in `data` as plain containers and scalars, with `Global` and `Call` records for the rest."""
    unpickler = DataUnpickler(data)
    with named_errors(name, key):
        try:
            return unpickler.load()
        except Refused as e:
            if unpickler.refused is not None:
                raise SourceError(name, refused_global(unpickler.refused, key)) from None
            raise SourceError(name, f"{where(key)}not a readable pickle of allowed types ({e})") from None
        except (MemoryError, RecursionError):
            raise
        except Exception as e:
            raise SourceError(name, f"{where(key)}not a readable pickle ({type(e).__name__}: {cut(str(e))})") from None


@contextmanager
def named_errors(name: str, key: str | None = None) -> Iterator[None]:
    """Running out of memory or stack while reading the pickle `name` (or expanding its values) as a SourceError
    naming it and `key`: a file within its budget may still need more memory than the process may have."""
    try:
        yield
    except MemoryError:
        raise SourceError(name, f"{where(key)}reading the pickle needs more memory than is available") from None
    except RecursionError:
        raise SourceError(name, f"{where(key)}pickle nested too deeply to read") from None


def loads(data: bytes, *, name: str, key: str | None = None, budget: Budget | None = None) -> Any:
    """The value pickled in `data` as plain Python values and `pickled_values` descriptions (see the module's
    docstring); SourceError naming `name` and `key` for anything refused, or for running out of memory.
    `budget` (by default one for `data`'s size) is charged for what the descriptions expand to and can be passed on
    to whoever expands them further."""
    budget = budget or Budget(name, len(data), key)
    tree = read_tree(data, name=name, key=key)
    with named_errors(name, key):
        return Resolver(name, key, budget).resolve_root(tree)


def load(file: BinaryIO, *, name: str, key: str | None = None, budget: Budget | None = None) -> Any:
    """`loads` of the rest of `file` (read whole: the file is the bound on memory)."""
    return loads(file.read(), name=name, key=key, budget=budget)

