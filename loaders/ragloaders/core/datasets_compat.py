"""The internals of `datasets` that ragloaders relies on, all here and nowhere else, each checked against the
releases setup.cfg allows: datasets 3.6 (the oldest that reads a built folder, `.ci/run`), 4.0 (the oldest ragloaders
installs with) through 5.2 (installed here). A new datasets release is checked against this module first.

- `_output_dir`, `_cache_downloaded_dir`, `_cache_dir_root` of a builder (set in `DatasetBuilder.__init__` and
  `download_and_prepare` in 3.6, 4.0-4.4 and 5.0-5.2): `CompatBuilder.prepared_dir`, `.downloads_dir`, `.cache_root`.
- `_as_dataset` and `_prepare_split_single`, overridden by `CompatBuilder` (same signatures in 3.6 through 5.2).
  With a batch spool (`spool_into`), `_prepare_split_single` is datasets' own loop over `_generate_tables` (4.0: every
  table through `write_table`, a 5-item result; 5.x, whose SplitInfo has `original_shard_lengths`: a one-row table
  through `write_row`, a 7-item result with the original shards) writing through `SpoolArrowWriter`.
- `ArrowWriter._build_writer` and its `_schema` (4.0 and 5.2): `SpoolArrowWriter` lets datasets build the schema
  and then takes the place of its `pa_writer`.
- `Dataset._indices` (None unless an indices mapping selects rows: 3.6 through 5.2): `has_indices_mapping`.
- `ConcatenationTable.blocks`, `MemoryMappedTable.path` and `.replays` (3.6 through 5.2): `cache_files`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import datasets
import pyarrow as pa
from datasets.arrow_writer import ArrowWriter
from datasets.exceptions import DatasetGenerationCastError, DatasetGenerationError
from datasets.table import CastError, ConcatenationTable, InMemoryTable, MemoryMappedTable
from datasets.utils.track import tracked_list

from .batch_spool import BatchSpool, job_folder
from .errors import precise_cause

ORIGINAL_SHARDS = "original_shard_lengths" in {field.name for field in dataclasses.fields(datasets.SplitInfo)}
"""Whether this datasets release counts rows per original shard (5.x); its split loop then also writes one-row
tables with `write_row`."""


class SpoolArrowWriter(ArrowWriter):
    """datasets' ArrowWriter (its encoding, casts and record batch cuts) writing the record batches to a
    core.batch_spool folder in place of an Arrow file."""

    def __init__(self, folder: str, **kwargs: Any):
        super().__init__(stream=pa.BufferOutputStream(), **kwargs)
        self.spool_folder = folder

    def _build_writer(self, inferred_schema: pa.Schema) -> None:
        super()._build_writer(inferred_schema)  # sets the schema, and a stream writer into the unused buffer
        self.pa_writer.close()
        self.pa_writer = BatchSpool(self.spool_folder, self._schema)


class CompatBuilder(datasets.ArrowBasedBuilder):
    """datasets' ArrowBasedBuilder with the internals ragloaders uses given public names, a split with no rows read
    back empty, and a source error raised as itself."""

    @property
    def prepared_dir(self) -> str:
        """The folder holding this config's prepared Arrow files."""
        return self._output_dir

    @property
    def downloads_dir(self) -> str:
        """The folder downloads of this builder go to."""
        return self._cache_downloaded_dir

    @property
    def cache_root(self) -> str:
        """The datasets cache folder this builder prepares in."""
        return self._cache_dir_root

    def _as_dataset(self, split: Any = datasets.Split.TRAIN, in_memory: bool = False) -> datasets.Dataset:
        # datasets cannot read back a split with no rows ("corresponds to no data"): give it empty, with its columns.
        # (A published folder leaves such a split out: publish.build writes only splits with rows.)
        split_info = self.info.splits.get(str(split)) if self.info.splits else None
        if split_info is not None and split_info.num_examples == 0:
            table = InMemoryTable(self.info.features.arrow_schema.empty_table())
            return datasets.Dataset(table, info=self.info.copy(), split=split_info.name)
        return super()._as_dataset(split, in_memory)

    batch_spool: str | None = None
    """The folder this config's splits are spooled into (`spool_into`), or None: datasets' Arrow cache."""

    def spool_into(self, folder: str) -> None:
        """Prepare into core.batch_spool files under `folder` (read by `batch_spool.SpooledSplit`) instead of the
        Arrow cache: the prepared folder then holds the info and empty `.arrow` files, and cannot be read with
        `as_dataset`."""
        self.batch_spool = folder
        self._spooled_ahead: dict[str, tuple] = {}
        """The results of splits whose rows an earlier split's pass spooled (`spool_ahead`), by split."""

    def _prepare_split_single(self, *args: Any, **kwargs: Any) -> Iterator:
        # datasets wraps any error in a generic DatasetGenerationError, and its cause does not survive
        # the trip back from a num_proc worker: raise the precise error itself instead.
        try:
            if self.batch_spool is None:
                yield from super()._prepare_split_single(*args, **kwargs)
            else:
                yield from self._spool_split_single(*args, **kwargs)
        except DatasetGenerationError as e:
            cause = precise_cause(e)
            if cause is None:
                raise
            raise cause from None

    def _spool_split_single(self, gen_kwargs: dict, fpath: str, file_format: str, max_shard_size: int | None,
                            job_id: int) -> Iterator:
        # datasets' ArrowBasedBuilder loop, one shard per job, through SpoolArrowWriter.
        gen_kwargs = {k: tracked_list(v) if isinstance(v, list) else v for k, v in gen_kwargs.items()}
        path = fpath.replace("SSSSS", "00000").replace("JJJJJ", f"{job_id:05d}")
        split = os.path.basename(fpath)[len(self.dataset_name) + 1:-len("-JJJJJ-SSSSS-of-NNNNN.arrow")]
        with open(path, "wb"):  # an empty shard for datasets to rename: the rows are in the spool
            pass
        spooled = self._spooled_ahead.pop(split, None) if job_id == 0 else None
        if spooled is not None:  # an earlier split's pass wrote this split's rows (`spool_ahead`)
            yield job_id, False, spooled[0]
            yield job_id, True, spooled
            return
        progress = 0
        try:
            writer = SplitSpoolWriter(job_folder(self.batch_spool, split, job_id), self.info.features,
                                      self._writer_batch_size)
            try:
                last = time.time()
                for key, table in self._generate_tables(**gen_kwargs):
                    try:
                        writer.write(key, table)
                    except CastError as cast_error:
                        raise DatasetGenerationCastError.from_cast_error(
                            cast_error=cast_error, builder_name=self.info.builder_name, gen_kwargs=gen_kwargs,
                            token=self.token) from cast_error
                    progress += len(table)
                    if time.time() > last + datasets.config.PBAR_REFRESH_TIME_INTERVAL:
                        last = time.time()
                        yield job_id, False, progress
                        progress = 0
            finally:
                yield job_id, False, progress
                result = writer.finish()
        except Exception as e:
            if isinstance(e, DatasetGenerationError):
                raise
            raise DatasetGenerationError("An error occurred while generating the dataset") from e
        yield job_id, True, result

    def spooled_ahead_splits(self) -> set[str]:
        """The splits whose rows an earlier split's or config's pass has written into this config's batch spool, not
        yet taken by their preparation."""
        return set(getattr(self, "_spooled_ahead", {}))

    def spool_ahead(self, split: str) -> SpoolAhead:
        """A writer of `split`'s rows straight into this config's batch spool, for a pass over the source that meets
        them while it prepares another split. Once committed, `split`'s preparation takes them as they are,
        without calling `_generate_tables`; if it is not, that split is generated as usual."""
        return SpoolAhead(self, split)


