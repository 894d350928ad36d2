"""A file for pyarrow's Parquet writer whose write errors come back to Python, never into the writer.

pyarrow's Parquet writer, with `use_content_defined_chunking`, checks the status of a page write with
ARROW_CHECK (`column_writer.cc`, `WriteArrowDense`): a failed write there (ENOSPC on a full disk, EFBIG over a
file size limit) aborts the whole process (SIGABRT) instead of raising. So the writer is given this file, which
takes every write, keeps the first error and stops writing after it; `check()` (after each row group) and
`close()` raise that error as the OSError it was, which the output folder turns into a one-line message.

A KeyboardInterrupt raised inside `write` (Ctrl-C while the writer calls it; SIGTERM, which a build turns into the
same) would reach the writer as a failed write, and abort the process the same way: every call that writes
through this file (the writer's creation, `write_table`, `close`) runs with SIGINT and SIGTERM held
(`core.held_signals.deferred_signals`, parquet.py), and they are delivered between row groups.
"""

from __future__ import annotations

import pyarrow as pa


class DeferredErrorFile:
    """A binary file opened for writing whose `write` never raises: the first OSError is kept for `check()`."""

    def __init__(self, path: str):
        self.path = path
        self.file = open(path, "wb")
        self.error: OSError | None = None
        self.position = 0
        self.closed = False

    def write(self, data) -> int:
        size = memoryview(data).nbytes
        if self.error is None:
            try:
                self.file.write(data)
            except OSError as e:
                self.error = e
        self.position += size
        return size

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        if self.error is None:
            try:
                self.file.flush()
            except OSError as e:
                self.error = e

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def check(self) -> None:
        """Raise the first write error, naming the file."""
        if self.error is not None:
            error = self.error
            raise OSError(error.errno, error.strerror, self.path) from error

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.flush()
            try:
                self.file.close()
            except OSError as e:
                self.error = self.error or e
        self.check()

    def arrow(self) -> pa.PythonFile:
        """The pyarrow file to hand the writer."""
        return pa.PythonFile(self, mode="w")
