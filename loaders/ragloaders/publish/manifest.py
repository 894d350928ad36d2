"""The manifest of a folder ragloaders wrote (`.ragloaders-manifest.json`): which of its files are ragloaders' own.

- **Whose.** A folder ragloaders built holds MANIFEST: every file it wrote with its sha256 and size, and the build
  identity. A file is ragloaders' own when the manifest lists it, it is a regular file reached through real folders
  (no symlink on the way), and its size and sha256 still match; every other entry (files, folders, symlinks) is the
  user's. A manifest that is not a well-formed ragloaders manifest (another format or version, a path that is not
  relative, names `.` or `..` or is longer than a filesystem allows, a malformed sha256 or size) counts as none:
  such a folder is not ragloaders'. An own file that has other names too (a hard link) is listed apart
  (`Verdict.linked`): push uploads none (it may be another file of the user's, outside the folder too).
- **Written whole.** A manifest is written to a temporary file and renamed over, so a kill never leaves half of
  one; a build's work folder says `"complete": false` until the last file is written (output_folder.py).
- **Only regular files.** `hash_folder` lists every file of a folder a build just wrote and refuses anything else
  (a symlink, a FIFO) in one OutputFolderError naming it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..core.output_target import MANIFEST, OutputFolderError
from ..core.source_files import file_digest
from ..core.user_cache import read_small_json
from ..core.version import VERSION as PACKAGE_VERSION

FORMAT = "ragloaders-manifest"
VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class FileRecord:
    sha256: str
    size: int


@dataclass
class Manifest:
    """What a folder ragloaders wrote holds: its files (relative '/' paths) and the build that made them."""

    target: str
    identity: dict
    files: dict[str, FileRecord] = field(default_factory=dict)
    complete: bool = False

    def as_json(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "complete": self.complete, "ragloaders": PACKAGE_VERSION,
                "target": self.target, "identity": self.identity,
                "files": {name: {"sha256": r.sha256, "size": r.size} for name, r in sorted(self.files.items())}}

    def write(self, folder: str) -> None:
        """Write atomically (a temporary file renamed over), so a kill never leaves half a manifest."""
        path = os.path.join(folder, MANIFEST)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(self.as_json(), f, indent=1, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)


MAX_MANIFEST_BYTES = 16 << 20
"""A manifest larger than this is not one ragloaders wrote (it lists each file in ~150 bytes: 100,000 files). Parsed,
JSON takes up to ~30x its bytes (`[{},{},...]`): this bounds that too."""


NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4096
"""POSIX's NAME_MAX and PATH_MAX as Linux sets them: a manifest path with a longer part, or longer in all, names no
file ragloaders could have written (a filesystem refuses it), and is refused before it is used or shown."""


def safe_relative(name: object) -> bool:
    """A manifest path ragloaders could have written: relative, '/'-separated, no empty, '.' or '..' part, no part
    longer than NAME_MAX_BYTES nor the whole longer than PATH_MAX_BYTES (in UTF-8)."""
    if (not isinstance(name, str) or not name or len(name) > PATH_MAX_BYTES or "\0" in name or "\\" in name
            or name.startswith("/")):
        return False
    try:
        encoded = name.encode("utf-8")  # (a lone surrogate, JSON's "\ud800", names no file)
    except UnicodeEncodeError:
        return False
    return len(encoded) <= PATH_MAX_BYTES and all(
        part not in (b"", b".", b"..") and len(part) <= NAME_MAX_BYTES for part in encoded.split(b"/"))


def read_manifest(folder: str) -> Manifest | None:
    """The folder's manifest, or None when it has none or one that is not a well-formed ragloaders manifest
    (a hostile one naming paths outside the folder, say): such a folder is not ragloaders'."""
    path = os.path.join(folder, MANIFEST)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        data = read_small_json(path, MAX_MANIFEST_BYTES)
    except OSError:
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        return None
    files, entries = {}, data.get("files")
    if not isinstance(entries, dict) or not isinstance(data.get("target"), str):
        return None
    for name, record in entries.items():
        if not (safe_relative(name) and name != MANIFEST and isinstance(record, dict)
                and isinstance(record.get("sha256"), str) and _SHA256.fullmatch(record["sha256"])
                and type(record.get("size")) is int and record["size"] >= 0):
            return None
        files[name] = FileRecord(record["sha256"], record["size"])
    identity = data.get("identity")
    return Manifest(data["target"], identity if isinstance(identity, dict) else {}, files, data.get("complete") is True)


def sha256_of(path: str) -> str:
    return file_digest(path, "sha256")