class SplitSpoolWriter:
    """The writing half of datasets' split loop, into a batch spool folder (`SpoolArrowWriter`): `write(key, table)`
    each table as `_generate_tables` gives it (on 5.x a one-row table through `write_row`, as datasets' own loop
    does), then `finish()`: the result `_prepare_split_single` gives for the split."""

    def __init__(self, folder: str, features: datasets.Features, writer_batch_size: int | None):
        self.writer = SpoolArrowWriter(folder, features=features, writer_batch_size=writer_batch_size)
        self.original_shard_lengths: list[int] = []
        self.original_shard_id = 0

    def write(self, key: Any, table: pa.Table) -> None:
        self.original_shard_id = getattr(key, "original_shard_id", self.original_shard_id)
        if ORIGINAL_SHARDS and len(table) == 1:
            self.writer.write_row(table)
        else:
            self.writer.write_table(table)
        if len(self.original_shard_lengths) <= self.original_shard_id:
            self.original_shard_lengths.extend([0] * (1 + self.original_shard_id - len(self.original_shard_lengths)))
        self.original_shard_lengths[self.original_shard_id] += len(table)

    def finish(self) -> tuple:
        """Write what is buffered, close the spool and give (examples, bytes, features, shards, shard lengths[,
        original shards, their lengths])."""
        try:
            num_examples, num_bytes = self.writer.finalize()
        finally:
            self.close()
        result = (num_examples, num_bytes, self.writer._features, 1, [num_examples])
        if ORIGINAL_SHARDS:
            result += (self.original_shard_id + 1, self.original_shard_lengths)
        return result

    def close(self) -> None:
        """Close the spool without writing what is buffered (a split given up)."""
        self.writer.close()


class SpoolAhead:
    """`CompatBuilder.spool_ahead`: `write` tables (None is skipped), then `commit` or `discard`. The rows go to a
    `.partial` folder beside the split's job folder, renamed into place on commit."""

    def __init__(self, builder: CompatBuilder, split: str):
        self.builder, self.split = builder, split
        self.folder = job_folder(builder.batch_spool, split, 0)
        self.partial = self.folder + ".partial"
        self.writer = SplitSpoolWriter(self.partial, builder.info.features, builder._writer_batch_size)
        self.written = 0

    def write(self, table: pa.Table | None) -> None:
        if table is not None:
            self.writer.write(self.written, table)
            self.written += 1

    def commit(self) -> None:
        result = self.writer.finish()
        os.replace(self.partial, self.folder)
        self.builder._spooled_ahead[self.split] = result

    def discard(self) -> None:
        try:
            self.writer.close()
        finally:
            shutil.rmtree(self.partial, ignore_errors=True)


def has_indices_mapping(dataset: datasets.Dataset) -> bool:
    """Whether an indices mapping selects `dataset`'s rows from its table (after `select`, `shuffle`, `sort`...)."""
    return dataset._indices is not None


SAME_ROWS = frozenset({"replace_schema_metadata"})
"""Operations datasets replays on a memory-mapped file that leave its rows and values as the file has them (a
prepared split carries its features in the schema's metadata)."""


def cache_files(dataset: datasets.Dataset) -> list[str] | None:
    """The Arrow files that hold exactly `dataset`'s rows and values, in order; None when it is anything else (in
    memory, an indices mapping, a slice or a cast of its files)."""
    if has_indices_mapping(dataset):
        return None
    table = dataset.data
    rows = table.blocks if isinstance(table, ConcatenationTable) else [[table]]
    files = []
    for row in rows:
        block = row[0]
        if len(row) != 1 or not isinstance(block, MemoryMappedTable) or any(
                operation not in SAME_ROWS for operation, _, _ in block.replays):
            return None
        files.append(block.path)
    return files or None
