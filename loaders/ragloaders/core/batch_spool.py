"""A prepared split kept as zstd-compressed Arrow record batches in numbered files, read back once and deleted file by
file as it is read.

`build --out` without a cache dir prepares each config through datasets' own writer (encoding, casts, batch
boundaries: datasets_compat.SpoolArrowWriter) but keeps the record batches here in place of datasets' uncompressed
Arrow cache: compressed, the spool of a config is about the size of its Parquet files, and since each spool file
goes as soon as its rows are read for the Parquet, the build's disk stays about the size of its output.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator, Sequence

import pyarrow as pa

from .deep_folders import make_folders

FILE_BYTES = 16 << 20
"""Bytes written after which a spool file is closed and the next one begun: what is on disk beyond the output while
a split's Parquet is written is about one of these."""
COMPRESSION = "zstd"
FILE_NAME = re.compile(r"batches-(\d{5})\.arrows\Z")
SIZES_SUFFIX = ".sizes"
"""Beside each spool file, written once it is complete: its rows and the Arrow bytes of its batches as read back
(`Table.nbytes`), two little-endian unsigned 64-bit integers."""
SIZES = struct.Struct("<QQ")


def job_folder(root: str, split: str, job_id: int) -> str:
    """Where job `job_id` (datasets' num_proc worker) of `split` keeps its batches under a config's spool `root`."""
    return os.path.join(root, f"{split}-{job_id:05d}")


