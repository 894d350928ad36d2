"""`ragloaders push FOLDER --dry-run` on built folders edited by an adversary: a manifest naming paths no filesystem
holds, a folder nested deeper than Python recurses, a listed file that is a hard link to one outside the folder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run_cli as run
from ragloaders.publish.manifest import MANIFEST, folder_entries, safe_relative, verify

EVIL = "corpus/evil.parquet"


@pytest.fixture
def folder(nfcorpus_build, tmp_path) -> Path:
    """A copy of the session's build of the nfcorpus sample, to edit."""
    copy = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, copy)
    return copy


def add_to_manifest(folder: Path, files: dict[str, dict]) -> None:
    path = folder / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["files"].update(files)
    path.write_text(json.dumps(manifest), encoding="utf-8")


def record_of(path: Path) -> dict:
    data = path.read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def push_dry_run(folder: Path) -> tuple[int, str, str]:
    return run("push", str(folder), "--repo-id", "me/x", "--dry-run")


# --- manifest paths longer than a filesystem allows ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["x" * 5_000_000, "é" * 128, "ab/" * 1365 + "ab"],
                         ids=["5-million-characters", "a-part-of-256-bytes", "4097-bytes-of-short-parts"])
def test_a_manifest_path_no_filesystem_holds_makes_the_manifest_none_in_a_short_message(folder, name):
    add_to_manifest(folder, {name: {"sha256": "0" * 64, "size": 1}})
    code, out, err = push_dry_run(folder)
    assert code == 2 and "no ragloaders manifest" in err and MANIFEST in err and len(err) < 1000, err[:2000]
    assert "would upload" not in out
    code, out, err = run("validate", str(folder), "--json")
    assert len(out) + len(err) < 20_000 and name[:300] not in out


def test_manifest_paths_up_to_the_posix_limits_are_taken():
    assert safe_relative("é" * 127 + "a")  # 255 bytes
    assert safe_relative("a/" * 2047 + "ab")  # 4096 bytes
    assert not safe_relative("é" * 127 + "ab")
    assert not safe_relative("a/" * 2047 + "abc")


def test_names_of_changed_files_in_the_push_message_are_bounded_previews(folder):
    long_names = {"/".join([f"{i}" + "y" * 250] * 16): {"sha256": "0" * 64, "size": 1} for i in range(3)}
    add_to_manifest(folder, {**long_names, "a\n" * 100 + "b": {"sha256": "0" * 64, "size": 1}})
    assert all(len(name) > 4000 for name in long_names)
    code, _, err = push_dry_run(folder)
    assert code == 2 and "does not verify against its manifest (0 changed, 4 missing files" in err
    assert len(err) < 1000 and err.count("\n") == 1, err[:2000]
    assert "'0yyyy" in err and " ..." in err  # the names are previews: quoted, cut, and more of them said


# --- a folder nested deeper than Python recurses ------------------------------------------------------------------


DEPTH = 1500


def nest(root: Path, depth: int) -> None:
    """`root/d/d/.../d` (`depth` folders): one mkdir each at an open folder (os.makedirs recurses per level)."""
    handle = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=handle)
            inner = os.open("d", os.O_RDONLY, dir_fd=handle)
            os.close(handle)
            handle = inner
    finally:
        os.close(handle)


def unnest(root: Path) -> None:
    """Remove what `nest` made, a level at a time from the top (shutil.rmtree, and so the tmp_path clean-up,
    recurses per level): `d/d` moves up beside `d`, which is then empty."""
    top, held = root / "d", root / "held"
    while (top / "d").exists():
        os.rename(top / "d", held)
        os.rmdir(top)
        os.rename(held, top)
    os.rmdir(top)


def test_a_folder_nested_1500_deep_is_walked_and_pushed(folder):
    nest(folder, DEPTH)
    try:
        entries = list(folder_entries(str(folder)))
        assert ("d/" * DEPTH) in entries and entries == sorted(entries)
        code, out, err = push_dry_run(folder)
        assert code == 0, err[-2000:]
        assert "6 files" in out and "d/d/" not in out  # the empty folders are the user's: listed, not uploaded
    finally:
        unnest(folder)


def test_folder_entries_lists_leaves_depth_first_in_name_order(tmp_path):
    for name in ("b/c/x", "b/a", "a", "c/d/e/y", "c/z"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    for empty in ("b/c/empty", "e/f", "c/d/g"):
        (tmp_path / empty).mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "b")  # a symlink to a folder is a leaf, never followed
    assert list(folder_entries(str(tmp_path))) == ["a", "b/a", "b/c/empty/", "b/c/x", "c/d/e/y", "c/d/g/", "c/z",
                                                   "e/f/", "link"]
    assert list(folder_entries(str(tmp_path / "e" / "f"))) == []


# --- hard links -----------------------------------------------------------------------------------------------------


def test_a_listed_hard_link_to_a_file_outside_the_folder_is_not_uploaded(folder, tmp_path):
    secret = tmp_path / "outside_secret.txt"
    secret.write_text("the user's secret\n")
    os.link(secret, folder / EVIL)
    add_to_manifest(folder, {EVIL: record_of(folder / EVIL)})
    assert verify(str(folder)).linked == [EVIL]
    code, out, err = push_dry_run(folder)
    assert code == 2 and "would upload" not in out, out
    assert "hard link" in err and f"'{EVIL}'" in err and "another file of yours" in err and len(err) < 1000, err
    assert secret.read_text() == "the user's secret\n" and secret.stat().st_nlink == 2


def test_hard_links_of_the_users_beside_a_build_do_not_stop_its_push(nfcorpus_build, tmp_path):
    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "a.txt").write_text("mine\n")
    os.link(out / "notes" / "a.txt", out / "notes" / "b.txt")
    code, _, err = run("build", nfcorpus_build.path, "--data-dir", nfcorpus_build.data_dir, "--cache-dir",
                       nfcorpus_build.cache_dir, "--out", str(out), "--into-existing")
    assert code == 0, err[-2000:]
    verdict = verify(str(out))
    assert verdict.own and not verdict.linked and sorted(verdict.others) == ["notes/a.txt", "notes/b.txt"]
    assert all(os.stat(out / name).st_nlink == 1 for name in verdict.own)  # a build writes no hard link
    code, stdout, err = push_dry_run(out)
    assert code == 0, err[-2000:]
    assert "notes/" not in stdout and "6 files" in stdout
    assert (out / "notes" / "a.txt").stat().st_nlink == 2  # the user's links are theirs, untouched


def test_a_staged_build_holding_a_hard_link_is_built_again(nfcorpus_build, tmp_path):
    staged = tmp_path / "staged"
    push_args = ("push", nfcorpus_build.path, "--repo-id", "me/x", "--data-dir", nfcorpus_build.data_dir,
                 "--cache-dir", nfcorpus_build.cache_dir, "--staging-dir", str(staged), "--dry-run")
    assert run(*push_args)[0] == 0
    outside = tmp_path / "elsewhere.parquet"
    os.replace(staged / "README.md", outside)
    os.link(outside, staged / "README.md")  # the same bytes, but another file of the user's too
    code, out, err = run(*push_args)
    assert code == 0, err[-2000:]
    assert "has hard links ('README.md'), which push does not upload: building it again" in out
    assert (staged / "README.md").stat().st_nlink == 1 and outside.stat().st_nlink == 1 and outside.read_bytes()
