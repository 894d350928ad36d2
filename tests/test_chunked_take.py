"""lookup.chunked_take: rows taken by address (StringGather) or chunk by chunk equal Arrow's own `take` on tables of
many chunks, sliced chunks, empty and non-ASCII values, large strings, nulls and non-text columns; a damaged offsets
buffer is a ValueError, never a read outside the data."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_names
from ragloaders.lookup.chunked_take import ChunkedRows, StringGather

VALUES = ["", "a", "twelve bytes", "thirteen byte", "é", "日本語のテキスト", "\x00inside", "x" * 5000, " lead",
          "\U0001f600"]
STRING = pa.string()


def table_of(chunks: int, kind: pa.DataType = STRING, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    batches = []
    for number in range(chunks):
        size = int(rng.integers(1, 40))
        ids = [f"{number:04d}-{i:03d}" for i in range(size)]
        text = [VALUES[int(j)] for j in rng.integers(0, len(VALUES), size)]
        title = [""] * size if number % 3 == 0 else [VALUES[int(j)] for j in rng.integers(0, len(VALUES), size)]
        batches.append(pa.record_batch([pa.array(ids, kind), pa.array(title, kind), pa.array(text, kind)],
                                       names=["_id", "title", "text"]))
    return pa.Table.from_batches(batches)


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_rows_by_address_equal_arrows_take(kind):
    table = table_of(60, kind)
    rows = np.random.default_rng(1).integers(0, table.num_rows, 3000)
    taken = ChunkedRows(table)
    assert taken.gather is not None
    result = taken.take(rows)
    assert result.schema == table.schema
    assert result.to_pylist() == table.take(pa.array(rows)).to_pylist()
    column = ChunkedRows(table.column("text"))
    assert column.gather is not None and column.take(rows).to_pylist() == table.column("text").take(rows).to_pylist()
    assert taken.take(np.zeros(0, dtype=np.int64)).num_rows == 0


def test_sliced_chunks_and_all_empty_chunks():
    table = table_of(20)
    sliced = pa.Table.from_batches([batch.slice(1, max(0, len(batch) - 2)) for batch in table.to_batches()
                                    if len(batch) > 2])
    empty = pa.table({"_id": ["a", "b"], "title": ["", ""], "text": ["", "x"]})
    for data in (sliced, pa.concat_tables([empty, sliced, empty])):
        rows = np.random.default_rng(2).integers(0, data.num_rows, 500)
        taken = ChunkedRows(data)
        assert taken.gather is not None
        assert taken.take(rows).to_pylist() == data.take(pa.array(rows)).to_pylist()


def test_nulls_and_other_types_are_taken_chunk_by_chunk():
    with_null = pa.table({"_id": ["a", "b", "c"], "text": ["x", None, "z"]})
    numbers = pa.table({"_id": ["a", "b"], "n": [1, 2]})
    for data in (pa.concat_tables([with_null, with_null]), pa.concat_tables([numbers, numbers])):
        taken = ChunkedRows(data)
        assert taken.gather is None
        assert taken.take(np.array([3, 0, 2])).to_pylist() == data.take(pa.array([3, 0, 2])).to_pylist()


def test_a_damaged_offset_is_an_error_not_a_read_elsewhere():
    data = pa.py_buffer(b"hello world")
    bounds = np.array([0, 5, 11], dtype=np.int32)
    broken = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(bounds), data])
    table = pa.Table.from_batches([pa.record_batch([broken], names=["text"])] * 2)
    taken = ChunkedRows(table)
    bounds[2] = 1 << 30  # the file's bytes changed under the memory map
    assert isinstance(taken.gather, StringGather)
    assert taken.take(np.array([0, 2])).column("text").to_pylist() == ["hello", "hello"]
    with pytest.raises(ValueError) as caught:
        taken.take(np.array([1]))
    assert_names(caught.value, "offset", "damaged", "delete the cache")


def test_row_numbers_out_of_range_are_refused():
    taken = ChunkedRows(table_of(3))
    with pytest.raises(IndexError):
        taken.take(np.array([-1]))
    with pytest.raises(IndexError):
        taken.take(np.array([0.5]))
