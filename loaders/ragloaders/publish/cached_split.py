"""A prepared split read back from its Arrow cache files with plain reads, a few columns at a time.

datasets gives a prepared split as a memory map of its Arrow files, and every page read through a map counts in the
process's RSS until the map is closed (clean page cache, but RSS): checking the `text` of CRAG's corpus through
the map added its whole size (130 MB on half of a generated task 1&2 file). Read with plain reads, one record
batch is in memory at a time, and what is kept is copied out of it (an IPC batch's columns share one buffer, its
message body: a kept `_id` column would keep every `text` of its batch)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.datasets_compat import cache_files
from ..core.readers.arrow_batches import iter_ipc_batches


def _copied(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.concat_arrays([column]) for column in batch.columns], schema=batch.schema)


class CachedSplit:
    """One prepared split, read column by column: from its Arrow cache files with plain reads when `cache_files`
    finds them, else from its table; after `written_as`, from the Parquet files it was written as. Keeps no memory
    map open, so it may outlive the dataset it was made from."""

    def __init__(self, dataset: datasets.Dataset):
        self.num_rows = dataset.num_rows
        self.column_names = list(dataset.column_names)
        self.files = cache_files(dataset)
        self.table = dataset.data.table if self.files is None else None
        self.schema = dataset.features.arrow_schema if self.table is None else self.table.schema
        self.parquet: list[str] | None = None

    @classmethod
    def of_parquet(cls, parquet_files: Sequence[str], schema: pa.Schema, num_rows: int) -> CachedSplit:
        """A split read from the Parquet files publish.parquet wrote it as (its rows in order), of `schema`."""
        split = cls.__new__(cls)
        split.num_rows, split.column_names, split.schema = num_rows, list(schema.names), schema
        split.files, split.table, split.parquet = None, None, list(parquet_files)
        return split

    def written_as(self, parquet_files: Sequence[str]) -> None:
        """Read the rows from `parquet_files` from now on: this split's rows, in order, as publish.parquet wrote
        them. Its Arrow cache files (or table) are let go, so a build may delete them; only the columns asked
        for are read from the Parquet files."""
        self.parquet, self.files, self.table = list(parquet_files), None, None

    def batches(self, columns: Sequence[str], max_rows: int = 100_000) -> Iterator[pa.RecordBatch]:
        """The `columns` of every row, in order, a record batch at a time. Read from the files, a batch's columns
        share the buffer of every column of its IPC batch: to keep one, copy it (as `columns` does)."""
        if self.table is not None:
            yield from self.table.select(list(columns)).to_batches(max_chunksize=max_rows)
            return
        if self.parquet is not None:
            for path in self.parquet:
                with pq.ParquetFile(path) as file:
                    yield from file.iter_batches(batch_size=max_rows, columns=list(columns), use_threads=False)
            return
        for batch in iter_ipc_batches(self.files):
            yield batch.select(list(columns))

    def columns(self, columns: Sequence[str]) -> pa.Table:
        """The `columns` of every row, as a table held in memory."""
        if self.table is not None:
            return self.table.select(list(columns))
        copy = _copied if self.parquet is None else (lambda batch: batch)  # a Parquet batch owns its buffers
        kept = [copy(batch) for batch in self.batches(columns)]
        if not kept:
            return pa.schema([self.schema.field(name) for name in columns]).empty_table()
        return pa.Table.from_batches(kept)
