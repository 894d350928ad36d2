"""Where a benchmark's files come from: a folder, a zip, or a verified download."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import zipfile
from dataclasses import dataclass
from typing import BinaryIO

from .errors import MissingSourceError, SourceError

_CHUNK = 1 << 20


class SourceFiles:
    """A benchmark's files, read from a folder or from inside a zip, by path relative to the dataset root."""

    def __init__(self, location: str, *, root: str = ""):
        self.location = os.path.abspath(location)
        self.root = root.strip("/")
        self.is_zip = zipfile.is_zipfile(self.location) if os.path.isfile(self.location) else False
        if not self.is_zip and not os.path.isdir(self.location):
            raise MissingSourceError(f"{self.location}: no such folder or zip file")
        self._zip = zipfile.ZipFile(self.location) if self.is_zip else None

    def __getstate__(self):
        return {"location": self.location, "root": self.root}

    def __setstate__(self, state):
        self.__init__(state["location"], root=state["root"])

    def _member(self, relpath: str) -> str:
        return f"{self.root}/{relpath}" if self.root else relpath

    def display(self, relpath: str) -> str:
        """How a file is named in errors: the real path, or `archive.zip:member`."""
        if self._zip is not None:
            return f"{self.location}:{self._member(relpath)}"
        return os.path.join(self.location, self._member(relpath))

    def exists(self, relpath: str) -> bool:
        if self._zip is not None:
            try:
                self._zip.getinfo(self._member(relpath))
                return True
            except KeyError:
                return False
        return os.path.isfile(self.display(relpath))

    def require(self, relpath: str) -> None:
        if not self.exists(relpath):
            raise MissingSourceError(f"{self.display(relpath)}: file not found in the dataset's folder or zip")

    def open(self, relpath: str) -> BinaryIO:
        self.require(relpath)
        if self._zip is not None:
            return self._zip.open(self._member(relpath))
        return open(self.display(relpath), "rb")

    def size(self, relpath: str) -> int:
        if self._zip is not None:
            return self._zip.getinfo(self._member(relpath)).file_size
        return os.path.getsize(self.display(relpath))

    def is_seekable_file(self, relpath: str) -> bool:
        return self._zip is None

    def local_path(self, relpath: str) -> str:
        return self.display(relpath)

    def identity(self, relpaths: list[str]) -> list:
        """What changes when a source file is edited: size and modification time (nanoseconds)."""
        if self._zip is not None:
            return [*file_identity(self.location), self.root]
        return [file_identity(self.display(relpath)) for relpath in relpaths]


def file_identity(path: str) -> list:
    """[path, size, modification time in nanoseconds], or [path, None] for a file that is not there."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return [path, None]
    return [path, stat.st_size, stat.st_mtime_ns]


class RangeReader(io.RawIOBase):
    """Bytes [start, end) of a file as a stream, so that pyarrow's readers parse one shard of a file."""

    def __init__(self, path: str, start: int, end: int):
        self._file = open(path, "rb")
        self._file.seek(start)
        self._left = end - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._left <= 0:
            return 0
        view = memoryview(buffer)[: min(len(buffer), self._left)]
        n = self._file.readinto(view)
        self._left -= n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def line_aligned_ranges(path: str, target_bytes: int) -> list[tuple[int, int]]:
    """Cut a file into byte ranges of about `target_bytes` that start and end at line boundaries."""
    size = os.path.getsize(path)
    starts = [0]
    with open(path, "rb") as f:
        while starts[-1] + target_bytes < size:
            f.seek(starts[-1] + target_bytes)
            f.readline()
            position = f.tell()
            if position >= size:
                break
            starts.append(position)
    return [(start, end) for start, end in zip(starts, starts[1:] + [size])]


def file_digest(path: str, algorithm: str, *, prefix: bytes = b"") -> str:
    """Hex digest of `prefix` + the file's content, read in 1 MB blocks."""
    digest = hashlib.new(algorithm, prefix)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def md5_of(path: str) -> str:
    return file_digest(path, "md5")


def mirror_base(default: str, env: str) -> str:
    """A download base URL: `default`, or the mirror the environment variable `env` names."""
    return os.environ.get(env, default).rstrip("/")


@dataclass(frozen=True)
class Download:
    url: str
    md5: str | None = None
    size: int | None = None


def download_verified(dl_manager, download: Download) -> str:
    """Download through the datasets download manager (cached), then check size and md5 once.

    A file that fails the check is deleted so that the next call downloads it again instead of
    taking it as complete. A verified file gets a small marker next to it, so the md5 of a
    multi-GB file is computed once, not on every load.
    """
    try:
        path = dl_manager.download(download.url)
    except (SourceError, FileNotFoundError):
        raise
    except Exception as e:  # a dropped connection surfaces as aiohttp, fsspec or OS errors
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise SourceError(
            download.url, f"download failed ({e}); the partial file is not used, and the next attempt restarts it"
        ) from e
    stat = os.stat(path)
    marker = f"{path}.ragloaders-verified"
    expected = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "md5": download.md5}
    try:
        with open(marker) as f:
            if json.load(f) == expected:
                return path
    except (OSError, ValueError):
        pass
    if download.size is not None and stat.st_size != download.size:
        _discard(path)
        raise SourceError(download.url, f"downloaded {stat.st_size} bytes, expected {download.size}")
    if download.md5 is not None:
        actual = md5_of(path)
        if actual != download.md5:
            _discard(path)
            raise SourceError(download.url, f"md5 mismatch: expected {download.md5}, got {actual}")
    with open(marker, "w") as f:
        json.dump(expected, f)
    return path


def _discard(path: str) -> None:
    for leftover in (path, f"{path}.json", f"{path}.lock"):
        if os.path.exists(leftover):
            os.remove(leftover)
