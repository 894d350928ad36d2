"""One artifact everywhere: `eval`, `bm25`, `validate`, `push` and `ragloaders.load` take a benchmark path, a folder
`ragloaders build` wrote, or a hub repository (ragloaders' layout or mteb's); an unreachable hub fails fast in one
line. No network: a "hub repository" is a copy in a hub cache read with HF_HUB_OFFLINE=1, and an unreachable hub is
HF_ENDPOINT on a closed 127.0.0.1 port."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import ragloaders
from conftest import DATA, assert_names
from conftest import run_cli as run
from mteb_layout import write_repository
from ragloaders import cli

ROOT = Path(__file__).resolve().parent.parent
PATH = "beir/nfcorpus"
REPO = "some-org/nf-copy"
MTEB_REPO = "mteb-like/nfcorpus"
SNAPSHOT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sources")


@pytest.fixture(scope="module")
def built(nfcorpus_build) -> Path:
    """The session's build of the bundled nfcorpus sample (read only)."""
    assert nfcorpus_build.path == PATH
    return nfcorpus_build.out


@pytest.fixture(scope="module")
def mteb_folder(built, work) -> Path:
    """The same tables in mteb's layout, not built by ragloaders: qrels as the config `default` (test split only),
    queries with mteb's `id` column, no ragloaders card line."""
    def table(config: str, split: str):
        return pq.read_table(sorted((built / config).glob(f"{split}-*.parquet")))

    queries = table("queries", "queries").rename_columns(["id", *table("queries", "queries").column_names[1:]])
    return Path(write_repository(str(work / "mteb"), {"corpus": {"corpus": table("corpus", "corpus")},
                                                      "queries": {"queries": queries},
                                                      "default": {"test": table("qrels", "test")}}))


@pytest.fixture(scope="module")
def hub_cache(built, mteb_folder, work) -> Path:
    """A hub cache holding REPO (the built folder) and MTEB_REPO, as huggingface_hub lays out a downloaded
    snapshot."""
    cache = work / "hub-cache"
    for repo_id, folder in ((REPO, built), (MTEB_REPO, mteb_folder)):
        repo = cache / f"datasets--{repo_id.replace('/', '--')}"
        shutil.copytree(folder, repo / "snapshots" / SNAPSHOT, ignore=shutil.ignore_patterns(".ragloaders*"))
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(SNAPSHOT)
    return cache


def ragloaders_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
                   ) -> subprocess.CompletedProcess:
    """The command in a fresh process (huggingface_hub reads HF_* when imported)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HF_") or k == "HF_HOME"}
    environment.update(HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=str(ROOT / "loaders"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "ragloaders", *args], env=environment, capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def cli_in_process(*args: str) -> subprocess.CompletedProcess:
    """`ragloaders_cli`'s result for the command run in this process (huggingface_hub's constants patched by a
    fixture stand for the environment a fresh process would read)."""
    code, out, err = run(*args)
    return subprocess.CompletedProcess(["ragloaders", *args], code, out, err)


def offline(hub_cache: Path) -> dict[str, str]:
    return {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)}




@pytest.fixture
def offline_hub(hub_cache, monkeypatch) -> Path:
    """HF_HUB_OFFLINE=1 with `hub_cache` as the hub cache, in this process (huggingface_hub read the environment
    when it was imported, so its constants are set)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
    return hub_cache