class BatchSpool:
    """The writing end: `write_table` as pyarrow's RecordBatchStreamWriter cuts a table into record batches, into
    numbered IPC stream files of about FILE_BYTES each (compressed with `compression`, an IPC codec or None);
    `close` when done."""

    def __init__(self, folder: str, schema: pa.Schema, compression: str | None = COMPRESSION):
        make_folders(folder)
        self.folder, self.schema, self.compression = folder, schema, compression
        self.count = 0
        self.sink: pa.OSFile | None = None
        self.writer: pa.ipc.RecordBatchStreamWriter | None = None

    def _open(self) -> None:
        self.path = os.path.join(self.folder, f"batches-{self.count:05d}.arrows")
        self.sink = pa.OSFile(self.path, "wb")
        self.writer = pa.ipc.new_stream(self.sink, self.schema,
                                        options=pa.ipc.IpcWriteOptions(compression=self.compression))
        self.count += 1
        self.rows = self.nbytes = 0

    def write_table(self, table: pa.Table, max_chunksize: int | None = None) -> None:
        """Write `table` as record batches of at most `max_chunksize` rows (the writer's own cut)."""
        for batch in table.to_batches(max_chunksize):  # the cut RecordBatchStreamWriter.write_table makes
            if self.writer is None:
                self._open()
            self.writer.write_batch(batch)
            self.rows += batch.num_rows
            self.nbytes += read_back_nbytes(batch)
            if self.sink.tell() >= FILE_BYTES:
                self._close_file()

    def _close_file(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.sink.close()
            self.writer = self.sink = None
            with open(self.path + SIZES_SUFFIX, "wb") as f:
                f.write(SIZES.pack(self.rows, self.nbytes))

    def close(self) -> None:
        self._close_file()


def read_back_nbytes(batch: pa.RecordBatch) -> int:
    """`nbytes` of `batch` as a reader of the IPC stream gets it back (a writer leaves out what no value uses, such
    as the validity bitmap of a column without nulls, which the batch in memory may have), without writing it: the
    batch serialised uncompressed and read back in place."""
    return pa.ipc.read_record_batch(batch.serialize(), batch.schema).nbytes


def recorded_sizes(files: Sequence[str]) -> tuple[int, int] | None:
    """(rows, Arrow bytes) of spool `files` from the sizes recorded beside each as it was closed; None when one has
    none (or one that is not 16 bytes: then they are counted by reading the files)."""
    rows = nbytes = 0
    for path in files:
        try:
            with open(path + SIZES_SUFFIX, "rb") as f:
                data = f.read(SIZES.size + 1)
        except OSError:
            return None
        if len(data) != SIZES.size:
            return None
        file_rows, file_nbytes = SIZES.unpack(data)
        rows, nbytes = rows + file_rows, nbytes + file_nbytes
    return rows, nbytes


def _remove(path: str) -> None:
    """Delete a spool file and the sizes recorded beside it."""
    os.remove(path)
    if os.path.exists(path + SIZES_SUFFIX):
        os.remove(path + SIZES_SUFFIX)


def folder_files(folder: str) -> list[str]:
    """The spool files a BatchSpool wrote into `folder`, in the order written."""
    names = sorted(name for name in os.listdir(folder) if FILE_NAME.match(name)) if os.path.isdir(folder) else []
    return [os.path.join(folder, name) for name in names]


def spool_files(root: str, split: str) -> list[str]:
    """The spool files of `split` under a config's spool `root`, in row order: job by job, then by number."""
    prefix = f"{split}-"
    jobs = sorted(name for name in os.listdir(root) if name.startswith(prefix) and name[len(prefix):].isdigit()
                  and len(name) == len(prefix) + 5) if os.path.isdir(root) else []
    return [path for job in jobs for path in folder_files(os.path.join(root, job))]


class SpooledBatches:
    """The reading end: the record batches of spool `files` in order, as `batches`, any number of times until
    `batches(..., consume=True)` reads them one last time, deleting each file once its batches are read."""

    def __init__(self, files: Sequence[str], schema: pa.Schema):
        self.files = list(files)
        self.schema = schema
        self.column_names = list(schema.names)
        self.rows_read: int | None = None

    def batches(self, columns: Sequence[str], consume: bool = False) -> Iterator[pa.RecordBatch]:
        """The `columns` of every row, in order, a record batch at a time (as datasets' cache would hold them).
        `consume`: each file is deleted as soon as its last batch is read, before that batch is given (a reader
        that stops there still leaves no file behind)."""
        for path in list(self.files):
            with pa.OSFile(path, "rb") as source:
                reader = pa.ipc.open_stream(source)
                batch = next(reader, None)
                while batch is not None:
                    following = next(reader, None)
                    if following is None and consume:
                        source.close()
                        _remove(path)
                        self.files.remove(path)
                    yield batch.select(list(columns))
                    batch = following
            if consume and path in self.files:  # a file with no batch
                _remove(path)
                self.files.remove(path)

    def range_nbytes(self, ranges: Sequence[tuple[int, int]]) -> tuple[int, list[int]]:
        """The Arrow bytes of the whole split (`Table.nbytes` of its batches as one table) and of each (start, rows)
        range of rows (`Table.slice(start, rows).nbytes` of that table), in one read of the spool. The rows read are
        counted in `rows_read`."""
        total, sizes, offset = 0, [0] * len(ranges), 0
        for batch in self.batches(self.column_names):
            total += batch.nbytes
            end = offset + batch.num_rows
            for index, (start, rows) in enumerate(ranges):
                low, high = max(start, offset), min(start + rows, end)
                if high > low:  # a slice leaves out the chunks it does not reach, empty ones included
                    part = batch if (low, high) == (offset, end) else batch.slice(low - offset, high - low)
                    sizes[index] += part.nbytes
            offset = end
        self.rows_read = offset
        return total, sizes

    def discard(self) -> None:
        """Delete whatever is left of the spool."""
        for path in self.files:
            if os.path.exists(path):
                _remove(path)
        self.files = []


class SpooledSplit(SpooledBatches):
    """The spooled rows of one split of a config (spool folder `root`), job by job (datasets' num_proc)."""

    def __init__(self, root: str, split: str, schema: pa.Schema):
        super().__init__(spool_files(root, split), schema)
        self.split = split
