"""What ragloaders writes never costs the user anything, interrupted, killed, nested, on a full disk.

Each test puts a build (a child process where it is interrupted, killed or aborted, so that the test sees the
process end as a user would) in a situation that lost data before, then checks byte for byte that the old folder,
the new one and every entry of the user's are complete and unchanged. Builds use the bundled nfcorpus.zip; the
"previous build" is the CRAG example file's, so which build a folder holds is never in doubt.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DATA
from ragloaders.cli import main
from ragloaders.publish.manifest import MANIFEST, Manifest, hash_folder, verify
from ragloaders.publish.target_lock import lock_path

ROOT = Path(__file__).resolve().parent.parent
NEW, OLD = "beir/nfcorpus", "crag/task_1_and_2"
SOURCES = {NEW: str(DATA / "beir"), OLD: str(DATA / "crag")}
ENVIRONMENT = {**os.environ, "PYTHONPATH": str(ROOT / "loaders")}


@pytest.fixture(scope="module")
def previous(crag_build) -> Path:
    """The session's complete build of OLD, copied into place by the tests as the folder's previous build."""
    assert (crag_build.path, crag_build.data_dir) == (OLD, SOURCES[OLD])
    return crag_build.out


def build_args(out, path: str = NEW, *extra: str, cache_dir: str) -> list[str]:
    return ["build", path, "--data-dir", SOURCES[path], "--cache-dir", cache_dir, "--out", str(out), *extra]


def holds(out: Path) -> str:
    """The path whose complete build `out` holds (every listed file verifies, none missing)."""
    verdict = verify(str(out))
    assert verdict.manifest and verdict.manifest.complete, sorted(os.listdir(out))
    assert not (verdict.altered or verdict.missing), verdict
    return verdict.manifest.identity["path"]


def hidden_leftovers(out: Path) -> list[str]:
    return sorted(name for name in os.listdir(out.parent) if name.startswith("." + out.name + ".ragloaders-"))


def kept_folders(out: Path) -> list[Path]:
    return sorted(out.parent.glob(out.name + ".ragloaders-kept-*"))


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err, err[-3000:]
    return [line for line in err.splitlines() if line.startswith("ragloaders: error:")]


def user_entries(folder: Path) -> dict[str, tuple]:
    """The user's entries of a folder (all but the build's): mode, owner, inode, content or link target."""
    own = set(verify(str(folder)).own) | {MANIFEST} if (folder / MANIFEST).exists() else set()
    entries = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if name in own or path.is_dir() and not path.is_symlink():
            continue
        info = path.lstat()
        content = os.readlink(path) if path.is_symlink() else path.read_bytes()
        entries[name] = (info.st_mode, info.st_uid, info.st_gid, info.st_ino, content)
    return entries


def wait_for(path: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 240
    while not path.exists():
        assert process.poll() is None, process.stderr.read()[-3000:] if process.stderr else process.returncode
        assert time.monotonic() < deadline
        time.sleep(0.05)


# --- Ctrl-C and SIGTERM after the swap ------------------------------------------------------------------------------

SIGNAL_AFTER_SWAP = r"""
import os, signal, sys
import ragloaders.publish.output_folder as of
from ragloaders import cli

signame, out = sys.argv[1:3]
real_exchange = of.exchange

def exchange(a, b):
    with open(os.path.join(out, "written-during-the-build.txt"), "w") as f:  # the user, while it builds
        f.write("a note the user wrote into the folder while it was being rebuilt\n")
    done = real_exchange(a, b)
    os.kill(os.getpid(), getattr(signal, signame))  # Ctrl-C the moment the new folder is in place
    return done

