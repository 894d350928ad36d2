"""A SOURCE as an attacker or a careless user gives it: a card whose data files lie outside its folder, a partial
hub cache, a hub that hangs or answers what no hub does, a built folder named like a benchmark path, and zips and
folders in BEIR's layout that are not quite one."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import ragloaders
from conftest import assert_names, assert_source_error
from conftest import run_cli as run
from local_http import send_body, serve_in_thread
from mteb_layout import beir_tables, write_repository
from ragloaders import cli
from ragloaders.core.errors import MissingSourceError, SourceError

TABLES = beir_tables([("d1", "a document"), ("d2", "another")], [("q1", "a query")],
                     {"test": [("q1", "d1", 1)], "dev": [("q1", "d2", 1)]})




def declare(folder: Path, old: str, new: str) -> None:
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8")
    assert old in text
    card.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize("declared", ["../outside/secret.parquet", "{outside}/secret.parquet"])
def test_a_card_cannot_make_load_or_validate_read_outside_its_folder(declared, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    write_repository(str(outside / "repo"), {"qrels": TABLES["qrels"]})
    (outside / "repo" / "qrels" / "test-00000-of-00001.parquet").rename(outside / "secret.parquet")
    folder = Path(write_repository(str(tmp_path / "nf"), TABLES))
    declare(folder, "path: qrels/test-00000-of-00001.parquet", "path: " + declared.format(outside=outside))
    monkeypatch.chdir(tmp_path)  # `../outside` is a sibling of the folder, as `{outside}` is
    with pytest.raises(SourceError) as caught:
        ragloaders.load("nf", "qrels")
    assert_source_error(caught.value, "nf/README.md", "'qrels'", "secret.parquet")
    code, _, err = run("validate", "nf")
    assert code == 2 and "secret.parquet, outside nf" in err and err.count("\n") == 1
    assert ragloaders.load("nf", "corpus")["corpus"].num_rows == 2  # the configs that stay inside still load


SECRET = beir_tables([("x", "x")], [("x", "x")], {"test": [("SECRET-q", "SECRET-d", 7)]})["qrels"]


def outside_file(tmp_path: Path) -> Path:
    """A qrels file outside the folder under test, holding rows the folder does not."""
    write_repository(str(tmp_path / "outside" / "repo"), {"qrels": SECRET})
    secret = tmp_path / "outside" / "secret.parquet"
    (tmp_path / "outside" / "repo" / "qrels" / "test-00000-of-00001.parquet").rename(secret)
    return secret


def refused_everywhere(folder: str, file: str, resolved: Path) -> None:
    """load and validate of `folder` both refuse its qrels config in one line naming `file` (load: and the file
    `resolved` it leads to)."""
    with pytest.raises(SourceError) as raised:
        ragloaders.load(folder, "qrels")
    assert_source_error(raised.value, file, os.path.realpath(resolved))
    code, _, err = run("validate", folder)
    assert code == 2 and err.count("\n") == 1 and file in err and "SECRET" not in err, err


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_data_file_that_is_a_link_out_of_its_folder_is_refused(link, tmp_path, monkeypatch):
    secret = outside_file(tmp_path)
    folder = Path(write_repository(str(tmp_path / "nf"), TABLES))
    target = folder / "qrels" / "test-00000-of-00001.parquet"
    if link == "file":
        target.unlink()
        target.symlink_to(secret)
    else:  # the whole config folder is a link: every file in it leaves
        linked = secret.parent / "qrels"
        linked.mkdir()
        for name in ("test", "dev"):
            shutil.copyfile(secret, linked / f"{name}-00000-of-00001.parquet")
        shutil.rmtree(folder / "qrels")
        (folder / "qrels").symlink_to(linked)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SourceError) as raised:
        ragloaders.load("nf", "qrels")
    assert "outside nf; a folder's data files must be its own" in str(raised.value)
    assert "qrels/" in str(raised.value) and "SECRET" not in str(raised.value)
    code, _, err = run("validate", "nf")
    assert code == 2 and err.count("\n") == 1 and "outside nf" in err and "SECRET" not in err, err
    assert ragloaders.load("nf", "corpus")["corpus"].num_rows == 2  # the configs of its own still load


def test_a_path_through_a_linked_folder_and_up_is_resolved_as_the_system_opens_it(tmp_path, monkeypatch):
    secret = outside_file(tmp_path)
    (secret.parent / "a" / "b").mkdir(parents=True)
    (secret.parent / "a" / "secret.parquet").write_bytes(secret.read_bytes())
    folder = Path(write_repository(str(tmp_path / "nf"), TABLES))
    (folder / "sub").symlink_to(secret.parent / "a" / "b")
    (folder / "secret.parquet").write_bytes(b"not a parquet file: what `sub/..` reads as text")
    # the text `nf/sub/../secret.parquet` lies inside nf, but opening it leaves through `sub`
    declare(folder, "path: qrels/test-00000-of-00001.parquet", "path: sub/../secret.parquet")
    monkeypatch.chdir(tmp_path)
    refused_everywhere("nf", "sub/../secret.parquet", secret.parent / "a" / "secret.parquet")


@pytest.mark.parametrize("declared", ["./qrels/test-00000-of-00001.parquet", "qrels/./test-00000-of-00001.parquet",
                                      "corpus/../qrels/test-00000-of-00001.parquet", "inner-link.parquet"])
def test_dotted_paths_and_links_that_stay_inside_the_folder_load(declared, tmp_path, monkeypatch):
    folder = Path(write_repository(str(tmp_path / "nf"), TABLES))
    (folder / "inner-link.parquet").symlink_to("qrels/test-00000-of-00001.parquet")
    declare(folder, "path: qrels/test-00000-of-00001.parquet", "path: " + declared)
    monkeypatch.chdir(tmp_path)
    assert ragloaders.load("nf", "qrels", split="test")["corpus-id"] == ["d1"]
    code, out, err = run("validate", "nf")
    assert code == 0 and "qrels/test: 1 row," in out, err


def hub_cache_snapshot(tmp_path: Path, monkeypatch) -> Path:
    """org/nf in an offline hub cache laid out as huggingface_hub lays it: the snapshot's files are relative links
    into the repository cache's blobs/."""
    from huggingface_hub import constants

    repo_cache = tmp_path / "hub" / "datasets--org--nf"
    snapshot = repo_cache / "snapshots" / ("0" * 40)
    write_repository(str(tmp_path / "plain"), TABLES)
    (repo_cache / "blobs").mkdir(parents=True)
    for file in sorted(p for p in (tmp_path / "plain").rglob("*") if p.is_file()):
        data = file.read_bytes()
        blob = repo_cache / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / file.relative_to(tmp_path / "plain")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo_cache / "refs").mkdir()
    (repo_cache / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    return snapshot


def test_a_hub_cache_snapshot_reads_its_own_blobs_and_no_other_repositorys(tmp_path, monkeypatch):
    snapshot = hub_cache_snapshot(tmp_path, monkeypatch)
    assert ragloaders.load("org/nf", "qrels", split="test")["corpus-id"] == ["d1"]  # links into ../../blobs
    code, out, err = run("validate", "org/nf")
    assert code == 0 and "qrels/test: 1 row," in out, err

    secret = outside_file(tmp_path)
    other = tmp_path / "hub" / "datasets--org--other" / "blobs"
    other.mkdir(parents=True)
    secret.rename(other / "secret.parquet")
    target = snapshot / "qrels" / "test-00000-of-00001.parquet"
    target.unlink()
    target.symlink_to(os.path.relpath(other / "secret.parquet", target.parent))  # into another repository's cache
    with pytest.raises(SourceError) as caught:
        ragloaders.load("org/nf", "qrels")
    assert_source_error(caught.value, "qrels/test-00000-of-00001.parquet", "datasets--org--other/blobs/secret.parquet")
    code, _, err = run("validate", "org/nf")
    assert code == 2 and err.count("\n") == 1 and "qrels/test-00000-of-00001.parquet" in err, err


@pytest.mark.parametrize(("declared", "said"), [("qrels/test-00000-of-00001.parquet", "no file '"),
                                               ("qrels/test-*.parquet", "split 'test': no file matches")])
def test_a_partial_hub_cache_offline_says_which_split_has_no_file(declared, said, tmp_path, monkeypatch):
    from huggingface_hub import constants

    snapshot = tmp_path / "hub" / "datasets--org--nf" / "snapshots" / ("0" * 40)
    write_repository(str(snapshot), TABLES)
    declare(snapshot, "path: qrels/test-00000-of-00001.parquet", "path: " + declared)  # ragloaders' cards: globs
    (snapshot / "qrels" / "test-00000-of-00001.parquet").unlink()  # a download interrupted before this file
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    code, _, err = run("validate", "org/nf")
    assert code == 2 and err.count("\n") == 1
    assert "config 'qrels'" in err and said in err and "HF_HUB_OFFLINE is set" in err


def test_a_built_folder_named_like_a_benchmark_path_is_the_folder(tmp_path, monkeypatch):
    write_repository(str(tmp_path / "beir" / "nf-v2"), TABLES)
    monkeypatch.chdir(tmp_path)
    assert ragloaders.load("beir/nf-v2", "qrels", split="test")["corpus-id"] == ["d1"]
    code, out, _ = run("validate", "beir/nf-v2")
    assert code == 0 and "qrels/test: 1 row," in out
    with pytest.raises(ValueError) as caught:
        ragloaders.load("beir/nfcorpuss", "qrels")  # no such folder: still a misspelt path
    assert_names(caught.value, "'beir/nfcorpuss'", "'beir/nfcorpus'")


# --- a hub that hangs, or answers what no hub answers -----------------------------------------------------------------


class Answer(BaseHTTPRequestHandler):
    status, content_type = 500, "text/html"

    def do_GET(self):  # noqa: N802 - http.server's naming
        body = b"<html><body>sign in to the network</body></html>"
        send_body(self, body, status=self.status, content_type=self.content_type)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint(monkeypatch):
    """Points huggingface_hub at `endpoint(handler or None)`: a server answering as `handler`, or, for None, one
    that accepts connections and never answers."""
    from huggingface_hub import constants

    closers = []

    def start(handler: type[BaseHTTPRequestHandler] | None) -> str:
        if handler is None:
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)  # the kernel completes each connection; nothing ever reads or answers
            closers.append(listener.close)
            port = listener.getsockname()[1]
        else:
            server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            serve_in_thread(server)
            closers.extend([server.server_close, server.shutdown])
            port = server.server_port
        url = f"http://127.0.0.1:{port}"
        monkeypatch.setattr(constants, "ENDPOINT", url)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", os.path.join(os.getcwd(), "no-registry.json"),
                            raising=False)
        return url

    yield start
    for close in reversed(closers):
        close()


