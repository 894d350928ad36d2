"""Faults and hostile input: a killed build, two builds at once, a cut download, a full disk; JSON nested
10,000 deep, a 100 MB line, an endless line, invalid UTF-8. (Hostile tar members and cut bzip2 streams
are tested in test_compressed.py.)"""

from __future__ import annotations

import glob
import hashlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import ragloaders
from conftest import LOADERS, assert_names, assert_source_error
from local_http import serve_in_thread
from ragloaders.benchmarks.beir import catalogue as beir
from ragloaders.core.errors import SourceError
from ragloaders.core.readers import lines

NFCORPUS_ZIP = Path(__file__).parent / "data" / "beir" / "nfcorpus.zip"
TEXT_BYTES = 1_000


def doc_text(i: int) -> str:
    return f"document {i} " + "abcdefghij" * (TEXT_BYTES // 10)


def write_corpus(folder: Path, docs: int) -> Path:
    """A scifact-shaped BEIR folder whose corpus holds `docs` generated documents of ~1 KB."""
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i in range(docs):
            f.write(json.dumps({"_id": f"{i:07d}", "title": f"t{i}", "text": doc_text(i)}) + "\n")
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "a query"}\n', encoding="utf-8")
    for split in beir.DATASETS["beir/scifact"].splits:
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t0000000\t1\n")
    return folder


def expected_digest(docs: int) -> str:
    """What BUILD_SCRIPT prints for a complete, exact build of write_corpus(folder, docs)."""
    hasher = hashlib.sha256()
    for column in ([f"{i:07d}" for i in range(docs)], [f"t{i}" for i in range(docs)], map(doc_text, range(docs))):
        hasher.update("\0".join(column).encode())
    return f"{docs} {hasher.hexdigest()}"


BUILD_SCRIPT = textwrap.dedent("""
    import hashlib, sys
    import ragloaders, ragloaders.core.builder
    ragloaders.core.builder.code_version = lambda: "test_faults"  # one cache identity for every process, whatever edits
    dataset = ragloaders.load("beir/scifact", "corpus", split="corpus", data_dir=sys.argv[1], cache_dir=sys.argv[2])
    table = dataset.data.table
    hasher = hashlib.sha256()
    for name in ("_id", "title", "text"):
        hasher.update("\\0".join(table.column(name).to_pylist()).encode())
    print(table.num_rows, hasher.hexdigest())
""")
"""Loads the corpus in a fresh process (so that the cache identity is computed from the code as it is now)
and prints its row count and a digest of every id, title and text."""


def start_build(data_dir: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(LOADERS)}
    return subprocess.Popen(
        [sys.executable, "-c", BUILD_SCRIPT, str(data_dir), str(cache)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def cached_complete_folders(cache: Path) -> list[str]:
    """Folders that datasets takes as a complete build (they hold dataset_info.json)."""
    return [os.path.dirname(p) for p in glob.glob(str(cache / "**" / "dataset_info.json"), recursive=True)
            if ".incomplete" not in p]


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory):
    docs = 100_000  # ~100 MB of JSONL
    return write_corpus(tmp_path_factory.mktemp("big") / "scifact", docs), docs


@pytest.mark.slow
def test_build_killed_midway_leaves_nothing_complete_and_next_build_has_every_row(big_corpus, tmp_path):
    data_dir, docs = big_corpus
    cache = tmp_path / "cache"
    build = start_build(data_dir, cache)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and build.poll() is None:
        written = glob.glob(str(cache / "**" / "*.incomplete" / "*.arrow"), recursive=True)
        if written and os.path.getsize(written[0]) > 20 << 20:
            break
        time.sleep(0.005)
    build.send_signal(signal.SIGKILL)
    build.communicate()
    assert build.returncode == -signal.SIGKILL, "the build finished before it could be killed midway"
    assert cached_complete_folders(cache) == []
    partial = glob.glob(str(cache / "**" / "*.incomplete"), recursive=True)
    assert len(partial) == 1, "the killed build left no partial folder"

    rebuild = start_build(data_dir, cache)
    out, err = rebuild.communicate(timeout=300)
    assert rebuild.returncode == 0, err[-2000:]
    assert out.strip() == expected_digest(docs)
    assert glob.glob(str(cache / "**" / "*.incomplete"), recursive=True) == []
    assert cached_complete_folders(cache) == [p.removesuffix(".incomplete") for p in partial]
    assert len(glob.glob(os.path.join(cached_complete_folders(cache)[0], "*.arrow"))) == 1


@pytest.mark.slow  # two builds of ~100 MB in subprocesses (seconds); the killed build above stays by default
def test_two_builds_at_once_both_end_with_the_same_correct_data(big_corpus, tmp_path):
    data_dir, docs = big_corpus
    cache = tmp_path / "cache"
    builds = [start_build(data_dir, cache) for _ in range(2)]
    outputs = [build.communicate(timeout=300) for build in builds]
    for build, (_, err) in zip(builds, outputs):
        assert build.returncode == 0, err[-2000:]
    assert [out.strip() for out, _ in outputs] == [expected_digest(docs)] * 2
    assert glob.glob(str(cache / "**" / "*.incomplete"), recursive=True) == []
    assert len(cached_complete_folders(cache)) == 1


class CutOnce(http.server.SimpleHTTPRequestHandler):
    """Serves files, but the first GET of each file stops halfway and drops the connection."""

    served: set[str] = set()
    send_length = True

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            return super().do_GET()
        data = Path(path).read_bytes()
        first = self.path not in CutOnce.served
        CutOnce.served.add(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/zip")
        if self.send_length or not first:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2] if first else data)
        if first:
            self.wfile.flush()
            self.close_connection = True


