"""The folders ragloaders writes (`build --out`, `push --staging-dir`): it deletes or replaces only what it wrote.

The rules, in the order a build meets them (each module named holds the rest of its rule):

- **Where.** `core/output_target.check_output`, the one rule of every command that writes (`bm25 --out` too): the
  target is resolved (realpath, so `x/..`, `.` and symlinks count as where they point) and refused when it is the
  filesystem root, the home folder or a folder above it, the current folder or a folder above it, or a path that
  contains or lies inside the data dir or the cache dir (datasets' default cache when no cache dir is given). A
  target whose last component is `.` or `..`, or that exists and is not a folder, is refused too (a run file
  must not exist at all). A target that is a mount point, or holds entries on another filesystem, is refused:
  ragloaders moves no mount (user_metadata.py).
- **Who else.** A build whose target contains, or lies inside, the target of another running build is refused in
  one line, checked before and after its own lock is taken, so of two racing builds one sees the other
  (target_lock.py).
- **Whose.** A folder ragloaders built holds MANIFEST, and a file is ragloaders' own when the manifest lists it and
  its size and sha256 still match (manifest.py). An existing non-empty target without a (valid) manifest is
  refused unless `into_existing` (`--into-existing`) is given. Every entry that is not an own file (the user's
  files, folders, symlinks) is kept at its path as the same inode: it is hard-linked into the new folder (one that
  cannot be linked stops the build; a copy would not be the same file), and every folder recreated for them, the
  target included, gets the old one's owner, mode and extended attributes (and times, below the target;
  user_metadata.py). A build that would write where such an entry is refuses.
- **Altered own files** (listed in the manifest, content changed): `altered="refuse"` (build) refuses before the
  build starts, naming them; `altered="set_aside"` (push's staging folder, which is rebuilt rather than trusted)
  builds anew and keeps the altered files in a visible sibling `<name>.ragloaders-kept-<UTC time>/`, with a warning.
  Neither deletes them.
- **How.** Each build writes into its own sibling work folder `.<name>.ragloaders-work-XXXXXXXX` (mkdtemp), whose
  manifest says `"complete": false` until the last file is written. The target's lock is held from the first
  check to the end, so a second build of the same target waits for the first and then builds and swaps in turn
  (target_lock.py). The swap is one renameat2(RENAME_EXCHANGE): the target is the old complete folder until the
  call and the new complete folder after it. Where the filesystem cannot exchange, the old folder is renamed to
  `.<name>.ragloaders-old-XXXXXXXX` and the new one into place. The swap, the record of where the old folder went
  and its marking as this target's old folder run with SIGINT and SIGTERM held (swap.py); after the swap nothing
  but `clear_old` touches the old folder, also when Ctrl-C or SIGTERM (which a build turns into the same
  clean-up) comes during it.
- **Interrupted, failed, full.** Before the swap, leaving the build (an error, Ctrl-C, SIGTERM) removes only its
  work folder. A full disk (ENOSPC, EDQUOT, EFBIG) is one OutputFolderError naming the folder; the Parquet writer
  writes through publish/sink.py so that it raises instead of aborting the process.
- **Leftovers.** A build first deals with the work and old folders of its target that killed builds left, naming
  each in one line: with nothing at the target, an old folder left aside between the two renames (the only copy)
  is put back; a work folder whose manifest says incomplete is removed whole; any other (a replaced folder, a
  sealed build, or one without a manifest, which a kill right after the swap leaves of a user's folder) is
  cleared as `clear_old` does: only verified own files and entries that are the same inode as the target's are
  removed, then empty folders; anything else (and what cannot be removed: a folder the user made read-only) is
  moved to a visible kept folder, never deleted, and the new build stands.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Literal

from ..core.deep_folders import make_folders, remove_tree, walk
from ..core.errors import is_no_space
from ..core.held_signals import deferred_signals
from ..core.log import warn
from ..core.output_target import OutputFolderError, check_target, is_inside
from ..core.preview import previews
from .manifest import (
    MANIFEST,
    Manifest,
    Verdict,
    file_signature,
    folder_entries,
    hash_folder,
    read_manifest,
    regular_file_inside,
    verify,
)
from .swap import exchange, sigterm_as_interrupt
from .target_lock import TargetLock, running_builds_around
from .user_metadata import keep_metadata, mount_points, other_devices

WORK_TAG = ".ragloaders-work-"
OLD_TAG = ".ragloaders-old-"
KEPT_TAG = ".ragloaders-kept-"

Altered = Literal["refuse", "set_aside"]


class OutputFolder:
    """A context manager around one build into `out`: checks the target, takes the lock, deals with leftovers,
    and gives `work`, the folder to write into; `commit(identity)` swaps the finished folder into place.
    Leaving the block without commit (an error, Ctrl-C, SIGTERM) removes the work folder; the target is then
    untouched. Leaving it after the swap (Ctrl-C during the clean-up) only clears the replaced folder as
    `clear_old` does. A full disk is reported in one line naming the folder."""

    def __init__(self, out: str, *, data_dir: str | None = None, cache_dir: str | None = None,
                 into_existing: bool = False, altered: Altered = "refuse", option: str = "--out"):
        self.target = check_target(out, data_dir=data_dir, cache_dir=cache_dir, option=option)
        self.given = out
        self.option = option
        self.into_existing = into_existing
        self.altered = altered
        self.parent = os.path.dirname(self.target)
        self.name = os.path.basename(self.target)
        self.lock = TargetLock(self.target)
        self.work: str = ""
        self.old: str = ""
        """After the swap: where the replaced folder is until clear_old is done with it."""
        self.before: Verdict | None = None
        self.committed = False
        self._signals = sigterm_as_interrupt()

    def __enter__(self) -> OutputFolder:
        make_folders(self.parent)
        self._refuse_nested()  # before the lock file is made, so a refused build leaves nothing inside another
        self._signals.__enter__()
        try:
            self.lock.acquire()
            try:
                self._refuse_nested()  # again with the lock held: one of two racing builds sees the other
                self._recover()
                self.before = self._inspect()
                self.work = tempfile.mkdtemp(prefix="." + self.name + WORK_TAG, dir=self.parent)
                mask = os.umask(0)
                os.umask(mask)
                os.chmod(self.work, 0o777 & ~mask)  # mkdtemp makes 0700; a new folder follows the umask
                Manifest(self.target, {}).write(self.work)
            except BaseException:
                self._remove_work()
                self.lock.release()
                raise
        except BaseException:
            self._signals.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if self.old:
                clear_old(self.old, self.target, self.before.own if self.before else None, self.name)
                self.old = ""
            elif not self.committed:
                self._remove_work()
        finally:
            self.lock.release()
            self._signals.__exit__(None, None, None)
        if is_no_space(error):
            written = os.fspath(error.filename) if error.filename else ""
            where = self.parent if not written or is_inside(os.path.realpath(written), self.parent) else written
            raise OutputFolderError(f"{self.option} {self.given}: no space left on the device of {where} "
                                    f"({error.strerror}); {self._kept()}, the unfinished build was removed") from error

    def _kept(self) -> str:
        if self.committed:
            return "the new build is in place"
        return "the folder keeps its previous build" if self.before is not None else "no folder was made"

    def _remove_work(self) -> None:
        """Remove the work folder of this build (its name is from mkdtemp in this run, before any swap)."""
        if self.work and os.path.isdir(self.work) and not os.path.islink(self.work):
            remove_unfinished(self.work, ignore_errors=True)
        self.work = ""

    def _refuse_nested(self) -> None:
        for other, relation in running_builds_around(self.target):
            raise OutputFolderError(f"{self.option} {self.given}: another ragloaders build is writing {other}, "
                                    f"which {relation} this folder; build it when that one has finished")

    # -- before the build

    def _inspect(self) -> Verdict | None:
        """What is at the target now; refuses a folder that is not ragloaders' (without into_existing), one with
        a mount point in it and, with altered="refuse", one whose own files were changed."""
        if not os.path.isdir(self.target):
            return None
        where = f"{self.option} {self.given}"
        if os.lstat(self.target).st_dev != os.lstat(self.parent).st_dev or self.target in mount_points():
            raise OutputFolderError(f"{where} is a mount point; a build swaps folders and cannot swap a mount "
                                    "point: build into a folder inside it")
        mounted = other_devices(self.target)
        if mounted:
            shown = previews(mounted, 5)
            raise OutputFolderError(f"{where} holds entries on another filesystem ({shown}); ragloaders does not "
                                    "move mounts: unmount them or choose another folder")
        verdict = verify(self.target)
        if verdict.manifest is None and verdict.others and not self.into_existing:
            raise OutputFolderError(
                f"{where} exists and was not written by ragloaders (no valid {MANIFEST}); choose a new folder, "
                "or pass --into-existing to add the build beside its files (none of them is changed); a folder "
                "built by a version of ragloaders that wrote no manifest has none: delete it yourself")
        if verdict.altered and self.altered == "refuse":
            raise OutputFolderError(
                f"{where}: {len(verdict.altered)} file(s) ragloaders wrote were changed since "
                f"({previews(verdict.altered, 5)}); "
                "move them out of the folder (or delete them) and build again")
        return verdict

    # -- the swap

    def commit(self, identity: dict) -> Manifest:
        """Seal the work folder (its manifest lists every file written, complete) and swap it into place."""
        manifest = Manifest(self.target, identity, hash_folder(self.work), complete=True)
        keep = self._to_carry(manifest)
        self._refuse_collisions(keep, manifest)
        manifest.write(self.work)
        for name in keep:
            _carry(os.path.join(self.target, name.rstrip("/")), os.path.join(self.work, name.rstrip("/")),
                   name.endswith("/"))
        folders = _folders_of(keep)
        for folder in sorted(folders, key=lambda f: -f.count("/")):  # the user's folders stay as they were
            keep_metadata(os.path.join(self.target, folder), os.path.join(self.work, folder), times=True)
        if self.before is None:
            with deferred_signals():
                try:  # onto nothing (or an empty folder, which rename replaces); never onto something new
                    os.rename(self.work, self.target)
                except OSError as e:
                    raise OutputFolderError(f"{self.option} {self.given}: something was put there during the "
                                            f"build ({e.strerror}); it is left as it is") from e
                self.work, self.committed = "", True
        else:
            keep_metadata(self.target, self.work, times=False)  # the folder keeps its owner, mode, attributes
            self._swap()
        return manifest

    def _to_carry(self, manifest: Manifest) -> list[str]:
        """Entries of the old folder that stay: the user's, and altered own files the new build does not write."""
        if self.before is None:
            return []
        return sorted(self.before.others + [n for n in self.before.altered if n not in manifest.files])

    def _refuse_collisions(self, keep: list[str], manifest: Manifest) -> None:
        written = set(manifest.files) | {MANIFEST}
        folders = _folders_of(written)
        inside_written = [f"{file}/" for file in written & _folders_of(keep)]  # (a kept entry inside a written file)
        clashes = [n for n in keep if n.rstrip("/") in written or (not n.endswith("/") and n in folders)
                   or any(n.startswith(file) for file in inside_written)]
        if clashes:
            raise OutputFolderError(
                f"{self.option} {self.given}: the build writes where files that are not ragloaders' are "
                f"({previews(clashes, 5)}); "
                "move them out of the folder and build again")

    def _swap(self) -> None:
        """Swap, record where the old folder went and mark it as this target's, all before a Ctrl-C is let in;
        then clear the old folder (`clear_old`, also what __exit__ finishes if a Ctrl-C comes during it)."""
        with deferred_signals():
            if exchange(self.work, self.target):
                self.old = self.work
            else:
                old = tempfile.mkdtemp(prefix="." + self.name + OLD_TAG, dir=self.parent)
                os.rename(self.target, old)  # over the empty folder mkdtemp made: the name is ours
                try:
                    os.rename(self.work, self.target)
                except BaseException:
                    os.rename(old, self.target)
                    raise
                self.old = old
            self.work, self.committed = "", True
            if read_manifest(self.old) is None:  # the user's folder or an empty one: mark it as this target's old one
                _mark_old(self.old, self.target)
        clear_old(self.old, self.target, self.before.own if self.before else None, self.name)
        self.old = ""

    # -- after a kill

    def _recover(self) -> None:
        """Deal with what killed builds of this target left beside it, saying so in one line each: put back a
        folder left aside between two renames when nothing is at the target; remove an unfinished build (its
        manifest says incomplete); clear a replaced or sealed folder as clear_old does (whatever is not provably
        ragloaders' or also in the target goes to a visible kept folder)."""
        found = []
        for entry in sorted(os.listdir(self.parent)):
            if not (entry.startswith("." + self.name + WORK_TAG) or entry.startswith("." + self.name + OLD_TAG)):
                continue
            path = os.path.join(self.parent, entry)
            if not os.path.isdir(path) or os.path.islink(path):
                continue
            if not os.listdir(path):
                os.rmdir(path)  # killed between mkdtemp and its first manifest: empty, nothing to lose
                continue
            found.append((path, read_manifest(path)))
        if not os.path.lexists(self.target):
            aside = [(p, m) for p, m in found if OLD_TAG in os.path.basename(p) and (m is None or m.complete)]
            if aside:  # the two-rename swap was killed between its renames: the old folder is the only copy
                path = aside[0][0]
                warn(f"{self.target} was left aside by a killed build: putting it back from {path}")
                os.rename(path, self.target)
                return self._recover()
        for path, manifest in found:
            if manifest is not None and not manifest.complete and manifest.target == self.target:
                warn(f"removing {path}, the unfinished work folder of a killed build of {self.target}")
                remove_unfinished(path)
            else:
                if manifest is None:  # swapped out by a build killed before it marked the folder
                    _mark_old(path, self.target)
                warn(f"clearing {path}, the folder a killed build of {self.target} replaced (what is not "
                         "ragloaders' nor in the target is kept)")
                clear_old(path, self.target, None, self.name)


