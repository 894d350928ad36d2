"""`build --out`: ragloaders never deletes or replaces what it did not write (publish/output_folder.py).

Builds use the bundled nfcorpus.zip and the CRAG example file, with one datasets cache for the module. Targets that
could harm the machine on a build without these rules (`/`) are only given to `check_target`; every other refused
target is a folder under tmp_path, given to the real CLI, and checked byte for byte afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest
from conftest import DATA, assert_names
from ragloaders.cli import main
from ragloaders.core.output_target import OutputFolderError, check_target
from ragloaders.publish.build import build_folder
from ragloaders.publish.manifest import MANIFEST, read_manifest, verify
from ragloaders.publish.output_folder import OutputFolder
from ragloaders.publish.target_lock import TargetLock

ROOT = Path(__file__).resolve().parent.parent
NEW, OLD = "beir/nfcorpus", "crag/task_1_and_2"
SOURCES = {NEW: str(DATA / "beir"), OLD: str(DATA / "crag")}


@pytest.fixture(scope="module")
def loads(tmp_path_factory) -> Path:
    """Where load_dataset caches what the tests load (away from the folders whose siblings are checked)."""
    return tmp_path_factory.mktemp("loads")


@pytest.fixture(scope="module")
def built(sample_builds) -> dict[str, tuple[Path, dict]]:
    """The session's complete build of each path (copied into place by tests) and its {config: {split: rows}}."""
    folders = {}
    for path in (NEW, OLD):
        shared = sample_builds[path]
        assert shared.data_dir == SOURCES[path]
        folders[path] = shared.out, {o.name: {s.name: s.num_examples for s in o.splits.values()}
                                     for o in shared.outputs}
    return folders


