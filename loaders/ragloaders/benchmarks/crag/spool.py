"""A spool: where one pass over a source keeps the tables of another split, for that split to replay later.

CRAG's records of both splits are interleaved in one compressed file: a full build decompresses it once, keeping
the second split's tables in an Arrow IPC stream (lz4) while the first split's are written, and the second split
then reads them back instead of the source. A spool is written to `<path>.partial` and appears at `path` only when
complete, so a pass that failed halfway is never replayed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from ...core.readers.arrow_batches import iter_ipc_batches


@dataclass(frozen=True)
class Spool:
    """Where the first split's pass keeps the second split's tables."""

    path: str

    def exists(self) -> bool:
        return os.path.isfile(self.path)

    def replay(self) -> Iterator[pa.Table]:
        """The kept tables in the order written; the spool is deleted once they are all read."""
        for batch in iter_ipc_batches([self.path]):
            yield pa.Table.from_batches([batch])
        os.remove(self.path)


class SpoolWriter:
    """Writes a spool: `write` tables, then `commit` (the spool appears) or `discard` (nothing is left)."""

    def __init__(self, spool: Spool, schema: pa.Schema):
        self.spool, self.partial = spool, spool.path + ".partial"
        self.writer = pa.ipc.new_stream(self.partial, schema, options=pa.ipc.IpcWriteOptions(compression="lz4"))

    def write(self, table: pa.Table | None) -> None:
        if table is not None:
            self.writer.write_table(table)

    def commit(self) -> None:
        self.writer.close()
        os.replace(self.partial, self.spool.path)

    def discard(self) -> None:
        self.writer.close()
        if os.path.exists(self.partial):
            os.remove(self.partial)