@pytest.fixture
def unreachable_hub(closed_endpoint, monkeypatch) -> str:
    """HF_ENDPOINT on a closed port, in this process."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", closed_endpoint)
    return closed_endpoint


def metric_lines(stdout: str) -> list[str]:
    """The lines of an eval report that hold a score (`NDCG@10      0.32...`)."""
    return [line.strip() for line in stdout.splitlines() if "@" in line.strip().split(" ")[0]]


@pytest.fixture(scope="module")
def reference(built, work) -> dict[str, object]:
    """bm25 and eval on the benchmark path itself: what every other kind of source must give."""
    run_file = work / "path.trec"
    code, out, err = run("bm25", PATH, "--data-dir", str(DATA / "beir"), "--out", str(run_file),
                         "--cache-dir", str(work / "cache"))
    assert code == 0, err[-2000:]
    scored, metrics, err = run("eval", PATH, "--data-dir", str(DATA / "beir"), "--run", str(run_file),
                               "--cache-dir", str(work / "cache"))
    assert scored == 0, err[-2000:]
    assert len(metric_lines(metrics)) >= 5
    return {"run": run_file.read_bytes(), "bm25": out, "metrics": metric_lines(metrics)}


# --- a built folder and a hub repository in ragloaders' layout ------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", pytest.param("repository", marks=pytest.mark.slow)])
def test_bm25_and_eval_on_a_built_folder_or_repository_equal_the_path(kind, built, offline_hub, reference, work):
    source = str(built) if kind == "folder" else REPO
    run_file = work / f"{kind}.trec"
    code, out, err = run("bm25", source, "--out", str(run_file), "--cache-dir", str(work / "cache"))
    assert code == 0, err[-2000:]
    assert run_file.read_bytes() == reference["run"]
    said, _, read = out.split(":", 1)[1].rstrip("\n").partition("; read ")
    assert said == reference["bm25"].split(":", 1)[1].rstrip("\n")  # same counts, same settings
    assert read == ("" if kind == "folder" else f"{REPO} at commit {SNAPSHOT}")
    code, out, err = run("eval", source, "--run", str(run_file), "--cache-dir", str(work / "cache"))
    assert code == 0, err[-2000:]
    assert metric_lines(out) == reference["metrics"]
    assert out.startswith(f"{source} test:")


def test_bm25_says_how_many_queries_got_no_document(reference):
    """The sample's 323 test queries; those with no word in common with any document have no line in the run."""
    ranked = {line.split(" ")[0] for line in reference["run"].decode().splitlines()}
    said = reference["bm25"]
    assert f"for 323 test queries, {323 - len(ranked)} of which got no document" in said
    assert 0 < 323 - len(ranked) < 323  # the sample has such queries (all their words are stopwords or unknown)


@pytest.mark.parametrize("kind", ["folder", "repository"])
def test_validate_a_built_folder_or_repository(kind, built, offline_hub):
    source = str(built) if kind == "folder" else REPO
    code, out, err = run("validate", source)
    assert code == 0, err[-2000:]
    assert out.splitlines()[0] == source + ("" if kind == "folder" else f" at commit {SNAPSHOT}")
    assert out.rstrip().endswith("OK")
    assert f"built by ragloaders from {PATH}" in out


def test_load_a_built_folder_gives_the_rows_of_the_path(built, work):
    for config, split in (("qrels", "test"), ("queries", "queries"), ("corpus", "corpus")):
        from_folder = ragloaders.load(str(built), config, split=split, cache_dir=str(work / "cache"))
        from_path = ragloaders.load(PATH, config, split=split, data_dir=str(DATA / "beir"),
                                    cache_dir=str(work / "cache"))
        assert from_folder.features == from_path.features, config
        assert from_folder.to_list() == from_path.to_list(), config
    streamed = ragloaders.load(str(built), "qrels", split="test", streaming=True)
    assert next(iter(streamed)) == from_path_first_qrel()
    with pytest.raises(ValueError) as caught:
        ragloaders.load(str(built), "qrels", data_dir=str(DATA / "beir"))
    assert_names(caught.value, built, "data_dir")
    with pytest.raises(ValueError) as caught:
        ragloaders.load(str(built), "qrel")
    assert_names(caught.value, "'qrel'", "corpus, qrels, queries")  # the configs it has


def official_test_qrels() -> list[str]:
    """The lines of nfcorpus/qrels/test.tsv in the official zip the path is built from (header first)."""
    with zipfile.ZipFile(DATA / "beir" / "nfcorpus.zip") as archive:
        return archive.read("nfcorpus/qrels/test.tsv").decode("utf-8").splitlines()


def from_path_first_qrel() -> dict:
    query_id, doc_id, score = official_test_qrels()[1].split("\t")
    return {"query-id": query_id, "corpus-id": doc_id, "score": int(score)}


def test_load_a_hub_repository_from_the_hub_cache_offline(offline_hub, tmp_path):
    loaded = ragloaders.load(REPO, "qrels", split="test", cache_dir=str(tmp_path / "cache"))
    assert [loaded.num_rows, loaded[0]] == [len(official_test_qrels()) - 1, from_path_first_qrel()]


# --- mteb's layout: a repository ragloaders did not build --------------------------------------------------------


