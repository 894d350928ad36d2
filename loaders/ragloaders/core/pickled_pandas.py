"""The handlers of pandas' globals (2.x and 3.x layouts): scalars, dtypes, arrays, indexes, frames and series, each
made a checked description (`pickled_values`): block placements a permutation of the columns, block shapes those
of the axes, categorical and MultiIndex codes within their categories, a RangeIndex's rows charged to the budget.
"""

from __future__ import annotations

import datetime
from typing import Any

from .pickle_allow_list import kind_of
from .pickled_values import (
    Array,
    ArrowStrings,
    Bad,
    Block,
    Budget,
    Call,
    Categorical,
    Datetimes,
    DType,
    Frame,
    Global,
    Index,
    Masked,
    MultiIndex,
    RangeIndex,
    Series,
    Timedelta,
    Timestamp,
    arg_count,
    column_length,
    integer,
    no_state,
    unit_of,
    zone,
)
from .preview import preview

ARROW_STRING_TYPES = ("string", "utf8", "large_string", "large_utf8")


def zone_name(tz: Any) -> str | None:
    """The name of a time zone as pickled (a zoneinfo key or pytz name, already a string; UTC), checked to be one the
    time zone database knows; None for none."""
    if tz is None:
        return None
    if tz is datetime.timezone.utc:
        return "UTC"
    if type(tz) is not str:
        raise Bad(f"a time zone of type {type(tz).__name__}")
    zone(tz)
    return tz


class PandasHandlers:
    """Resolver's handlers of pandas' globals (a mixin: `budget` is the resolver's)."""

    budget: Budget

    # ------------------------------------------------------------ pandas scalars

    def _timestamp(self, args: tuple, state: Any, node: Call) -> Timestamp | None:
        no_state(node)
        arg_count(args, (3, 4), "pandas Timestamp")
        value = integer(args[0])
        unit = unit_of(args[3]) if len(args) == 4 else "ns"
        return None if value == -(2**63) else Timestamp(value, unit, zone_name(args[2]))

    def _nat(self, args: tuple, state: Any, node: Call) -> None:
        no_state(node)
        return None

    def _timedelta64(self, args: tuple, state: Any, node: Call) -> Timedelta:
        no_state(node)
        arg_count(args, (1, 2), "pandas Timedelta")
        return Timedelta(integer(args[0]), unit_of(args[1]) if len(args) == 2 else "ns")

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
        if type(state) is dict:
            self.budget.charge(8 * len(state))  # copied per call; the file may share one state between calls
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
            return Datetimes(data, zone_name(dtype.get("tz") if isinstance(dtype, dict) else None))
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
        if isinstance(categories, RangeIndex):  # its rows were charged when it was described
            numbers = range(categories.start, categories.stop, categories.step)
            self.budget.charge(8 * len(numbers))  # made again for each Categorical that shares the RangeIndex
            values = Array(DType("i", 8), (len(numbers),), b"".join(n.to_bytes(8, "little", signed=True)
                                                                     for n in numbers))
        if values is None or codes.dtype.kind != "i" or len(codes.shape) != 1:
            raise Bad("a Categorical needs integer codes and an Index of categories")
        count = column_length(values)
        self.budget.charge(8 * codes.size)  # checked (and listed) again for each Categorical that shares them
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
        no_state(node)
        if len(args) != 1 or args[0] not in ARROW_STRING_TYPES:
            raise Bad(f"pyarrow type {preview(args[0] if args else None)} (only strings are read)")
        return "large_string" if args[0].startswith("large") else "string"

    def _arrow_buffer(self, args: tuple, state: Any, node: Call) -> bytes:
        no_state(node)
        if len(args) != 1 or not isinstance(args[0], (bytes, bytearray)):
            raise Bad("pyarrow py_buffer except of bytes")
        if type(args[0]) is not bytes:
            self.budget.charge(8 + len(args[0]))  # copied per call; the file may share one bytearray between calls
        return bytes(args[0])

    def _arrow_array(self, args: tuple, state: Any, node: Call) -> Any:
        no_state(node)
        if len(args) != 1 or type(args[0]) is not tuple or len(args[0]) != 7:
            raise Bad("pyarrow array state of the wrong form")
        type_name, length, null_count, offset, buffers, children, dictionary = args[0]
        if type_name not in ("string", "large_string") or children != [] or dictionary is not None:
            raise Bad("pyarrow array other than strings")
        for value in (length, offset):
            integer(value, 0, 2**40)
        integer(null_count, -1, length)
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
        self.budget.charge(8 * length + sum(len(b) for b in buffers if b is not None))  # validated once per use
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
        no_state(node)
        if len(node.args) != 2 or not isinstance(node.args[0], Global) or type(args[1]) is not dict:
            raise Bad("_new_Index except (class, dict)")
        what, fields = kind_of(node.args[0]), args[1]
        name = fields.get("name")
        if what == "range":
            start, stop, step = (integer(fields.get(k, d)) for k, d in (("start", 0), ("stop", 0), ("step", 1)))
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
                self.budget.charge(8 * level_codes.size)  # codes the file shares are checked once per use
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
        no_state(node)
        arg_count(args, (2, 3), "_unpickle_block")
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
            if len(placed) + len(positions) > width:
                raise Bad(f"blocks place more than the frame's {width} columns")
            self.budget.charge(8 * len(positions) * max(rows, 1))  # each cell, made once per block using it
            if isinstance(values, Array):
                if len(values.shape) == 1 and len(positions) == 1:
                    values = Array(values.dtype, (1, values.shape[0]), values.data, values.fortran)
                if values.shape != (len(positions), rows):
                    raise Bad(f"a block of shape {values.shape} for {len(positions)} columns of {rows} rows")
            elif isinstance(values, (Masked, Categorical, Datetimes, ArrowStrings)):
                if len(positions) != 1 or len(values) != rows:
                    raise Bad(f"a column of {len(values)} rows placed at {preview(positions)} in a frame of {rows} "
                              "rows")
            else:
                raise Bad(f"a block of {type(values).__name__}")
            placed.extend(positions)
            frame.blocks.append(Block(values, positions))
        if len(placed) != width or sorted(placed) != list(range(width)):
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