of.exchange = exchange
sys.exit(cli.main(sys.argv[3:]))
"""


@pytest.mark.parametrize("command, signame", [("build", "SIGINT"),  # each path, each signal; a push in CI (seconds)
                                             pytest.param("push", "SIGTERM", marks=pytest.mark.slow)])
@pytest.mark.slow  # (seconds; CI runs it)
def test_a_signal_right_after_the_swap_loses_neither_folder_nor_a_file_of_the_user(command, signame, tmp_path,
                                                                                    cache_dir, previous):
    """Before: the exit clean-up removed the work path, which after the swap holds the old folder, with the file
    the user wrote into it during the build (SIGINT); SIGTERM left the old folder behind as a hidden leftover."""
    out = tmp_path / "out"
    shutil.copytree(previous, out)
    (out / "mine.txt").write_text("the user's file from before\n")
    if command == "build":
        args = build_args(out, cache_dir=cache_dir)
    else:  # push stages (builds) into its staging folder first; --dry-run stops before any upload
        args = ["push", NEW, "--repo-id", "org/name", "--data-dir", SOURCES[NEW], "--cache-dir", cache_dir,
                "--staging-dir", str(out), "--dry-run"]
    done = subprocess.run([sys.executable, "-c", SIGNAL_AFTER_SWAP, signame, str(out), *args], env=ENVIRONMENT,
                          capture_output=True, text=True, timeout=300)
    assert holds(out) == NEW
    assert (out / "mine.txt").read_text() == "the user's file from before\n"
    kept = kept_folders(out)  # the file written during the build was not in the old folder's inventory: kept
    assert len(kept) == 1 and (kept[0] / "written-during-the-build.txt").read_text().startswith("a note")
    assert hidden_leftovers(out) == [], "the interrupted build left its old folder behind"
    assert done.returncode == 130, done.stderr[-3000:]
    assert (f"ragloaders: interrupted; {out} holds a complete build" if command == "build" else
            "ragloaders: interrupted; the staging folder holds a complete build or none yet") in done.stderr


# --- --into-existing keeps the user's folders exactly ----------------------------------------------------------------


def test_into_existing_keeps_mode_owner_times_and_attributes_of_the_users_folders(tmp_path, capsys, cache_dir):
    """Before: the folder (700) became 755 and root's; a recreated folder lost its owner and attributes."""
    out = tmp_path / "private"
    (out / "notes" / "deep").mkdir(parents=True)
    (out / "notes" / "deep" / "plan.txt").write_text("plan\n")
    (out / "notes" / "todo.txt").write_text("todo\n")
    os.chmod(out / "notes" / "todo.txt", 0o640)
    os.chmod(out / "notes", 0o750)
    os.chmod(out / "notes" / "deep", 0o700)
    os.chmod(out, 0o700)
    if os.geteuid() == 0:  # root can give the user's folders other owners, as a user's folders have
        os.chown(out, 4321, 4322)
        os.chown(out / "notes", 4321, 4322)
        os.chown(out / "notes" / "todo.txt", 4323, 4324)
    try:
        os.setxattr(out, "user.origin", b"the folder's own attribute")
        os.setxattr(out / "notes", "user.origin", b"notes' attribute")
        xattrs = True
    except OSError as e:
        if e.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        xattrs = False
    os.utime(out / "notes" / "deep", ns=(10**18, 10**18))
    os.utime(out / "notes", ns=(2 * 10**18, 2 * 10**18))

    def metadata(path: Path) -> tuple:
        info = path.lstat()
        return info.st_mode, info.st_uid, info.st_gid, info.st_ino if not path.is_dir() else None

    folders = [out, out / "notes", out / "notes" / "deep"]
    before = {p: metadata(p) for p in [*folders, out / "notes" / "todo.txt", out / "notes" / "deep" / "plan.txt"]}
    times = {p: p.lstat().st_mtime_ns for p in folders[1:]}
    attributes = {p: os.getxattr(p, "user.origin") for p in folders[:2]} if xattrs else {}

    assert main(build_args(out, NEW, "--into-existing", cache_dir=cache_dir)) == 0, capsys.readouterr().err
    assert holds(out) == NEW
    assert {p: metadata(p) for p in before} == before
    assert {p: p.lstat().st_mtime_ns for p in folders[1:]} == times
    assert {p: os.getxattr(p, "user.origin") for p in attributes} == attributes
    if not xattrs:
        pytest.skip("the filesystem of tmp_path has no user. extended attributes: modes, owners and times checked")


def mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


def unmount_under(root: Path) -> None:
    """Unmount what a test mounted under its folder, also where a failing build moved it; the deepest first."""
    from ragloaders.publish.user_metadata import mount_points

    for point in sorted(mount_points(), key=len, reverse=True):
        if point.startswith(str(root) + os.sep):
            subprocess.run(["umount", point], check=True)


def mount_bind(source: Path, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a bind mount needs root")
    done = subprocess.run(["mount", "--bind", str(source), str(where)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot bind-mount here: {done.stderr.strip()}")


@pytest.mark.parametrize("kind", ["tmpfs", "bind mount of the same filesystem"])
def test_into_existing_refuses_a_folder_with_a_mount_inside_and_moves_nothing(kind, tmp_path, capsys, cache_dir):
    """Before: a filesystem mounted inside the folder was copied onto the parent disk and emptied. A bind mount of
    the same filesystem has the folder's st_dev: the kernel's mount table finds it."""
    out = tmp_path / "mine"
    (out / "plain").mkdir(parents=True)
    (out / "plain" / "a.txt").write_text("on the parent disk\n")
    if kind == "tmpfs":
        mount_tmpfs(out / "disk", "1m")
    else:
        (tmp_path / "elsewhere").mkdir()
        mount_bind(tmp_path / "elsewhere", out / "disk")
    try:
        (out / "disk" / "data.bin").write_bytes(b"on the mounted disk\n")
        status = main(build_args(out, NEW, "--into-existing", cache_dir=cache_dir))
        err = capsys.readouterr().err
        assert status == 2
        [line] = error_lines(err)
        assert "another filesystem ('disk')" in line and str(out) in line
        assert (out / "disk" / "data.bin").read_bytes() == b"on the mounted disk\n"
        assert sorted(os.listdir(out)) == ["disk", "plain"]
        assert sorted(os.listdir(tmp_path)) == ["mine"] if kind == "tmpfs" else ["elsewhere", "mine"]
    finally:
        unmount_under(tmp_path)


def test_a_target_that_is_a_mount_point_is_refused(tmp_path, capsys, cache_dir, previous):
    out = tmp_path / "mounted"
    mount_tmpfs(out, "20m")
    try:
        shutil.copytree(previous, out, dirs_exist_ok=True)
        status = main(build_args(out, cache_dir=cache_dir))
        assert status == 2 and "is a mount point" in error_lines(capsys.readouterr().err)[0]
        assert holds(out) == OLD and os.path.ismount(out)
    finally:
        unmount_under(tmp_path)


# --- bm25 --out follows build's rules ---------------------------------------------------------------------------------


def test_bm25_out_may_not_name_a_file_in_the_data_dir_nor_any_existing_file(tmp_path, capsys, cache_dir):
    """Before: `bm25 --out <data dir>/nfcorpus/queries.jsonl` overwrote the source file with the run."""
    data = tmp_path / "data"
    shutil.unpack_archive(DATA / "beir" / "nfcorpus.zip", data)  # the extracted nfcorpus/ folder is a data dir too
    queries = data / "nfcorpus" / "queries.jsonl"
    assert queries.is_file()
    sources = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    mine = tmp_path / "my-run.trec"
    mine.write_text("q1 Q0 d1 1 1.0 mine\n")
    for out, expected in ((queries, "lies inside the data dir"), (data / "new.trec", "lies inside the data dir"),
                          (mine, "exists"), (Path(cache_dir) / "run.trec", "lies inside the cache dir")):
        status = main(["bm25", NEW, "--data-dir", str(data), "--cache-dir", cache_dir, "--out", str(out)])
        [line] = error_lines(capsys.readouterr().err)
        assert status == 2 and expected in line and str(out) in line
    assert {p: p.read_bytes() for p in data.rglob("*") if p.is_file()} == sources
    assert mine.read_text() == "q1 Q0 d1 1 1.0 mine\n" and not (Path(cache_dir) / "run.trec").exists()


def test_a_run_never_replaces_a_file_that_appeared_while_it_was_written(tmp_path):
    """The check before a run is written cannot see a file made during it: the finished run is linked into
    place, which fails on an existing name, where a rename would have replaced the file."""
    from ragloaders.eval import write_run

    path = tmp_path / "run.trec"

    def rankings():
        yield "q1", ["d1"], [1.0]
        path.write_text("the user's file, made meanwhile\n")

    with pytest.raises(FileExistsError):
        write_run(str(path), rankings())
    assert path.read_text() == "the user's file, made meanwhile\n" and os.listdir(tmp_path) == ["run.trec"]


# --- nested and concurrent builds -------------------------------------------------------------------------------------

PAUSED = r"""
import os, sys, time
from pathlib import Path
import ragloaders.publish.build as build
from ragloaders import cli

paused, go = Path(sys.argv[1]), Path(sys.argv[2])
real_write = build.write_parquet

def write_parquet(*args, **kwargs):
    files = real_write(*args, **kwargs)
    if not paused.exists():
        paused.touch()
        while not go.exists():
            time.sleep(0.05)
    return files

build.write_parquet = write_parquet
sys.exit(cli.main(sys.argv[3:]))
"""


@pytest.mark.parametrize("running, second, relation", [("a", "a/b", "contains"),
                                                       pytest.param("a/b", "a", "lies inside", marks=pytest.mark.slow)])
def test_a_build_inside_or_around_a_running_build_is_refused(running, second, relation, tmp_path, capsys, cache_dir,
                                                             previous):
    """Before: while `a` was rebuilt, a build of `a/b` printed `wrote a/b` (exit 0) and ended in a kept folder."""
    shutil.copytree(previous, tmp_path / "a")
    paused, go = tmp_path / "paused", tmp_path / "go"
    process = subprocess.Popen([sys.executable, "-c", PAUSED, str(paused), str(go),
                                *build_args(tmp_path / running, cache_dir=cache_dir)],
                               env=ENVIRONMENT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    running_work = str(Path(running).parent / f".{Path(running).name}.ragloaders-work-")

    def entries() -> list[str]:  # (the running build's work folder goes on filling: a thread of it is not paused)
        names = (str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
        return sorted(name for name in names if not name.removeprefix("./").startswith(running_work.removeprefix("./")))

    try:
        wait_for(paused, process)
        before = entries()
        status = main(build_args(tmp_path / second, cache_dir=cache_dir))
        [line] = error_lines(capsys.readouterr().err)
        assert status == 2 and f"is writing {tmp_path / running}, which {relation} this folder" in line
        assert entries() == before  # not even a lock file
    finally:
        go.touch()
        out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    assert holds(tmp_path / running) == NEW
    assert not list(tmp_path.rglob("*.ragloaders-kept-*")) and not list(tmp_path.rglob(".*.ragloaders-*"))


# --- leftovers of killed builds ---------------------------------------------------------------------------------------

KILLED = r"""
import os, sys, time
import ragloaders.publish.output_folder as of
from ragloaders import cli

point, sentinel = sys.argv[1:3]
state = {"swapped": False, "renames": 0}
real_exchange, real_rename = of.exchange, os.rename

def reached():
    with open(sentinel, "w") as f:
        f.write(point)
    time.sleep(300)

def exchange(a, b):
    state["swapped"] = True
    if point.startswith("aside"):
        return False  # as on a filesystem without RENAME_EXCHANGE: two renames
    done = real_exchange(a, b)
    reached()  # swapped, not yet marked or cleared
    return done

def rename(a, b):
    if state["swapped"]:
        state["renames"] += 1
        if state["renames"] == 2 and point == "aside":
            reached()  # the old folder is aside, the new one not yet in place
        real_rename(a, b)
        if state["renames"] == 2 and point == "aside-moved":
            reached()  # both renames done, the old folder not yet marked
        return
    real_rename(a, b)

of.exchange, os.rename = exchange, rename
sys.exit(cli.main(sys.argv[3:]))
"""


@pytest.mark.parametrize("point", ["swapped", pytest.param("aside", marks=pytest.mark.slow),
                                   pytest.param("aside-moved", marks=pytest.mark.slow)])
@pytest.mark.slow  # (seconds; CI runs it)
def test_a_build_killed_while_swapping_a_users_folder_leaves_nothing_the_next_run_does_not_deal_with(
        point, tmp_path, capsys, cache_dir):
    """With --into-existing the folder swapped out is the user's own (no manifest). Before: killed after the
    swap, it stayed as a hidden folder no later build removed or mentioned."""
    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "plan.txt").write_text("my plan\n")
    (out / "paper.pdf").write_bytes(os.urandom(3000))
    os.symlink("/nonexistent/target", out / "dangling")
    user = user_entries(out)
    sentinel = tmp_path.parent / f"{tmp_path.name}-reached"
    process = subprocess.Popen([sys.executable, "-c", KILLED, point, str(sentinel),
                                *build_args(out, NEW, "--into-existing", cache_dir=cache_dir)],
                               env=ENVIRONMENT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(sentinel, process)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    leftovers = [name for name in hidden_leftovers(out) if not name.endswith(".ragloaders-lock")]
    assert leftovers, "the kill left nothing to recover: the test did not reach its point"

    assert main(build_args(out, NEW, "--into-existing", cache_dir=cache_dir)) == 0
    lines = capsys.readouterr().err.splitlines()
    for name in leftovers:  # each leftover is named, once, in one line
        assert len([line for line in lines if name in line]) == 1, (name, lines)
    assert holds(out) == NEW
    assert user_entries(out) == user  # the same inodes, modes, owners and bytes
    assert hidden_leftovers(out) == [] and kept_folders(out) == []


def test_a_leftover_that_is_not_provably_ragloaders_is_kept_visible_not_deleted(tmp_path, capsys, cache_dir,
                                                                               previous):
    """A hidden work-named folder without a manifest whose files the target does not hold: moved to a visible kept
    folder with one line, every byte kept."""
    out = tmp_path / "out"
    shutil.copytree(previous, out)
    stray = tmp_path / ".out.ragloaders-work-abcd1234"
    (stray / "sub").mkdir(parents=True)
    (stray / "sub" / "only-copy.txt").write_text("nowhere else\n")
    (stray / "an empty folder").mkdir()
    assert main(build_args(out, cache_dir=cache_dir)) == 0
    err = capsys.readouterr().err
    assert str(stray) in err and "kept in" in err
    [kept] = kept_folders(out)
    assert (kept / "sub" / "only-copy.txt").read_text() == "nowhere else\n" and (kept / "an empty folder").is_dir()
    assert hidden_leftovers(out) == [] and holds(out) == NEW


# --- the lock file ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("planted", ["symlink", "dangling symlink", "hard link"])
def test_a_lock_file_planted_by_someone_else_is_refused_and_not_followed(planted, tmp_path, capsys, cache_dir):
    out = tmp_path / "out"
    victim = tmp_path / "victim.txt"
    lock = lock_path(str(out))
    if planted != "dangling symlink":
        victim.write_text("precious\n")
    if planted == "hard link":
        os.link(victim, lock)
    else:
        os.symlink(victim, lock)
    status = main(build_args(out, cache_dir=cache_dir))
    [line] = error_lines(capsys.readouterr().err)
    assert status == 2 and lock in line and ("symlink" in line if "symlink" in planted else "hard link" in line)
    if planted == "hard link":
        assert os.path.samefile(lock, victim)
    else:
        assert os.path.islink(lock) and os.readlink(lock) == str(victim)
    assert victim.read_text() == "precious\n" if planted != "dangling symlink" else not victim.exists()
    assert not out.exists()


# --- a full disk ------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_full_disk_is_one_line_keeps_the_previous_build_and_removes_the_work_folder(tmp_path):
    """Before: pyarrow's Parquet writer (content-defined chunking) aborted the process, exit 134, leaving its
    work folder. The build runs in a child on a 400 KB tmpfs: room for the previous build, not for nfcorpus."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "400k")
    try:
        out = disk / "out"
        out.mkdir()
        (out / "README.md").write_text("a small previous build\n")
        Manifest(str(out), {"path": "a small one"}, hash_folder(str(out)), complete=True).write(str(out))
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        done = subprocess.run([sys.executable, "-m", "ragloaders", *build_args(out, cache_dir=str(tmp_path / "c"))],
                              env=ENVIRONMENT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr[-3000:]
        [line] = error_lines(done.stderr)
        assert "no space left" in line and str(disk) in line and "keeps its previous build" in line
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
        assert json.loads(before[MANIFEST])["identity"] == {"path": "a small one"}
        assert os.listdir(disk) == ["out"]  # no work folder, no lock file
    finally:
        unmount_under(tmp_path)


def test_a_process_forked_during_a_build_ends_on_sigterm_as_by_default():
    """datasets' num_proc pool ends its workers with SIGTERM; a worker forked while the build turns SIGTERM into
    KeyboardInterrupt must die as a process does by default, not raise wherever it is (a traceback per worker, and
    a worker holding its queue's lock kept the pool's join waiting for ever: seen in the suite)."""
    import signal

    from ragloaders.publish.swap import sigterm_as_interrupt

    with sigterm_as_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # the build's own handler, in this process
        ready, told = os.pipe()
        child = os.fork()
        if child == 0:  # the child: say it is running, then wait to be ended
            try:
                os.write(told, b"1")
                while True:
                    signal.pause()
            finally:
                os._exit(3)  # reached only if SIGTERM raised instead of ending the process
        os.close(told)
        assert os.read(ready, 1) == b"1"
        os.close(ready)
        os.kill(child, signal.SIGTERM)
        _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status


CTRL_C_INSIDE_A_PAGE_WRITE = """
import signal, sys
import pyarrow.parquet as pq
from ragloaders.cli import main
from ragloaders.publish import sink

real_write, real_write_table, state = sink.DeferredErrorFile.write, pq.ParquetWriter.write_table, {"pages": 0}

def write(self, data):
    if state.get("in write_table") and len(data) > 4096:
        state["pages"] += 1
        if state["pages"] == 2:  # (the first whose failed write pyarrow checks inside WriteArrowDense, on this file)
            signal.raise_signal(signal.SIGINT)  # Ctrl-C arrives while the writer is in this call into Python
    return real_write(self, data)

def write_table(self, *args, **kwargs):
    state["in write_table"] = True
    try:
        return real_write_table(self, *args, **kwargs)
    finally:
        state["in write_table"] = False

sink.DeferredErrorFile.write, pq.ParquetWriter.write_table = write, write_table
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_ctrl_c_while_the_parquet_writer_writes_a_page_is_an_interrupt_not_an_abort(tmp_path):
    """Before: the KeyboardInterrupt raised inside the sink's `write` reached pyarrow's content-defined-chunking
    writer as a failed write, which aborts the process (exit 134, `Check failed: _s.ok() ... WriteArrowDense`),
    seen on a real Ctrl-C during a build of CRAG's real pages."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", CTRL_C_INSIDE_A_PAGE_WRITE,
                           *build_args(out, OLD, cache_dir=str(tmp_path / "cache"))],
                          env=ENVIRONMENT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 130, (done.returncode, done.stderr[-3000:])
    assert done.stderr.strip().splitlines()[-1].startswith(f"ragloaders: interrupted; {out} was not created")
    assert not out.exists() and hidden_leftovers(out) == []
