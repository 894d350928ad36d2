"""A 64-bit hash of every string of an Arrow array, computed with numpy over the array's buffers (no Python per row).

The hash only narrows a lookup to a few candidate rows: every lookup compares the candidates' id bytes with the id
asked for, so two ids that share a hash (a collision) cost time, never a wrong row. It is a polynomial over the
UTF-8 bytes (mod 2**64) seeded with the length, then murmur3's 64-bit finaliser. The same function hashes the stored
ids and the ids asked for, so it only has to agree with itself (a kept index records docstore.INDEX_VERSION).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

BASE = np.uint64(0x100000001B3)
"""Odd, so that multiplying by it loses no bits (mod 2**64)."""
LENGTH_MIX = np.uint64(0x9E3779B97F4A7C15)
TAIL_STRINGS = 8
"""With this few strings left unfinished, each is finished on its own (`_continued`)."""
TAIL_CHUNK = 1 << 16
"""Bytes of one string hashed at once in closed form."""
LONG_BYTES = 4096
"""A string longer than this is hashed alone in closed form from the start: the vectorised steps are one a byte
position, so nine strings of 1 MB took a million steps over nine values each (200 times numpy's time per byte)."""
SLICE_ROWS = 1 << 16
"""Ids hashed at once: small arrays are reused by the allocator (fresh large ones cost a page fault per page)."""


def _finalise(h: np.ndarray) -> np.ndarray:
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


_MASK = (1 << 64) - 1


def string_hash(value: str) -> int:
    """`string_hashes` of one string, in plain Python: the same value, without numpy's fixed cost per call (a lookup
    of one id). UnicodeEncodeError for a string UTF-8 cannot encode (a lone surrogate)."""
    data = value.encode("utf-8")
    h = (len(data) * int(LENGTH_MIX)) & _MASK
    base = int(BASE)
    for byte in data:
        h = (h * base + byte + 1) & _MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    return h ^ (h >> 33)


def _continued(running: int, data: np.ndarray) -> int:
    """The polynomial hash `running` continued over the bytes `data`, in closed form: running * BASE**n plus the sum
    of (byte + 1) * BASE**(n - 1 - i), mod 2**64, a chunk of TAIL_CHUNK bytes at a time (numpy's uint64 arithmetic
    wraps mod 2**64, as the step by step form does)."""
    powers = np.empty(TAIL_CHUNK + 1, dtype=np.uint64)
    powers[0] = 1
    np.multiply.accumulate(np.full(TAIL_CHUNK, BASE, dtype=np.uint64), out=powers[1:])
    for start in range(0, len(data), TAIL_CHUNK):
        chunk = data[start: start + TAIL_CHUNK]
        terms = (chunk.astype(np.uint64) + np.uint64(1)) * powers[len(chunk) - 1::-1]
        running = (running * int(powers[len(chunk)]) + int(terms.sum(dtype=np.uint64))) & _MASK
    return running


def _hash_strings(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The hashes of the strings data[starts[i]:starts[i] + lengths[i]]: one vectorised step per byte position,
    over the strings at least that long (so the work follows the number of bytes, however the lengths vary); a
    string over LONG_BYTES, and each of the last few left, is hashed alone in closed form (`_continued`), so that
    long ids cost numpy's work per byte, not its fixed cost per step."""
    hashes = lengths.astype(np.uint64) * LENGTH_MIX
    for position in np.flatnonzero(lengths > LONG_BYTES).tolist():  # each long one alone, in closed form
        start = int(starts[position])
        hashes[position] = _continued(int(hashes[position]), data[start: start + int(lengths[position])])
    active = np.flatnonzero((lengths > 0) & (lengths <= LONG_BYTES))
    running, cursor, remaining = hashes[active], starts[active], lengths[active]
    while len(active):
        if len(active) <= TAIL_STRINGS:
            for i, position in enumerate(active.tolist()):
                start = int(cursor[i])
                hashes[position] = _continued(int(running[i]), data[start: start + int(remaining[i])])
            break
        running *= BASE
        running += data[cursor]
        running += np.uint64(1)
        cursor += 1
        remaining -= 1
        done = remaining == 0
        if done.any():
            hashes[active[done]] = running[done]
            keep = ~done
            active, running, cursor, remaining = active[keep], running[keep], cursor[keep], remaining[keep]
    return _finalise(hashes)


def string_hashes(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """uint64 hash of every value of a string or large_string array, in order (nulls are the caller's to refuse)."""
    if isinstance(array, pa.ChunkedArray):
        parts = [string_hashes(chunk) for chunk in array.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise TypeError(f"ids are strings; this column holds {array.type}")
    kind = np.int64 if pa.types.is_large_string(array.type) else np.int32
    _, offset_buffer, data_buffer = array.buffers()
    if offset_buffer is None:  # an empty array may have no buffers
        return np.zeros(len(array), dtype=np.uint64)
    offsets = np.frombuffer(offset_buffer, dtype=kind)[array.offset: array.offset + len(array) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, dtype=np.uint8)
    out = np.empty(len(array), dtype=np.uint64)
    for start in range(0, len(array), SLICE_ROWS):
        part = offsets[start: start + SLICE_ROWS + 1].astype(np.int64)
        out[start: start + len(part) - 1] = _hash_strings(data, part[:-1], np.diff(part))
    return out
