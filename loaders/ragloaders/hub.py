"""`ragloaders build`: a hub-ready folder of Parquet files and a README whose YAML describes them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub.utils import tqdm

from . import validate
from .api import builder, configs_of

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


def build_folder(
    path: str,
    out: str,
    *,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    num_proc: int | None = None,
    repo_id: str | None = None,
) -> list[ConfigOutput]:
    """Prepare every config of `path` and write `out/<config>/<split>-*.parquet` plus `out/README.md`.

    The folder is written under `out` + ".incomplete" and moved into place at the end, so an
    interrupted build never leaves a folder that looks complete. `repo_id` goes into the card's
    `load_dataset` lines; the card shows `validate.integrity`'s report.
    """
    from .cards import render_card

    staging = out.rstrip("/") + ".incomplete"
    shutil.rmtree(staging, ignore_errors=True)
    outputs = []
    for config in tqdm(configs_of(path), desc=f"Building {path}", unit="config"):
        dataset_builder = builder(path, config, data_dir=data_dir, cache_dir=cache_dir)
        dataset_builder.download_and_prepare(num_proc=num_proc)
        output = ConfigOutput(config, dataset_builder.info)
        folder = os.path.join(staging, config)
        os.makedirs(folder, exist_ok=True)
        for split, dataset in dataset_builder.as_dataset().items():
            files = write_parquet(dataset, folder, split)
            output.splits[split] = SplitOutput(
                split, dataset.num_rows, dataset.data.nbytes, [os.path.relpath(f, staging) for f in files],
                sum(os.path.getsize(f) for f in files),
            )
        outputs.append(output)
    with open(os.path.join(staging, "README.md"), "w", encoding="utf-8") as f:
        integrity = validate.integrity(path, data_dir=data_dir, cache_dir=cache_dir)  # configs already prepared
        f.write(render_card(path, outputs, data_dir=data_dir, integrity=integrity, repo_id=repo_id))
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.replace(staging, out)
    return outputs
