"""Rows of a chunked Arrow table or array, taken without joining its chunks.

`ChunkedArray.take` and `Table.take` may first join all the chunks into one (a copy of every row: the whole corpus
for ten rows of it). Here the rows are read where they lie:
- when every column is text (`string`, `large_string`) without nulls, as the corpora and queries are, by address
  (`StringGather`): the offsets of every row asked for are read with one numpy gather over the memory the chunks'
  buffers lie in, and each column is made as a `string_view` array pointing into the chunks' data buffers, cast to
  the column's type by one Arrow kernel. The cost follows the rows asked for, not the number of chunks (an 8.8M-row
  corpus is ~2,200 record batches, and a take per chunk cost ~5× more there);
- otherwise each chunk that holds a wanted row gives its rows (`Array.take`, no copy of the rest), and the rows taken
  are put back in the order asked.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa

from ..core.errors import ContentError

INLINE = np.arange(12)
"""Byte positions a string_view row holds inline (a longer value holds its first 4 there)."""
SPAN_LIMIT = 1 << 48
"""Largest distance in bytes between the lowest and highest buffer address StringGather spans (a view only: nothing
outside the buffers is read; 2**48 is x86-64's and arm64's whole user address space)."""


class StringGather:
    """The rows of chunks whose columns are all text without nulls, read by address (module docstring).

    Only bytes inside the chunks' offsets and data buffers are read: every offset read is checked against its data
    buffer's size before any byte is copied, so a damaged offsets buffer is a ValueError, never a read elsewhere."""

    def __init__(self, chunks: list[pa.RecordBatch], starts: np.ndarray, types: list[pa.DataType], base: int,
                 end: int, offsets: np.ndarray, data: np.ndarray, sizes: np.ndarray):
        self.chunks, self.starts, self.types = chunks, starts, types  # the chunks keep the memory read alive
        self.wide = [pa.types.is_large_string(kind) for kind in types]
        span = end - base
        self.bytes = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(base))
        self.view = memoryview(self.bytes)
        self.ints = {4: np.ctypeslib.as_array((ctypes.c_int32 * (span // 4)).from_address(base)),
                     8: np.ctypeslib.as_array((ctypes.c_int64 * (span // 8)).from_address(base))}
        self.offsets, self.data, self.sizes = offsets, data, sizes
        empty = pa.py_buffer(b"")
        self.buffers = [[column.buffers()[2] or empty for column in chunk.columns] for chunk in chunks]

    @classmethod
    def of(cls, chunks: list[pa.RecordBatch], starts: np.ndarray) -> StringGather | None:
        """The gather of `chunks` (record batches of one schema), or None when a column is not text, holds a null,
        or its buffers are not where this reading expects them (aligned offsets, within SPAN_LIMIT of each other)."""
        if not chunks:
            return None
        types = [field.type for field in chunks[0].schema]
        if not types or not all(pa.types.is_string(kind) or pa.types.is_large_string(kind) for kind in types):
            return None
        located = []
        for chunk in chunks:
            for column in chunk.columns:
                width = 8 if pa.types.is_large_string(column.type) else 4
                buffers = column.buffers()
                if column.null_count or len(buffers) != 3 or buffers[1] is None:
                    return None
                offsets, data = buffers[1], buffers[2]
                if (offsets.address % width or offsets.size < width * (column.offset + len(column) + 1)
                        or (data is not None and data.size >= 1 << 31)):  # a string_view offset is 32 bits
                    return None
                located.append((offsets.address, offsets.address + offsets.size, width, column.offset,
                                data.address if data is not None and data.size else offsets.address,
                                data.size if data is not None else 0))
        base = min(min(entry[0], entry[4]) for entry in located) & ~7
        end = max(max(entry[1], entry[4] + entry[5]) for entry in located)
        if end - base > SPAN_LIMIT:
            return None
        shape = (len(chunks), len(types))
        offsets = np.array([(entry[0] - base) // entry[2] + entry[3] for entry in located], dtype=np.int64)
        data = np.array([entry[4] - base for entry in located], dtype=np.int64)
        sizes = np.array([entry[5] for entry in located], dtype=np.int64)
        return cls(chunks, starts, types, base, end, offsets.reshape(shape), data.reshape(shape),
                   sizes.reshape(shape))

    def take(self, rows: np.ndarray) -> list[pa.Array]:
        """The columns of the rows numbered `rows` (int64, each in range), in that order: each made as a
        `string_view` array over the chunks' own data buffers (16 bytes a row: length, first bytes, buffer, offset;
        no text copied) and cast to the column's type in one Arrow kernel."""
        chunk = np.searchsorted(self.starts, rows, side="right") - 1
        local = rows - self.starts[chunk]
        used, buffer_of = np.unique(chunk, return_inverse=True)
        used_list = used.tolist()
        columns = []
        for index, (kind, wide) in enumerate(zip(self.types, self.wide)):
            ints = self.ints[8 if wide else 4]
            at = self.offsets[chunk, index] + local
            start, stop = ints[at].astype(np.int64), ints[at + 1].astype(np.int64)
            sizes = self.sizes[chunk, index]
            if len(rows) and (int(start.min()) < 0 or bool((stop < start).any()) or bool((stop > sizes).any())):
                raise ContentError("the Arrow data holds an offset outside its column's data: the file is damaged; "
                                 "delete the cache to prepare it again")
            lengths = stop - start
            # the first 12 bytes of each value (fewer where it is shorter), read inside the value's bytes only
            head = np.zeros((len(rows), len(INLINE)), dtype=np.uint8)
            filled = np.flatnonzero(lengths)
            if len(filled):
                reach = np.minimum(INLINE, lengths[filled, None] - 1)
                head[filled] = self.bytes[(self.data[chunk[filled], index] + start[filled])[:, None] + reach]
                head[filled] *= INLINE < lengths[filled, None]
            views = np.zeros((len(rows), 16), dtype=np.uint8)
            views[:, :4] = lengths.astype("<i4").view(np.uint8).reshape(-1, 4)
            short = lengths <= 12
            views[short, 4:] = head[short]
            long = ~short
            views[long, 4:8] = head[long, :4]
            views[long, 8:12] = buffer_of[long].astype("<i4").view(np.uint8).reshape(-1, 4)
            views[long, 12:] = start[long].astype("<i4").view(np.uint8).reshape(-1, 4)
            buffers = [self.buffers[c][index] for c in used_list]
            view = pa.Array.from_buffers(pa.string_view(), len(rows), [None, pa.py_buffer(views), *buffers])
            columns.append(view.cast(kind))
        return columns


class ChunkedRows:
    """`take(rows)` of a table or chunked array without joining its chunks."""

    def __init__(self, data: pa.Table | pa.ChunkedArray):
        self.is_table = isinstance(data, pa.Table)
        self.schema = data.schema if self.is_table else None
        self.type = None if self.is_table else data.type
        self.chunks = data.to_batches() if self.is_table else data.chunks
        self.starts = np.cumsum([0] + [len(chunk) for chunk in self.chunks])
        self._gather: StringGather | None | bool = False  # False: not looked at yet

    @property
    def gather(self) -> StringGather | None:
        """The StringGather of these chunks (None where they are not all text without nulls), made at the first
        take: opening a store of 2,200 chunks does not wait for it (~0.3 s on a loaded machine)."""
        if self._gather is False:
            batches = self.chunks if self.is_table else [pa.record_batch([chunk], names=["value"])
                                                         for chunk in self.chunks]
            self._gather = StringGather.of(batches, self.starts)
        return self._gather

    def take(self, rows: np.ndarray) -> pa.Table | pa.Array:
        """The rows numbered `rows`, in that order. IndexError unless each is a whole number from 0 to the row count
        less one (a float would be truncated, a boolean mask taken for rows 0 and 1, a negative counted from the
        end)."""
        given = np.asarray(rows)
        total = int(self.starts[-1])
        if given.size and (not np.issubdtype(given.dtype, np.integer) or int(given.min()) < 0
                           or int(given.max()) >= total):
            raise IndexError(f"row numbers are whole numbers from 0 to {total - 1:,} (the rows there are); got "
                             f"{given.dtype} values from {given.min()} to {given.max()}")
        rows = given.astype(np.int64).ravel()
        gather = self.gather
        if gather is not None:
            columns = gather.take(rows)
            return pa.Table.from_arrays(columns, schema=self.schema) if self.is_table else columns[0]
        chunk = np.searchsorted(self.starts, rows, side="right") - 1
        order = np.argsort(chunk, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(chunk[order])) + 1) if len(rows) else []
        pieces = [self.chunks[int(chunk[group[0]])].take(pa.array(rows[group] - self.starts[int(chunk[group[0]])]))
                  for group in groups]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        if self.is_table:
            joined = pa.Table.from_batches(pieces, schema=self.schema).combine_chunks()
        else:
            joined = pa.concat_arrays(pieces) if pieces else pa.array([], self.type)
        return joined.take(pa.array(inverse))