def regular_file_inside(root: str, name: str) -> os.stat_result | None:
    """lstat of root/name when it is a regular file reached through real folders only (no symlink on the way)."""
    parts = name.split("/")
    current = root
    try:
        for part in parts[:-1]:
            current = os.path.join(current, part)
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return None
        info = os.lstat(os.path.join(current, parts[-1]))
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def file_signature(info: os.stat_result) -> tuple:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


@dataclass
class Verdict:
    """The entries of a folder sorted by whose they are."""

    own: dict[str, tuple] = field(default_factory=dict)
    """Own files (listed, size and sha256 match) with their stat signature at the time they were hashed."""
    altered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    """Own files that have other names too (st_nlink > 1): a hard link may be another file of the user's, even one
    outside the folder, so push uploads none of them (a build replaces them with new files)."""
    others: list[str] = field(default_factory=list)
    """Every other leaf entry (files, symlinks, ...) and empty folder: the user's."""
    manifest: Manifest | None = None

    @property
    def manifest_files(self) -> dict[str, FileRecord]:
        """The files the manifest lists (none without one)."""
        return self.manifest.files if self.manifest else {}


def verify(folder: str, manifest: Manifest | None = None) -> Verdict:
    """Hash every file the manifest lists and sort the folder's entries into own, altered, missing and others."""
    manifest = manifest or read_manifest(folder)
    verdict = verify_listed(folder, manifest) if manifest else Verdict()
    for name in folder_entries(folder):
        if name not in verdict.manifest_files and not (manifest and name == MANIFEST):
            verdict.others.append(name)
    return verdict


def verify_listed(folder: str, manifest: Manifest) -> Verdict:
    """The files the manifest lists sorted into own, altered and missing (`others` is left empty: nothing else in
    the folder is looked at). A listed file that is not a regular file reached through real folders, or that cannot
    be read, is altered; each inode is hashed once."""
    verdict = Verdict(manifest=manifest)
    digests: dict[tuple[int, int], str | None] = {}
    for name, record in manifest.files.items():
        info = regular_file_inside(folder, name)
        if info is None:
            (verdict.altered if os.path.lexists(os.path.join(folder, name)) else verdict.missing).append(name)
        elif info.st_size == record.size and sha256_once(os.path.join(folder, name), info, digests) == record.sha256:
            verdict.own[name] = file_signature(info)
            if info.st_nlink > 1:
                verdict.linked.append(name)
        else:
            verdict.altered.append(name)
    return verdict


def sha256_once(path: str, info: os.stat_result, digests: dict[tuple[int, int], str | None]) -> str | None:
    """sha256 of the file at `path` (`info`: its stat), once per inode in `digests` (one file listed under many
    names costs one read); None when it cannot be read."""
    key = (info.st_dev, info.st_ino)
    if key not in digests:
        try:
            digests[key] = sha256_of(path)
        except OSError:
            digests[key] = None
    return digests[key]


def folder_entries(folder: str) -> Iterator[str]:
    """Leaf entries ('/' paths) of a folder: files, symlinks and other non-folders, and empty folders, depth first in
    name order. Symlinks are never followed. A stack, not recursion: any depth of folders is walked."""
    # per folder entered and not left: its entries not yet seen, its path with a trailing '/' ("" for `folder`), and
    # whether a leaf was found in it (else, once left, it is an empty folder: a leaf itself)
    walking = [(iter(_sorted_entries(folder)), "")]
    holds_leaf = [False]
    while walking:
        entries, prefix = walking[-1]
        entry = next(entries, None)
        if entry is None:
            walking.pop()
            if not holds_leaf.pop() and walking:
                yield prefix  # an empty folder is a leaf
            if walking:
                holds_leaf[-1] = True
        elif entry.is_dir(follow_symlinks=False):
            walking.append((iter(_sorted_entries(entry.path)), prefix + entry.name + "/"))
            holds_leaf.append(False)
        else:
            holds_leaf[-1] = True
            yield prefix + entry.name


def _sorted_entries(folder: str) -> list[os.DirEntry]:
    with os.scandir(folder) as scan:
        return sorted(scan, key=lambda e: e.name)


def hash_folder(folder: str) -> dict[str, FileRecord]:
    """Every regular file of a folder ragloaders just wrote (its manifest aside), with sha256 and size."""
    files = {}
    for name in folder_entries(folder):
        if name == MANIFEST or name.endswith("/"):
            continue
        path = os.path.join(folder, name)
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OutputFolderError(f"{path}: not a regular file; a build writes only regular files")
        files[name] = FileRecord(sha256_of(path), os.path.getsize(path))
    return files
