"""Whether the files of a folder are still the bytes ragloaders recorded for them (`ragloaders validate FOLDER`).

A folder ragloaders built holds its manifest (manifest.py: each file's sha256 and size); a hub repository it pushed
holds the repository manifest (push.py, the same name at its root), and so does its local snapshot. Parquet has no
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
from .manifest import read_manifest, sha256_of, verify


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
    """Hash every file ragloaders' record at the root of `folder` lists, in name order: a built folder's as its
    manifest says (no link followed), a repository snapshot's through its links into its own blobs (a link that leads
    anywhere else is an altered file, not read); None when there is no such record, or one that is not ragloaders'
    (then nothing is known)."""
    manifest = read_manifest(folder)
    if manifest is not None:
        verdict = verify(folder, manifest)
        return RecordedFiles("build", len(verdict.own), sorted(verdict.altered), sorted(verdict.missing))
    published = _hub_record(folder)
    if published is None:
        return None
    result = RecordedFiles("repository")
    bounds = data_file_bounds(folder)
    for name, record in sorted(published.items()):
        path = os.path.join(folder, *name.split("/"))
        resolved = os.path.realpath(path)
        try:
            info = os.stat(resolved)
        except OSError:
            (result.altered if os.path.lexists(path) else result.missing).append(name)
            continue
        if (any(os.path.commonpath([bound, resolved]) == bound for bound in bounds) and stat.S_ISREG(info.st_mode)
                and info.st_size == record.size and sha256_of(resolved) == record.sha256):
            result.verified += 1
        else:  # (a link out of the folder, or of a snapshot out of its repository's blobs, is not read)
            result.altered.append(name)
    return result


def _hub_record(folder: str) -> dict[str, Published] | None:
    try:
        data = read_small_file(os.path.join(folder, MANIFEST), MAX_HUB_MANIFEST_BYTES)
    except OSError:
        return None
    return parse_hub_manifest(data) if data is not None else None
