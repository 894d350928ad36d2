"""Files of the mock API's cache, written durably and checked before they are memory-mapped.

A file is written under a partial name, fsynced, renamed into place and its folder fsynced; then its check
(`<file>.sum`: the file's name, size and xxh3-128 checksum) is written the same way, last. A file is used only when
its check is there and the file has exactly that name, size and checksum (`file_problem`): a crash or a full disk
between the rename and the check, a truncated file, edited bytes, two files swapped with their checks all fail it,
and the caller rebuilds the file, saying so in one line (a warning of the `ragloaders` logger naming the file,
`warn_rebuilt`). The check is not a signature: whoever can write the cache can also write a check that matches a
forged file, which is then mapped as datasets maps its own cache (only a conversion validates a file in full, once:
doing so at every start would cost it the start-up it exists for). `building` serialises the check and
the rebuild of one file across processes (two servers starting on one cache), with an flock on `<file>.lock`.
xxh3 (the `xxhash` package, which `datasets` depends on) reads several GB/s, so checking costs a read of the file
through the page cache: no page is mapped, and resident memory still follows what calls touch.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
from collections.abc import Iterator

import xxhash

from ..core.errors import SourceError
from ..core.user_cache import read_small_json

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock (one server per cache)
    fcntl = None

logger = logging.getLogger("ragloaders.mock_api")
CHECK_SUFFIX = ".sum"
CHECK_FORMAT = "ragloaders-cache-check"
ALGORITHM = "xxh3_128"
READ_CHUNK = 8 << 20
MAX_CHECK_BYTES = 4096
"""A check is a few dozen bytes; a larger file at its name is not ours."""


def checksum(path: str) -> str:
    """The xxh3-128 checksum of the file at `path`, read in chunks."""
    digest = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sync_folder(folder: str) -> None:
    """fsync a folder, so the renames into it survive a crash (a no-op where folders cannot be opened)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def replace_durably(partial: str, target: str) -> None:
    """fsync the finished file `partial`, rename it to `target` and fsync the folder: after a crash `target` is
    either absent or whole."""
    with open(partial, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(partial, target)
    sync_folder(os.path.dirname(target) or ".")


def record_file(path: str) -> None:
    """Write the check of the file at `path` (put in place first): its name, size and checksum, durably."""
    entry = {"format": CHECK_FORMAT, "name": os.path.basename(path), "size": os.path.getsize(path),
             ALGORITHM: checksum(path)}
    partial = f"{path}{CHECK_SUFFIX}.{os.getpid()}.partial"
    try:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(entry, f)
        replace_durably(partial, path + CHECK_SUFFIX)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def require_file_names_free(path: str) -> None:
    """A SourceError naming a folder at the name of the cache file `path` or of its check: a file there that fails
    its check (a FIFO or a symlink included) is replaced, but a folder, which ragloaders never writes there, is left
    as it is."""
    for name in (path, path + CHECK_SUFFIX):
        if os.path.isdir(name) and not os.path.islink(name):
            raise SourceError(name, "a folder is at the name of a file of the mock API's cache, which ragloaders "
                                    "leaves as it is: remove it, or give another cache folder")


def file_problem(path: str) -> str | None:
    """Why the file at `path` may not be used (None: it exists and has the size and checksum its check records)."""
    if not os.path.isfile(path):
        return "not there"
    try:
        entry = read_small_json(path + CHECK_SUFFIX, MAX_CHECK_BYTES)
    except OSError:
        return "no check of its size and checksum (written last) is there"
    if (not isinstance(entry, dict) or entry.get("format") != CHECK_FORMAT or type(entry.get("size")) is not int
            or not isinstance(entry.get(ALGORITHM), str)):
        return f"its check {path}{CHECK_SUFFIX} is not one ragloaders wrote"
    if entry.get("name") != os.path.basename(path):
        return ("its check was written for another file (the two were swapped or renamed)" if "name" in entry else
                "its check, by an older ragloaders, does not name the file")
    size = os.path.getsize(path)
    if size != entry["size"]:
        return f"{size:,} bytes where {entry['size']:,} were written"
    if checksum(path) != entry[ALGORITHM]:
        return "its bytes differ from those written (checksum)"
    return None


FOLDER_CHECK = ".sum"
"""A folder's check, inside it: every file's size and checksum."""


def record_folder(folder: str, name: str) -> None:
    """fsync every file of `folder` (one level, its entries' names only), then write its check inside it (last:
    `name`, the folder's name once it is in place, and each file's size and checksum) and fsync the folder; rename
    the folder into place afterwards."""
    files = {}
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        with open(path, "rb+") as f:
            os.fsync(f.fileno())
        files[entry] = {"size": os.path.getsize(path), ALGORITHM: checksum(path)}
    check = os.path.join(folder, FOLDER_CHECK)
    with open(check, "w", encoding="utf-8") as f:
        json.dump({"format": CHECK_FORMAT, "name": name, "files": files}, f)
        f.flush()
        os.fsync(f.fileno())
    sync_folder(folder)


def folder_files(folder: str) -> tuple[list[str] | None, str]:
    """(the names of the files of `folder`, "") when each has the size and checksum its check records, else
    (None, why not)."""
    if not os.path.isdir(folder):
        return None, "not there"
    try:
        entry = read_small_json(os.path.join(folder, FOLDER_CHECK), MAX_CHECK_BYTES * 16)
    except OSError:
        return None, "no check of its files' sizes and checksums (written last) is there"
    files = entry.get("files") if isinstance(entry, dict) and entry.get("format") == CHECK_FORMAT else None
    if not isinstance(files, dict) or not all(
            isinstance(name, str) and os.sep not in name and name not in ("", ".", "..", FOLDER_CHECK)
            and isinstance(item, dict) and type(item.get("size")) is int and isinstance(item.get(ALGORITHM), str)
            for name, item in files.items()):
        return None, "its check is not one ragloaders wrote"
    if entry.get("name") != os.path.basename(os.path.normpath(folder)):
        return None, ("its check was written for another folder (the two were swapped or renamed)" if "name" in entry
                      else "its check, by an older ragloaders, does not name the folder")
    for name, item in files.items():
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            return None, f"{name} is missing"
        if os.path.getsize(path) != item["size"]:
            return None, f"{name} has {os.path.getsize(path):,} bytes where {item['size']:,} were written"
        if checksum(path) != item[ALGORITHM]:
            return None, f"the bytes of {name} differ from those written (checksum)"
    return sorted(files), ""


def warn_rebuilt(path: str, why: str) -> None:
    """The one line saying a cache file is rebuilt, and why."""
    logger.warning("%s: this file of the mock API's cache cannot be used (%s); building it again", path, why)


@contextlib.contextmanager
def building(path: str) -> Iterator[None]:
    """Hold the lock of the cache file `path` (flock on `<path>.lock`): one process checks or builds it at a time.
    Holding it, the partial and stale files or folders a killed process left for `path` (`<path>.<pid>.partial`,
    `<path>.<pid>.<thread>.partial`, `<path>.sum.<pid>.partial`, `<path>.<pid>.stale`) are removed: no live process
    is writing them. A symlink at the lock's name (this cache's own name; never followed) is removed, not its
    target."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock = path + ".lock"
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        handle = os.open(lock, flags, 0o644)
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        os.unlink(lock)
        handle = os.open(lock, flags, 0o644)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        folder, name = os.path.split(path)
        leftover = re.compile(re.escape(name) + r"(?:\.sum)?\.\d+(?:\.\d+)?\.(?:partial|stale)")
        for entry in os.listdir(folder or "."):
            if not leftover.fullmatch(entry):
                continue
            left = os.path.join(folder, entry)
            if os.path.isdir(left) and not os.path.islink(left):
                shutil.rmtree(left, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(left)
        yield
    finally:
        os.close(handle)