def snapshot(folder: Path, folder_inodes: bool = True) -> dict[str, tuple]:
    """Every entry under folder: mode, inode, bytes (or link target), and a folder's mtime, to prove nothing was
    touched. A build adds the user's entries to a new folder: their folders are new ones (`folder_inodes` False)."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        content = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else None
        kept = folder_inodes or not path.is_dir() or path.is_symlink()
        entries[str(path.relative_to(folder))] = (info.st_mode, info.st_ino if kept else info.st_mtime_ns, content)
    return entries


def user_folder(folder: Path) -> Path:
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "plan.txt").write_text("my notes\n")
    (folder / "paper.pdf").write_bytes(os.urandom(2000))
    (folder / "empty").mkdir()
    os.symlink("/nonexistent/target", folder / "dangling")
    return folder


def cli(capsys, *args: str) -> tuple[int, str]:
    status = main(list(args))
    return status, capsys.readouterr().err


def one_error_line(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("ragloaders: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def build_args(out, path: str = NEW, *extra: str, cache_dir: str) -> list[str]:
    return ["build", path, "--data-dir", SOURCES[path], "--cache-dir", cache_dir, "--out", str(out), *extra]


def which_build(out: Path, built: dict, loads: Path, load: bool = True) -> str:
    """The path whose complete build `out` holds: the manifest verifies with nothing missing, altered or extra,
    the card's configs are exactly that build's, and (`load`) each loads with the right row counts."""
    verdict = verify(str(out))
    assert verdict.manifest and verdict.manifest.complete, os.listdir(out)
    assert not (verdict.altered or verdict.missing or verdict.others), verdict
    path = verdict.manifest.identity["path"]
    expected = built[path][1]
    assert sorted(datasets.get_dataset_config_names(str(out))) == sorted(expected)
    for config, splits in expected.items() if load else ():
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(loads / f"load-{time.monotonic_ns()}"))
        assert {split: dataset.num_rows for split, dataset in loaded.items()} == splits, (path, config)
    return path


def siblings(out: Path) -> list[str]:
    return sorted(os.listdir(out.parent))


# --- whose folder ---------------------------------------------------------------------------------------------------


def test_a_folder_ragloaders_did_not_write_is_refused_in_one_line_and_left_alone(tmp_path, capsys, cache_dir):
    out = user_folder(tmp_path / "mine")
    before = snapshot(tmp_path)
    status, err = cli(capsys, *build_args(out, cache_dir=cache_dir))
    assert status == 2
    assert "not written by ragloaders" in one_error_line(err) and "--into-existing" in err
    # ragloaders has been 0.2.0 since its first commit and wrote manifests from 2026-11-30 on: the message names no
    # version or date a user could not check, only what the folder lacks
    assert "a folder built by a version of ragloaders that wrote no manifest has none: delete it yourself" in err
    assert "0.2" not in err and "2026" not in err
    assert snapshot(tmp_path) == before


def test_into_existing_adds_the_build_beside_every_user_entry(tmp_path, capsys, cache_dir, built):
    out = user_folder(tmp_path / "mine")
    os.utime(out / "empty", ns=(10**18, 10**18))
    os.utime(out / "notes", ns=(2 * 10**18, 2 * 10**18))
    before = snapshot(out, folder_inodes=False)
    assert cli(capsys, *build_args(out, NEW, "--into-existing", cache_dir=cache_dir))[0] == 0
    after = snapshot(out, folder_inodes=False)
    assert {name: after[name] for name in before} == before  # same bytes, same inodes
    assert which_build_ignoring_user(out, before) == NEW
    # now the folder is ragloaders': the next build needs no flag and still keeps the user's entries
    assert cli(capsys, *build_args(out, OLD, cache_dir=cache_dir))[0] == 0
    again = snapshot(out, folder_inodes=False)
    assert {name: again[name] for name in before} == before
    assert not (out / "qrels").exists() and which_build_ignoring_user(out, before) == OLD  # nfcorpus' files gone
    assert siblings(out) == ["mine"]


def which_build_ignoring_user(out: Path, user: dict) -> str:
    verdict = verify(str(out))
    assert sorted(verdict.others) == sorted(n + "/" if n == "empty" else n for n in user if n != "notes")
    assert not verdict.altered and not verdict.missing
    return verdict.manifest.identity["path"]


def test_a_user_file_where_the_build_writes_stops_it_even_with_into_existing(tmp_path, capsys, cache_dir):
    out = user_folder(tmp_path / "mine")
    (out / "README.md").write_text("my own readme\n")
    before = snapshot(tmp_path)
    status, err = cli(capsys, *build_args(out, NEW, "--into-existing", cache_dir=cache_dir))
    assert status == 2 and "README.md" in one_error_line(err)
    assert snapshot(tmp_path) == before  # nothing changed, no work folder or lock file left


def test_an_empty_folder_is_taken_without_a_flag(tmp_path, capsys, cache_dir, built, loads):
    out = tmp_path / "empty"
    out.mkdir()
    assert cli(capsys, *build_args(out, cache_dir=cache_dir))[0] == 0
    assert which_build(out, built, loads) == NEW


def test_an_altered_own_file_is_refused_and_kept_a_missing_one_rebuilt(tmp_path, capsys, cache_dir, built, loads):
    out = tmp_path / "out"
    shutil.copytree(built[NEW][0], out)
    card = out / "README.md"
    text = card.read_bytes()
    card.write_bytes(text[:-2] + b"X" + text[-1:])  # one byte, the same size: caught by the hash
    before = snapshot(tmp_path)
    status, err = cli(capsys, *build_args(out, cache_dir=cache_dir))
    assert status == 2 and "README.md" in one_error_line(err) and "changed" in err
    assert snapshot(tmp_path) == before
    card.write_bytes(text + b"\nmy edit\n")
    assert cli(capsys, *build_args(out, cache_dir=cache_dir))[0] == 2
    card.unlink()
    (out / "qrels" / "test-00000-of-00001.parquet").unlink()
    assert cli(capsys, *build_args(out, OLD, cache_dir=cache_dir))[0] == 0
    assert which_build(out, built, loads) == OLD and siblings(out) == ["out"]


def test_a_hostile_manifest_cannot_make_ragloaders_delete_outside_or_through_a_symlink(tmp_path, capsys, cache_dir):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.parquet").write_bytes(b"also precious\n")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(elsewhere, out / "corpus")
    record = {"sha256": hashlib.sha256(b"precious\n").hexdigest(), "size": 9}
    inner = {"sha256": hashlib.sha256(b"also precious\n").hexdigest(), "size": 14}
    manifest = {"format": "ragloaders-manifest", "version": 1, "complete": True, "target": str(out), "identity": {},
                "files": {"../victim.txt": record, "corpus/data.parquet": inner}}
    (out / MANIFEST).write_text(json.dumps(manifest))
    before = snapshot(tmp_path)
    assert read_manifest(str(out)) is None  # a path outside the folder: not a ragloaders manifest
    status, err = cli(capsys, *build_args(out, cache_dir=cache_dir))
    assert status == 2 and "not written by ragloaders" in one_error_line(err)
    # without the '..' entry it is well formed, but the file behind the symlink is never an own file
    del manifest["files"]["../victim.txt"]
    (out / MANIFEST).write_text(json.dumps(manifest))
    assert verify(str(out)).own == {} and verify(str(out)).altered == ["corpus/data.parquet"]
    status, err = cli(capsys, *build_args(out, cache_dir=cache_dir))
    assert status == 2 and "corpus/data.parquet" in one_error_line(err)
    assert victim.read_bytes() == b"precious\n" and (elsewhere / "data.parquet").read_bytes() == b"also precious\n"
    assert {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("out/")} == \
        {k: v for k, v in before.items() if not k.startswith("out/")}


# --- where ----------------------------------------------------------------------------------------------------------


def test_the_filesystem_root_is_refused():
    for root in ("/", "//", "/tmp/..", "/./"):
        with pytest.raises(OutputFolderError) as caught:
            check_target(root)
        assert_names(caught.value, f"--out {root}", "filesystem root")


REFUSED = {
    "home": ("home", "home folder"),
    "above home": ("home/..", "home folder"),
    "cwd as .": (".", "current folder"),
    "cwd": ("home/work/cwd", "current folder"),
    "above cwd": ("home/work/cwd/..", "current folder"),
    "x/.. naming cwd": ("home/work/cwd/x/..", "current folder"),
    "dot of a folder": ("other/.", "name the folder itself"),
    "data dir": ("parent-of-data/data", "data dir"),
    "inside data dir": ("parent-of-data/data/out", "data dir"),
    "above data dir": ("parent-of-data", "data dir"),
    "cache dir": ("cache", "cache dir"),
    "inside cache dir": ("cache/out", "cache dir"),
    "symlink to data dir": ("link-to-data", "data dir"),
    "symlink to cwd": ("link-to-cwd", "current folder"),
    "a file": ("afile", "not a folder"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_unsafe_targets_are_refused_in_one_line_before_anything_is_written(case, tmp_path, capsys, monkeypatch):
    """Each target holds files of its own; with the old rmtree each of these cases lost them."""
    given, reason = REFUSED[case]
    home, cwd, other = tmp_path / "home", tmp_path / "home" / "work" / "cwd", tmp_path / "other"
    data, cache = tmp_path / "parent-of-data" / "data", tmp_path / "cache"
    for folder in (cwd / "x", other, data, cache):
        folder.mkdir(parents=True)
        (folder / "keep.txt").write_text(f"{folder.name} file\n")
    shutil.copy(DATA / "beir" / "nfcorpus.zip", data)
    os.symlink(data, tmp_path / "link-to-data")
    os.symlink(cwd, tmp_path / "link-to-cwd")
    (tmp_path / "afile").write_text("a file\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    target = "." if given == "." else f"{tmp_path}/{given}"  # as typed: pathlib would drop a '.' part
    before = snapshot(tmp_path)
    status, err = cli(capsys, "build", NEW, "--data-dir", str(data), "--cache-dir", str(cache), "--out", target)
    assert status == 2 and reason in one_error_line(err)
    assert snapshot(tmp_path) == before


def test_the_default_datasets_cache_is_protected_without_a_cache_dir(tmp_path):
    cache = Path(datasets.config.HF_DATASETS_CACHE)
    for target in (cache, cache / "out", cache.parent):
        with pytest.raises(OutputFolderError) as caught:
            check_target(str(target), data_dir=str(DATA / "beir"))
        assert_names(caught.value, f"--out {target}", f"datasets cache {os.path.realpath(cache)}")
    assert check_target(str(tmp_path / "out"), data_dir=str(DATA / "beir")) == os.path.realpath(tmp_path / "out")


def test_a_symlinked_target_is_built_where_it_points(tmp_path, capsys, cache_dir, built, loads):
    real = tmp_path / "real"
    os.symlink(real, tmp_path / "link")
    assert cli(capsys, *build_args(tmp_path / "link", cache_dir=cache_dir))[0] == 0
    assert (tmp_path / "link").is_symlink() and which_build(real, built, loads) == NEW


# --- kills and concurrent builds ------------------------------------------------------------------------------------

HOOK = r"""
import os, sys, time
import ragloaders.publish.build as build
import ragloaders.publish.output_folder as of

