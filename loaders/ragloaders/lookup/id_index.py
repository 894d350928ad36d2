"""The id -> row index of a table keyed by `_id`: built in one vectorised pass, kept in a file beside the data.

The index is one sorted uint64 array: each entry holds the high bits of an id's hash (`id_hash.string_hashes`) and,
in its low `row_bits` bits, the id's row number, so that 8 bytes per row give both. A lookup hashes the ids asked for,
binary-searches the array (numpy) for the candidates of each, and keeps a candidate only when its id equals the id
asked for byte for byte: a hash shared by two ids costs time, never a wrong row. Ids made to share a hash (the hash
is not built to resist that) are read once per table into a dict, so a lookup stays linear in what it reads.

The kept file (`save`, `open_kept`) is a 64-byte header (magic, row count, row bits, CRC-32 of the entries, the
identity of the data indexed) and the entries. It is written under a temporary name, flushed to disk and renamed
into place, so a reader sees a whole file or none; before use its size, checksum, identity and row numbers (each
within the table) are checked, and any mismatch means it is rebuilt. The entries' hash bits are not hashed again (that
is the cost of building it): like datasets' Arrow cache beside it, a file made consistent with a recomputed checksum
by someone who can write the cache is trusted, and could make a present id look absent; a lookup still never returns
a row whose id is not the id asked for.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import struct
import tempfile
import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import SourceError
from ..core.output_target import MKSTEMP_PART, give_new_file_mode, lock_if_possible, remove_abandoned
from ..core.plural import counted
from ..core.preview import preview
from .chunked_take import ChunkedRows
from .id_hash import string_hash, string_hashes

MAGIC = b"RLDOCID1"
HEADER = struct.Struct("<8sQQQ32s")
"""magic, rows, row bits, CRC-32 of the entries, identity (sha256 of what the index was built from)."""
PREVIEW_CHARS = 80


def shown(value: object) -> str:
    """An id as a message shows it: quoted, at most PREVIEW_CHARS characters (a longer one says its length); what is
    not a string, as `core.preview` shows it (never its whole str or repr)."""
    if not isinstance(value, str):
        return preview(value, PREVIEW_CHARS)
    if len(value) <= PREVIEW_CHARS:
        return repr(value)
    return f"{value[:PREVIEW_CHARS]!r}… ({len(value):,} characters)"


class DuplicateIdError(SourceError):
    """A table in which one id names two rows: it cannot be looked up by id."""

    def __reduce__(self):
        return (DuplicateIdError, (self.path, self.message))


class IdIndex:
    """Rows of `ids` (a string column without nulls or repeats) by id; see the module docstring."""

    def __init__(self, ids: pa.ChunkedArray, entries: np.ndarray, row_bits: int, keeper: object = None):
        self.ids, self.entries, self.row_bits = ids, entries, row_bits
        self.id_rows = ChunkedRows(ids)
        self.row_mask = np.uint64((1 << row_bits) - 1)
        self._keeper = keeper  # the mmap the entries are a view of
        self._groups: dict[int, dict[str, int]] = {}

    @classmethod
    def build(cls, ids: pa.ChunkedArray, name: str, splits: Sequence[tuple[str, int]] = ()) -> IdIndex:
        """The index of `ids`; `name` says in errors which table they are (DuplicateIdError names a repeated id,
        ValueError a row without an id), and `splits`, (split, rows) of each split the ids are of in turn, where
        its rows are."""
        if ids.null_count:
            first = int(np.flatnonzero(np.asarray(ids.is_null()))[0])
            raise SourceError(name, f"{placed(first, splits)} has no _id (null); every row needs one to be looked up "
                                    "by id")
        row_bits = max(1, (len(ids) - 1).bit_length())
        entries = string_hashes(ids)
        entries &= ~np.uint64((1 << row_bits) - 1)
        entries |= np.arange(len(ids), dtype=np.uint64)
        entries.sort()
        index = cls(ids, entries, row_bits)
        index.refuse_duplicates(name, splits)
        return index

    def refuse_duplicates(self, name: str, splits: Sequence[tuple[str, int]] = ()) -> None:
        """DuplicateIdError naming an id held by two rows. Only rows whose hash another row shares are compared."""
        high = self.entries & ~self.row_mask
        shared = np.flatnonzero(high[1:] == high[:-1])
        if not len(shared):
            return
        rows = (self.entries[np.unique(np.concatenate([shared, shared + 1]))] & self.row_mask).astype(np.int64)
        counts = Counter(self.id_rows.take(rows).to_pylist())
        repeated = [value for value, count in counts.items() if count > 1]
        if repeated:
            where = sorted(int(r) for r in rows if self.ids[int(r)].as_py() == repeated[0])
            repeat = f"{counted(len(repeated), 'id', grouped=True)} {'repeats' if len(repeated) == 1 else 'repeat'}"
            raise DuplicateIdError(name, f"the _id {shown(repeated[0])} is held by {len(where)} rows "
                                         f"({', '.join(placed(row, splits, bare=True) for row in where[:5])}); "
                                         f"{repeat} in all. "
                                         "Ids must be unique to be looked up (`ragloaders validate` lists the "
                                         "duplicates)")

    def row_of(self, doc_id: str) -> int:
        """The row of one id, -1 where the table has no row with exactly that id (`rows_of` without numpy's cost
        per call)."""
        if not isinstance(doc_id, str):
            _as_array([doc_id])  # the TypeError
        try:
            high = string_hash(doc_id) & ~int(self.row_mask)
        except UnicodeEncodeError:
            return -1
        low = int(np.searchsorted(self.entries, np.uint64(high), side="left"))
        upto = int(np.searchsorted(self.entries, np.uint64(high | int(self.row_mask)), side="right"))
        if upto - low == 1:
            row = int(self.entries[low] & self.row_mask)
            return row if self.ids[row].as_py() == doc_id else -1
        return self._shared_hash_rows(low, upto).get(doc_id, -1) if upto > low else -1

    def _shared_hash_rows(self, low: int, upto: int) -> dict[str, int]:
        """{id: row} of the entries low:upto, which share one hash: read once and kept, so that ids made to collide
        (a polynomial hash has families of them) cost a lookup once per table, not once per id asked for."""
        rows = self._groups.get(low)
        if rows is None:
            found = (self.entries[low:upto] & self.row_mask).astype(np.int64)
            rows = self._groups[low] = dict(zip(self.id_rows.take(found).to_pylist(), found.tolist()))
        return rows

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """The row of each id (int64), -1 where the table has no row with exactly that id."""
        asked, usable = _as_array(ids)
        rows = np.full(len(ids), -1, dtype=np.int64)
        if not len(asked):
            return rows
        high = string_hashes(asked) & ~self.row_mask
        ascending = np.argsort(high)  # sorted keys: each binary search starts where the last one ended
        low, upto = np.empty(len(high), dtype=np.int64), np.empty(len(high), dtype=np.int64)
        low[ascending] = np.searchsorted(self.entries, high[ascending], side="left")
        upto[ascending] = np.searchsorted(self.entries, high[ascending] | self.row_mask, side="right")
        counts = upto - low
        single = np.flatnonzero(counts == 1)
        candidates = (self.entries[low[single]] & self.row_mask).astype(np.int64)
        equal = pc.equal(self.id_rows.take(candidates), asked.take(pa.array(single)))
        matched = np.asarray(equal, dtype=bool)
        found = rows[usable]
        found[single[matched]] = candidates[matched]
        shared = np.flatnonzero(counts > 1)  # ids whose hash other rows share: looked up in their group's ids
        for position, wanted in zip(shared.tolist(), asked.take(pa.array(shared)).to_pylist()):
            found[position] = self._shared_hash_rows(int(low[position]), int(upto[position])).get(wanted, -1)
        rows[usable] = found
        return rows

    def save(self, path: str, identity: bytes) -> None:
        """Keep the index at `path`: written whole under a temporary name, flushed, then renamed into place."""
        folder = os.path.dirname(path) or "."
        _remove_abandoned(path)
        handle, partial = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".partial", dir=folder)
        lock_if_possible(handle)  # held until the file is closed: another save sees it being written
        try:
            give_new_file_mode(handle)
            with os.fdopen(handle, "wb") as f:
                payload = memoryview(np.ascontiguousarray(self.entries)).cast("B")
                f.write(HEADER.pack(MAGIC, len(self.entries), self.row_bits, zlib.crc32(payload), identity))
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(partial, path)
        except BaseException:
            if os.path.lexists(partial):
                os.unlink(partial)
            raise
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    @classmethod
    def open_kept(cls, path: str, identity: bytes, ids: pa.ChunkedArray) -> IdIndex | None:
        """The index kept at `path` for `ids`, memory-mapped; None when there is none, or it is not a regular file
        (a FIFO or a device is never waited on or read), not whole, not of this data (`identity`), fails its
        checksum, or names a row the table does not have."""
        try:  # without O_NONBLOCK, opening a FIFO put at this name would wait for a writer
            handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            status = os.fstat(handle)
            if not stat.S_ISREG(status.st_mode) or status.st_size < HEADER.size:
                return None
            size = status.st_size
            kept = mmap.mmap(handle, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        finally:
            os.close(handle)
        magic, count, row_bits, checksum, kept_identity = HEADER.unpack_from(kept, 0)
        if (magic != MAGIC or kept_identity != identity or count != len(ids) or size != HEADER.size + 8 * count
                or row_bits != max(1, (len(ids) - 1).bit_length())
                or zlib.crc32(memoryview(kept)[HEADER.size:]) != checksum):
            kept.close()
            return None
        entries = np.frombuffer(kept, dtype=np.uint64, count=count, offset=HEADER.size)
        if count and int((entries & np.uint64((1 << row_bits) - 1)).max()) >= count:
            return None
        return cls(ids, entries, row_bits, keeper=kept)


def placed(row: int, splits: Sequence[tuple[str, int]], *, bare: bool = False) -> str:
    """Row `row` of ids joined from `splits` ((split, rows) in turn) as a message names it: `test row 4` where
    there are several splits, else `row 4` (`4` when `bare`)."""
    if len(splits) > 1:
        for split, rows in splits:
            if row < rows:
                return f"{split} row {row}"
            row -= rows
    return str(row) if bare else f"row {row}"


def _remove_abandoned(path: str) -> None:
    """Delete the partial files of earlier saves of the index `path` (in ragloaders' own cache) that a killed process
    left: `NAME.XXXXXXXX.partial`, unchanged for a minute and not locked (a save locks its file a moment after
    making it, and writes it within seconds)."""
    folder, name = os.path.split(path)
    own = re.compile(re.escape(name) + MKSTEMP_PART + r"\.partial")
    remove_abandoned(folder, own.fullmatch, 60.0)


def _as_array(ids: Sequence[str]) -> tuple[pa.Array, np.ndarray]:
    """(the ids a table can hold as an Arrow string array, their positions in `ids`). An id that is not valid
    Unicode text (a lone surrogate) cannot be in an Arrow table, so it is left out (found nowhere); anything
    but a str is a TypeError, and so is a bare str for `ids` (its characters would be asked for one by one)."""
    if isinstance(ids, str):
        raise TypeError(f"ids are a list of ids, not one string ({shown(ids)}); for one id use store[id] or "
                        "store.get(id), for several get_many([id, ...])")
    # pyarrow would take None and bytes for strings (the set of types is the quick test; subclasses of str pass)
    if set(map(type, ids)) - {str} and not all(isinstance(value, str) for value in ids):
        wrong = next(value for value in ids if not isinstance(value, str))
        raise TypeError(f"ids are strings (byte for byte, never converted); got {type(wrong).__name__} "
                        f"{shown(wrong)}")
    try:
        return pa.array(ids, pa.string()), np.arange(len(ids))
    except (UnicodeEncodeError, pa.ArrowInvalid):
        usable = [i for i, value in enumerate(ids) if _encodable(value)]
        return pa.array([ids[i] for i in usable], pa.string()), np.asarray(usable, dtype=np.int64)


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
