"""Where ragloaders may write: the one rule for every command that writes a folder or a file.

`build --out` and `push --staging-dir` (folders, publish/output_folder.py decides then whose an existing one is)
and `bm25 --out` (a run file) all ask `check_output`; it lives here, below both publish and eval, so that every
writer shares it. A file is written beside its target under a temporary name (`partial_file`) and takes its name only
when complete.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Literal, TypeVar

from .deep_folders import real_path
from .errors import UsageError
from .log import warn

Written = TypeVar("Written")

MANIFEST = ".ragloaders-manifest.json"
"""The file in every folder ragloaders builds that lists the files it wrote (publish/manifest.py writes and reads it;
`eval` reports its sha256 as the digest of a built folder it scores)."""


class OutputFolderError(UsageError):
    """A target folder (or file) that ragloaders will not write: names it and what to do."""


def is_inside(path: str, folder: str) -> bool:
    """path is folder or lies inside it (both resolved)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_target(out: str, *, data_dir: str | None = None, cache_dir: str | None = None,
                 option: str = "--out") -> str:
    """The resolved target folder, or an OutputFolderError saying why ragloaders will not write there."""
    return check_output(out, kind="folder", data_dir=data_dir, cache_dir=cache_dir, option=option)


def check_output(out: str | os.PathLike, *, kind: Literal["folder", "file"], data_dir: str | None = None,
                 cache_dir: str | None = None, option: str = "--out", source: str | None = None) -> str:
    """May ragloaders write `out`? The one answer for every command that writes (`build --out`,
    `push --staging-dir`, `bm25 --out`): the resolved path, or an OutputFolderError saying why not.

    Both kinds: not the filesystem root, the home folder or above it, the current folder or above it, nor a path
    that contains or lies inside the data dir or the cache dir (datasets' default cache without one), nor a name
    ending in '.' or '..', nor one that contains or lies inside `source` when it is a local folder (the built
    folder being read: a file named like its data would become part of it). A folder (`kind="folder"`) may exist
    only as a folder (OutputFolder then decides whose it is). A file (`kind="file"`) must not exist at all (a run
    file has no manifest, so ragloaders cannot tell one it wrote from the user's, and writes only new files), and
    its folder must (checked before any work, not when the file is written)."""
    if not out or not str(out).strip():
        raise OutputFolderError(f"{option} is empty")
    given = os.fspath(out)
    target = real_path(os.path.expanduser(given))
    where = f"{option} {given}" + (f" (resolved to {target})" if target != given else "")
    if os.path.dirname(target) == target:
        raise OutputFolderError(f"{where} is the filesystem root; choose a new {kind}")
    home = real_path(os.path.expanduser("~"))
    if is_inside(home, target):
        raise OutputFolderError(f"{where} is the home folder or a folder above it; choose a new {kind}")
    if is_inside(real_path(os.getcwd()), target):
        raise OutputFolderError(f"{where} is the current folder or a folder above it; choose a new {kind}")
    for label, folder in _protected(data_dir, cache_dir, source):
        if is_inside(target, folder) or is_inside(folder, target):
            raise OutputFolderError(f"{where} contains or lies inside the {label} {folder}; choose a {kind} "
                                    "outside it")
    if os.path.basename(given.rstrip("/" + os.sep)) in (".", ".."):
        raise OutputFolderError(f"{where}: name the {kind} itself, not '.' or '..' (which name a folder that "
                                "holds other things)")
    if kind == "file":
        if os.path.lexists(target) or os.path.lexists(given):
            raise OutputFolderError(f"{where} exists; ragloaders writes only a new file there (it cannot tell a "
                                    "file it wrote from yours): choose a new name, or delete the file yourself")
        if not os.path.isdir(os.path.dirname(target)):
            raise OutputFolderError(f"{where}: the folder {os.path.dirname(target)} does not exist; create it first")
    elif os.path.lexists(target) and not os.path.isdir(target):
        raise OutputFolderError(f"{where} exists and is not a folder")
    return target


PARTIAL_SUFFIX = ".incomplete"
MKSTEMP_PART = r"\.[a-z0-9_]{8}"
"""The random part mkstemp puts between a partial file's prefix and suffix (its 8 name characters)."""


