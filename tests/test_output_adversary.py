"""Adversarial cases of issue 20 §2/§3 found after the output work landed: a user's read-only folders in a build,
ids trec_eval cannot hold, grades that exhaust memory, an eval output that ignored the target rules.

Builds that need the kernel's permission checks run in a child without root's override (setpriv) when the tests
run as root; whatever could crash the process (pytrec_eval) runs in a child too, so a crash fails the test."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA
from ragloaders.publish.build import build_folder
from ragloaders.publish.output_folder import verify

ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT = {**os.environ, "PYTHONPATH": str(ROOT / "loaders")}
NEW, OLD = "beir/nfcorpus", "crag/task_1_and_2"
SOURCES = {NEW: str(DATA / "beir"), OLD: str(DATA / "crag")}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


def as_plain_user() -> list[str]:
    """A command prefix under which permission bits apply (root drops the capabilities that bypass them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to apply")
    caps = "-dac_override,-dac_read_search,-fowner"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def holds(out: Path) -> str:
    verdict = verify(str(out))
    assert verdict.manifest and verdict.manifest.complete and not (verdict.altered or verdict.missing), verdict
    return verdict.manifest.identity["path"]


def test_a_rebuild_of_a_folder_the_user_made_read_only_inside_stands_and_leaves_no_hidden_leftover(tmp_path,
                                                                                                     cache_dir):
    """`chmod -R a-w out; chmod u+w out` (protecting a build) then a rebuild. Before: the new build was swapped in,
    then clear_old's unlink in the read-only `corpus/` raised EACCES: the command failed with a bare
    '[Errno 13] Permission denied', the old build stayed as a hidden `.out.ragloaders-work-*`, and every later
    build of `out` failed the same way in its recovery. Now the old files it cannot remove are kept in a visible
    folder, named in one line, and the build stands."""
    out = tmp_path / "out"
    build_folder(OLD, str(out), data_dir=SOURCES[OLD], cache_dir=cache_dir)
    for folder, _, files in os.walk(out):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        if folder != str(out):
            os.chmod(folder, 0o555)
    command = [*as_plain_user(), sys.executable, "-m", "ragloaders", "build", NEW, "--data-dir", SOURCES[NEW],
               "--cache-dir", cache_dir, "--out", str(out)]
    try:
        done = subprocess.run(command, env=ENVIRONMENT, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        assert holds(out) == NEW
        hidden = [n for n in os.listdir(tmp_path) if n.startswith(".out.ragloaders-")]
        assert hidden == [], hidden
        [kept] = sorted(tmp_path.glob("out.ragloaders-kept-*"))
        assert f"kept in {kept}" in done.stderr and "could not remove" in done.stderr, done.stderr[-2000:]
        old = sorted(str(p.relative_to(kept)) for p in kept.rglob("*.parquet"))
        assert old and all(stat.S_IMODE(p.stat().st_mode) == 0o444 for p in kept.rglob("*.parquet")), old
    finally:
        for folder, _, _ in os.walk(tmp_path):
            os.chmod(folder, 0o755)
