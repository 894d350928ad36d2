"""Indexes over the memory-mapped tables, each built on its first use and kept in the cache beside the tables.

A `Store` is a folder of named entries, each a set of arrays saved as numpy (`.npy`, memory-mapped when loaded),
Arrow (`.arrow`, memory-mapped) or JSON: a later start maps them instead of rebuilding, and resident memory
follows the pages a call touches. `KeyIndex` finds a key's rows by binary search over a sorted order of a column
(no Python dict of every key).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.deep_folders import make_folders
from .cache_files import FOLDER_CHECK, building, folder_files, record_folder, sync_folder, warn_rebuilt


class Store:
    """Named entries of arrays in `folder`: `get(name, build)` loads an entry, building and saving it first if new
    (or if its files fail their check: see py)."""

    def __init__(self, folder: str):
        self.folder = folder
        make_folders(folder)

    def get(self, name: str, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        target = os.path.join(self.folder, name)
        with building(target):
            files, problem = folder_files(target)
            if files is None:
                if os.path.lexists(target):
                    warn_rebuilt(target, problem)
                files = self._save(target, build())
        return {entry.rsplit(".", 1)[0]: _load(os.path.join(target, entry)) for entry in files}

    def _save(self, target: str, values: dict[str, Any]) -> list[str]:
        """Write the entry `target` whole (its files and their check, fsynced) under a partial name, then rename it
        in place of any old one (under the entry's lock, so no other process is writing it)."""
        partial = f"{target}.{os.getpid()}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        for key, value in values.items():
            _save(os.path.join(partial, key), value)
        record_folder(partial, os.path.basename(target))
        if os.path.lexists(target):  # one that failed its check: our own cache, replaced
            stale = f"{target}.{os.getpid()}.stale"
            os.rename(target, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(partial, target)
        sync_folder(self.folder)
        return sorted(name for name in os.listdir(target) if name != FOLDER_CHECK)


def _save(path: str, value: Any) -> None:
    if isinstance(value, np.ndarray):
        np.save(path + ".npy", value, allow_pickle=False)
    elif isinstance(value, (pa.Array, pa.ChunkedArray)):
        table = pa.table({"v": value})
        with pa.ipc.new_file(path + ".arrow", table.schema) as writer:
            writer.write_table(table)
    else:
        with open(path + ".json", "w", encoding="utf-8") as f:
            json.dump(value, f)


def _load(path: str) -> Any:
    if path.endswith(".npy"):
        return np.load(path, mmap_mode="r", allow_pickle=False)
    if path.endswith(".arrow"):
        return pa.ipc.open_file(pa.memory_map(path)).read_all().column("v")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def sort_order(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Row numbers in order of value (stable: equal values in row order), nulls last."""
    return np.asarray(pc.array_sort_indices(values, null_placement="at_end"), dtype=np.int64)


class KeyIndex:
    """The rows holding a value of one column, by binary search over `order` (sort_order of the column)."""

    def __init__(self, values: pa.ChunkedArray | pa.Array, order: np.ndarray):
        self.values, self.order = values, order
        self.count = len(values) - values.null_count
        self.kind = str if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else int

    def _at(self, position: int) -> Any:
        return self.values[int(self.order[position])].as_py()

    def rows(self, key: Any) -> np.ndarray:
        """The rows holding `key`, in row order (none for a key of another type)."""
        if type(key) is not self.kind:
            return self.order[:0]
        low, high = 0, self.count
        while low < high:
            middle = (low + high) // 2
            if self._at(middle) < key:
                low = middle + 1
            else:
                high = middle
        first, high = low, self.count
        while low < high:
            middle = (low + high) // 2
            if self._at(middle) <= key:
                low = middle + 1
            else:
                high = middle
        return self.order[first:low]

    def last(self, key: Any) -> int | None:
        """The last row holding `key` (a dict read from the source keeps the last value), or None."""
        found = self.rows(key)
        return int(found[-1]) if len(found) else None


def key_index(store: Store, name: str, values: pa.ChunkedArray) -> KeyIndex:
    """A KeyIndex of `values`, its order kept in `store` under `name`."""
    return KeyIndex(values, store.get(name, lambda: {"order": sort_order(values)})["order"])