def remove_unfinished(folder: str, ignore_errors: bool = False) -> None:
    """Remove the work folder of an unfinished build, its manifest last, once nothing else is left: a kill or a file
    that cannot be removed leaves a folder the next build still knows as an unfinished one of its own (`_recover`
    removes it), never one whose files it must keep. `ignore_errors`: remove what can be removed (as
    `remove_tree`'s)."""
    try:
        for entry in os.listdir(folder):
            path = os.path.join(folder, entry)
            if entry == MANIFEST:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                remove_tree(path, ignore_errors=ignore_errors)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    if not ignore_errors:
                        raise
        if os.listdir(folder) == [MANIFEST]:
            os.unlink(os.path.join(folder, MANIFEST))
        os.rmdir(folder)
    except OSError:
        if not ignore_errors:
            raise


def _mark_old(folder: str, target: str) -> None:
    """Mark a replaced folder as this target's old one; a folder the user made read-only stays unmarked (clear_old
    and the next run's recovery treat an unmarked leftover the same way)."""
    try:
        Manifest(target, {}, complete=True).write(folder)
    except OSError:
        pass


def _folders_of(names: Iterable[str]) -> set[str]:
    """The folders the entries need ('a/b/c', or 'a/b/' for an empty folder, needs 'a' and 'a/b'), each path made
    once: linear in the entries' and folders' lengths, however deep they are."""
    folders: set[str] = set()
    for name in names:
        folder = name[:-1] if name.endswith("/") else name.rpartition("/")[0]
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    return folders