@pytest.mark.slow
def test_a_foreign_repository_needs_as_and_then_scores_like_the_path(offline_hub, reference, work):
    (work / "mteb.trec").write_bytes(reference["run"])
    code, _, err = run("eval", MTEB_REPO, "--run", str(work / "mteb.trec"))
    assert code == 2
    assert err.count("\n") == 1 and "--as PATH" in err and MTEB_REPO in err
    code, out, err = run("eval", MTEB_REPO, "--as", PATH, "--run", str(work / "mteb.trec"),
                         "--cache-dir", str(work / "cache"))
    assert code == 0, err[-2000:]
    assert metric_lines(out) == reference["metrics"]  # qrels from `default`, queries keyed by `id`
    run_file = work / "mteb-bm25.trec"
    code, _, err = run("bm25", MTEB_REPO, "--as", PATH, "--out", str(run_file), "--cache-dir", str(work / "cache"))
    assert code == 0, err[-2000:]
    assert run_file.read_bytes() == reference["run"]
    code, out, _ = run("validate", MTEB_REPO)
    assert code == 0 and "no source files read" in out
    code, _, err = run("eval", MTEB_REPO, "--as", "beir/nfcorpuss", "--run", str(run_file))
    assert code == 2 and "'beir/nfcorpuss' is not a benchmark path" in err


def test_as_is_refused_for_a_benchmark_path(work, reference):
    (work / "as.trec").write_bytes(reference["run"])
    code, _, err = run("eval", PATH, "--as", "beir/scifact", "--data-dir", str(DATA / "beir"),
                       "--run", str(work / "as.trec"))
    assert code == 2 and "--as is for a built folder or a hub repository" in err


# --- push of a built folder ---------------------------------------------------------------------------------------


def test_push_of_a_built_folder_plans_exactly_its_manifest_files(built, work):
    copy = work / "nf-push"
    shutil.copytree(built, copy)
    (copy / "notes.txt").write_text("mine, not ragloaders'")  # the user's: never uploaded
    code, out, err = run("push", str(copy), "--repo-id", "org/nf", "--dry-run")
    assert code == 0, err[-2000:]
    planned = sorted(line.split(": ", 1)[1].split(" (")[0] for line in out.splitlines()
                     if line.startswith("  commit "))
    expected = sorted(str(p.relative_to(copy)) for p in copy.rglob("*")
                      if p.is_file() and p.name != "notes.txt" and not p.name.startswith(".ragloaders"))
    assert planned == expected and "README.md" in planned
    parquet = next(copy.glob("qrels/test-*.parquet"))
    parquet.write_bytes(parquet.read_bytes()[:-1] + b"\0")  # one byte changed
    code, _, err = run("push", str(copy), "--repo-id", "org/nf", "--dry-run")
    assert code == 2 and "does not verify against its manifest (1 changed" in err
    bare = work / "not-built"
    bare.mkdir()
    (bare / "README.md").write_text("---\n---\n")
    code, _, err = run("push", str(bare), "--repo-id", "org/nf", "--dry-run")
    assert code == 2 and "no ragloaders manifest" in err


# --- an unreachable hub: fast, one line, what to do ------------------------------------------------------------------


@pytest.fixture(scope="module")
def closed_endpoint() -> str:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def assert_one_line(done: subprocess.CompletedProcess, *needles: str) -> str:
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-2000:])
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragloaders: error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "Retrying" not in done.stderr and "Traceback" not in done.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


REMEDIES = ("HF_ENDPOINT", "HF_HUB_OFFLINE=1", "--data-dir")
PUSH_REMEDIES = ("HF_ENDPOINT", "HTTPS_PROXY", "push again", "--dry-run", "`ragloaders push FOLDER --repo-id ...`")


