"""The lock on a build's target, and the other running builds whose targets contain it or lie inside it.

- **One build per target.** A lock (flock on the sibling `.<name>.ragloaders-lock`, opened with O_NOFOLLOW and
  refused unless a regular file with one link, removed on release only if it is still the file locked) is held
  from the first check to the end, so a second build of the same target waits for the first (it says so once on
  stderr) and then builds and swaps in turn.
- **Who else.** A build whose target contains, or lies inside, the target of another running build (its lock
  file, beside a folder above or anywhere inside, is held) is refused in one line (output_folder.py checks before
  and after its own lock is taken, so of two racing builds one sees the other). Symlinks and other filesystems are
  not entered in the search.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

from ..core.deep_folders import walk
from ..core.log import warn
from ..core.output_target import OutputFolderError
from .user_metadata import same_device

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock's msvcrt lock instead
    fcntl = None

LOCK_TAG = ".ragloaders-lock"


class TargetLock:
    """An exclusive lock on a target, held through a sibling lock file that is removed on release.

    A waiter that obtains the lock on a file another holder already removed (and someone re-created) tries
    again, so removing the file on release never lets two holders in at once."""

    def __init__(self, target: str):
        self.path = lock_path(target)
        self.target = target
        self.fd: int | None = None
        self._fallback = None

    def acquire(self) -> None:
        if fcntl is None:  # pragma: no cover
            import filelock

            self._fallback = filelock.FileLock(self.path)
            self._fallback.acquire()
            return
        told = False
        while True:
            fd = _open_lock(self.path, os.O_RDWR | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not told:
                    warn(f"another ragloaders build is writing {self.target}; waiting for it to finish")
                    told = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.path.samestat(os.fstat(fd), os.lstat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return
            os.close(fd)

    def release(self) -> None:
        if self._fallback is not None:  # pragma: no cover
            self._fallback.release()
            return
        if self.fd is not None:
            try:
                if os.path.samestat(os.fstat(self.fd), os.lstat(self.path)):  # never a file put in its place
                    os.unlink(self.path)
            except FileNotFoundError:
                pass
            os.close(self.fd)
            self.fd = None


def _open_lock(path: str, flags: int) -> int:
    """Open a lock file without following a symlink (O_NOFOLLOW) or blocking on a FIFO: a lock file must be a
    regular file; anything else planted there is refused, never written through."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):
            raise OutputFolderError(f"{path} is a symlink where ragloaders keeps its lock file; it does not follow "
                                    "it: remove the symlink and run again") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        raise OutputFolderError(f"{path} is not a file ragloaders made as its lock file (not a regular file, or a "
                                "hard link to another file); remove it and run again")
    return fd


def lock_path(target: str) -> str:
    """The lock file of a target: the hidden sibling `.<name>.ragloaders-lock`."""
    return os.path.join(os.path.dirname(target), "." + os.path.basename(target) + LOCK_TAG)


def _held(path: str) -> bool:
    """A lock file some running ragloaders build holds (a shared probe that does not wait)."""
    if fcntl is None:  # pragma: no cover
        return False
    try:
        fd = _open_lock(path, os.O_RDONLY)
    except (OSError, OutputFolderError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def running_builds_around(target: str) -> Iterator[tuple[str, str]]:
    """Other running builds whose target contains `target` ("contains") or lies inside it ("lies inside"): found
    by their held lock files beside each folder above `target` and anywhere inside it (symlinks and other
    filesystems are not entered)."""
    folder = target
    while os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        if os.path.dirname(folder) != folder and _held(lock_path(folder)):
            yield folder, "contains"
    try:  # a build of this same target may be swapping it right now (this check runs before the lock too)
        info = os.lstat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    device = info.st_dev
    for root, folders, files in walk(target):
        folders[:] = [f for f in folders if same_device(os.path.join(root, f), device)]
        for name in files:
            if name.startswith(".") and name.endswith(LOCK_TAG) and _held(os.path.join(root, name)):
                yield os.path.join(root, name[1:-len(LOCK_TAG)]), "lies inside"
