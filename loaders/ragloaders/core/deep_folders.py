"""`os.walk`, `os.makedirs`, `shutil.rmtree` and `os.path.realpath` at any depth: Python 3.11's recurse once per
folder level (or symlink), so a user's folder nested about 1,000 deep raised RecursionError out of any walk of it,
copy of its tree or removal of that copy (3.12's walk no longer recurses; the others still do)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

Walked = tuple[str, list[str], list[str]]


def walk(top: str, topdown: bool = True) -> Iterator[Walked]:
    """(folder, its folder names, its other names) for `top` and every folder under it, as `os.walk(top, topdown)`
    gives them: in listing order, depth first; a symlink to a folder listed among the folders but never entered
    (checked just before it would be entered); a folder that cannot be listed skipped. Top-down, pruning the list of
    folder names in place keeps them unvisited. A stack, not recursion."""
    stack: list[tuple[str, bool] | Walked] = [(os.fspath(top), True)]
    while stack:
        item = stack.pop()
        if len(item) == 3:  # (bottom-up: a folder whose subfolders were all given)
            yield item
            continue
        folder, is_top = item
        if not is_top and os.path.islink(folder):
            continue
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue
        folders, others = [], []
        for entry in entries:
            try:
                is_folder = entry.is_dir()
            except OSError:
                is_folder = False
            (folders if is_folder else others).append(entry.name)
        if topdown:
            yield folder, folders, others
        else:
            stack.append((folder, folders, others))
        stack.extend((os.path.join(folder, name), False) for name in reversed(folders))


def make_folders(path: str) -> None:
    """`os.makedirs(path, exist_ok=True)`, a loop, not recursion: every missing folder of `path` is made, from the
    outermost (NotADirectoryError if one of them is a file); FileExistsError if `path` is something other than a
    folder."""
    missing, target = [], path
    while not os.path.exists(path) and (parent := os.path.dirname(path)) != path:
        missing.append(path)
        path = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
    if not os.path.isdir(target):
        raise FileExistsError(errno.EEXIST, "exists and is not a folder", target)


def remove_tree(top: str, ignore_errors: bool = False) -> None:
    """`shutil.rmtree(top, ignore_errors)` as a loop: every entry under the folder `top`, then `top`. A symlink is
    removed, never followed: each folder is checked to be one (`lstat`) just before it is listed. Without
    `ignore_errors`, the first OSError is raised (what is left stays)."""
    stack: list[tuple[str, bool]] = [(top, False)]
    while stack:
        path, emptied = stack.pop()
        try:
            if emptied:
                os.rmdir(path)
            elif not stat.S_ISDIR(os.lstat(path).st_mode):
                os.unlink(path)
            else:
                stack.append((path, True))
                with os.scandir(path) as scan:
                    for entry in scan:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, False))
                        else:
                            os.unlink(entry.path)
        except OSError:
            if not ignore_errors:
                raise


def real_path(path: str) -> str:
    """`os.path.realpath(path)`; a chain of symlinks too long for it (Python 3.11's recurses once per link: a
    RecursionError) is the OSError the system gives for any chain over 40 links (ELOOP)."""
    try:
        return os.path.realpath(path)
    except RecursionError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path) from None
