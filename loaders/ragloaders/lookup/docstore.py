"""`ragloaders.docs`: the rows of a config keyed by `_id` (a corpus, queries) by id, from the data `load` prepared.

The rows are read from the Arrow files `ragloaders.load` memory-maps, as they are; the id index (`id_index.IdIndex`)
is kept beside them as `ragloaders-docs-<digest>.index`, its identity the paths, sizes, modification and change times
and inode numbers of the files it indexes, so a changed file means a new index.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from ..api import load
from ..core.errors import ContentError, SourceError, UsageError
from ..core.log import warn
from ..core.preview import preview
from .chunked_take import ChunkedRows
from .id_index import DuplicateIdError, IdIndex, shown

ID_COLUMN = "_id"
INDEX_VERSION = 1
"""Part of every kept index's identity: a new layout or hash function means a new number."""


class DocumentNotFound(KeyError):
    """No row has exactly this id; `id` is the id asked for."""

    def __init__(self, name: str, doc_id: str):
        self.id = doc_id
        super().__init__(f"{name} has no row with _id {shown(doc_id)} (ids are compared byte for byte)")

    def __str__(self) -> str:
        return str(self.args[0])


class DocStore:
    """The rows of one config keyed by `_id`, over all its splits: `len(store)`, `id in store`, `store[id]`,
    `store.get(id, default)`, `store.get_many(ids)`. A row is a dict of every column, as `Dataset[i]` gives it."""

    def __init__(self, name: str, table: pa.Table, index: IdIndex, kept_at: str | None = None):
        self.name, self.table, self.index = name, table, index
        self.kept_at = kept_at
        """The file the id index is kept in (None when it is not kept)."""
        self.rows = ChunkedRows(table)

    def __len__(self) -> int:
        return self.table.num_rows

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.index.row_of(doc_id) >= 0

    def __getitem__(self, doc_id: str) -> dict[str, Any]:
        row = self.index.row_of(doc_id)
        if row < 0:
            raise DocumentNotFound(self.name, doc_id)
        return self.row(row)

    def get(self, doc_id: str, default: Any = None) -> Any:
        """The row of `doc_id`, or `default` when no row has exactly that id."""
        row = self.index.row_of(doc_id)
        return default if row < 0 else self.row(row)

    def row(self, number: int) -> dict[str, Any]:
        """Row `number` (0 to rows - 1) of the table as a dict of every column; IndexError for any other, as `take`
        refuses it (a negative number does not count from the end)."""
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < self.table.num_rows:
            raise IndexError(f"{self.name}: no row {preview(number)} (rows are 0 to {self.table.num_rows - 1:,})")
        return {name: column[number].as_py() for name, column in zip(self.table.column_names, self.table.columns)}

    def get_many(self, doc_ids: Iterable[str]) -> list[dict[str, Any] | None]:
        """The rows of `doc_ids` in the order asked (an id asked twice gives its row twice), None where absent.
        A bare string is a TypeError (not the ids of its characters)."""
        asked = doc_ids if isinstance(doc_ids, str) else list(doc_ids)
        rows = self.index.rows_of(asked)
        found = rows >= 0
        taken = self.take(rows[found])
        # a struct array makes its dicts in Arrow's C++ (Table.to_pylist makes them in Python, row by row)
        dicts = taken.to_struct_array().to_pylist()
        if len(dicts) == len(asked):
            return dicts
        given = iter(dicts)
        return [next(given) if hit else None for hit in found.tolist()]

    def rows_of(self, doc_ids: Sequence[str]) -> Any:
        """The row numbers of `doc_ids` in `table` (a numpy int64 array, -1 where absent): for reading columns of
        many rows as Arrow (`take`) without making a dict of each."""
        return self.index.rows_of(doc_ids)

    def take(self, rows: Any) -> pa.Table:
        """The rows numbered `rows` (a numpy array of row numbers in range) as one table, in that order, read from
        the chunks that hold them (the table's other rows are not copied)."""
        try:
            return self.rows.take(rows)
        except ContentError as e:
            raise SourceError(self.name, str(e)) from None


