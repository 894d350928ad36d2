"""Folders at any depth (core/deep_folders.py): `walk` gives what `os.walk` gives, and neither it nor `make_folders`
recurses, so a user's folder nested deeper than Python's recursion limit is walked, kept and refused like any other
(Python 3.11's os.walk and os.makedirs raised RecursionError out of `build --out`)."""

from __future__ import annotations

import errno
import os
import sys

import pytest
from conftest import DATA, run_cli
from ragloaders.core.deep_folders import make_folders, real_path, remove_tree, walk
from test_push_manifest_hostile import nest

DEPTH = 1_100
"""Past Python's default recursion limit (1,000), within PATH_MAX (2 bytes a level)."""


def deep_tree(top) -> str:
    """`top`/d/d/.../d (DEPTH levels, made without recursion: `nest`) holding one file."""
    nest(top, DEPTH)
    leaf = os.path.join(str(top), *["d"] * DEPTH)
    with open(os.path.join(leaf, "leaf.txt"), "w") as f:
        f.write("mine")
    return leaf


@pytest.fixture
def deep(tmp_path):
    top = tmp_path / "deep"
    top.mkdir()
    yield top, deep_tree(top)
    remove_tree(str(tmp_path))  # (shutil.rmtree recurses too)


def sample_tree(top) -> None:
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f.txt").write_text("x")
    (top / "a" / "g.txt").write_text("y")
    (top / "empty").mkdir()
    (top / "c").mkdir()
    (top / "c" / "h").write_text("z")
    os.symlink(top / "a", top / "link-to-folder")
    os.symlink(top / "a" / "g.txt", top / "link-to-file")
    os.symlink(top / "nowhere", top / "broken-link")


def listed(walked) -> list:
    return [(folder, sorted(folders), sorted(others)) for folder, folders, others in walked]


@pytest.mark.parametrize("topdown", [True, False])
def test_walk_gives_what_os_walk_gives(tmp_path, topdown):
    sample_tree(tmp_path)
    got = listed(walk(str(tmp_path), topdown))
    assert got == listed(os.walk(str(tmp_path), topdown))
    assert (str(tmp_path / "link-to-folder"), [], []) not in got  # listed, never entered
    assert any("link-to-folder" in folders for _, folders, _ in got)


def test_walk_top_down_leaves_pruned_folders_unvisited(tmp_path):
    sample_tree(tmp_path)
    seen = []
    for folder, folders, _ in walk(str(tmp_path)):
        seen.append(os.path.relpath(folder, tmp_path))
        folders[:] = [name for name in folders if name != "a"]
    assert sorted(seen) == [".", "c", "empty"]


def test_walk_of_what_cannot_be_listed_gives_nothing(tmp_path):
    assert list(walk(str(tmp_path / "missing"))) == []
    (tmp_path / "file").write_text("x")
    assert list(walk(str(tmp_path / "file"))) == []


@pytest.mark.parametrize("topdown", [True, False])
def test_walk_goes_deeper_than_the_recursion_limit(deep, topdown):
    top, leaf = deep
    walked = list(walk(str(top), topdown))
    assert len(walked) == DEPTH + 1
    assert walked[-1 if topdown else 0] == (leaf, [], ["leaf.txt"])
    if sys.version_info < (3, 12):  # (what this module is for: 3.11's own walk cannot)
        with pytest.raises(RecursionError):
            list(os.walk(str(top)))


def test_make_folders_makes_every_level_and_refuses_a_file(tmp_path):
    path = os.path.join(str(tmp_path), *["m"] * DEPTH)
    make_folders(path)
    assert os.path.isdir(path)
    make_folders(path)  # (there already: nothing to do)
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        make_folders(str(tmp_path / "file"))
    with pytest.raises(NotADirectoryError):
        make_folders(str(tmp_path / "file" / "inside"))
    remove_tree(os.path.join(str(tmp_path), "m"))


@pytest.mark.slow  # (seconds: a build keeping or making 1,100 levels; CI runs it)
def test_a_build_keeps_a_users_folder_nested_past_the_recursion_limit(deep, tmp_path):
    top, leaf = deep
    out = tmp_path / "out"
    assert run_cli("build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--configs", "qrels",
                   "--out", str(out))[0] == 0
    level = top / "d"
    for index in range(DEPTH):  # a file at every level too: each kept entry's folders were listed anew (every
        (level / "f").write_text(str(index))  # ancestor path of every entry: the cube of the depth in all)
        level = level / "d" if index < DEPTH - 1 else level
    os.rename(top / "d", out / "d")  # the user's tree, inside the built folder
    inode = os.stat(os.path.join(str(out), *["d"] * DEPTH, "leaf.txt")).st_ino
    code, _, err = run_cli("build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--configs", "qrels",
                           "--out", str(out))
    assert code == 0, err
    kept = os.path.join(str(out), *["d"] * DEPTH, "leaf.txt")
    assert os.stat(kept).st_ino == inode and open(kept).read() == "mine"  # the same file, unchanged
    assert sum("f" in others for _, _, others in walk(str(out / "d"))) == DEPTH
    assert run_cli("validate", str(out))[0] == 0


