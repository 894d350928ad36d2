"""Arrow tables from Python rows in batches bounded by rows and bytes, and record batches from Arrow IPC files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq


class RowBatcher:
    """Rows gathered into tables of `schema`, each bounded by rows and by bytes; `add` returns a full table."""

    def __init__(self, schema: pa.Schema, *, max_rows: int = 10_000, max_bytes: int = 32 << 20):
        self.schema, self.max_rows, self.max_bytes = schema, max_rows, max_bytes
        self.rows: list[dict] = []
        self.size = 0

    def add(self, row: dict, nbytes: int) -> pa.Table | None:
        """Add one row of about `nbytes` bytes; the batch as a table once it is full, else None."""
        self.rows.append(row)
        self.size += nbytes
        return self.flush() if len(self.rows) >= self.max_rows or self.size >= self.max_bytes else None

    def flush(self) -> pa.Table | None:
        """The rows gathered so far as a table (None if there are none)."""
        if not self.rows:
            return None
        table = pa.Table.from_pylist(self.rows, schema=self.schema)
        self.rows, self.size = [], 0
        return table


class TableBatcher:
    """Small tables of one schema (rows parsed straight to Arrow) gathered into one-chunk tables bounded by rows and by
    bytes (one-row tables are cut where RowBatcher cuts the same rows); `add` returns a full table."""

    def __init__(self, *, max_rows: int = 10_000, max_bytes: int = 32 << 20):
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self.tables: list[pa.Table] = []
        self.rows = self.size = 0

    def add(self, table: pa.Table, nbytes: int) -> pa.Table | None:
        """Add `table`, of about `nbytes` bytes; the batch as a table once it is full, else None."""
        self.tables.append(table)
        self.rows += table.num_rows
        self.size += nbytes
        return self.flush() if self.rows >= self.max_rows or self.size >= self.max_bytes else None

    def flush(self) -> pa.Table | None:
        """The tables gathered so far as one table of one chunk per column (None if there are none)."""
        if not self.tables:
            return None
        table = pa.concat_tables(self.tables).combine_chunks()
        self.tables, self.rows, self.size = [], 0, 0
        return table


def tables_from_rows(
    rows: Iterable[tuple[dict, int]], schema: pa.Schema, *, max_rows: int = 10_000, max_bytes: int = 32 << 20
) -> Iterator[pa.Table]:
    """Group (row, size in bytes) pairs into tables bounded by rows and by bytes."""
    batcher = RowBatcher(schema, max_rows=max_rows, max_bytes=max_bytes)
    for row, nbytes in rows:
        if (table := batcher.add(row, nbytes)) is not None:
            yield table
    if (table := batcher.flush()) is not None:
        yield table


def iter_ipc_batches(paths: Iterable[str]) -> Iterator[pa.RecordBatch]:
    """The record batches of Arrow IPC stream files (datasets' cache files, spools), in order, read with plain
    reads: a memory map would count every page read in the process's RSS, up to the files' size."""
    for path in paths:
        with pa.OSFile(path, "rb") as source:
            yield from pa.ipc.open_stream(source)


def iter_file_batches(paths: Iterable[str], columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The record batches of `columns` of Arrow IPC stream files (`iter_ipc_batches`) or Parquet files (a name
    ending in `.parquet`: only those columns are read, one row group at a time, ~64 MB of Arrow data at most as
    publish.parquet writes them; smaller reads cost dearly on nested columns such as CRAG's search_results), in
    order."""
    for path in paths:
        if path.endswith(".parquet"):
            with pq.ParquetFile(path) as file:
                for group in range(file.num_row_groups):
                    yield from file.read_row_group(group, columns=columns, use_threads=False).to_batches()
        else:
            for batch in iter_ipc_batches([path]):
                yield batch.select(columns)
