"""One split of a prepared dataset as zstd Parquet shards, and what a built config holds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

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


def write_parquet(dataset: datasets.Dataset, folder: str, split: str) -> list[str]:
    """Write one split as zstd Parquet shards `<split>-0000i-of-0000n.parquet`; return their paths."""
    schema = dataset.features.arrow_schema
    table = dataset.data.table.cast(schema)
    shards = list(_shards(table))
    paths = []
    for index, shard in enumerate(shards):
        path = os.path.join(folder, f"{split}-{index:05d}-of-{len(shards):05d}.parquet")
        with pq.ParquetWriter(
            path, schema, compression="zstd", use_content_defined_chunking=True, write_page_index=True
        ) as writer:
            row_group = _row_group_rows(shard)
            for start in range(0, max(shard.num_rows, 1), row_group):
                writer.write_table(shard.slice(start, row_group), row_group_size=row_group)
        paths.append(path)
    return paths
