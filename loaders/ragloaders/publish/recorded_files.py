"""Whether the files of a folder are still the bytes ragloaders recorded for them (`ragloaders validate FOLDER`).

A folder ragloaders built holds its manifest (manifest.py: each file's sha256 and size); a hub repository it pushed
holds the repository record (hub_manifest.py, the same name at its root), and so does its local snapshot. Parquet has no
checksum of its own that `datasets` checks, and a damaged page can decode to other values without any error (seen:
100 bytes overwritten in a qrels file gave 23 duplicate pairs, loaded silently), so only the recorded sha256 tells.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from ..core.hub_repository import data_file_bounds
from ..core.output_target import MANIFEST
from ..core.user_cache import read_small_file
from .hub_manifest import MAX_HUB_MANIFEST_BYTES, Published, parse_hub_manifest
from .manifest import read_manifest, sha256_once, verify_listed


@dataclass
class RecordedFiles:
    """What the check found: the record read, the files it lists that hold their recorded bytes, and the others."""

    record: str
    """Which record: "build" (a folder's manifest) or "repository" (a hub repository's)."""
    verified: int = 0
    altered: list[str] = field(default_factory=list)
    """Listed files whose size or sha256 is not the recorded one, or that are not a regular file."""
    missing: list[str] = field(default_factory=list)


def check_recorded_files(folder: str) -> RecordedFiles | None:
    """Hash every file ragloaders' record at the root of `folder` lists, in name order, each inode once: a built
    folder's as its manifest says (manifest.verify_listed: reached through real folders, no link followed), a
    repository snapshot's through its links into its own blobs (see `data_file_bounds`; a link that leads anywhere
    else is an altered file, not read). A listed file that cannot be read is an altered one. Nothing else in the
    folder is looked at. None when there is no such record, or one that is not ragloaders' (then nothing is known)."""
    manifest = read_manifest(folder)
    if manifest is not None:
        verdict = verify_listed(folder, manifest)
        return RecordedFiles("build", len(verdict.own), sorted(verdict.altered), sorted(verdict.missing))
    bounds = data_file_bounds(folder)
    published = _hub_record(folder, bounds)
    if published is None:
        return None
    result = RecordedFiles("repository")
    digests: dict[tuple[int, int], str | None] = {}
    for name, record in sorted(published.items()):
        path = os.path.join(folder, *name.split("/"))
        found = _within(path, bounds)
        if found is None:
            (result.altered if os.path.lexists(path) else result.missing).append(name)
        elif found[1].st_size == record.size and sha256_once(*found, digests) == record.sha256:
            result.verified += 1
        else:
            result.altered.append(name)
    return result


def _within(path: str, bounds: list[str]) -> tuple[str, os.stat_result] | None:
    """(real path, stat) of `path` when it resolves, links followed, to a regular file inside one of `bounds`."""
    resolved = os.path.realpath(path)
    try:
        info = os.stat(resolved)
    except OSError:
        return None
    inside = any(os.path.commonpath([bound, resolved]) == bound for bound in bounds)
    return (resolved, info) if inside and stat.S_ISREG(info.st_mode) else None


def _hub_record(folder: str, bounds: list[str]) -> dict[str, Published] | None:
    """The repository record at the root of `folder`, read only where it resolves inside `bounds`."""
    found = _within(os.path.join(folder, MANIFEST), bounds)
    if found is None:
        return None
    try:
        data = read_small_file(found[0], MAX_HUB_MANIFEST_BYTES)
    except OSError:
        return None
    return parse_hub_manifest(data) if data is not None else None
