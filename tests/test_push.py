"""`ragloaders push` against an in-process stand-in of the hub's HTTP API (tests/fake_hub.py), no network.

Each push runs in a subprocess, so that HF_ENDPOINT / HF_HUB_DISABLE_XET / HF_TOKEN are set before
huggingface_hub is imported and a push can really be killed half way.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import ragloaders
from conftest import DATA
from fake_hub import FakeHub, git_sha1, install, uninstall
from ragloaders.publish.hub_manifest import HUB_MANIFEST, Published, hub_manifest_bytes, parse_hub_manifest
from ragloaders.publish.manifest import MANIFEST

ROOT = Path(__file__).resolve().parent.parent
PATH = "beir/nfcorpus"
REPO = "ragloaders-test/nfcorpus"
TOKEN = "hf_fakePushToken_5f0c2e9a71b3"
CONFIGS = ("corpus", "queries", "qrels")


def run_push(tmp_path: Path, cache_dir: str, *args: str, token: str | None = TOKEN, max_files: int = 2,
             env: dict | None = None) -> subprocess.CompletedProcess:
    """`ragloaders push` of the nfcorpus sample to REPO on the fake hub kept in `tmp_path / "hub"`: in this process,
    or, given `env` (the fake hub's FAKE_HUB_* switches: a process that dies half way), in a child."""
    push_args = ["push", PATH, "--repo-id", REPO, "--data-dir", str(DATA / "beir"), "--cache-dir", cache_dir,
                 "--staging-dir", str(tmp_path / "staged"), *args]
    if env is None:
        return push_in_process(tmp_path, push_args, token, max_files)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
                       HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=f"{ROOT / 'loaders'}{os.pathsep}{ROOT / 'tests'}")
    if token:
        environment["HF_TOKEN"] = token
    environment.update(env)
    command = [sys.executable, str(ROOT / "tests" / "fake_hub.py"), str(tmp_path / "hub"),
               "--max-commit-files", str(max_files), "--", *push_args]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)


def push_in_process(tmp_path: Path, push_args: list[str], token: str | None, max_files: int
                    ) -> subprocess.CompletedProcess:
    """What the child of `run_push` does (tests/fake_hub.py as a script), in this process: huggingface_hub's
    constants set as HF_ENDPOINT, HF_HUB_DISABLE_XET and a fresh HF_HOME would set them, its client routed to the
    fake hub, and all of it put back afterwards."""
    from huggingface_hub import constants
    from ragloaders import cli
    from ragloaders.publish import push

    home = tmp_path / "hf-home"
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(constants, "ENDPOINT", "http://hub.test")
        patch.setattr(constants, "HF_HUB_DISABLE_XET", True)
        patch.setattr(constants, "HF_HUB_OFFLINE", False)
        patch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
        patch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
        patch.setattr(push, "MAX_COMMIT_FILES", max_files)
        if token:
            patch.setenv("HF_TOKEN", token)
        else:
            patch.delenv("HF_TOKEN", raising=False)
        install(str(tmp_path / "hub"))
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(push_args)
        finally:
            uninstall()
    return subprocess.CompletedProcess(["ragloaders", *push_args], code, out.getvalue(), err.getvalue())