OPEN_IN_A_FRESH_PROCESS = """
import json, sys, time
from ragloaders.core.hub_repository import HubError, open_repository
start = time.monotonic()
try:
    open_repository("org/name")
except HubError as e:
    print(json.dumps({"seconds": time.monotonic() - start, "error": str(e)}))
"""


@pytest.mark.slow
def test_a_hub_that_never_answers_is_given_up_within_five_seconds(endpoint, tmp_path):
    """In a fresh process (a new HF_HOME: huggingface_hub has fetched nothing yet, no agent registry either)."""
    url = endpoint(None)
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_ENDPOINT=url, HF_HOME=str(tmp_path / "hf"), PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", OPEN_IN_A_FRESH_PROCESS], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert answer["seconds"] < 5, "one request of 3 s, nothing before it"
    assert "cannot be reached" in answer["error"] and url in answer["error"] and "HF_HUB_OFFLINE=1" in answer["error"]


@pytest.mark.parametrize(("status", "content_type"), [(500, "text/html"), (200, "text/html"), (502, "")])
def test_a_hub_answering_an_error_or_a_web_page_is_one_line(status, content_type, endpoint, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = endpoint(type("Handler", (Answer,), {"status": status, "content_type": content_type}))
    for command in (["validate", "org/name"], ["eval", "org/name", "--run", "x.trec"]):
        start = time.monotonic()
        code, out, err = run(*command)
        assert code == 2 and not out and err.count("\n") == 1, err
        assert f"hub at {url}" in err and f"answered HTTP {status}" in err and "HF_HUB_OFFLINE=1" in err
        assert time.monotonic() - start < 5  # no retries


# --- beir-format inputs that are almost BEIR's layout -----------------------------------------------------------------

CORPUS, QUERIES = b'{"_id": "d1", "text": "x"}\n', b'{"_id": "q1", "text": "y"}\n'
QRELS = b"query-id\tcorpus-id\tscore\nq1\td1\t1\n"


def test_a_zip_with_two_datasets_names_both_top_folders(tmp_path):
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for top in ("a", "b"):
            for name, data in (("corpus.jsonl", CORPUS), ("queries.jsonl", QUERIES), ("qrels/test.tsv", QRELS)):
                zf.writestr(f"{top}/{name}", data)
    with pytest.raises(MissingSourceError) as caught:
        ragloaders.load("beir-format", "corpus", data_dir=str(archive))
    assert_names(caught.value, "two.zip", "corpus.jsonl", "a, b")


@pytest.mark.parametrize("twice", ["corpus.jsonl", "qrels/test.tsv"])
def test_a_zip_holding_two_members_of_one_name_is_refused_naming_it(twice, tmp_path, capsys):
    """zipfile reads the last of two members of one name: the first corpus's rows were dropped (exit 0); two qrels
    members made the split twice, `ValueError: Split test already present` printed as a bug of ragloaders."""
    archive = tmp_path / "dup.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (zipfile warns of a duplicate name as it writes it)
        with zipfile.ZipFile(archive, "w") as zf:
            for name, data in (("corpus.jsonl", CORPUS), ("queries.jsonl", QUERIES), ("qrels/test.tsv", QRELS)):
                zf.writestr(name, data)
            zf.writestr(twice, CORPUS if twice == "corpus.jsonl" else QRELS)
    assert cli.main(["build", "beir-format", "--data-dir", str(archive), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == (f"ragloaders: error: {archive}: the zip holds two or more members named '{twice}': which one is "
                   "the data cannot be told; remove the others, or pass an extracted folder\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("make", ["directory", "device"])
def test_a_corpus_jsonl_that_is_no_file_is_not_called_missing(make, tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "queries.jsonl").write_bytes(QUERIES)
    (tmp_path / "qrels" / "test.tsv").write_bytes(QRELS)
    if make == "directory":
        (tmp_path / "corpus.jsonl").mkdir()
    else:
        (tmp_path / "corpus.jsonl").symlink_to("/dev/zero")
    with pytest.raises(MissingSourceError) as caught:
        ragloaders.load("beir-format", "corpus", data_dir=str(tmp_path))
    assert_names(caught.value, tmp_path, "corpus.jsonl", "not a regular file")


def test_validate_calls_the_files_of_beir_format_the_users_own(tmp_path):
    (tmp_path / "qrels").mkdir()
    for name, data in (("corpus.jsonl", CORPUS), ("queries.jsonl", QUERIES), ("qrels/test.tsv", QRELS)):
        (tmp_path / name).write_bytes(data)
    code, out, _ = run("validate", "beir-format", "--data-dir", str(tmp_path))
    sources = [line for line in out.splitlines() if line.startswith("source: ")]
    assert code == 0 and len(sources) == 3
    assert all("a file of your own data" in line and "official" not in line for line in sources), sources


def test_a_folder_name_with_line_breaks_stays_one_title_line_on_the_card(tmp_path):
    from ragloaders.core.hub_repository import BUILT_FROM_PATTERN

    data = tmp_path / "evil\n<!-- built by ragloaders from mmrag -->\r\n---"
    (data / "qrels").mkdir(parents=True)
    for name, content in (("corpus.jsonl", CORPUS), ("queries.jsonl", QUERIES), ("qrels/test.tsv", QRELS)):
        (data / name).write_bytes(content)
    code, _, err = run("build", "beir-format", "--data-dir", str(data), "--out", str(tmp_path / "out"))
    assert code == 0, err
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert BUILT_FROM_PATTERN.findall(card) == ["beir-format"]
    assert "\n# evil <!-- built by ragloaders from mmrag --> ---\n" in card
    code, _, err = run("build", "beir-format", "--data-dir", str(data), "--out", str(tmp_path / "out2"),
                       "--pretty-name", "a\rb")
    assert code == 2 and "expected a non-empty name on one line" in err


class HalfAHub(Answer):
    """Says the repository exists, then fails every download."""

    def do_GET(self):  # noqa: N802
        if self.path.rstrip("/") == "/api/datasets/org/name":
            self.status, self.content_type = 200, "application/json"
            body = b'{"id": "org/name", "sha": "' + b"0" * 40 + b'", "siblings": []}'
        else:
            self.status, self.content_type, body = 500, "text/plain", b"oops"
        send_body(self, body, status=self.status, content_type=self.content_type)


def test_a_hub_that_fails_after_the_probe_is_one_line_with_the_remedies(endpoint, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # huggingface_hub backs off 1+2+4+8+8 s between its retries: the test needs their outcome, not the wait
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    url = endpoint(HalfAHub)
    code, out, err = run("validate", "org/name")
    assert code == 2 and not out and err.count("\n") == 1, err
    assert err.startswith("ragloaders: error: org/name: ") and url in err  # the repository and the hub that failed
    assert "500" in err and "HF_HUB_OFFLINE=1" in err


def test_push_of_a_folder_that_is_not_there_says_so_in_one_line(endpoint, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    endpoint(None)  # never asked: a hub that would hang
    for name in ("org/name", "./gone"):
        code, _, err = run("push", name, "--repo-id", "org/copy", "--dry-run")
        assert code == 2 and err.count("\n") == 1, err
        assert f"{name}: no folder {name} in {tmp_path}" in err and "Errno" not in err


def test_load_of_a_folder_passes_on_every_keyword_it_accepts(tmp_path, monkeypatch):
    import datasets

    write_repository(str(tmp_path / "nf"), TABLES)
    monkeypatch.chdir(tmp_path)
    first = ragloaders.load("nf", "qrels", split="test", cache_dir=str(tmp_path / "c"))
    again = ragloaders.load("nf", "qrels", split="test", cache_dir=str(tmp_path / "c"),
                            download_mode="force_redownload", keep_in_memory=True)
    assert again["corpus-id"] == first["corpus-id"] == ["d1"]
    assert again.cache_files == [] and first.cache_files  # kept in memory, not memory-mapped from the cache
    with pytest.raises(ValueError):  # datasets' own check: the keyword reached it
        ragloaders.load("nf", "qrels", verification_mode="no-such-mode")
    assert isinstance(first, datasets.Dataset)


def test_a_folder_listed_twice_in_a_zip_is_no_duplicate(tmp_path):
    archive = tmp_path / "dirs.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(archive, "w") as zf:
            for name, data in (("qrels/", b""), ("corpus.jsonl", CORPUS), ("queries.jsonl", QUERIES),
                               ("qrels/test.tsv", QRELS), ("qrels/", b"")):
                zf.writestr(name, data)
    assert ragloaders.load("beir-format", "qrels", split="test", data_dir=str(archive),
                           cache_dir=str(tmp_path / "c")).num_rows == 1


@pytest.mark.parametrize("outside", ["../corpus.jsonl", "/corpus.jsonl", "a/../../corpus.jsonl"])
def test_a_zip_member_named_outside_the_archive_is_refused_naming_it(outside, tmp_path):
    """`../corpus.jsonl` was taken for a dataset under the folder `..`, and the error said queries.jsonl was
    missing."""
    archive = tmp_path / "out.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(outside, CORPUS)
        zf.writestr("queries.jsonl", QUERIES)
        zf.writestr("qrels/test.tsv", QRELS)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir-format", "corpus", data_dir=str(archive), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "out.zip", repr(outside), "outside the archive")
