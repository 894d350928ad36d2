"""A built folder edited by an attacker, read by `load` (and so by docs, validate, eval and pairs, which all open it
through core/hub_repository.Repository): a card whose data files name a URL, an absolute or upward glob, or a glob
through a link that leads out; a card or `.huggingface.yaml` that is a FIFO, a device, a folder or a link out of the
folder, or too big to read; the first config's data files gone (datasets then opens no config); a Parquet file whose
schema metadata nests JSON too deep for datasets. Each is one SourceError naming the file, before anything is
fetched, walked or read without end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import ragloaders
from conftest import LOADERS, assert_names, assert_source_error
from conftest import run_cli as run
from local_http import send_body, served
from ragloaders.core.errors import SourceError
from ragloaders.core.hub_repository import MAX_CARD_BYTES

CORPUS_PATH = "    path: corpus/corpus-*.parquet\n"
QRELS_TEST_PATH = "    path: qrels/test-*.parquet\n"


class CountingHandler(BaseHTTPRequestHandler):
    """Answers every request 404 and counts it on its server (`server.requests`)."""

    def do_GET(self):  # noqa: N802 - http.server's naming
        self.server.requests.append(f"GET {self.path}")
        send_body(self, b"no", status=404, content_type="text/plain")

    def do_HEAD(self):  # noqa: N802
        self.server.requests.append(f"HEAD {self.path}")
        send_body(self, b"", status=404, content_type="text/plain")

    def log_message(self, *args):
        pass




@pytest.fixture
def folder(nfcorpus_build, tmp_path) -> Path:
    """A copy of beir/nfcorpus as `ragloaders build` wrote it, to be edited."""
    copy = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, copy, ignore=shutil.ignore_patterns(".ragloaders*"))
    return copy


def edit_card(folder: Path, old: str, new: str) -> Path:
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8")
    assert old in text
    card.write_text(text.replace(old, new, 1), encoding="utf-8")
    return card


def load(folder: Path, config: str, tmp_path: Path, **kwargs):
    return ragloaders.load(str(folder), config, cache_dir=str(tmp_path / "cache"), **kwargs)


@contextlib.contextmanager
def gives_up_after(seconds: int) -> Iterator[None]:
    """A safety net, not a timed assertion: a read that would block for ever (a FIFO) fails the test instead."""
    def stop(*_):
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --- data files that lie elsewhere -------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["first config", "another config", ".huggingface.yaml", "chained", "hf://"])
def test_a_data_file_url_is_refused_before_any_request_reaches_its_host(where, folder, tmp_path):
    """datasets resolved a URL pattern (the first config's as soon as the folder is opened, another's when its
    builder is made) before `require_own_data_files` refused it: ten GETs and seventeen HEADs to the card's host,
    and no end when the host never answers."""
    with served(CountingHandler, requests=[]) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/x.parquet"
        card, config, named = folder / "README.md", "qrels", "README.md"
        if where == "first config":
            edit_card(folder, CORPUS_PATH, f"    path: {url}\n")
            config = "corpus"
        elif where == ".huggingface.yaml":
            (folder / ".huggingface.yaml").write_text(
                f"configs:\n- config_name: qrels\n  data_files:\n  - split: test\n    path: {url}\n")
            named = ".huggingface.yaml"
        else:
            pattern = {"another config": url, "chained": f"zip://*.parquet::{url}",
                       "hf://": "hf://datasets/org/other/qrels/test.parquet"}[where]
            edit_card(folder, QRELS_TEST_PATH, f"    path: '{pattern}'\n")
        with pytest.raises(SourceError) as caught:
            load(folder, config, tmp_path)
        code, out, err = run("validate", str(folder))
        assert server.requests == []
    assert caught.value.path.startswith(str(card)) and caught.value.path.endswith(named), caught.value.path
    assert_names(caught.value, f"config '{config}'", "a URL; refused before any is read", "outside")
    assert code == 2 and out == "" and err.count("\n") == 1 and "a URL" in err, err
    if where == "another config":  # a config of its own files still loads
        assert load(folder, "queries", tmp_path, split="queries").num_rows > 0


@pytest.mark.parametrize("declared", ["{outside}/**", "../outside/**", "qrels/link/**", "**/../**", "data_dir"])
def test_a_glob_that_leaves_the_folder_is_refused_before_it_is_walked(declared, folder, tmp_path, monkeypatch):
    """`path: '/**'` walked the whole filesystem (70 s, 700 MB) before the refusal; a glob from an upward part, or
    from a link inside the folder, walks elsewhere the same way. No folder outside is listed."""
    import fsspec.implementations.local as local

    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    pq.write_table(pq.read_table(folder / "qrels" / "test-00000-of-00001.parquet"), outside / "deep" / "x.parquet")
    (folder / "qrels" / "link").symlink_to(outside)
    listed = []
    ls = local.LocalFileSystem.ls
    monkeypatch.setattr(local.LocalFileSystem, "ls", lambda self, path, *a, **k: listed.append(str(path)) or
                        ls(self, path, *a, **k))
    if declared == "data_dir":  # a config's data_dir is walked for its data files
        edit_card(folder, "- config_name: qrels\n", f"- config_name: qrels\n  data_dir: {outside}\n")
    else:
        edit_card(folder, QRELS_TEST_PATH, f"    path: '{declared.format(outside=outside)}'\n")
    with pytest.raises(SourceError) as caught:
        load(folder, "qrels", tmp_path)
    assert not [path for path in listed if str(outside) in os.path.realpath(path)], listed
    assert_source_error(caught.value, "nf/README.md", "config 'qrels'", "outside", "refused before any is read")


# --- a card or .huggingface.yaml that is not a regular file of the folder ----------------------------------------


def make_not_regular(path: Path, kind: str, tmp_path: Path) -> None:
    original = path.read_bytes() if path.exists() else b""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device link":
        path.symlink_to("/dev/zero" if path.name == "README.md" else "/dev/null")
    elif kind == "folder":
        path.mkdir()
    elif kind == "link out":
        copy = tmp_path / f"elsewhere-{path.name}"
        copy.write_bytes(original or b"{}\n")
        path.symlink_to(copy)
    elif kind == "dangling link":
        path.symlink_to("no-such-file")  # (inside the folder)


@pytest.mark.parametrize("name", ["README.md", ".huggingface.yaml"])
@pytest.mark.parametrize(("kind", "said"), [("fifo", "a FIFO"), ("device link", "a symbolic link to '/dev/"),
                                            ("folder", "a folder"), ("link out", "a symbolic link to"),
                                            ("dangling link", "cannot be read")])
def test_a_card_that_is_not_a_regular_file_of_the_folder_is_refused_unopened(name, kind, said, folder, tmp_path):
    """A FIFO named `.huggingface.yaml` blocked every reader for ever (datasets opens it), a link to /dev/zero
    filled memory; a README.md that is a FIFO, a device, a folder or a dangling link made the folder one without a
    card (datasets' inferred `default` config, corpus and queries gone); a link out of the folder read any file."""
    make_not_regular(folder / name, kind, tmp_path)
    with gives_up_after(30), pytest.raises(SourceError) as caught:
        load(folder, "queries", tmp_path)
    assert_source_error(caught.value, f"nf/{name}", said)


def test_a_card_linked_to_a_file_inside_the_folder_still_loads(folder, tmp_path):
    """A link that stays inside the folder is the folder's own card."""
    (folder / "README.md").rename(folder / "card.md")
    (folder / "README.md").symlink_to("card.md")
    assert load(folder, "queries", tmp_path, split="queries").num_rows > 0


def test_a_card_over_its_bound_is_refused_before_it_is_read(folder, tmp_path):
    """README.md was read whole wherever it was (a 3 GB sparse file: MemoryError)."""
    os.truncate(folder / "README.md", MAX_CARD_BYTES + 1)  # the card, then NULs
    with pytest.raises(SourceError) as caught:
        load(folder, "queries", tmp_path)
    assert_source_error(caught.value, "nf/README.md", f"{MAX_CARD_BYTES + 1:,} bytes, over the {MAX_CARD_BYTES:,}")


# --- the first config's data files gone ----------------------------------------------------------------------------


@pytest.mark.parametrize("left", ["nothing", "a FIFO"])
def test_the_first_configs_missing_files_are_named_not_no_supported_data_files(left, folder, tmp_path, monkeypatch):
    """With corpus/*.parquet deleted every config failed with datasets' 'No (supported) data files found in nf',
    naming neither the card nor the config (datasets reads the first config's files to open any)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # (no "hub cache" note for a folder of one's own)
    for file in (folder / "corpus").glob("*.parquet"):
        file.unlink()
        if left == "a FIFO":
            os.mkfifo(file)
    with gives_up_after(30), pytest.raises(SourceError) as caught:
        load(folder, "queries", tmp_path)
    assert_source_error(caught.value, "nf/README.md", "config 'corpus'", "'corpus/corpus-*.parquet'",
                        "no config opens")
    assert "hub cache" not in str(caught.value)
    for command in (["docs", str(folder), "PLAIN-1", "--config", "queries"], ["validate", str(folder)]):
        code, out, err = run(*command, "--cache-dir", str(tmp_path / "c"))
        assert code == 2 and err.count("\n") == 1 and "config 'corpus'" in err, err


# --- schema metadata nested too deep -------------------------------------------------------------------------------


def test_schema_metadata_nested_too_deep_is_named_not_a_recursion_error(folder, tmp_path):
    """The card declares no features for corpus, so datasets reads them from the Parquet schema's `huggingface`
    metadata: 50,000 nested objects raised RecursionError from datasets' features."""
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8")
    start = text.index("dataset_info:\n- config_name: corpus\n") + len("dataset_info:\n")
    card.write_text(text[:start] + text[text.index("- config_name: qrels\n  features", start):], encoding="utf-8")
    corpus = folder / "corpus" / "corpus-00000-of-00001.parquet"
    deep = '{"info": {"features": ' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "}}"
    table = pq.read_table(corpus)
    pq.write_table(table.replace_schema_metadata({"huggingface": deep}), corpus)
    with pytest.raises(SourceError) as caught:
        load(folder, "corpus", tmp_path)
    assert_source_error(caught.value, "corpus/corpus-00000-of-00001.parquet", "config 'corpus'", "too deep")
    code, out, err = run("validate", str(folder), "--cache-dir", str(tmp_path / "c"))
    assert code == 2 and err.count("\n") == 1 and "corpus-00000-of-00001.parquet" in err and "too deep" in err, err


# --- a hub repository ------------------------------------------------------------------------------------------------


HUB_OTHER_REPOSITORY = r"""
import json, sys
from fake_hub import install
hub = install(sys.argv[1])
asked = []
handle = hub.handle
hub.handle = lambda request: asked.append(str(request.url)) or handle(request)
from mteb_layout import beir_tables, write_repository
import os
tables = beir_tables([("d1", "a document")], [("q1", "a query")], {"test": [("q1", "d1", 1)]})
write_repository(sys.argv[2], tables)
files = {os.path.relpath(os.path.join(root, name), sys.argv[2]): open(os.path.join(root, name), "rb").read()
         for root, _, names in os.walk(sys.argv[2]) for name in names}
hub.seed_repo("org/own", files)
hub.seed_repo("org/other", {"qrels.parquet": files["qrels/test-00000-of-00001.parquet"]})
card = files["README.md"].decode().replace("path: qrels/test-00000-of-00001.parquet",
                                          "path: hf://datasets/org/other/qrels.parquet")
hub.seed_repo("org/hostile", {**files, "README.md": card.encode()})
import ragloaders
from ragloaders.core.errors import SourceError
own = ragloaders.load("org/own", "qrels", split="test").num_rows
asked.clear()
try:
    ragloaders.load("org/hostile", "qrels")
    refused = None
except SourceError as e:
    refused = str(e)
print(json.dumps({"own": own, "refused": refused, "other": [url for url in asked if "org/other" in url]}))
"""


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_hub_repositorys_card_cannot_name_another_repositorys_files(tmp_path):
    """A hub repository in mteb's layout still loads; one whose card names `hf://datasets/org/other/...` is refused
    before anything of org/other is asked for."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
                       HF_HUB_DISABLE_TELEMETRY="1",
                       PYTHONPATH=f"{LOADERS}{os.pathsep}{Path(__file__).parent}")
    done = subprocess.run([sys.executable, "-c", HUB_OTHER_REPOSITORY, str(tmp_path / "hub"), str(tmp_path / "own")],
                          env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["own"] == 1 and found["other"] == [], found
    assert found["refused"].startswith("org/hostile/README.md: config 'qrels' split 'test' reads "
                                       "hf://datasets/org/other/qrels.parquet, outside org/hostile"), found


# --- a folder named `.` --------------------------------------------------------------------------------------------


def test_the_current_folder_given_as_dot_is_read_as_by_its_name(folder, tmp_path, monkeypatch):
    """datasets names a dataset by its folder's name, and `.` has none: load, docs and validate of `.` said
    "datasets could not prepare it (ValueError: dataset_name should be specified but got None)"."""
    monkeypatch.chdir(folder)
    for name in (".", "./"):
        assert load(Path(name), "qrels", tmp_path, split="test").num_rows == 12334
    code, out, err = run("docs", ".", "PLAIN-1", "--config", "queries", "--cache-dir", str(tmp_path / "c"))
    assert code == 0 and json.loads(out)["_id"] == "PLAIN-1", err
    code, out, err = run("validate", ".", "--cache-dir", str(tmp_path / "c"))
    assert code == 0 and out.rstrip().endswith("OK"), err


def test_a_folder_without_data_files_is_named_with_or_without_a_card(tmp_path):
    from ragloaders.core.hub_repository import no_data_files_error

    bare = tmp_path / "bare"
    bare.mkdir()
    assert str(no_data_files_error(str(bare), None)).endswith("in it, and no card (README.md) to declare its configs")
    (bare / "README.md").write_text("---\nlicense: mit\n---\n", encoding="utf-8")
    assert str(no_data_files_error(str(bare), None)).endswith("in it, and its card declares no configs (data_files)")