def test_a_missing_folder_and_an_unreachable_hub_are_said_in_one_line(unreachable_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = cli_in_process("validate", "build/scifact")
    assert_one_line(done, "no folder build/scifact in", "cannot be reached", unreachable_hub, "Connection refused",
                    *REMEDIES)


@pytest.mark.parametrize("command", [["eval", "--run", "x.trec"], ["bm25", "--out", "x.trec"], ["validate"]])
def test_every_command_says_the_same_of_a_missing_folder(command, unreachable_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(command[0], "org/scifact", *command[1:])
    assert code == 2 and err.count("\n") == 1 and not out
    for needle in ("no folder org/scifact in", "cannot be reached", unreachable_hub, *REMEDIES):
        assert needle in err, needle


def test_the_mmrag_download_fails_fast_naming_its_repository(closed_endpoint, tmp_path):
    done = ragloaders_cli("validate", "mmrag", "--cache-dir", str(tmp_path / "c"),
                                   env={"HF_ENDPOINT": closed_endpoint}, cwd=tmp_path)
    assert_one_line(done, "Askio/mmrag_benchmark", closed_endpoint, *REMEDIES)


def test_push_checks_token_and_hub_before_building(built, unreachable_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_TOKEN", "hf_notARealToken_0000")
    done = cli_in_process("push", PATH, "--repo-id", "org/nf", "--data-dir", str(DATA / "beir"),
                          "--staging-dir", str(tmp_path / "staged"))
    err = assert_one_line(done, "org/nf", "cannot reach the hub", *PUSH_REMEDIES)
    assert "HF_HUB_OFFLINE" not in err  # the hub cache's copy is of no use to a push
    assert not (tmp_path / "staged").exists()  # nothing was built
    code, _, err = run("push", str(built), "--repo-id", "org/nf")
    assert code == 2 and err.count("\n") == 1 and "org/nf: cannot reach the hub" in err
    assert all(needle in err for needle in PUSH_REMEDIES) and "HF_HUB_OFFLINE" not in err
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-login"))
    monkeypatch.setattr("huggingface_hub.constants.HF_TOKEN_PATH", str(tmp_path / "no-login" / "token"))
    code, _, err = run("push", PATH, "--repo-id", "org/nf", "--data-dir", str(DATA / "beir"),
                       "--staging-dir", str(tmp_path / "staged"))
    assert code == 2 and "no Hugging Face token" in err and "nothing was built" in err
    assert not (tmp_path / "staged").exists()


class CountingHub:
    """A port on 127.0.0.1 that accepts each connection, counts it, reads the request and closes it unanswered."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0  # counted before the close, so before the client can see that no answer came
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # the listener was closed: the test is over
                return
            self.connections += 1
            with connection:  # the request read whole first: closing with it unread would reset, not end
                request = b""
                while b"\r\n\r\n" not in request and (chunk := connection.recv(65536)):
                    request += chunk


@pytest.fixture
def counting_hub(monkeypatch) -> CountingHub:
    """HF_ENDPOINT on a CountingHub, in this process."""
    from huggingface_hub import constants

    hub = CountingHub()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    yield hub
    hub.listener.close()


@pytest.mark.parametrize("command, needles", [
    (["validate", "build/scifact"], ["no folder build/scifact in", "cannot be reached", "{url}"]),
    # (the file's URL in this one was made from the endpoint huggingface_hub read when it was imported)
    (["validate", "mmrag", "--cache-dir", "c"], ["Askio/mmrag_benchmark", "the hub cannot be reached: "]),
    (["push", PATH, "--repo-id", "org/nf", "--data-dir", str(DATA / "beir"), "--staging-dir", "staged"],
     ["org/nf: cannot reach the hub at {url}"]),
], ids=["missing folder", "mmrag download", "push"])
def test_a_hub_that_closes_every_connection_is_asked_once_without_retries(command, needles, counting_hub, tmp_path,
                                                                         monkeypatch):
    """What 'fails fast' means: one probe request, given up when it fails, no retry and no second request."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_TOKEN", "hf_notARealToken_0000")
    code, out, err = run(*command)
    assert code == 2 and err.count("\n") == 1 and "Server disconnected" in err, err
    assert all(needle.format(url=counting_hub.url) in err for needle in needles), err
    assert counting_hub.connections == 1
    assert not (tmp_path / "staged").exists()  # push built nothing


def test_hf_hub_offline_without_a_cached_copy_is_one_clear_line(offline_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run("validate", "org/never-downloaded")
    assert code == 2 and err.count("\n") == 1
    for needle in ("no folder org/never-downloaded", "HF_HUB_OFFLINE is set", "holds no copy of this dataset "
                   "repository"):
        assert needle in err, needle


def test_a_name_that_can_only_be_a_folder_is_never_looked_up_on_the_hub(unreachable_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("./build/scifact", "a/b/c", "~/nothing-here"):
        code, _, err = run("validate", name)
        assert code == 2 and f"unknown path {name!r}" in err and "no folder" in err
        assert unreachable_hub not in err


# --- one rule for a group path -------------------------------------------------------------------------------------


def cqadupstack_tree(root: Path) -> Path:
    """Every forum of cqadupstack as extracted from its zip, each with two documents and one judged query."""
    for member in ragloaders.api.group_members("beir/cqadupstack"):
        forum = root / "cqadupstack" / member.rsplit("/", 1)[1]
        (forum / "qrels").mkdir(parents=True)
        (forum / "corpus.jsonl").write_text(f'{{"_id": "1", "title": "t", "text": "install {forum.name} apps"}}\n'
                                            '{"_id": "2", "title": "", "text": "other words"}\n')
        (forum / "queries.jsonl").write_text(f'{{"_id": "q1", "text": "install {forum.name}"}}\n')
        (forum / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t1\t1\n")
    return root


def test_a_group_path_is_its_members_in_every_command(tmp_path):
    members = ragloaders.api.group_members("beir/cqadupstack")
    assert len(members) == 12 and all(m.startswith("beir/cqadupstack/") for m in members)
    with pytest.raises(ValueError) as caught:
        ragloaders.load("beir/cqadupstack", "corpus")
    assert_names(caught.value, *members)
    code, _, err = run("build", "beir/cqadupstack", "--out", str(tmp_path / "x"))
    assert code == 2 and all(member in err for member in members)
    data = cqadupstack_tree(tmp_path / "data")
    code, out, _ = run("validate", "beir/cqadupstack", "--data-dir", str(data), "--json",
                       "--cache-dir", str(tmp_path / "c"))
    reports = json.loads(out)
    assert [report["path"] for report in reports] == list(members)
    assert code == 1  # a 2-document forum is not the published one: its counts differ, per member
    assert all(any(f["check"] == "count" for f in report["errors"]) for report in reports)
    run_file = tmp_path / "group.trec"
    code, _, err = run("bm25", "beir/cqadupstack", "--data-dir", str(data), "--out", str(run_file),
                       "--cache-dir", str(tmp_path / "c"))
    assert code == 0, err[-2000:]
    assert sorted(line.split(" ")[0] for line in run_file.read_text().splitlines()) == sorted(
        f"{member.rsplit('/', 1)[1]}/q1" for member in members)
    code, out, _ = run("eval", "beir/cqadupstack", "--data-dir", str(data), "--run", str(run_file),
                       "--metrics", "ndcg@10", "--cache-dir", str(tmp_path / "c"))
    assert code == 0 and metric_lines(out) == ["NDCG@10      1.00000"], out


# --- a clone in the current directory ---------------------------------------------------------------------------


def test_import_works_from_a_folder_holding_an_empty_ragloaders_folder(tmp_path):
    """A folder named `ragloaders` in the current directory (the clone, seen from its parent) must not shadow the
    installed package as an empty namespace package."""
    (tmp_path / "ragloaders").mkdir()
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import ragloaders; print(ragloaders.load.__module__)"],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ragloaders.api"


def test_help_lists_every_command():
    commands = list(cli.parser()._subparsers._group_actions[0].choices)
    assert {"list", "build", "validate", "push", "eval", "bm25"} <= set(commands)
    description = cli.parser().format_help().split("positional arguments")[0]
    for command in commands:
        assert command in description, command


HUB_CARD_BOMB = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from fake_hub import install
hub = install(sys.argv[1])
levels = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
levels += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 9)]
card = "---\n" + "\n".join(levels) + "\nconfigs:\n- config_name: corpus\n  data_files: *l8\n---\n"
hub.seed_repo("org/bomb", {"README.md": card.encode(), "corpus/corpus-00000-of-00001.parquet": b"PAR1"})
import ragloaders
from ragloaders.core.errors import SourceError
try:
    ragloaders.load("org/bomb", "corpus")
except SourceError as e:
    print(e)
"""


def test_a_hub_repositorys_card_is_checked_before_datasets_reads_it(tmp_path):
    """`load` of a hub repository downloads its README.md alone and refuses an alias bomb in its YAML, as for a
    folder; `datasets` expanding it would need far more than the 3 GB the child may use."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
                       HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=f"{ROOT / 'loaders'}{os.pathsep}{ROOT / 'tests'}")
    done = subprocess.run([sys.executable, "-c", HUB_CARD_BOMB, str(tmp_path / "hub")], env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "org/bomb/README.md: YAML front matter expands to more than 200,000 nodes" in done.stdout, done.stdout


@pytest.mark.parametrize("ref", ["absolute", "relative"])
def test_a_hub_cache_ref_leading_outside_its_snapshots_is_refused_offline(ref, built, tmp_path, monkeypatch):
    """huggingface_hub joins `refs/main`'s text to `snapshots/` and returns that folder if it exists: a damaged or
    hostile ref (`/elsewhere`, `../../../../elsewhere`) made `validate` and `load` read any folder of the machine as
    the repository, reporting the folder's name as its commit."""
    from huggingface_hub import constants

    cache = tmp_path / "hub-cache"
    repo = cache / "datasets--org--nf"
    (repo / "snapshots").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(str(built) if ref == "absolute" else os.path.relpath(built, repo / "snapshots"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    code, out, err = run("validate", "org/nf")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "the hub cache's reference to 'main' leads to" in err and "not to a snapshot of this repository" in err
    with pytest.raises(ConnectionError, match="leads to"):  # (HubError)
        ragloaders.load("org/nf", "qrels", split="test", cache_dir=str(tmp_path / "c"))