def docs(
    source: str,
    config: str = "corpus",
    *,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    revision: str | None = None,
) -> DocStore:
    """A store of the rows of `config` by `_id`, over every split of the config.

    Args:
        source: a benchmark path (`beir/scifact`, with `data_dir` or a download), a folder `ragloaders build` wrote,
            or a hub dataset repository id: whatever `ragloaders.load` takes.
        config: a config keyed by `_id`: `corpus` (the default) or `queries` of BEIR, beir-format, mmRAG and CRAG.
        data_dir, cache_dir: as in `ragloaders.load`; the index is kept beside the Arrow files `load` prepared.
        revision: a hub repository's commit, branch or tag, passed to `ragloaders.load` as it is (which refuses it
            where it does not take it).

    Returns:
        A `DocStore`. Ids are compared byte for byte: `"00123"` is found, `"123"` is not.

    Raises:
        ValueError: the config has no `_id` column, a row has no id, or an id names two rows (DuplicateIdError);
            and whatever `ragloaders.load` raises for the source.

    Example:
        >>> store = docs("beir/nfcorpus", data_dir="tests/data/beir")  # doctest: +SKIP
        >>> store["MED-10"]["title"]  # doctest: +SKIP
        'Statin Use and Breast Cancer Survival: A Nationwide Cohort Study from Finland'
    """
    options: dict[str, Any] = {"data_dir": data_dir, "cache_dir": cache_dir}
    if revision is not None:
        options["revision"] = revision
    loaded = load(source, config, **options)
    import datasets  # (here: the command line's set-up imports this module, and does without datasets)

    splits = dict(loaded) if isinstance(loaded, datasets.DatasetDict) else {"": loaded}
    name = f"{source} {config}"
    first = next(iter(splits.values()))
    if ID_COLUMN not in first.column_names:
        raise UsageError(f"{name} has no _id column (its columns are {', '.join(first.column_names)}); docs looks "
                         "rows up in a config keyed by _id, such as corpus or queries")
    table = pa.concat_tables([dataset.data.table for dataset in splits.values()])
    ids = table.column(ID_COLUMN)
    files = [entry["filename"] for dataset in splits.values() for entry in dataset.cache_files]
    sizes = [(split, dataset.num_rows) for split, dataset in splits.items()]
    if not files:  # data held in memory: nothing to keep the index beside
        return DocStore(name, table, IdIndex.build(ids, name, sizes))
    identity = data_identity(files, list(splits), table.num_rows)
    path = kept_index_path(files)
    index = IdIndex.open_kept(path, identity, ids)
    if index is None:
        index = IdIndex.build(ids, name, sizes)
        try:
            index.save(path, identity)
        except OSError as e:  # a read-only cache: the index serves this store only
            warn(f"the id index of {name} could not be kept at {path} ({e}); it is rebuilt on each open")
            return DocStore(name, table, index)
    return DocStore(name, table, index, path)


def data_identity(files: Sequence[str], splits: Sequence[str], rows: int) -> bytes:
    """sha256 of what an index was built from: each file's path, size, modification and change times and inode,
    the split names, the row count and INDEX_VERSION."""
    stats = []
    for path in files:
        stat = os.stat(path)
        stats.append([os.path.realpath(path), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino])
    return hashlib.sha256(json.dumps([INDEX_VERSION, ID_COLUMN, stats, list(splits), rows]).encode()).digest()


def kept_index_path(files: Sequence[str]) -> str:
    """Where the index of these files is kept: beside the first, named by a digest of all their paths."""
    digest = hashlib.sha256("\0".join(os.path.realpath(p) for p in files).encode()).hexdigest()[:20]
    return os.path.join(os.path.dirname(os.path.realpath(files[0])), f"ragloaders-docs-{digest}.index")


__all__ = ["DocStore", "DocumentNotFound", "DuplicateIdError", "docs"]