def staged_files(folder: Path) -> dict[str, bytes]:
    """The files a push uploads: the staged folder's, but its manifest (which stays local)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != MANIFEST}


def data_paths(commit: dict) -> list[str]:
    """The paths a commit of the fake hub changed, but the repository manifest that every push commit writes."""
    return [path for path in commit["paths"] if path != HUB_MANIFEST]


def recorded(hub: FakeHub, repo: str = REPO) -> dict[str, str]:
    """{path: sha256} of the files the repository manifest says ragloaders published."""
    files = parse_hub_manifest(hub.read(repo, HUB_MANIFEST))
    assert files is not None
    return {path: published.sha256 for path, published in files.items()}


def seed_recorded(hub: FakeHub, path: str, data: bytes, repo: str = REPO) -> None:
    """A file an older ragloaders push published: in the repository and in its manifest."""
    files = parse_hub_manifest(hub.read(repo, HUB_MANIFEST)) if HUB_MANIFEST in hub.files(repo) else {}
    files[path] = Published(hashlib.sha256(data).hexdigest(), git_sha1(data), len(data))
    hub.seed_file(repo, path, data)
    hub.seed_file(repo, HUB_MANIFEST, hub_manifest_bytes(files))


def rows(dataset) -> list[dict]:
    return [dict(row) for row in dataset]


@pytest.mark.slow  # (seconds; CI runs it)
def test_push_commits_in_batches_and_the_received_repo_loads_like_ragloaders(tmp_path, cache_dir):
    done = run_push(tmp_path, cache_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    hub = FakeHub(str(tmp_path / "hub"))
    state = hub.load()
    staged = staged_files(tmp_path / "staged")
    commits = state["repos"][REPO]["branches"]["main"]["commits"]
    assert len(commits) == 4 and all(len(data_paths(c)) <= 2 for c in commits)
    assert data_paths(commits[-1]) == ["README.md"]  # the card comes last, once its data is there
    # every commit records what ragloaders published so far; the last one records exactly the staged files
    assert all(HUB_MANIFEST in c["paths"] for c in commits)
    assert recorded(hub) == {name: hashlib.sha256(data).hexdigest() for name, data in staged.items()}
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


@pytest.mark.slow
def test_an_interrupted_push_resumes_without_uploading_twice(tmp_path, cache_dir):
    killed = run_push(tmp_path, cache_dir, env={"FAKE_HUB_EXIT_ON_COMMIT": "2"})
    assert killed.returncode == 17, killed.stderr[-3000:]
    hub = FakeHub(str(tmp_path / "hub"))
    first = hub.load()["repos"][REPO]["branches"]["main"]["commits"]
    assert len(first) == 1 and len(data_paths(first[0])) == 2
    assert set(recorded(hub)) == set(data_paths(first[0]))  # what went up is recorded in the same commit

    resumed = run_push(tmp_path, cache_dir)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    state = hub.load()
    uploads = state["lfs_uploads"]
    assert len(uploads) == len(set(uploads))  # no Parquet file went up twice
    assert "2 already there" in resumed.stdout
    hub.export(REPO, str(tmp_path / "received"))
    assert staged_files(tmp_path / "received") == staged_files(tmp_path / "staged")


@pytest.mark.slow
def test_a_push_deletes_only_files_an_older_ragloaders_push_recorded(tmp_path, cache_dir):
    assert run_push(tmp_path, cache_dir).returncode == 0
    hub = FakeHub(str(tmp_path / "hub"))
    seed_recorded(hub, "corpus/corpus-00001-of-00002.parquet", b"PAR1 from an older build")
    seed_recorded(hub, "qrels/old-00000-of-00001.parquet", b"PAR1 recorded, then replaced by the owner")
    hub.seed_file(REPO, "qrels/old-00000-of-00001.parquet", b"PAR1 the owner's own bytes now")
    hub.seed_file(REPO, "corpus/mine.parquet", b"PAR1 never published by ragloaders")

    again = run_push(tmp_path, cache_dir)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 files uploaded, 6 already there, 1 stale file deleted, 1 commit" in again.stdout
    assert set(hub.files(REPO)) == set(staged_files(tmp_path / "staged")) | {
        HUB_MANIFEST, "qrels/old-00000-of-00001.parquet", "corpus/mine.parquet"}
    assert hub.read(REPO, "corpus/mine.parquet") == b"PAR1 never published by ragloaders"
    assert set(recorded(hub)) == set(staged_files(tmp_path / "staged"))


def test_push_to_a_private_repo_on_a_branch(tmp_path, cache_dir):
    done = run_push(tmp_path, cache_dir, "--private", "--revision", "v1", "--commit-message", "nfcorpus v1")
    assert done.returncode == 0, done.stderr[-3000:]
    repo = FakeHub(str(tmp_path / "hub")).load()["repos"][REPO]
    assert repo["private"] and repo["type"] == "dataset"
    assert repo["branches"]["main"]["files"] == {}
    assert set(repo["branches"]["v1"]["files"]) == set(staged_files(tmp_path / "staged")) | {HUB_MANIFEST}
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


# --- the staging folder and the repo id: never destroy, never trust an unverified folder ---------------------------


@pytest.mark.slow  # two pushes, each in a subprocess: seconds
def test_a_staged_file_changed_or_missing_is_rebuilt_not_trusted(tmp_path, cache_dir):
    assert run_push(tmp_path, cache_dir).returncode == 0
    hub = FakeHub(str(tmp_path / "hub"))
    good = staged_files(tmp_path / "staged")
    name = "corpus/corpus-00000-of-00001.parquet"
    target = tmp_path / "staged" / name
    altered = bytearray(target.read_bytes())
    altered[len(altered) // 2] ^= 0xFF  # same size, one byte: only the content hash sees it
    target.write_bytes(bytes(altered))
    (tmp_path / "staged" / "queries" / "queries-00000-of-00001.parquet").unlink()
    seed_recorded(hub, "corpus/corpus-00001-of-00002.parquet", b"PAR1 from an older build")

    again = run_push(tmp_path, cache_dir)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "does not match its manifest (1 changed, 1 missing files): building it again" in again.stdout
    assert "0 files uploaded, 6 already there, 1 stale file deleted" in again.stdout  # the altered bytes never went up
    assert staged_files(tmp_path / "staged") == good
    hub.export(REPO, str(tmp_path / "received"))
    assert staged_files(tmp_path / "received") == good
    kept = list(tmp_path.glob("staged.ragloaders-kept-*"))
    assert len(kept) == 1 and (kept[0] / name).read_bytes() == bytes(altered)  # set aside, not deleted
    assert "kept in" in again.stderr


@pytest.mark.slow
def test_a_staging_folder_ragloaders_did_not_write_is_refused_and_nothing_is_sent(tmp_path, cache_dir):
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "thesis.tex").write_text("years of work\n")
    done = run_push(tmp_path, cache_dir)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragloaders: error:")]
    assert len(errors) == 1 and "--staging-dir" in errors[0] and "not written by ragloaders" in errors[0]
    assert "Traceback" not in done.stderr
    assert [p.name for p in staged.iterdir()] == ["thesis.tex"] and (staged / "thesis.tex").read_text() == \
        "years of work\n"
    # at most the read-only look at the repository that push makes before building (token and hub first)
    requests = FakeHub(str(tmp_path / "hub")).load()["requests"] if (tmp_path / "hub" / "state.json").exists() else []
    assert [(r["method"], r["path"]) for r in requests] in ([], [("GET", f"/api/datasets/{REPO}")])


UNVERIFIED_UPLOAD = r"""
import sys
sys.path[:0] = sys.argv[3:5]
from fake_hub import install
from huggingface_hub import HfApi
from ragloaders.publish.push import plan, upload
from ragloaders.publish.manifest import verify
from test_push import seed_recorded

