"""One split of a prepared dataset as zstd Parquet shards, and what a built config holds."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.batch_spool import SpooledSplit, recorded_sizes
from ..core.held_signals import deferred_signals
from ..core.preview import preview
from ..core.readers.threads import iter_ahead
from .cached_split import CachedSplit
from .sink import DeferredErrorFile
from .write_behind import WriteStopped

MAX_SHARD_BYTES = 500 << 20
"""Uncompressed bytes per Parquet file: the compressed file is smaller, so always under ~500 MB."""
SHARD_COUNT_MULTIPLE = 8
"""A split written as more than one file has a multiple of this many (one file per row if it has fewer rows), of
equal row counts (within one row): datasets streams whole files per worker (`split_dataset_by_node`, a DataLoader's
workers), so 2, 4 or 8 workers get equal shares."""
ROW_GROUP_BYTES = 64 << 20
"""Uncompressed bytes per row group: small enough for the hub's dataset viewer to page through (its limit is
286 MiB per row group)."""
MAX_ROW_GROUP_ROWS = 100_000
LARGE_ROW_BYTES = 2 << 20
"""Rows larger than this (on average in a split) are too large for the dataset viewer to show: the card says so."""
CUTTING_RULE = (
    f"Each split is one Parquet file (zstd) while it holds under {MAX_SHARD_BYTES >> 20} MiB of Arrow data; a larger "
    f"one is cut into a multiple of {SHARD_COUNT_MULTIPLE} files whose row counts differ by one "
    f"at most, in row order, so that 2, 4 or 8 workers reading whole files "
    f"(`datasets.distributed.split_dataset_by_node`, DataLoader workers) get equal shares; a split with fewer rows "
    f"than that multiple is one file per row. Row groups hold about {ROW_GROUP_BYTES >> 20} MiB of Arrow data (at most "
    f"{MAX_ROW_GROUP_ROWS:,} rows), well under the dataset viewer's 286 MiB."
)
"""How files are cut, as the card says it (from the constants above)."""


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


def _row_group_rows(num_rows: int, nbytes: int) -> int:
    if num_rows == 0:
        return 1
    per_row = max(1, nbytes // num_rows)
    return max(1, min(MAX_ROW_GROUP_ROWS, ROW_GROUP_BYTES // per_row))


def shard_rows(num_rows: int, nbytes: int) -> list[int]:
    """The row count of each file of a split of `num_rows` rows and `nbytes` Arrow bytes: one file up to
    MAX_SHARD_BYTES, else the fewest multiple of SHARD_COUNT_MULTIPLE files that holds under it on average, whose counts
    differ by one row at most; one file per row when there are fewer rows than that multiple (CUTTING_RULE says so
    on the card)."""
    if num_rows == 0:
        return [0]
    needed = -(-nbytes // MAX_SHARD_BYTES)
    if needed <= 1:
        return [num_rows]
    count = min(num_rows, -(-needed // SHARD_COUNT_MULTIPLE) * SHARD_COUNT_MULTIPLE)
    base, extra = divmod(num_rows, count)
    return [base + (index < extra) for index in range(count)]


def _shards(table: pa.Table) -> Iterator[pa.Table]:
    """Contiguous slices of the table as `shard_rows` cuts it; at least one, even when empty."""
    start = 0
    for rows in shard_rows(table.num_rows, table.nbytes):
        yield table.slice(start, rows)
        start += rows


class _RowsInOrder:
    """A split's rows in order, `take(n)` rows at a time, read through its CachedSplit (plain reads of the Arrow
    cache files when it has them: a memory map would count every page read in the process's RSS, up to the files'
    size, where reading the files keeps the memory of writing a split to about one row group), or from its batch
    spool, each spool file deleted once read. The next record batch is read (and decompressed) on a thread of its
    own while the writer encodes and compresses the rows before it."""

    def __init__(self, rows: CachedSplit | SpooledSplit, schema: pa.Schema):
        self.schema = schema
        self.batches = iter_ahead(rows.batches(rows.column_names, consume=True) if isinstance(rows, SpooledSplit)
                                  else rows.batches(rows.column_names))
        self.pending: list[pa.RecordBatch] = []
        self.count = 0
        self.nbytes = 0
        """Arrow bytes of the record batches read so far."""

    def take(self, rows: int) -> pa.Table:
        while self.count < rows and (batch := next(self.batches, None)) is not None:
            self.pending.append(batch)
            self.count += batch.num_rows
            self.nbytes += batch.nbytes
        if not self.pending:
            return self.schema.empty_table()
        table = pa.Table.from_batches(self.pending)
        self.pending, self.count = table.slice(rows).to_batches(), max(0, table.num_rows - rows)
        return table.slice(0, rows).cast(self.schema)

    def close(self) -> None:
        """Stop reading ahead (the reading thread is joined)."""
        self.batches.close()


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
    rows: CachedSplit | SpooledSplit


def plan_parquet(dataset: datasets.Dataset, rows: CachedSplit | None = None) -> ParquetPlan:
    """The ParquetPlan of one split; `rows`, its CachedSplit if the caller has one already."""
    table = dataset.data.table
    shards = tuple((shard.num_rows, _row_group_rows(shard.num_rows, shard.nbytes)) for shard in _shards(table))
    return ParquetPlan(dataset.features.arrow_schema, table.num_rows, table.nbytes, shards,
                       rows or CachedSplit(dataset))


def plan_spooled(spooled: SpooledSplit, schema: pa.Schema, num_rows: int) -> ParquetPlan:
    """The ParquetPlan of one split prepared into a batch spool: the very plan `plan_parquet` makes of the same
    rows in datasets' Arrow cache (the sizes of the same record batches, summed as `Table.nbytes` and
    `Table.slice` count them), from the sizes recorded as the spool was written (else found by reading the spool
    once); a split cut into several files reads the spool once for the sizes of its slices."""
    recorded = recorded_sizes(spooled.files)
    if recorded is None:
        nbytes = spooled.range_nbytes([(0, num_rows)])[0]
        recorded = spooled.rows_read, nbytes
    rows, nbytes = recorded
    if rows != num_rows:  # never silently a shorter file: the spool lost or gained rows
        raise RuntimeError(f"the batch spool of split {preview(spooled.split)} holds {rows:,} rows "
                           f"where its preparation wrote {num_rows:,}")
    counts = shard_rows(num_rows, nbytes)
    if len(counts) == 1:
        sizes = [nbytes]  # (a slice of every row is the whole)
    else:
        starts = [sum(counts[:index]) for index in range(len(counts))]
        sizes = spooled.range_nbytes(list(zip(starts, counts)))[1]
    shards = tuple((rows, _row_group_rows(rows, size)) for rows, size in zip(counts, sizes))
    return ParquetPlan(schema, num_rows, nbytes, shards, spooled)


def write_parquet(split_rows: datasets.Dataset | ParquetPlan, folder: str, split: str,
                  stop: threading.Event | None = None) -> list[str]:
    """Write one split (a dataset, or its `plan_parquet`) as zstd Parquet shards
    `<split>-0000i-of-0000n.parquet`; return their paths.

    The rows come from the dataset's Arrow cache files when it has them (see _RowsInOrder), else from the table
    itself. Once `stop` is set, the next row group raises WriteStopped instead (write_behind.py)."""
    plan = split_rows if isinstance(split_rows, ParquetPlan) else plan_parquet(split_rows)
    rows = _RowsInOrder(plan.rows, plan.schema)
    paths = []
    try:
        for index, (shard_rows, row_group) in enumerate(plan.shards):
            path = os.path.join(folder, f"{split}-{index:05d}-of-{len(plan.shards):05d}.parquet")
            sink = DeferredErrorFile(path)  # a full disk raises OSError here, not SIGABRT in the writer (sink.py)
            try:
                with deferred_signals():  # every call that writes through the sink holds Ctrl-C (sink.py)
                    writer = pq.ParquetWriter(sink.arrow(), plan.schema, compression="zstd",
                                              use_content_defined_chunking=True, write_page_index=True)
                try:
                    for offset in range(0, max(shard_rows, 1), row_group):
                        if stop is not None and stop.is_set():
                            raise WriteStopped(f"the write of split {preview(split)} was stopped")
                        part = rows.take(min(row_group, shard_rows - offset))
                        if part.num_rows != min(row_group, shard_rows - offset):
                            raise RuntimeError(f"split {preview(split)} holds fewer rows than the {plan.num_rows:,} "
                                               "its preparation wrote")
                        with deferred_signals():
                            writer.write_table(part, row_group_size=row_group)
                        del part  # else it is held while the next row group is read: two row groups in memory
                        sink.check()
                finally:
                    with deferred_signals():
                        writer.close()
            finally:
                sink.close()
            paths.append(path)
        if rows.take(1).num_rows:
            raise RuntimeError(f"split {preview(split)} holds more rows than the {plan.num_rows:,} its preparation "
                               "wrote")
        if isinstance(plan.rows, SpooledSplit) and rows.nbytes != plan.nbytes:  # the plan's sizes were not these
            raise RuntimeError(f"the batch spool of split {preview(split)} holds {rows.nbytes:,} bytes of Arrow data "
                               f"where its recorded sizes said {plan.nbytes:,}")
    finally:
        rows.close()
    return paths
