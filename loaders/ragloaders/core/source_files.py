"""Where a benchmark's files come from: a folder, a zip, or a verified download."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from . import progress
from .deep_folders import make_folders
from .errors import DownloadError, MissingSourceError, SourceError
from .preview import one_line, preview

_CHUNK = 1 << 20
REFETCH = ("the file was removed: run again to download it anew, or download it yourself and pass its folder with "
           "--data-dir (data_dir= in Python)")
"""What to do after a download failed its size or md5 check."""


class SourceFiles:
    """A benchmark's files, read from a folder or from inside a zip, by path relative to the dataset root."""

    def __init__(self, location: str, *, root: str = ""):
        self.location = os.path.abspath(location)
        self.root = root.strip("/")
        self.is_zip = os.path.isfile(self.location)
        if not self.is_zip and not os.path.isdir(self.location):
            raise MissingSourceError(f"{self.location}: no such folder or zip file")
        self._zip = open_zip(self.location) if self.is_zip else None

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

    def files_in(self, relfolder: str) -> list[str]:
        """The names of the files directly in a folder of the dataset (none when it has no such folder), sorted."""
        if self._zip is not None:
            prefix = self._member(relfolder).rstrip("/") + "/"
            names = (info.filename[len(prefix):] for info in self._zip.infolist()
                     if info.filename.startswith(prefix) and not info.is_dir())
            return sorted(name for name in names if name and "/" not in name)
        folder = self.display(relfolder)
        if not os.path.isdir(folder):
            return []
        return sorted(name for name in os.listdir(folder) if os.path.isfile(os.path.join(folder, name)))

    def require(self, relpath: str) -> None:
        if not self.exists(relpath):
            raise MissingSourceError(f"{self.display(relpath)}: file not found in the dataset's folder or zip")

    def open(self, relpath: str) -> BinaryIO:
        self.require(relpath)
        if self._zip is not None:
            name = self._member(relpath)
            archive, owned = self._watched_zip(name)
            try:
                try:
                    opened = archive.open(name)
                except (*ZIP_MEMBER_ERRORS, RuntimeError) as e:  # (RuntimeError: an encrypted member)
                    raise damaged_member(self.location, name, e) from None
                member = _ZipMember(opened, self.location, name, owned)
            except BaseException:
                for stream in owned:
                    stream.close()
                raise
            return io.BufferedReader(member, _CHUNK)  # type: ignore[return-value]
        return progress.open_watched(self.display(relpath))

    def _watched_zip(self, name: str) -> tuple[zipfile.ZipFile, tuple]:
        """(the zip, ()), or, when a progress line is due for member `name`, (the zip opened again over a file whose
        line counts that member's compressed bytes from its local header's end, where they start; what to close)."""
        assert self._zip is not None
        info = self._zip.getinfo(name)
        if not progress.wanted(info.compress_size):
            return self._zip, ()
        with open(self.location, "rb") as handle:
            handle.seek(info.header_offset)
            header = handle.read(30)
        start = info.header_offset + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(
            header[28:30], "little")
        label = f"{os.path.basename(self.location)}:{name}"
        watched = progress.watched(open(self.location, "rb"), label=label, size=info.compress_size,  # noqa: SIM115
                                   close_stream=True, start=start, threshold=0)  # closed with the member
        try:
            archive = zipfile.ZipFile(watched)
            return archive, (archive, watched)
        except BaseException:
            watched.close()
            raise

    def size(self, relpath: str) -> int:
        if self._zip is not None:
            return self._zip.getinfo(self._member(relpath)).file_size
        return os.path.getsize(self.display(relpath))

    def is_seekable_file(self, relpath: str) -> bool:
        return self._zip is None

    def local_path(self, relpath: str) -> str:
        return self.display(relpath)

    def identity(self, relpaths: list[str]) -> list:
        """What changes when a source file is edited (see file_identity): of the zip, or of each file."""
        if self._zip is not None:
            return [*file_identity(self.location), self.root]
        return [file_identity(self.display(relpath)) for relpath in relpaths]


def file_identity(path: str) -> list:
    """[path, size, modification time, change time (ns), device, inode], or [path, None] for a missing file.

    Size and mtime alone miss an edit that keeps the size and restores the mtime (`touch -r`); the change
    time is set by the kernel on every write or metadata change and cannot be set back by the user, and a
    file replaced by another (rename over it) has a new inode."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return [path, None]
    return [path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_dev, stat.st_ino]


def open_zip(path: str) -> zipfile.ZipFile:
    """A zip archive opened for reading; a damaged or truncated one, one holding two members of one name (which
    of them is the data cannot be told: zipfile reads the last, other tools the first), or a member named outside
    the archive (`..`, an absolute path), raises SourceError naming it."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError) as e:
        raise SourceError(
            path, f"not a readable zip file: truncated or damaged (its central directory cannot be read: "
            f"{one_line(e, 300)}); download it again, or pass the extracted folder as data_dir"
        ) from None
    seen: set[str] = set()
    for info in archive.infolist():
        if info.filename in seen and not info.is_dir():  # (a folder listed twice holds no data)
            archive.close()
            raise SourceError(path, f"the zip holds two or more members named {preview(info.filename)}: which one is "
                                    "the data cannot be told; remove the others, or pass an extracted folder")
        if info.filename.startswith("/") or ".." in info.filename.replace("\\", "/").split("/"):
            archive.close()
            raise SourceError(path, f"zip member {preview(info.filename)} names a path outside the archive (an "
                                    "absolute path or `..`): refused, whatever it holds")
        seen.add(info.filename)
    try:
        _require_every_byte_read(archive, path)
    except BaseException:
        archive.close()
        raise
    return archive


