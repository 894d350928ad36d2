"""`os.walk` and `os.makedirs` at any depth: Python 3.11's recurse once per folder level, so a user's folder nested
about 1,000 deep raised RecursionError out of any walk of it or copy of its tree (3.12's walk no longer recurses)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator

Walked = tuple[str, list[str], list[str]]


def walk(top: str, topdown: bool = True) -> Iterator[Walked]:
    """(folder, its folder names, its other names) for `top` and every folder under it, as `os.walk(top, topdown)`
    gives them: in listing order, depth first; a symlink to a folder listed among the folders but never entered; a
    folder that cannot be listed skipped. Top-down, pruning the list of folder names in place keeps them unvisited.
    A stack, not recursion."""
    stack: list[str | Walked] = [top]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):  # (bottom-up: a folder whose subfolders were all given)
            yield item
            continue
        try:
            with os.scandir(item) as scan:
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
            yield item, folders, others
        else:
            stack.append((item, folders, others))
        stack.extend(path for name in reversed(folders) if not os.path.islink(path := os.path.join(item, name)))


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
