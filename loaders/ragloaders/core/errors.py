"""Errors that name the source file and the place in it."""

from __future__ import annotations


class SourceError(ValueError):
    """Bad or incomplete source data: names the file, the line or record, and what was expected."""

    def __init__(self, path: str, message: str, *, line: int | None = None, record: int | None = None):
        self.path = str(path)
        self.message = message
        self.line = line
        self.record = record
        if line is not None:
            where = f"{self.path}, line {line}"
        elif record is not None:
            where = f"{self.path}, record {record}"
        else:
            where = self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        return (_rebuild_source_error, (self.path, self.message, self.line, self.record))


def _rebuild_source_error(path: str, message: str, line: int | None, record: int | None) -> SourceError:
    return SourceError(path, message, line=line, record=record)


class MissingSourceError(FileNotFoundError):
    """A dataset's files are not there and cannot be downloaded; says where to get them."""
