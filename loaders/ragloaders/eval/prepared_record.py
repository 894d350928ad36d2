"""What `eval` read of a benchmark path, recorded so that the next eval reads it again with pyarrow alone.

Scoring a benchmark path reads three configs' prepared splits (qrels, queries, corpus) and lists the source files of
its configs. Through `load` that costs ~1 s before any row is read (importing `datasets`, making each builder); a
1M-line run is scored in about as long. So the first eval records, per config, the Arrow files `datasets` prepared
for each split, and the identity (`file_identity`: size, times, device, inode) of each of them and of what they were
built from: each source file the config reads, the folder holding it and `data_dir`. A later eval with the same
ragloaders code, path, `data_dir` and `cache_dir` reads the Arrow files itself when every recorded identity still
holds. Anything else (a file edited, replaced or removed, one added to a watched folder, a cache rebuilt, other code)
and the record is not used: the config is loaded through `load` again and recorded anew.

A record is a JSON file in `user_cache_dir("eval")` named by a digest of what it is for, written whole (rename) and
read back at most RECORD_LIMIT bytes; one that is not exactly what `_write` wrote (its digest, its shape), or whose
Arrow files hold another schema or row count, is not used (never an error: the slow path gives the same rows). A
record is trusted as far as the prepared cache it points at: whoever can write the user's cache folders can change
either."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..core.code_version import code_version
from ..core.deep_folders import make_folders
from ..core.output_target import remove_abandoned, replace_with_text
from ..core.source_files import file_identity
from ..core.user_cache import read_small_json, user_cache_dir

RECORD_LIMIT = 1 << 20
"""Bytes of a record read back, at most (a record lists a few dozen files)."""


def _record_key(path: str, config: str, data_dir: str | None, cache_dir: str | None) -> str:
    """What a record is for: the code, the path, the config and the folders, as one string (its file is named by a
    digest of it, and its body holds it, so that a record copied over another's file is not used)."""
    where = [os.path.abspath(os.path.expanduser(folder)) if folder else None for folder in (data_dir, cache_dir)]
    return json.dumps([code_version(), path, config, *where])


def _record_path(path: str, config: str, data_dir: str | None, cache_dir: str | None) -> str:
    key = _record_key(path, config, data_dir, cache_dir)
    return user_cache_dir("eval", hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def source_identities(sources: Iterable[str], data_dir: str | None) -> list[list]:
    """The identity of each source file, of each folder holding one, and of `data_dir`: what a record watches.
    Taken before a config is loaded and given to `record_splits`, so that a source changed while it was read
    leaves no record."""
    files = list(dict.fromkeys(os.path.abspath(file) for file in sources))
    folders = dict.fromkeys(os.path.dirname(file) for file in files)
    if data_dir:
        folders[os.path.abspath(os.path.expanduser(data_dir))] = None
    return [file_identity(file) for file in [*files, *folders]]


def _schema_of(table: pa.Table) -> list[list[str]]:
    return [[field.name, str(field.type)] for field in table.schema]


def record_splits(path: str, config: str, splits: Mapping[str, tuple[list[str] | None, pa.Table]],
                  sources: Iterable[str], before: list[list], *, data_dir: str | None, cache_dir: str | None) -> None:
    """Record a config's splits ({split: (the Arrow files holding exactly its rows, or None; its table)}) and the
    `sources` it was built from, whose `source_identities` were `before` when the config was loaded. A split not
    read from exactly its files (None) leaves the config unrecorded, and so do a source changed since `before`
    (the rows may be the old file's) and a cache folder that cannot be written (eval only stays slower)."""
    entries = {}
    for name, (files, table) in splits.items():
        if not files:
            return
        entries[name] = {"files": [file_identity(file) for file in files], "rows": table.num_rows,
                         "schema": _schema_of(table)}
    _write(path, config, {"splits": entries}, sources, data_dir=data_dir, cache_dir=cache_dir, before=before)


def recorded_splits(path: str, config: str, *, data_dir: str | None, cache_dir: str | None
                    ) -> dict[str, pa.Table] | None:
    """{split: table} of a recorded config, memory-mapped from its Arrow files; None when there is no record or
    anything recorded no longer holds."""
    content = _read(path, config, data_dir=data_dir, cache_dir=cache_dir)
    if content is None:
        return None
    try:
        splits = {}
        for name, entry in content["splits"].items():
            if not isinstance(name, str) or not _holds(entry["files"]):
                return None
            table = pa.concat_tables([pa.ipc.open_stream(pa.memory_map(identity[0])).read_all()
                                      for identity in entry["files"]])
            if table.num_rows != entry["rows"] or _schema_of(table) != entry["schema"]:
                return None
            splits[name] = table
        return splits or None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, pa.ArrowException):
        return None


SOURCES = "*"
"""The record of a path's source files (every config's), beside its configs' records."""


def record_sources(path: str, sources: Iterable[str], *, data_dir: str | None, cache_dir: str | None) -> None:
    """Record the source files that the configs of `path` read, in order."""
    _write(path, SOURCES, {}, sources, data_dir=data_dir, cache_dir=cache_dir)


def recorded_sources(path: str, *, data_dir: str | None, cache_dir: str | None) -> list[str] | None:
    """The source files `record_sources` recorded, while every one of them (and its folder) is as it was."""
    content = _read(path, SOURCES, data_dir=data_dir, cache_dir=cache_dir)
    return None if content is None else content["sources"]


def _write(path: str, config: str, content: dict, sources: Iterable[str], *, data_dir: str | None,
           cache_dir: str | None, before: list[list] | None = None) -> None:
    files = list(dict.fromkeys(os.path.abspath(file) for file in sources))
    watched = source_identities(files, data_dir)
    key = _record_key(path, config, data_dir, cache_dir)
    body = {**content, "for": key, "sources": files, "watched": watched}
    text = json.dumps({**body, "digest": _digest(body)})
    if not watched or (before is not None and watched != before) or len(text) > RECORD_LIMIT:
        return
    target = _record_path(path, config, data_dir, cache_dir)
    try:
        make_folders(os.path.dirname(target))
        remove_abandoned(os.path.dirname(target), lambda name: name.startswith(TEMPORARY_PREFIX), ABANDONED_AFTER)
        replace_with_text(target, text, prefix=TEMPORARY_PREFIX)
    except OSError:
        return


TEMPORARY_PREFIX = ".record-"
ABANDONED_AFTER = 3600.0
"""Seconds after which a temporary record file is one a killed eval left (a write takes milliseconds)."""


def _read(path: str, config: str, *, data_dir: str | None, cache_dir: str | None) -> dict | None:
    """A record for this path, config and folders whose watched files and folders are all as recorded, checked to
    be of the shape `_write` gives; None otherwise."""
    key = _record_key(path, config, data_dir, cache_dir)
    try:
        content = read_small_json(_record_path(path, config, data_dir, cache_dir), RECORD_LIMIT)
    except OSError:
        return None
    if not (isinstance(content, dict) and content.pop("digest", None) == _digest(content)
            and content.get("for") == key
            and isinstance(content.get("splits", {}), dict)
            and isinstance(sources := content.get("sources"), list) and all(isinstance(s, str) for s in sources)
            and _holds(content.get("watched"))):
        return None
    return content


def _digest(body: dict) -> str:
    """The sha256 of a record's body: a record damaged on disk (a torn or altered byte) is not used."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _holds(identities: Any) -> bool:
    """Whether each recorded [path, ...] identity is the file's now (a record lists at least one)."""
    return (isinstance(identities, list) and bool(identities)
            and all(isinstance(identity, list) and identity and isinstance(identity[0], str)
                    and file_identity(identity[0]) == identity for identity in identities))