@pytest.fixture(params=[True, False], ids=["with-length", "without-length"])
def cutting_server(request, tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    shutil.copy(NFCORPUS_ZIP, root / "nfcorpus.zip")
    handler = type("Handler", (CutOnce,), {"send_length": request.param})
    CutOnce.served = set()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(root)))
    serve_in_thread(server)
    monkeypatch.setenv(beir.BASE_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    yield
    server.shutdown()


def test_interrupted_download_fails_clearly_then_restarts_cleanly(cutting_server, tmp_path):
    cache = str(tmp_path / "cache")
    # With a Content-Length the client sees the cut; without one, the size check does: either names both sizes.
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/nfcorpus", "qrels", cache_dir=cache)
    assert_source_error(caught.value, "/nfcorpus.zip", "1224216", "2448432")
    assert caught.value.path.startswith("http://127.0.0.1:")
    downloads = [p for p in glob.glob(os.path.join(cache, "downloads", "*")) if os.path.isfile(p)]
    assert not any(os.path.getsize(p) == NFCORPUS_ZIP.stat().st_size // 2 and not p.endswith(".incomplete")
                   for p in downloads), "a cut download was kept as if complete"

    qrels = ragloaders.load("beir/nfcorpus", "qrels", cache_dir=cache)
    assert {split: qrels[split].num_rows for split in qrels} == {"train": 110_575, "dev": 11_385, "test": 12_334}
    verified = glob.glob(os.path.join(cache, "downloads", "*.ragloaders-verified"))
    assert len(verified) == 1
    assert os.path.getsize(verified[0].removesuffix(".ragloaders-verified")) == NFCORPUS_ZIP.stat().st_size


@pytest.fixture
def tiny_disk(tmp_path):
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                             capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("cannot mount a 2 MB tmpfs here (needs root); test_full_disk_simulated covers the message")
    yield mount_point
    subprocess.run(["umount", str(mount_point)], check=True)


def test_full_disk_gives_a_clear_error_and_leaves_nothing_complete(tiny_disk):
    cache = tiny_disk / "cache"
    with pytest.raises(OSError) as error:
        ragloaders.load("beir/nfcorpus", "corpus", data_dir=str(NFCORPUS_ZIP.parent), cache_dir=str(cache))
    assert "No space left on device while building beir/nfcorpus corpus" in str(error.value)
    assert str(cache) in str(error.value)
    assert cached_complete_folders(cache) == []
    assert glob.glob(str(cache / "**" / "*.incomplete"), recursive=True) == []


def test_full_disk_simulated(tmp_path, monkeypatch):
    """The same message where no tmpfs can be mounted: the Arrow writer is made to fail with ENOSPC."""
    import errno

    from datasets import arrow_writer

    def no_space(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(arrow_writer.ArrowWriter, "write_table", no_space)
    cache = tmp_path / "cache"
    with pytest.raises(OSError) as caught:
        ragloaders.load("beir/nfcorpus", "qrels", data_dir=str(NFCORPUS_ZIP.parent), cache_dir=str(cache))
    assert_names(caught.value, "No space left on device", "beir/nfcorpus qrels", "cache_dir", cache)
    assert cached_complete_folders(cache) == []


def corpus_with(tmp_path: Path, line: bytes) -> str:
    folder = write_corpus(tmp_path / "scifact", 3)
    with open(folder / "corpus.jsonl", "ab") as f:
        f.write(line + b"\n" + json.dumps({"_id": "after", "title": "", "text": "last"}).encode() + b"\n")
    return str(folder)


def load_corpus(data_dir: str, tmp_path: Path):
    return ragloaders.load("beir/scifact", "corpus", split="corpus", data_dir=data_dir, cache_dir=str(tmp_path / "c"))


@pytest.mark.parametrize("where", ["metadata-less text", "id"])
def test_json_nested_10000_deep_is_a_clear_error_naming_the_line(tmp_path, where):
    deep = b"[" * 10_000 + b"]" * 10_000
    line = b'{"_id": "x", "title": "", "text": ' + deep + b"}" if where != "id" else b'{"_id": ' + deep + b"}"
    with pytest.raises(SourceError) as caught:
        load_corpus(corpus_with(tmp_path, line), tmp_path)
    assert_source_error(caught.value, "corpus.jsonl", "JSON", "depth", line=4)


@pytest.mark.parametrize(
    ("line", "where"),
    [
        (b'{"_id": "ok", "title": "", "text": "caf\xe9"}', "byte 39"),
        (b'{"_id": "\xc3", "title": "", "text": "x"}', "byte 9"),
        (b'{"_id": "x", "title": "\xed\xa0\x80", "text": "surrogate"}', "byte 23"),
    ],
    ids=["latin-1 text", "cut sequence in id", "encoded surrogate in title"],
)
def test_invalid_utf8_is_an_error_naming_line_and_byte(tmp_path, line, where):
    with pytest.raises(SourceError) as caught:
        load_corpus(corpus_with(tmp_path, line), tmp_path)
    assert_source_error(caught.value, "corpus.jsonl", "UTF-8", where, line=4)


def test_invalid_utf8_in_qrels_names_file_and_line(tmp_path):
    folder = write_corpus(tmp_path / "scifact", 1)
    (folder / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\nq1\t0000000\t1\nq\xff\td\t1\n")
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scifact", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "qrels/test.tsv", "UTF-8", "byte 1", line=3)


MEMORY_SCRIPT = textwrap.dedent("""
    import sys
    import pyarrow.compute as pc
    import ragloaders
    corpus = ragloaders.load("beir/scifact", "corpus", split="corpus", data_dir=sys.argv[1], cache_dir=sys.argv[2])
    length = pc.utf8_length(corpus.data.table.column("text"))[3].as_py()
    after = corpus.data.table.column("_id")[4].as_py()
    # VmHWM, not ru_maxrss: after fork + exec, ru_maxrss can still count the (large) parent's pages
    peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(corpus.num_rows, length, after, peak_kb // 1024)
""")


@pytest.mark.slow  # a 100 MB line; CI runs it
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peak memory read from /proc (Linux)")
def test_a_100_mb_line_loads_exactly_with_bounded_memory(tmp_path):
    size = 100 << 20
    data_dir = corpus_with(tmp_path, json.dumps({"_id": "huge", "title": "", "text": "é" * (size // 2)}).encode())
    result = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, data_dir, str(tmp_path / "c")],
        env={**os.environ, "PYTHONPATH": str(LOADERS)}, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows, huge_length, after, peak_mb = result.stdout.split()
    assert (int(rows), int(huge_length), after) == (5, size // 2, "after")
    # measured: ~1.45 GB for this line of 2-byte characters: the line, the chunk holding it, its parsed string,
    # its Arrow copy and the writer's buffers; a reader that held the whole file or more copies would exceed this
    assert int(peak_mb) < 1_700, f"peak RSS {peak_mb} MB for a 100 MB line"


def test_a_line_longer_than_the_limit_is_refused_not_buffered(tmp_path, monkeypatch):
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 1 << 20)
    data_dir = corpus_with(tmp_path, b'{"_id": "endless", "title": "", "text": "' + b"z" * (3 << 20) + b'"}')
    with pytest.raises(SourceError) as caught:
        load_corpus(data_dir, tmp_path)
    assert_source_error(caught.value, "corpus.jsonl", "1,048,576", "MAX_LINE_BYTES", line=4)