hub = install(sys.argv[1])
HfApi().create_repo("org/data", repo_type="dataset")
seed_recorded(hub, "corpus/old.parquet", b"PAR1 old", "org/data")  # published by an older push
staged = sys.argv[2]
first = upload(plan(staged), "org/data")  # no verification in this run: no delete
second = upload(plan(staged, verdict=verify(staged)), "org/data")
print(first.deleted, second.deleted, sorted(hub.files("org/data")))
"""


@pytest.mark.slow
def test_only_a_plan_verified_in_this_run_deletes_files_in_the_repository(tmp_path):
    from ragloaders.publish.manifest import Manifest, hash_folder

    staged = tmp_path / "staged"
    (staged / "corpus").mkdir(parents=True)
    (staged / "corpus" / "new.parquet").write_bytes(b"PAR1 new")
    (staged / "README.md").write_text("card\n")
    Manifest(str(staged), {}, hash_folder(str(staged)), complete=True).write(str(staged))
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
                       HF_TOKEN=TOKEN)
    done = subprocess.run([sys.executable, "-c", UNVERIFIED_UPLOAD, str(tmp_path / "hub"), str(staged),
                           str(ROOT / "loaders"), str(ROOT / "tests")], env=environment, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == (
        "[] ['corpus/old.parquet'] ['.ragloaders-manifest.json', 'README.md', 'corpus/new.parquet']")
    assert "not deleting 1 file of org/data" in done.stdout.splitlines()[0]


BAD_REPO_IDS = ["../../escape", "org/../../escape", "a/b/c", "/name", "org/", "", "-org/name", "org/name-",
                ".org/name", "org/name.", "org--x/name", "org/na..me", "org/name.git", "or g/name", "org/n\u00e4me",
                "org/" + "x" * 97, "org/name\n", ".", "..", "org/.", "org/.."]


@pytest.mark.parametrize("repo_id", BAD_REPO_IDS)
def test_an_illegal_repo_id_is_refused(repo_id):
    from ragloaders.publish.push import check_repo_id

    with pytest.raises(ValueError, match="--repo-id"):
        check_repo_id(repo_id)


def test_legal_repo_ids_and_their_staging_folders_stay_inside_the_staging_root(tmp_path, monkeypatch):
    from ragloaders.publish.push import STAGING_ENV, check_repo_id, default_staging_dir

    monkeypatch.setenv(STAGING_ENV, str(tmp_path / "root"))
    legal = ["org/name", "name", "a_b/c.d-e", "_x_/y_", "o/" + "x" * 96, "O1/N.2"]
    folders = set()
    for repo_id in legal:
        assert check_repo_id(repo_id) == repo_id
        for path in ragloaders.registry():
            folder = default_staging_dir(path, repo_id)
            assert os.path.commonpath([str(tmp_path / "root"), folder]) == str(tmp_path / "root")
            folders.add(folder)
    assert len(folders) == len(legal) * len(ragloaders.registry())  # no two share a folder
    for path in ("beir/../../../etc", "../x", "beir//nfcorpus/..", "beir/nf--corpus"):
        with pytest.raises(ValueError):
            default_staging_dir(path, "org/name")


@pytest.mark.slow  # (seconds; CI runs it)
def test_push_with_an_illegal_repo_id_fails_in_one_line_before_any_folder_or_request(tmp_path, cache_dir):
    environment = {"RAGLOADERS_STAGING": str(tmp_path / "root")}
    command = [sys.executable, str(ROOT / "tests" / "fake_hub.py"), str(tmp_path / "hub"), "--",
               "push", PATH, "--repo-id", "../../escape", "--data-dir", str(DATA / "beir"), "--cache-dir", cache_dir]
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
               HF_TOKEN=TOKEN, PYTHONPATH=f"{ROOT / 'loaders'}{os.pathsep}{ROOT / 'tests'}", **environment)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [line for line in done.stderr.strip().splitlines()
                                                if line.startswith("ragloaders: error: --repo-id '../../escape'")]
    assert not (tmp_path / "root").exists() and not (tmp_path / "escape").exists()
    assert not FakeHub(str(tmp_path / "hub")).load()["requests"]


def test_a_staging_folder_of_an_older_ragloaders_is_refused_with_what_to_do(tmp_path, cache_dir):
    staged = tmp_path / "staged"
    (staged / "corpus").mkdir(parents=True)
    (staged / "corpus" / "corpus-00000-of-00001.parquet").write_bytes(b"PAR1 staged by ragloaders 0.2")
    (tmp_path / "staged.build.json").write_text("{}")
    done = run_push(tmp_path, cache_dir)
    assert done.returncode == 2 and "older ragloaders" in done.stderr and "staged.build.json" in done.stderr
    assert (staged / "corpus" / "corpus-00000-of-00001.parquet").read_bytes() == b"PAR1 staged by ragloaders 0.2"


# --- a repository with files of its own: delete and overwrite only what ragloaders published ----------------------

FOREIGN = {"data/train-00000-of-00001.parquet": b"PAR1 the repository's own training data",
           "eval/results.parquet": b"PAR1 the repository's own results",
           ".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"}


@pytest.mark.slow  # two pushes, each in a subprocess: seconds
def test_a_push_into_a_repository_with_files_of_its_own_leaves_every_one_of_them(tmp_path, cache_dir):
    hub = FakeHub(str(tmp_path / "hub"))
    hub.seed_repo(REPO, FOREIGN)
    done = run_push(tmp_path, cache_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "0 stale files deleted" in done.stdout
    assert "leaving 2 Parquet files of ragloaders-test/nfcorpus that no ragloaders push recorded" in done.stdout
    assert {path: hub.read(REPO, path) for path in FOREIGN} == FOREIGN
    staged = staged_files(tmp_path / "staged")
    assert set(hub.files(REPO)) == set(FOREIGN) | set(staged) | {HUB_MANIFEST}
    assert set(recorded(hub)) == set(staged)  # the repository's own files are not claimed
    # pushed again (the staged build is reused and verified): still nothing of the repository's is deleted
    again = run_push(tmp_path, cache_dir)
    assert again.returncode == 0 and "0 stale files deleted" in again.stdout, again.stderr[-3000:]
    assert {path: hub.read(REPO, path) for path in FOREIGN} == FOREIGN


@pytest.mark.slow  # three pushes, each in a subprocess: seconds
def test_a_push_that_would_overwrite_a_file_it_did_not_publish_stops_unless_asked(tmp_path, cache_dir):
    hub = FakeHub(str(tmp_path / "hub"))
    theirs = {**FOREIGN, "README.md": b"---\nlicense: mit\n---\n# The owner's card\n"}
    hub.seed_repo(REPO, theirs)
    refused = run_push(tmp_path, cache_dir)
    assert refused.returncode == 2
    errors = [line for line in refused.stderr.splitlines() if line.startswith("ragloaders: error:")]
    assert len(errors) == 1 and "Traceback" not in refused.stderr
    assert "1 file(s)" in errors[0] and "('README.md')" in errors[0] and "--overwrite-foreign" in errors[0]
    assert hub.load()["repos"][REPO]["branches"]["main"]["commits"] == []  # nothing was sent
    assert {path: hub.read(REPO, path) for path in theirs} == theirs

    # a file at the manifest's path that is not a ragloaders manifest is the repository's too
    hub.seed_file(REPO, HUB_MANIFEST, b'{"format": "something else"}')
    refused = run_push(tmp_path, cache_dir)
    assert refused.returncode == 2 and f"('README.md', '{HUB_MANIFEST}')" in refused.stderr

    asked = run_push(tmp_path, cache_dir, "--overwrite-foreign")
    assert asked.returncode == 0, asked.stderr[-3000:]
    staged = staged_files(tmp_path / "staged")
    assert hub.read(REPO, "README.md") == staged["README.md"]
    assert {path: hub.read(REPO, path) for path in FOREIGN} == FOREIGN  # overwritten only where asked
    assert set(recorded(hub)) == set(staged)


@pytest.mark.slow  # two pushes, each in a subprocess: seconds
def test_a_card_edited_on_the_hub_since_the_push_is_not_overwritten_without_asking(tmp_path, cache_dir):
    assert run_push(tmp_path, cache_dir).returncode == 0
    hub = FakeHub(str(tmp_path / "hub"))
    hub.seed_file(REPO, "README.md", b"# edited by the owner on the hub\n")
    (tmp_path / "staged" / "README.md").unlink()  # the next push rebuilds the staged folder: the same card
    refused = run_push(tmp_path, cache_dir)
    assert refused.returncode == 2 and "('README.md')" in refused.stderr, refused.stderr[-3000:]
    assert hub.read(REPO, "README.md") == b"# edited by the owner on the hub\n"


# --- the repository's owner commits while a push runs: each commit is pinned to the head it checked ------------------

OWNER_CARD = "---\nlicense: mit\n---\n# The owner's card, written while the push ran\n"
OWNER_CORPUS = "PAR1 the owner's corpus, replacing the one ragloaders published"


def owner_edits(tmp_path: Path, edits: dict[int, dict[str, str]]) -> dict:
    """The environment making the owner commit `edits[N]` just before the N-th commit request reaches the hub."""
    path = tmp_path / "owner-edits.json"
    path.write_text(json.dumps({str(n): {"repo": REPO, "files": files} for n, files in edits.items()}))
    return {"FAKE_HUB_OWNER_EDITS": str(path)}


def left_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("left ")]


@pytest.mark.slow  # a push in a subprocess: seconds
def test_an_owner_edit_between_two_commits_of_a_push_survives_it(tmp_path, cache_dir):
    # the owner writes their card and replaces the corpus file commit 1 just published, before commit 2 lands
    done = run_push(tmp_path, cache_dir, env=owner_edits(tmp_path, {2: {
        "README.md": OWNER_CARD, "corpus/corpus-00000-of-00001.parquet": OWNER_CORPUS}}))
    assert done.returncode == 0, done.stderr[-3000:]
    hub = FakeHub(str(tmp_path / "hub"))
    assert hub.read(REPO, "README.md").decode() == OWNER_CARD
    assert hub.read(REPO, "corpus/corpus-00000-of-00001.parquet").decode() == OWNER_CORPUS
    assert "commit 2/4: ragloaders-test/nfcorpus changed since it was read" in done.stdout
    lines = left_lines(done.stdout)
    assert len(lines) == 1 and "('README.md', 'corpus/corpus-00000-of-00001.parquet')" in lines[0], done.stdout
    staged = staged_files(tmp_path / "staged")
    mine = {name: data for name, data in staged.items()
            if name not in ("README.md", "corpus/corpus-00000-of-00001.parquet")}
    assert {name: hub.read(REPO, name) for name in mine} == mine  # the rest of the push went on
    assert set(recorded(hub)) == set(mine)  # and what is the owner's is not claimed
    commits = hub.load()["repos"][REPO]["branches"]["main"]["commits"]
    assert [c["summary"] for c in commits].count("edited by the owner") == 1
    assert not any("README.md" in c["paths"] for c in commits if c["summary"] != "edited by the owner")


@pytest.mark.slow  # a push in a subprocess: seconds
def test_an_owner_replacing_a_published_file_during_a_push_keeps_it(tmp_path, cache_dir):
    assert run_push(tmp_path, cache_dir).returncode == 0  # 4 commit requests
    hub = FakeHub(str(tmp_path / "hub"))
    seed_recorded(hub, "qrels/old-00000-of-00001.parquet", b"PAR1 from an older build")
    # the next push's one commit deletes the stale file; just before it, the owner replaces that file and a
    # published corpus file with their own bytes
    owners = {"qrels/old-00000-of-00001.parquet": "PAR1 the owner's qrels now",
              "corpus/corpus-00000-of-00001.parquet": OWNER_CORPUS}
    again = run_push(tmp_path, cache_dir, env=owner_edits(tmp_path, {5: owners}))
    assert again.returncode == 0, again.stderr[-3000:]
    assert {path: hub.read(REPO, path).decode() for path in owners} == owners
    assert "0 stale files deleted" in again.stdout
    lines = left_lines(again.stdout)
    assert len(lines) == 1 and "('corpus/corpus-00000-of-00001.parquet')" in lines[0], again.stdout
    assert set(recorded(hub)) == set(staged_files(tmp_path / "staged")) - {"corpus/corpus-00000-of-00001.parquet"}


@pytest.mark.slow  # a push in a subprocess: seconds
def test_a_file_the_owner_deletes_during_a_push_is_not_put_back(tmp_path, cache_dir):
    assert run_push(tmp_path, cache_dir).returncode == 0  # 4 commit requests
    hub = FakeHub(str(tmp_path / "hub"))
    seed_recorded(hub, "README.md", b"the card of an older build\n")
    # the next push sends the new card in its one commit; just before it lands, the owner deletes the card
    again = run_push(tmp_path, cache_dir, env=owner_edits(tmp_path, {5: {"README.md": None}}))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "README.md" not in hub.files(REPO)
    lines = left_lines(again.stdout)
    assert len(lines) == 1 and "('README.md')" in lines[0], again.stdout
    assert "README.md" not in recorded(hub)


@pytest.mark.slow  # a push in a subprocess: seconds
def test_a_push_the_owner_keeps_racing_stops_in_one_line(tmp_path, cache_dir):
    from ragloaders.publish.push import MAX_RACES

    edits = {n: {"notes.txt": f"the owner's notes, edit {n}\n"} for n in range(1, MAX_RACES + 3)}
    done = run_push(tmp_path, cache_dir, env=owner_edits(tmp_path, edits))
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragloaders: error:")]
    assert len(errors) == 1 and "kept changing during the push" in errors[0] and "Traceback" not in done.stderr
    hub = FakeHub(str(tmp_path / "hub"))
    assert hub.load()["commit_requests"] == MAX_RACES + 1  # each refused, each followed by one fresh read
    assert set(hub.files(REPO)) == {"notes.txt"}  # nothing of the push landed: every commit was pinned


def test_a_race_is_told_by_the_hubs_412_or_409_and_nothing_else():
    from types import SimpleNamespace

    from ragloaders.publish.push import parent_moved

    def error(status: int | None, context: BaseException | None = None) -> Exception:
        raised = Exception("hub")
        raised.response = SimpleNamespace(status_code=status) if status else None
        raised.__context__ = context
        return raised

    assert parent_moved(error(412)) and parent_moved(error(409))
    assert parent_moved(error(500, error(412)))  # raised while handling the hub's answer, as datasets reads it
    assert not any(parent_moved(error(s)) for s in (None, 400, 401, 403, 404, 413, 422, 500, 503))


@pytest.mark.slow  # a push of a fresh build: seconds
@pytest.mark.parametrize("swap", ["card symlinked to a user's file", "large data file rewritten"])
def test_a_file_swapped_after_the_folder_was_verified_is_never_committed(swap, tmp_path, cache_dir, monkeypatch):
    """At the hub's first commit request, the staged folder changes under the push: the card becomes a symlink to a
    private file of the user's, or a data file of a later commit gets other bytes (every file sent from its path, as
    a file over push.INLINE_BYTES is). The upload read files by path when it sent them, long after `verify`: the
    private file was published as the card."""
    from ragloaders.publish import push

    secret = tmp_path / "id_rsa"
    secret.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY----- not to be published\n")
    staged = tmp_path / "staged"
    if swap == "large data file rewritten":
        monkeypatch.setattr(push, "INLINE_BYTES", 0)
    commit = FakeHub.commit
    later = {}

    def commit_then_swap(self, request, repo, rev):
        if not later:
            names = sorted(staged_files(staged))
            if swap == "card symlinked to a user's file":
                later["file"] = staged / "README.md"
                later["file"].unlink()
                later["file"].symlink_to(secret)
            else:
                later["file"] = staged / names[-2]  # (the last data file, in the commit before the card's)
                later["file"].write_bytes(b"PAR1 rewritten while the push ran")
        return commit(self, request, repo, rev)

    monkeypatch.setattr(FakeHub, "commit", commit_then_swap)
    done = run_push(tmp_path, cache_dir)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragloaders: error:")]
    assert len(errors) == 1 and f"{later['file']} changed after the folder was verified" in errors[0], done.stderr
    hub = FakeHub(str(tmp_path / "hub"))
    held = [hub.read(REPO, name) for name in hub.files(REPO)]
    assert held and not any(b"PRIVATE KEY" in data or b"rewritten" in data for data in held)
    assert "README.md" not in hub.files(REPO)  # the card, last, never came


def _error_line(done: subprocess.CompletedProcess) -> str:
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragloaders: error:")]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    return errors[0]


@pytest.mark.slow  # a push of a fresh build: seconds
@pytest.mark.parametrize("status, words", [(400, "the hub refused the upload (HTTP 400)"),
                                           (401, "the hub refused the token (HTTP 401): set HF_TOKEN"),
                                           (403, "the token may not write to this repository (HTTP 403)")])
def test_the_hubs_refusal_of_a_commit_is_one_bounded_line_naming_it(status, words, tmp_path, cache_dir,
                                                                       monkeypatch):
    """A commit answered with an error of 200 KB: the one line held all of it, and said the hub 'stopped answering'
    with a proxy remedy whatever the status."""
    monkeypatch.setattr(FakeHub, "commit", lambda self, request, repo, rev: (status, {"error": "E" * 200_000}))
    line = _error_line(run_push(tmp_path, cache_dir))
    assert words in line and "stopped answering" not in line and len(line) < 1_000, line


@pytest.mark.slow  # a push of a fresh build: seconds
def test_a_hub_that_gives_no_head_commit_gets_no_commit(tmp_path, cache_dir, monkeypatch):
    """Unpinned (parent_commit None), a commit overwrote whatever the owner committed meanwhile."""
    revision_info = FakeHub.revision_info

    def headless(self, request, repo, rev):
        status, body, *rest = revision_info(self, request, repo, rev)
        return (status, {**body, "sha": None}, *rest) if status == 200 else (status, body, *rest)

    monkeypatch.setattr(FakeHub, "revision_info", headless)
    line = _error_line(run_push(tmp_path, cache_dir))
    assert "the hub gave no head commit of main (got None)" in line and "nothing was sent" in line
    assert FakeHub(str(tmp_path / "hub")).load()["commit_requests"] == 0


@pytest.mark.slow  # a push of a fresh build: seconds
def test_the_repositorys_listing_is_bounded_in_messages_and_in_length(tmp_path, cache_dir, monkeypatch):
    from ragloaders.publish import push

    tree = FakeHub.tree
    odd = "data/" + "x" * 100_000 + "\nragloaders: FAKE LINE.parquet"

    def with_an_odd_file(self, request, repo, rev, sub=None):
        status, body, *rest = tree(self, request, repo, rev, sub)
        extra = {"type": "file", "path": odd, "size": 4, "oid": "0" * 40}
        return (status, [*body, extra], *rest) if status == 200 else (status, body, *rest)

    monkeypatch.setattr(FakeHub, "tree", with_an_odd_file)
    done = run_push(tmp_path, cache_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "FAKE LINE" not in "".join(line for line in done.stdout.splitlines() if line.startswith("ragloaders"))
    leaving = [line for line in done.stdout.splitlines() if line.startswith("leaving 1 Parquet files")]
    assert len(leaving) == 1 and len(leaving[0]) < 400 and "…" in leaving[0], done.stdout[:2000]
    monkeypatch.setattr(push, "MAX_REPOSITORY_FILES", 3)  # a listing that goes on paging
    line = _error_line(run_push(tmp_path, cache_dir))
    assert "the hub lists more than 3 files and folders in the repository" in line


@pytest.mark.slow  # a push of a fresh build: seconds
def test_a_record_larger_than_its_bound_is_not_read_whole_whatever_the_listing_says(tmp_path, cache_dir,
                                                                                     monkeypatch):
    from ragloaders.publish.hub_manifest import MAX_HUB_MANIFEST_BYTES

    assert run_push(tmp_path, cache_dir).returncode == 0
    resolve = FakeHub.resolve
    served = []

    def huge_record(self, request, repo, rev, file):
        if file != HUB_MANIFEST:
            return resolve(self, request, repo, rev, file)
        served.append(file)
        status, record = resolve(self, request, repo, rev, file)  # the real record, padded past the bound
        return status, record.rstrip() + b" " * MAX_HUB_MANIFEST_BYTES + b"\n"

    monkeypatch.setattr(FakeHub, "resolve", huge_record)
    line = _error_line(run_push(tmp_path, cache_dir))
    assert served and "the push would overwrite that ragloaders did not publish" in line and HUB_MANIFEST in line


def test_the_identity_of_a_build_leaves_nothing_in_datasets_default_cache(tmp_path, monkeypatch):
    """`push PATH --dry-run` (no --cache-dir) left a lock file per config in ~/.cache/huggingface/datasets: the
    builders it hashes took their locks in datasets' default cache."""
    import datasets.config
    from ragloaders.publish.build import build_identity

    default = tmp_path / "default-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", default)
    identity = build_identity(PATH, str(DATA / "beir"), None, REPO)
    assert set(identity["builders"]) == set(CONFIGS)
    assert not default.exists() or not any(default.rglob("*"))
    assert identity == build_identity(PATH, str(DATA / "beir"), str(tmp_path / "other"), REPO)  # the same build