END_RECORD = zipfile.structEndArchive
END_SIGNATURE = zipfile.stringEndArchive


def _require_every_byte_read(archive: zipfile.ZipFile, path: str) -> None:
    """SourceError when bytes of the file at `path` belong to no part of the zip `archive` read from it: bytes before
    its first member (another archive before it, whose members zipfile would pass over in silence, or a
    self-extractor's program) or after its end record and comment (zipfile ignores them too)."""
    first = min((info.header_offset for info in archive.infolist()), default=archive.start_dir)
    if first:
        raise SourceError(path, f"{first:,} bytes before the zip's first member belong to none of its members (another "
                                "archive joined before it, or a program): refused, as its data cannot be told; pass "
                                "the zip alone, or its extracted folder")
    size = os.path.getsize(path)
    end = size - struct.calcsize(END_RECORD) - len(archive.comment)
    with open(path, "rb") as f:
        f.seek(max(end, 0))
        record = f.read(struct.calcsize(END_RECORD))
    if end < 0 or not record.startswith(END_SIGNATURE) or struct.unpack(END_RECORD, record)[-1] != len(archive.comment):
        raise SourceError(path, "bytes after the zip's end record belong to none of its members (another archive or "
                                "data joined after it): refused, as its data cannot be told; pass the zip alone, or "
                                "its extracted folder")


ZIP_MEMBER_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError)
"""What zipfile raises for a member it cannot read: a local header unlike the central directory, an unknown
compression method, bad deflate data, a bad CRC, a member cut short."""


def damaged_member(archive: str, name: str, error: BaseException) -> SourceError:
    """The SourceError naming `archive:name` for zipfile's `error` (its words bounded: they may quote the header's
    name, up to 64 KiB of it)."""
    return SourceError(f"{archive}:{name}", f"damaged zip member ({type(error).__name__}: {one_line(error, 300)})")


class _ZipMember(io.RawIOBase):
    """A zip member's content; a bad CRC, bad deflate data or a cut member raises SourceError naming both."""

    def __init__(self, member: BinaryIO, archive: str, name: str, owned: tuple = ()):
        self.member, self.archive, self.name, self.owned = member, archive, name, owned

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        try:
            return self.member.readinto(buffer)  # type: ignore[attr-defined]
        except ZIP_MEMBER_ERRORS as e:
            raise damaged_member(self.archive, self.name, e) from None

    def close(self) -> None:
        self.member.close()
        for owned in self.owned:
            owned.close()
        super().close()


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


def file_digests(path: str, algorithms: list[str], *, prefix: bytes = b"") -> dict[str, str]:
    """Hex digests of `prefix` + the file's content for each algorithm, in one read of 1 MB blocks."""
    hashers = {name: hashlib.new(name, prefix) for name in algorithms}
    if hashers:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                for hasher in hashers.values():
                    hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def file_digest(path: str, algorithm: str, *, prefix: bytes = b"") -> str:
    """Hex digest of `prefix` + the file's content."""
    return file_digests(path, [algorithm], prefix=prefix)[algorithm]


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
    mirror_env: str | None = None
    """The environment variable that points this benchmark at a mirror (named when the download fails)."""


def verify_md5_once(path: str, expected: str, marker_dir: str) -> None:
    """Check a local file against the md5 the catalogue knows, once per file identity (see file_identity).

    A passing check leaves a small marker in `marker_dir` (never next to the user's file); a mismatch
    raises SourceError naming both checksums."""
    key = hashlib.sha256(json.dumps([file_identity(os.path.abspath(path)), expected]).encode()).hexdigest()[:32]
    marker = os.path.join(marker_dir, f"{key}.md5-verified")
    if os.path.exists(marker):
        return
    actual = md5_of(path)
    if actual != expected:
        raise SourceError(
            path, f"md5 {actual} does not match the official file's md5 {expected}: the file is damaged or is not "
            "the official one (extract it and pass the folder, or download it again)"
        )
    make_folders(marker_dir)
    with open(marker, "w") as f:
        f.write(actual)


def download_verified(dl_manager, download: Download) -> str:
    """Download through the datasets download manager (cached), then check size and md5 once.

    A file that fails the check is deleted so that the next call downloads it again instead of
    taking it as complete. A verified file gets a small marker next to it, so the md5 of a
    multi-GB file is computed once, not on every load.
    """
    try:
        path = dl_manager.download(download.url)
    except SourceError:
        raise
    except Exception as e:  # no network, DNS, refused, HTTP errors, a dropped connection: aiohttp, fsspec, OS errors
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise DownloadError(download.url, download_cause(e), mirror_env=download.mirror_env) from e
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
        raise SourceError(download.url, f"downloaded {stat.st_size} bytes, expected {download.size}; {REFETCH}")
    if download.md5 is not None:
        actual = md5_of(path)
        if actual != download.md5:
            _discard(path)
            raise SourceError(download.url, f"md5 mismatch: expected {download.md5}, got {actual}; {REFETCH}")
    with open(marker, "w") as f:
        json.dump(expected, f)
    return path


def download_cause(error: BaseException) -> str:
    """The innermost useful description of why a download failed, on one line."""
    causes = []
    current: BaseException | None = error
    while current is not None and len(causes) < 4:
        text = " ".join(str(current).split())
        if text and text not in causes:
            causes.append(f"{type(current).__name__}: {text}"[:300])
        current = current.__cause__ or current.__context__
    return "; ".join(causes) or type(error).__name__


def _discard(path: str) -> None:
    for leftover in (path, f"{path}.json", f"{path}.lock"):
        if os.path.exists(leftover):
            os.remove(leftover)