point, sentinel, out, cache = sys.argv[1:5]
state = {"swapped": False, "checks": 0, "renames": 0}

def reached():
    with open(sentinel, "w") as f:
        f.write(point)
    time.sleep(300)

real_exchange, real_write, real_rename = of.exchange, build.write_parquet, os.rename
real_inside = of.regular_file_inside

def exchange(a, b):
    if point == "sealed":
        reached()
    if point == "aside":
        state["swapped"] = True
        return False
    done = real_exchange(a, b)
    state["swapped"] = True
    if point == "swapped":
        reached()
    return done

def write_parquet(*args, **kwargs):
    files = real_write(*args, **kwargs)
    if point == "writing":
        reached()
    return files

def inside(root, name):
    if state["swapped"] and point == "clearing":
        state["checks"] += 1
        if state["checks"] == 2:  # the first old file is gone, the others are there
            reached()
    return real_inside(root, name)

def rename(a, b):
    if state["swapped"] and point == "aside":
        state["renames"] += 1
        if state["renames"] == 2:  # the old folder is aside, the new one not yet in place
            reached()
    return real_rename(a, b)

of.exchange, build.write_parquet, of.regular_file_inside, os.rename = exchange, write_parquet, inside, rename
build.build_folder("beir/nfcorpus", out, data_dir=sys.argv[5], cache_dir=cache)
"""


def hooked_build(tmp_path: Path, point: str, out: Path, cache_dir: str) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "loaders")}
    return subprocess.Popen([sys.executable, "-c", HOOK, point, str(tmp_path / "reached"), str(out), cache_dir,
                             SOURCES[NEW]], env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_when_reached(process: subprocess.Popen, sentinel: Path) -> None:
    deadline = time.monotonic() + 240
    while not sentinel.exists():
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()


# one point before the swap and one after it by default; the other two, each a build killed in a subprocess, in CI
@pytest.mark.parametrize("point, expected", [("writing", OLD), pytest.param("sealed", OLD, marks=pytest.mark.slow),
                                             ("swapped", NEW), pytest.param("clearing", NEW, marks=pytest.mark.slow)])
def test_a_kill_at_any_point_leaves_the_old_or_the_new_complete_folder(point, expected, tmp_path, cache_dir, built,
                                                                       loads):
    out = tmp_path / "out"
    shutil.copytree(built[OLD][0], out)
    kill_when_reached(hooked_build(tmp_path, point, out, cache_dir), tmp_path / "reached")
    assert which_build(out, built, loads) == expected
    assert [name for name in siblings(out) if ".ragloaders-work-" in name]  # the killed build's leftover
    build_folder(NEW, str(out), data_dir=SOURCES[NEW], cache_dir=cache_dir)
    assert which_build(out, built, loads, load=False) == NEW
    assert siblings(out) == ["out", "reached"]  # the leftover was removed, nothing else


def test_a_kill_while_an_unfinished_build_is_removed_leaves_it_known_as_unfinished(tmp_path, cache_dir, built, loads,
                                                                                  monkeypatch):
    """A build that stops removes its work folder; a kill on the way (here: as soon as the manifest is gone while
    anything else is left, wherever the listing put it) used to leave a work folder without its manifest, which the
    next build took for a folder a killed build replaced and kept, ragloaders' own files and all, in a visible
    `.ragloaders-kept-` folder. The manifest now goes last: the next build removes what is left, keeping nothing."""
    out = tmp_path / "out"
    shutil.copytree(built[OLD][0], out)
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        real_unlink(path, *args, **kwargs)
        work = [out.parent / name for name in siblings(out) if ".ragloaders-work-" in name]
        if os.path.basename(path) == MANIFEST and work and os.listdir(work[0]):
            raise KeyboardInterrupt  # the kill

    with pytest.raises((KeyboardInterrupt, RuntimeError)), OutputFolder(str(out), data_dir=SOURCES[NEW],
                                                                        cache_dir=cache_dir) as folder:
        for config in ("corpus", "queries"):
            os.makedirs(os.path.join(folder.work, config))
            Path(folder.work, config, "part.parquet").write_bytes(b"unfinished")
        monkeypatch.setattr(os, "unlink", unlink)
        raise RuntimeError("the build stops")
    monkeypatch.undo()
    build_folder(NEW, str(out), data_dir=SOURCES[NEW], cache_dir=cache_dir)
    assert which_build(out, built, loads, load=False) == NEW
    assert siblings(out) == ["out"], siblings(out)  # nothing kept


@pytest.mark.slow
def test_a_kill_between_the_two_renames_of_the_fallback_swap_is_undone(tmp_path, cache_dir, built, loads):
    """Where the filesystem cannot exchange two folders, the old one is put aside then the new one moved in;
    a kill in between leaves no folder at `out`, and the next build puts the old one back first."""
    out = tmp_path / "out"
    shutil.copytree(built[OLD][0], out)
    kill_when_reached(hooked_build(tmp_path, "aside", out, cache_dir), tmp_path / "reached")
    assert not out.exists() and [name for name in siblings(out) if ".ragloaders-old-" in name]
    with OutputFolder(str(out), data_dir=SOURCES[NEW], cache_dir=cache_dir):
        pass  # what a build does first: recover; then it is left without a commit
    assert which_build(out, built, loads) == OLD and siblings(out) == ["out", "reached"]


@pytest.mark.slow
def test_two_concurrent_builds_of_one_folder_both_finish_with_a_complete_folder(tmp_path, cache_dir, built, loads):
    """The test holds the target's lock until both builds have said they wait, so they really contend."""
    out = tmp_path / "out"
    shutil.copytree(built[OLD][0], out)
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "loaders")}
    command = [sys.executable, "-m", "ragloaders", *build_args(out, cache_dir=cache_dir)]
    lock = TargetLock(os.path.realpath(out))
    lock.acquire()
    errors = [tmp_path / f"err{k}" for k in range(2)]
    sinks = [open(err, "w") for err in errors]
    try:
        processes = [subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=sink, text=True)
                     for sink in sinks]
        deadline = time.monotonic() + 240
        while not all("waiting for it to finish" in err.read_text() for err in errors):
            assert time.monotonic() < deadline and all(p.poll() is None for p in processes)
            time.sleep(0.1)
        assert which_build(out, built, loads, load=False) == OLD  # nothing changed while they wait
    finally:
        lock.release()
    results = [process.communicate(timeout=300)[0] for process in processes]
    for sink in sinks:
        sink.close()
    assert [process.returncode for process in processes] == [0, 0], [err.read_text()[-2000:] for err in errors]
    assert all(f"wrote {out}" in stdout for stdout in results)
    assert which_build(out, built, loads) == NEW and siblings(out) == ["err0", "err1", "out"]