def partial_file(target: str) -> tuple[int, str]:
    """(descriptor, path) of a new file `NAME.XXXXXXXX.incomplete` beside `target`, to write it into before it
    takes its name, locked (flock) for as long as the descriptor is open; its mode is what `open()` would give a
    new file (0666 less the umask: 0644 under 0022). Such files of an earlier write of the same target that was
    killed (no longer locked) are named on stderr in one line and left as they are: a name alone does not prove a
    file is ragloaders' own. A partial file another run is writing now is not named."""
    folder, name = os.path.split(os.path.abspath(target))
    own = re.compile(re.escape(name) + MKSTEMP_PART + re.escape(PARTIAL_SUFFIX))
    try:
        leftovers = sorted(entry for entry in os.listdir(folder)
                           if own.fullmatch(entry) and not being_written(os.path.join(folder, entry)))
    except OSError:  # a folder that cannot be listed: mkstemp says why it cannot write there
        leftovers = []
    if leftovers:
        warn(f"{len(leftovers)} unfinished file(s) of an interrupted earlier write of {target}, left as they are "
             f"(delete them yourself): {', '.join(os.path.join(folder, e) for e in leftovers)}")
    handle, path = tempfile.mkstemp(prefix=name + ".", suffix=PARTIAL_SUFFIX, dir=folder)
    lock_if_possible(handle)
    give_new_file_mode(handle)
    return handle, path


def replace_with_text(target: str, text: str, *, prefix: str) -> None:
    """Write `text` (UTF-8) to `target` in one step: into a new file of its folder named from `prefix`, renamed over
    it, so a reader sees the old file or the new one, never part of one. Raises OSError; the new file is removed
    if it could not be renamed."""
    handle, temporary = tempfile.mkstemp(prefix=prefix, dir=os.path.dirname(target))
    try:
        give_new_file_mode(handle)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def lock_if_possible(handle: int) -> None:
    """An exclusive flock on the open file `handle`, held until it is closed; nothing where the filesystem has no
    locks (NFS without lockd, some FUSE mounts): its partial files then look abandoned to a run beside it."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass


def being_written(path: str) -> bool:
    """Whether another process holds the lock `partial_file` takes on `path` (a regular file; anything else is
    never waited on)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return False
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def remove_abandoned(folder: str, ours: Callable[[str], bool], older_than: float) -> None:
    """Delete the temporary files a killed process of ragloaders left in `folder` (one of its own caches): regular
    files whose name `ours` accepts, unchanged for `older_than` seconds, that no process holds locked
    (`being_written`); anything else is left as it is."""
    try:
        entries = list(os.scandir(folder or "."))
    except OSError:
        return
    for entry in entries:
        try:
            if (ours(entry.name) and entry.is_file(follow_symlinks=False)
                    and entry.stat(follow_symlinks=False).st_mtime < time.time() - older_than
                    and not being_written(entry.path)):
                os.unlink(entry.path)
        except OSError:
            continue


def current_umask() -> int:
    """The process's umask: from /proc/self/status where the kernel shows it, else read by setting it and putting it
    back (for that instant another thread's new file would get the widest mode)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask


def give_new_file_mode(handle: int) -> None:
    """Give the file open as `handle`, made by mkstemp (mode 0600), the mode `open()` gives a new file: 0666 less
    the umask (0644 under 0022), so a cache shared by a group is readable by it."""
    os.fchmod(handle, 0o666 & ~current_umask())


def put_in_place(partial: str, path: str) -> bool:
    """Give the finished file its name, never over a file that appeared meanwhile (FileExistsError): a hard link
    fails where a rename would replace; where the filesystem has no hard links, a rename after a last check.
    Returns whether the partial name is still there (after a link)."""
    appeared = (f"{path} appeared while it was written (another run writing it?); it is left as it is, and this "
                "run's output is not kept")
    try:
        os.link(partial, path)
        return True
    except FileExistsError:
        raise FileExistsError(appeared) from None
    except OSError:
        if os.path.lexists(path):
            raise FileExistsError(appeared) from None
        os.rename(partial, path)
        return False


def refuse_existing(path: str, option: str) -> None:
    """FileExistsError unless nothing is at `path` yet: `option` writes a new file and replaces nothing."""
    if os.path.lexists(path):
        raise FileExistsError(f"{path}: already exists; {option} writes a new file and replaces nothing")


def write_new_file(target: str, write: Callable[[str], Written]) -> Written:
    """`write(partial)` fills a `partial_file` beside `target`, which then takes the name `target` (`put_in_place`:
    never over a file that appeared meanwhile). The partial file is removed whatever happens; returns what `write`
    returned."""
    handle, partial = partial_file(target)
    try:
        written = write(partial)
        os.fsync(handle)  # the data on disk before the name points at it (a power cut leaves no whole-looking name)
        put_in_place(partial, target)
    finally:
        try:
            if os.path.lexists(partial):
                os.unlink(partial)
        finally:
            os.close(handle)  # the lock goes with it
    return written


def _protected(data_dir: str | None, cache_dir: str | None, source: str | None = None) -> Iterator[tuple[str, str]]:
    if source and os.path.isdir(os.path.expanduser(source)):
        yield "source folder", real_path(os.path.expanduser(source))
    if data_dir:
        yield "data dir", real_path(os.path.expanduser(data_dir))
    if cache_dir:
        yield "cache dir", real_path(os.path.expanduser(cache_dir))
    else:
        import datasets.config

        yield "datasets cache", real_path(str(datasets.config.HF_DATASETS_CACHE))
