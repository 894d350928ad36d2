"""Rows of a chunked Arrow table or array, taken chunk by chunk.

`ChunkedArray.take` and `Table.take` may first join all the chunks into one (a copy of every row: the whole corpus
for ten rows of it). Here each chunk that holds a wanted row gives its rows (`Array.take`, no copy of the rest), and
the few rows taken are put back in the order asked.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


class ChunkedRows:
    """`take(rows)` of a table or chunked array without joining its chunks."""

    def __init__(self, data: pa.Table | pa.ChunkedArray):
        self.is_table = isinstance(data, pa.Table)
        self.schema = data.schema if self.is_table else None
        self.type = None if self.is_table else data.type
        self.chunks = data.to_batches() if self.is_table else data.chunks
        self.starts = np.cumsum([0] + [len(chunk) for chunk in self.chunks])

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
        rows = given.astype(np.int64)
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