def _carry(source: str, destination: str, folder: bool) -> None:
    """Keep a user's entry in the new folder as the same inode (a hard link: owner, mode, times, attributes and
    content unchanged); an entry that cannot be linked stops the build (a copy would not be the same file)."""
    make_folders(os.path.dirname(destination))
    if folder:
        make_folders(destination)
        return
    try:
        os.link(source, destination, follow_symlinks=False)
    except OSError as e:
        raise OutputFolderError(f"{source}: ragloaders keeps a file of yours in the new build as the same file (a "
                                f"hard link) and cannot link this one ({e.strerror}); move it out of the folder and "
                                "build again") from e


def _same_entry(old: str, new: str) -> bool:
    """new is old: the same inode (a build keeps a user's entry as a hard link, never as a copy)."""
    try:
        return os.path.samestat(os.lstat(old), os.lstat(new))
    except OSError:
        return False


def clear_old(old: str, target: str, own: dict[str, tuple] | None, name: str) -> None:
    """Remove a replaced folder: its own files (whose stat signature is still the one hashed, or, with `own`
    None, that verify now), entries that are the same inode as the target's, then the folders this emptied (and
    empty ones the target has too) and its manifest. What is left is
    not provably ragloaders' nor kept elsewhere, or could not be removed (a folder the user made read-only): the
    folder is renamed to a visible kept folder, never deleted, and the build still stands."""
    if own is None:
        own = verify(old).own
    failed: list[str] = []
    empty = {folder for folder, folders, files in walk(old) if not folders and not files and folder != old}
    for entry, signature in own.items():
        info = regular_file_inside(old, entry)
        if info is not None and file_signature(info) == signature:
            _remove(os.unlink, os.path.join(old, entry), failed)
    for entry in folder_entries(old):
        if entry != MANIFEST and not entry.endswith("/") and _same_entry(os.path.join(old, entry),
                                                                           os.path.join(target, entry)):
            _remove(os.unlink, os.path.join(old, entry), failed)
    for folder, _, _ in walk(old, topdown=False):  # the deepest first
        kept_as_is = folder in empty and not os.path.isdir(os.path.join(target, os.path.relpath(folder, old)))
        if folder != old and not kept_as_is:  # an empty folder of the user's goes only if the target has it too
            try:
                os.rmdir(folder)
            except OSError:
                pass
    ours = (MANIFEST, MANIFEST + ".tmp")
    if not [e for e in os.listdir(old) if e not in ours]:
        for leftover in ours:
            if os.path.lexists(os.path.join(old, leftover)):
                _remove(os.unlink, os.path.join(old, leftover), failed)
        if _remove(os.rmdir, old, failed):
            return
    kept = os.path.join(os.path.dirname(target), name + KEPT_TAG + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    while os.path.lexists(kept):
        kept += "-1"
    os.rename(old, kept)  # in the same folder: needs no write permission on `old` itself
    if os.path.lexists(os.path.join(kept, MANIFEST)):  # after the rename: a kill before it leaves a leftover
        _remove(os.unlink, os.path.join(kept, MANIFEST), failed)
    reason = f" (could not remove {failed[0]}{' ...' if len(failed) > 1 else ''})" if failed else ""
    warn(f"files of {target} that ragloaders did not write unchanged, or could not remove, were kept in "
        f"{kept}{reason}")


def _remove(action: Callable[[str], None], path: str, failed: list[str]) -> bool:
    """Remove with `action`; a refusal (a folder the user made read-only) is noted in `failed`, not raised: what
    stays is kept in a visible folder."""
    try:
        action(path)
        return True
    except OSError as e:
        failed.append(f"{path}: {e.strerror}")
        return False