# --- the CLI's errors -----------------------------------------------------------------------------------------------


def test_errors_are_one_line_and_debug_shows_the_traceback(tmp_path, capsys, cache_dir):
    out = user_folder(tmp_path / "mine")
    status, err = cli(capsys, *build_args(out, cache_dir=cache_dir))
    assert status == 2 and err.count("\n") == 1
    args = build_args(out, cache_dir=cache_dir)
    for argv in (["--debug", *args], [*args, "--debug"]):
        status, traced = cli(capsys, *argv)
        assert status == 2 and "Traceback" in traced and "OutputFolderError: " in traced and traced.endswith(err)
    # an OSError (here: the parent of --out cannot be made) is one line too
    (tmp_path / "plain").write_text("a file\n")
    status, err = cli(capsys, *build_args(tmp_path / "plain" / "out", cache_dir=cache_dir))
    assert status == 2 and "plain" in one_error_line(err)


def test_a_source_error_is_one_line_and_leaves_no_folder_lock_or_work_folder(tmp_path, capsys, cache_dir):
    out = tmp_path / "out"
    status, err = cli(capsys, "build", NEW, "--data-dir", str(DATA / "beir" / "nfcorpus-cut"), "--cache-dir",
                      cache_dir, "--out", str(out))
    assert status == 2 and "corpus.jsonl" in one_error_line(err)
    assert os.listdir(tmp_path) == []


