"""The record a hub repository keeps of the files ragloaders published there: HUB_MANIFEST at its root (a different
format from a built folder's manifest.py), each file with its sha256, git blob id and size. push.py writes and reads
it; `validate` checks a repository's local snapshot against it (recorded_files.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .manifest import MANIFEST, MAX_MANIFEST_BYTES, safe_relative

HUB_MANIFEST = MANIFEST
"""The repository's record of the files ragloaders published there (at its root, written in every commit)."""
HUB_FORMAT = "ragloaders-hub-manifest"
HUB_VERSION = 1
MAX_HUB_MANIFEST_BYTES = MAX_MANIFEST_BYTES
_HEX = {"sha256": re.compile(r"[0-9a-f]{64}"), "git_sha1": re.compile(r"[0-9a-f]{40}")}


@dataclass(frozen=True)
class Published:
    """A file as ragloaders published it: its sha256 (what the hub reports for an LFS file), its git blob id (what
    it reports for any other) and its size."""

    sha256: str
    git_sha1: str
    size: int

    def is_content_of(self, remote) -> bool:
        """The repository's file (a tree entry) still holds exactly these bytes."""
        if remote.lfs is not None:
            return remote.lfs.sha256 == self.sha256
        return remote.blob_id == self.git_sha1


def hub_manifest_bytes(files: dict[str, Published]) -> bytes:
    """The repository manifest listing `files`; deterministic, so an unchanged record is not committed again."""
    entries = {path: {"sha256": p.sha256, "git_sha1": p.git_sha1, "size": p.size} for path, p in sorted(files.items())}
    return (json.dumps({"format": HUB_FORMAT, "version": HUB_VERSION, "files": entries}, indent=1, sort_keys=True,
                       ensure_ascii=False) + "\n").encode()


def parse_hub_manifest(data: bytes) -> dict[str, Published] | None:
    """The files a repository manifest records, or None when it is not a well-formed ragloaders manifest (then the
    file is not ragloaders' and records nothing)."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):  # (a hostile one nests deeper than `json` reads)
        return None
    if (not isinstance(document, dict) or document.get("format") != HUB_FORMAT
            or document.get("version") != HUB_VERSION or not isinstance(document.get("files"), dict)):
        return None
    files = {}
    for path, entry in document["files"].items():
        if not (safe_relative(path) and path != HUB_MANIFEST and isinstance(entry, dict)
                and all(isinstance(entry.get(k), str) and pattern.fullmatch(entry[k]) for k, pattern in _HEX.items())
                and type(entry.get("size")) is int and entry["size"] >= 0):
            return None
        files[path] = Published(entry["sha256"], entry["git_sha1"], entry["size"])
    return files
