"""`ragloaders push` against an in-process stand-in of the hub's HTTP API (tests/fake_hub.py), no network.

Each push runs in a subprocess, so that HF_ENDPOINT / HF_HUB_DISABLE_XET / HF_TOKEN are set before
huggingface_hub is imported and a push can really be killed half way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import ragloaders
from conftest import DATA
from fake_hub import FakeHub
from ragloaders.publish.output_folder import MANIFEST

ROOT = Path(__file__).resolve().parent.parent
PATH = "beir/nfcorpus"
REPO = "ragloaders-test/nfcorpus"
TOKEN = "hf_fakePushToken_5f0c2e9a71b3"
CONFIGS = ("corpus", "queries", "qrels")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("datasets-cache"))


def run_push(tmp_path: Path, cache_dir: str, *args: str, token: str | None = TOKEN, max_files: int = 2,
             env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
                       HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=f"{ROOT / 'loaders'}{os.pathsep}{ROOT / 'tests'}")
    if token:
        environment["HF_TOKEN"] = token
    environment.update(env or {})
    command = [sys.executable, str(ROOT / "tests" / "fake_hub.py"), str(tmp_path / "hub"),
               "--max-commit-files", str(max_files), "--",
               "push", PATH, "--repo-id", REPO, "--data-dir", str(DATA / "beir"), "--cache-dir", cache_dir,
               "--staging-dir", str(tmp_path / "staged"), *args]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)


def staged_files(folder: Path) -> dict[str, bytes]:
    """The files a push uploads: the staged folder's, but its manifest (which stays local)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != MANIFEST}


def rows(dataset) -> list[dict]:
    return [dict(row) for row in dataset]


def test_push_commits_in_batches_and_the_received_repo_loads_like_ragloaders(tmp_path, cache_dir):
    done = run_push(tmp_path, cache_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    hub = FakeHub(str(tmp_path / "hub"))
    state = hub.load()
    staged = staged_files(tmp_path / "staged")
    commits = state["repos"][REPO]["branches"]["main"]["commits"]
    assert len(commits) == 4 and all(len(c["paths"]) <= 2 for c in commits)
    assert commits[-1]["paths"] == ["README.md"]  # the card comes last, once its data is there
    # the token goes to the hub's API, never to the storage URL a file is PUT to
    assert all(r["authorized"] == (r["method"] != "PUT") for r in state["requests"])

    received = tmp_path / "received"
    hub.export(REPO, str(received))
    assert staged_files(received) == staged
    for config in CONFIGS:
        expected = ragloaders.load(PATH, config, data_dir=str(DATA / "beir"), cache_dir=cache_dir)
        got = datasets.load_dataset(str(received), config, cache_dir=str(tmp_path / "load-cache"))
        assert list(got) == list(expected)
        for split in expected:
            assert got[split].features == expected[split].features
            assert got[split].to_list() == expected[split].to_list()
        streamed = datasets.load_dataset(str(received), config, streaming=True)
        for split in expected:
            assert rows(streamed[split]) == expected[split].to_list()

    assert f'load_dataset("{REPO}", "corpus")' in staged["README.md"].decode()
    leaks = [done.stdout, done.stderr, *(p.read_text(errors="replace") for p in (tmp_path / "hub").rglob("*.json"))]
    leaks += [content.decode(errors="replace") for content in staged.values()]
    assert not [text for text in leaks if TOKEN in text]


def test_an_interrupted_push_resumes_without_uploading_twice(tmp_path, cache_dir):
    killed = run_push(tmp_path, cache_dir, env={"FAKE_HUB_EXIT_ON_COMMIT": "2"})
    assert killed.returncode == 17
    hub = FakeHub(str(tmp_path / "hub"))
    first = hub.load()["repos"][REPO]["branches"]["main"]["commits"]
    assert len(first) == 1 and len(first[0]["paths"]) == 2

    resumed = run_push(tmp_path, cache_dir)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    state = hub.load()
    uploads = state["lfs_uploads"]
    assert len(uploads) == len(set(uploads))  # no Parquet file went up twice
    assert "2 already there" in resumed.stdout
    hub.export(REPO, str(tmp_path / "received"))
    assert staged_files(tmp_path / "received") == staged_files(tmp_path / "staged")


def test_a_push_deletes_parquet_files_an_older_build_left(tmp_path, cache_dir):
    assert run_push(tmp_path, cache_dir).returncode == 0
    hub = FakeHub(str(tmp_path / "hub"))
    hub.seed_file(REPO, "corpus/corpus-00001-of-00002.parquet", b"PAR1 from an older build")

    again = run_push(tmp_path, cache_dir)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 files uploaded, 6 already there, 1 stale files deleted, 1 commits" in again.stdout
    assert set(hub.files(REPO)) == set(staged_files(tmp_path / "staged"))


def test_push_to_a_private_repo_on_a_branch(tmp_path, cache_dir):
    done = run_push(tmp_path, cache_dir, "--private", "--revision", "v1", "--commit-message", "nfcorpus v1")
    assert done.returncode == 0, done.stderr[-3000:]
    repo = FakeHub(str(tmp_path / "hub")).load()["repos"][REPO]
    assert repo["private"] and repo["type"] == "dataset"
    assert repo["branches"]["main"]["files"] == {}
    assert set(repo["branches"]["v1"]["files"]) == set(staged_files(tmp_path / "staged"))
    assert [c["summary"] for c in repo["branches"]["v1"]["commits"]] == [f"nfcorpus v1 ({k}/4)" for k in range(1, 5)]


def test_dry_run_stages_and_tells_the_plan_without_any_request(tmp_path, cache_dir):
    done = run_push(tmp_path, cache_dir, "--dry-run", token=None)
    assert done.returncode == 0, done.stderr[-3000:]
    staged = staged_files(tmp_path / "staged")
    parquet = [f"{config}/{split}-00000-of-00001.parquet" for config, split in
               (("corpus", "corpus"), ("queries", "queries"), ("qrels", "train"), ("qrels", "dev"), ("qrels", "test"))]
    assert set(staged) == {"README.md", *parquet}
    for name in staged:
        assert name in done.stdout
    assert "4 commits" in done.stdout
    assert not (tmp_path / "hub" / "state.json").exists() or not FakeHub(str(tmp_path / "hub")).load()["requests"]


def test_push_without_a_token_fails_before_any_upload(tmp_path, cache_dir):
    done = run_push(tmp_path, cache_dir, token=None)
    assert done.returncode == 2
    assert "no Hugging Face token" in done.stderr
    assert not FakeHub(str(tmp_path / "hub")).load()["requests"]


def test_the_plan_puts_the_card_last_and_bounds_commits(tmp_path):
    from ragloaders.publish.push import plan

    for name, size in (("a/x-0.parquet", 10), ("a/x-1.parquet", 30), ("b/y-0.parquet", 5), ("README.md", 3)):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"0" * size)
    commits = plan(str(tmp_path), max_files=5, max_bytes=35).commits
    assert [[f.path_in_repo for f in c] for c in commits] == [["a/x-0.parquet"], ["a/x-1.parquet", "b/y-0.parquet"],
                                                              ["README.md"]]
