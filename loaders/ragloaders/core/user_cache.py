"""Where ragloaders keeps what it caches for a user (mock API tables, push staging folders, judge verdicts) when no
folder is given: `$XDG_CACHE_HOME/ragloaders`, or `~/.cache/ragloaders` (the rule huggingface_hub follows for its
own cache)."""

from __future__ import annotations

import json
import os
import stat
from typing import Any


def user_cache_dir(*parts: str) -> str:
    """The ragloaders cache folder, or `parts` joined under it (e.g. `user_cache_dir("judge")`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ragloaders", *parts)


def read_small_file(path: str, limit: int) -> bytes | None:
    """The bytes of the file at `path`, None when it holds more than `limit`. OSError when there is no file or it is
    not a regular file: a FIFO, a device or a folder put at its name is opened without waiting for a writer, and
    refused."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))  # a terminal is not adopted
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise OSError(f"{path}: not a regular file")
        with os.fdopen(handle, "rb", closefd=False) as f:
            raw = f.read(limit + 1)
    finally:
        os.close(handle)
    return raw if len(raw) <= limit else None


def read_small_json(path: str, limit: int) -> Any:
    """The JSON value of the file at `path`, one that ragloaders wrote and reads back (a check, a record): None when
    it holds more than `limit` bytes, is not JSON or nests deeper than `json` reads. OSError as `read_small_file`."""
    raw = read_small_file(path, limit)
    try:
        return json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):  # (invalid UTF-8 is a ValueError; 4 KB of `[` nest past the limit)
        return None
