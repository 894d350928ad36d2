"""A spool: where one pass over a source keeps the tables of another split, for that split to replay later.

CRAG's records of both splits are interleaved in one compressed file: a full build decompresses it once, keeping
the second split's tables as Arrow record batches in numbered files (core.batch_spool) while the first split's are
written, and the second split then reads them back instead of the source, each file deleted once read (the disk it
takes goes as the second split is written). Uncompressed: the splits go to datasets' Arrow cache, so the spool holds
what the cache will, the cache and the spool together never exceed the finished cache by more than a spool file,
and no CPU goes to compressing it. (A build into a compressed batch spool, `build --out`, writes the second split's
rows straight into that spool instead: `CompatBuilder.spool_ahead`.) A spool is written into the folder
`<path>.partial` and appears at `path` only when complete, so a pass that failed halfway is never replayed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from ...core.batch_spool import BatchSpool, SpooledBatches, folder_files


@dataclass(frozen=True)
class Spool:
    """Where the first split's pass keeps the second split's tables."""

    path: str

    def exists(self) -> bool:
        return os.path.isdir(self.path)

    def replay(self) -> Iterator[pa.Table]:
        """The kept tables in the order written; each file of the spool is deleted once read, its folder once they
        all are."""
        files = folder_files(self.path)
        if files:
            with pa.OSFile(files[0], "rb") as first:
                schema = pa.ipc.open_stream(first).schema
            for batch in SpooledBatches(files, schema).batches(schema.names, consume=True):
                yield pa.Table.from_batches([batch])
        shutil.rmtree(self.path)


class SpoolWriter:
    """Writes a spool: `write` tables, then `commit` (the spool appears) or `discard` (nothing is left)."""

    def __init__(self, spool: Spool, schema: pa.Schema):
        self.spool, self.partial = spool, spool.path + ".partial"
        self.writer = BatchSpool(self.partial, schema, compression=None)

    def write(self, table: pa.Table | None) -> None:
        if table is not None:
            self.writer.write_table(table)

    def commit(self) -> None:
        self.writer.close()
        os.replace(self.partial, self.spool.path)

    def discard(self) -> None:
        self.writer.close()
        shutil.rmtree(self.partial, ignore_errors=True)