CTRL_C = """
import signal, sys, time
from pathlib import Path
from ragloaders import cli
from ragloaders.publish import build
from ragloaders.publish.write_behind import WriteStopped

real_write = build.write_parquet

def write_parquet(plan, folder, split, stop=None):
    files = real_write(plan, folder, split, stop)
    Path(sys.argv[1]).touch()  # halfway: the first split is written
    for _ in range(1200):  # (a write on the write-behind thread stops between row groups: here, between sleeps)
        if stop is not None and stop.is_set():
            raise WriteStopped("stopped")
        time.sleep(0.1)
    return files

build.write_parquet = write_parquet
signal.signal(signal.SIGINT, signal.default_int_handler)  # pytest started as a background job passes SIGINT ignored
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_ctrl_c_halfway_says_so_in_one_line_keeps_the_old_folder_and_a_rerun_completes(tmp_path, cache_dir, built,
                                                                                       loads):
    out = tmp_path / "out"
    shutil.copytree(built[OLD][0], out)
    sentinel = tmp_path / "reached"
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "loaders")}
    process = subprocess.Popen([sys.executable, "-c", CTRL_C, str(sentinel), *build_args(out, cache_dir=cache_dir)],
                               env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not sentinel.exists():
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()[-3000:]
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        err = process.communicate(timeout=120)[1]
    finally:  # a child that outlived the test would keep sleeping on the output folder's lock
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err[-3000:]
    assert "Traceback" not in err and [line for line in err.splitlines() if line.startswith("ragloaders: ")] == [
        f"ragloaders: interrupted; {out} holds a complete build (its previous one, or the new one if it was already "
        "swapped in), and a rerun resumes from the configs already prepared"]
    assert which_build(out, built, loads) == OLD
    build_folder(NEW, str(out), data_dir=SOURCES[NEW], cache_dir=cache_dir)
    assert which_build(out, built, loads, load=False) == NEW
    assert siblings(out) == ["out", "reached"]
