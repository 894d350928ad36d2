"""One split of a prepared dataset as zstd Parquet shards, and what a built config holds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from .cached_split import CachedSplit
from .sink import DeferredErrorFile

MAX_SHARD_BYTES = 500 << 20
"""Uncompressed bytes per Parquet file: the compressed file is smaller, so always under ~500 MB."""
ROW_GROUP_BYTES = 64 << 20
"""Uncompressed bytes per row group: small enough for the hub's dataset viewer to page through."""
MAX_ROW_GROUP_ROWS = 100_000


@dataclass
class SplitOutput:
    name: str
    num_examples: int
    num_bytes: int
    files: list[str] = field(default_factory=list)
    file_bytes: int = 0
    """Bytes of its Parquet files."""


@dataclass
class ConfigOutput:
    name: str
    info: datasets.DatasetInfo
    splits: dict[str, SplitOutput] = field(default_factory=dict)

    @property
    def data_files(self) -> list[dict[str, str]]:
        return [{"split": split, "path": f"{self.name}/{split}-*.parquet"} for split in self.splits]


def _row_group_rows(table: pa.Table) -> int:
    if table.num_rows == 0:
        return 1
    per_row = max(1, table.nbytes // table.num_rows)
    return max(1, min(MAX_ROW_GROUP_ROWS, ROW_GROUP_BYTES // per_row))


def _shards(table: pa.Table) -> Iterator[pa.Table]:
    """Contiguous slices of about MAX_SHARD_BYTES (uncompressed); at least one, even when empty."""
    if table.num_rows == 0:
        yield table
        return
    per_row = max(1, table.nbytes // table.num_rows)
    rows = max(1, MAX_SHARD_BYTES // per_row)
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


class _RowsInOrder:
    """A split's rows in order, `take(n)` rows at a time, read through its CachedSplit (plain reads of the Arrow
    cache files when it has them: a memory map would count every page read in the process's RSS, up to the files'
    size, where reading the files keeps the memory of writing a split to about one row group)."""

    def __init__(self, rows: CachedSplit, schema: pa.Schema):
        self.schema, self.batches = schema, rows.batches(rows.column_names)
        self.pending: list[pa.RecordBatch] = []
        self.count = 0

    def take(self, rows: int) -> pa.Table:
        while self.count < rows and (batch := next(self.batches, None)) is not None:
            self.pending.append(batch)
            self.count += batch.num_rows
        if not self.pending:
            return self.schema.empty_table()
        table = pa.Table.from_batches(self.pending)
        self.pending, self.count = table.slice(rows).to_batches(), max(0, table.num_rows - rows)
        return table.slice(0, rows).cast(self.schema)


@dataclass(frozen=True)
class ParquetPlan:
    """How one split is written, planned on its whole table from its sizes only: the rows of each shard and of
    each of its row groups, and where the rows are read from. The plan holds no memory map of a split with Arrow
    cache files (CachedSplit): the dataset can be let go before the rows are written."""

    schema: pa.Schema
    num_rows: int
    nbytes: int
    """Uncompressed bytes of the split's table (`Table.nbytes`)."""
    shards: tuple[tuple[int, int], ...]
    """(rows, rows per row group) of each shard."""
    rows: CachedSplit


def plan_parquet(dataset: datasets.Dataset, rows: CachedSplit | None = None) -> ParquetPlan:
    """The ParquetPlan of one split; `rows`, its CachedSplit if the caller has one already."""
    table = dataset.data.table
    shards = tuple((shard.num_rows, _row_group_rows(shard)) for shard in _shards(table))
    return ParquetPlan(dataset.features.arrow_schema, table.num_rows, table.nbytes, shards,
                       rows or CachedSplit(dataset))


def write_parquet(split_rows: datasets.Dataset | ParquetPlan, folder: str, split: str) -> list[str]:
    """Write one split (a dataset, or its `plan_parquet`) as zstd Parquet shards
    `<split>-0000i-of-0000n.parquet`; return their paths.

    The rows come from the dataset's Arrow cache files when it has them (see _RowsInOrder), else from the table
    itself."""
    plan = split_rows if isinstance(split_rows, ParquetPlan) else plan_parquet(split_rows)
    rows = _RowsInOrder(plan.rows, plan.schema)
    paths = []
    for index, (shard_rows, row_group) in enumerate(plan.shards):
        path = os.path.join(folder, f"{split}-{index:05d}-of-{len(plan.shards):05d}.parquet")
        sink = DeferredErrorFile(path)  # a full disk raises OSError here, not SIGABRT in the writer (sink.py)
        try:
            with pq.ParquetWriter(sink.arrow(), plan.schema, compression="zstd", use_content_defined_chunking=True,
                                  write_page_index=True) as writer:
                for offset in range(0, max(shard_rows, 1), row_group):
                    part = rows.take(min(row_group, shard_rows - offset))
                    writer.write_table(part, row_group_size=row_group)
                    del part  # else it is held while the next row group is read: two row groups in memory
                    sink.check()
        finally:
            sink.close()
        paths.append(path)
    return paths
