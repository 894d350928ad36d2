"""Hub revisions given as a careless user would: an empty `--revision`, or one that is no ref name
(`../refs/main`, which the hub cache read as a path offline), is refused in one line before the hub or its cache is
asked (an empty one was taken for the main branch in one message and blamed on the hub in another)."""

from __future__ import annotations

import contextlib
import io
import shutil

import huggingface_hub.constants
import pytest
import ragloaders
from conftest import DATA, assert_names
from ragloaders import cli


@pytest.mark.parametrize("revision", ["", "  "])
def test_an_empty_revision_is_one_line_naming_it(revision, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no network in tests: the cache is asked
    with pytest.raises(ValueError) as caught:
        ragloaders.load("org/nf", "qrels", revision=revision)
    assert_names(caught.value, "org/nf", "revision", "empty", repr(revision))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["docs", "org/nf", "MED-10", "--revision", revision])
    assert code == 2 and err.getvalue().splitlines() == [
        f"ragloaders: error: org/nf: the revision asked for is empty ({revision!r}); give a commit id, branch or tag, "
        "or no revision for the main branch"]


def _offline_cache_with_main(root, built, monkeypatch) -> str:
    """A hub cache holding dataset repository org/nf at one commit, its `refs/main` naming it (as huggingface_hub
    leaves it after a download), and HF_HUB_OFFLINE set: the cache is what is read."""
    commit = "c" * 40
    repository = root / "datasets--org--nf"
    shutil.copytree(built, repository / "snapshots" / commit)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return commit


@pytest.mark.parametrize("revision", ["../refs/main", "refs/../refs/main", "/refs/main", "main/", "a//main",
                                      ".main", "main.lock", "main~1", "main^", "ma in", "main\n", "x@{1}"])
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_a_revision_that_is_no_ref_name_is_refused_before_the_cache_reads_it_as_a_path(
        revision, nfcorpus_build, tmp_path, monkeypatch, capsys):
    """Offline, huggingface_hub reads `refs/<revision>` as a path: `../refs/main` read as main (and `../..` climbs
    out of the cache). Such a revision is refused in one line, by `load`, the CLI and the mock API alike."""
    commit = _offline_cache_with_main(tmp_path / "hub", nfcorpus_build.out, monkeypatch)
    assert ragloaders.load("org/nf", "qrels", split="test", revision="main").num_rows > 0  # the cache reads
    with pytest.raises(ValueError) as caught:
        ragloaders.load("org/nf", "qrels", split="test", revision=revision)
    assert_names(caught.value, "org/nf", "cannot be a revision", repr(revision))
    assert commit not in str(caught.value)
    capsys.readouterr()
    assert cli.main(["validate", "org/nf", "--revision", revision]) == 2
    assert "cannot be a revision" in (err := capsys.readouterr().err) and err.count("\n") == 1, err
    from ragloaders import CragMockAPI

    with pytest.raises(ValueError, match="cannot be a revision"):
        CragMockAPI("org/kg", revision=revision)


@pytest.mark.parametrize("revision", ["refs/pr/1", "v1.0", "first-push", "feature/x", "c" * 40])
def test_branch_tag_and_commit_names_pass_the_check(revision, nfcorpus_build, tmp_path, monkeypatch):
    """What git allows as a branch or tag (slashes and dots within it, `refs/pr/N`) and a commit id are not refused
    by the check: the cache then has that revision (the commit) or says it has no copy at it."""
    commit = _offline_cache_with_main(tmp_path / "hub", nfcorpus_build.out, monkeypatch)
    if revision == commit:
        assert ragloaders.load("org/nf", "qrels", split="test", revision=revision).num_rows > 0
        return
    with pytest.raises(ConnectionError) as caught:
        ragloaders.load("org/nf", "qrels", split="test", revision=revision)
    assert_names(caught.value, "org/nf", f"at revision {revision!r}", "HF_HUB_OFFLINE")


def test_push_refuses_a_branch_that_is_no_ref_name(nfcorpus_build):
    """`push --revision` names the branch committed to: one git would refuse is refused before anything is read or
    sent (a dry run shows it too)."""
    from ragloaders.publish.source_commands import push_folder

    for branch in ("../main", "main/", "a b"):
        with pytest.raises(ValueError, match="cannot be a revision"):
            push_folder(str(nfcorpus_build.out), "org/nf", revision=branch, dry_run=True, log=lambda line: None)
    push_folder(str(nfcorpus_build.out), "org/nf", revision="refs/pr/1", dry_run=True, log=lambda line: None)


def _offline_cache_with_refs(root, built, monkeypatch) -> str:
    """Hub cache of org/nf at one commit, with refs main, refs/pr/1 (stored as refs/refs/pr/1, as huggingface_hub
    does) and branch feature/x: so `refs/feature` and `refs/refs` are folders."""
    commit = "c" * 40
    repository = root / "datasets--org--nf"
    shutil.copytree(built, repository / "snapshots" / commit)
    (repository / "refs" / "refs" / "pr").mkdir(parents=True)
    (repository / "refs" / "feature").mkdir(parents=True)
    for ref in ("main", "refs/pr/1", "feature/x"):
        (repository / "refs" / ref).write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return commit


@pytest.mark.parametrize("revision", ["feature", "refs", "refs/pr"])
def test_a_revision_naming_a_folder_of_refs_is_no_copy_in_one_line(revision, nfcorpus_build, tmp_path,
                                                                    monkeypatch):
    """Git allows these names; offline, huggingface_hub opens `refs/<revision>` when it merely exists, a folder
    here (IsADirectoryError leaked the cache path). The cache holds no copy at that revision: the HubError says so."""
    _offline_cache_with_refs(tmp_path / "hub", nfcorpus_build.out, monkeypatch)
    assert ragloaders.load("org/nf", "qrels", split="test", revision="feature/x").num_rows > 0
    with pytest.raises(ConnectionError) as caught:
        ragloaders.load("org/nf", "qrels", split="test", revision=revision)
    assert_names(caught.value, "org/nf", "HF_HUB_OFFLINE", revision)


def test_a_long_revision_is_bounded_in_the_offline_message(nfcorpus_build, tmp_path, monkeypatch, capsys):
    """A 5,000-character revision passes the check (git allows it); the offline 'no copy' message repeated it whole."""
    _offline_cache_with_refs(tmp_path / "hub", nfcorpus_build.out, monkeypatch)
    revision = "a" * 5000
    with pytest.raises(ConnectionError) as caught:
        ragloaders.load("org/nf", "qrels", split="test", revision=revision)
    assert_names(caught.value, "org/nf", "HF_HUB_OFFLINE")
    assert len(str(caught.value)) < 1000, len(str(caught.value))
    from ragloaders import cli

    capsys.readouterr()
    assert cli.main(["validate", "org/nf", "--revision", revision]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 1000, len(err)


def test_push_of_a_benchmark_path_refuses_a_branch_that_is_no_ref_name(tmp_path):
    """push_folder refuses `--revision ../main`; push of a benchmark path built, staged and planned a commit to
    branch `../main` (a dry run said 'would upload to org/nf (branch ../main)')."""
    from ragloaders.publish.push import push

    lines: list[str] = []
    with pytest.raises(ValueError, match="cannot be a revision"):
        push("beir/nfcorpus", "org/nf", data_dir=str(DATA / "beir"), revision="../main", dry_run=True,
             staging_dir=str(tmp_path / "staged"), cache_dir=str(tmp_path / "cache"), log=lines.append)
    assert not (tmp_path / "staged").exists()