@pytest.mark.slow  # (seconds: the refusal walks 1,100 levels; CI runs it)
def test_a_folder_of_someone_elses_nested_past_the_recursion_limit_is_refused_in_one_line(deep):
    top, _ = deep
    code, out, err = run_cli("build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--out", str(top))
    assert code != 0 and err.count("\n") == 1
    assert "was not written by ragloaders" in err and "RecursionError" not in err


def test_the_files_a_push_of_a_folder_without_a_manifest_stages_include_a_deep_one(deep):
    from ragloaders.publish.push import staged_files

    top, leaf = deep
    (top / "README.md").write_text("card")
    names = sorted(staged.path_in_repo for staged in staged_files(str(top)))
    assert names == ["README.md", "/".join(["d"] * DEPTH + ["leaf.txt"])]


def test_remove_tree_removes_a_deep_tree_and_never_follows_a_symlink(deep, tmp_path):
    top, _ = deep
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not ours")
    os.symlink(outside, top / "d" / "link-to-outside")
    os.symlink(outside / "keep.txt", top / "d" / "link-to-file")
    remove_tree(str(top))
    assert not os.path.lexists(top)
    assert (outside / "keep.txt").read_text() == "not ours"


def test_remove_tree_raises_unless_errors_are_ignored(tmp_path):
    with pytest.raises(FileNotFoundError):
        remove_tree(str(tmp_path / "missing"))
    remove_tree(str(tmp_path / "missing"), ignore_errors=True)
    (tmp_path / "file").write_text("x")
    remove_tree(str(tmp_path / "file"))  # (a file at the top is removed, as any entry)
    assert not (tmp_path / "file").exists()


def test_a_symlink_chain_too_long_for_realpath_is_an_oserror(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / f"l{DEPTH}")
    for index in range(DEPTH - 1, -1, -1):
        os.symlink(f"l{index + 1}", tmp_path / f"l{index}")
    with pytest.raises(OSError) as caught:
        real_path(str(tmp_path / "l0"))
    assert caught.value.errno == errno.ELOOP
    code, _, err = run_cli("build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--configs", "qrels",
                           "--out", str(tmp_path / "l0"))
    assert code != 0 and err.count("\n") == 1 and "RecursionError" not in err
    assert "Too many levels of symbolic links" in err


@pytest.mark.slow  # (seconds: a build keeping or making 1,100 levels; CI runs it)
def test_a_build_into_missing_folders_past_the_recursion_limit_and_its_cache_there(tmp_path):
    missing = os.path.join(str(tmp_path / "new"), *["m"] * DEPTH)
    out, cache = os.path.join(missing, "out"), os.path.join(missing, "cache")
    code, _, err = run_cli("build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--configs", "qrels",
                           "--out", out, "--cache-dir", cache)
    assert code == 0, err
    import ragloaders

    loaded = ragloaders.load(out, "qrels", cache_dir=os.path.join(missing, "load-cache"))
    assert loaded["test"].num_rows == 12_334
    remove_tree(str(tmp_path / "new"))


def test_a_failure_after_a_deep_tree_of_the_users_was_carried_leaves_no_work_folder(deep, tmp_path, monkeypatch):
    # The work folder then holds the user's tree (its folders made anew, its files hard links): removing it must not
    # recurse, else the failure became a RecursionError and the work folder stayed beside the build.
    from ragloaders.core.output_target import OutputFolderError
    from ragloaders.publish import output_folder

    top, _ = deep
    out = tmp_path / "out"
    assert run_cli("build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--configs", "qrels",
                   "--out", str(out))[0] == 0
    os.rename(top / "d", out / "d")
    carry = output_folder._carry

    def failing_carry(source, destination, folder):
        carry(source, destination, folder)
        if source.endswith("leaf.txt"):  # (the last entry: every folder of the tree is in the work folder)
            raise OutputFolderError("cannot link this one")

    monkeypatch.setattr(output_folder, "_carry", failing_carry)
    code, _, err = run_cli("build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--configs", "qrels",
                           "--out", str(out))
    assert code != 0 and err.count("\n") == 1 and "cannot link this one" in err and "RecursionError" not in err
    assert sorted(os.listdir(tmp_path)) == ["deep", "out"]  # no work folder left beside it
    assert open(os.path.join(str(out), *["d"] * DEPTH, "leaf.txt")).read() == "mine"



def test_walk_never_enters_a_listed_folder_replaced_by_a_symlink_before_its_turn(tmp_path):
    top, elsewhere = tmp_path / "top", tmp_path / "elsewhere"
    (top / "a").mkdir(parents=True)
    (top / "b").mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret").mkdir()
    seen = []
    for folder, folders, _ in walk(str(top)):
        seen.append(os.path.relpath(folder, top))
        if folder == str(top):
            first, second = folders  # (listing order) both listed now; the second becomes a link out once the
        elif folder.endswith("/" + first):  # first is visited
            os.rmdir(top / second)
            os.symlink(elsewhere, top / second)
    assert seen == [".", first]
