"""pyarrow 26's JSON reader crashes the process (SIGSEGV) on a buffer that begins with `null`: the readers that hand
it bytes (BEIR's JSONL chunks, mmRAG's array pieces) never give it one. Nor is ijson's streaming parser, whose memory
grows as the square of the nesting depth, given a deep mmRAG file; nor does a message's preview of a deep value
recurse past Python's limit. Each case runs the command line in a fresh process, so a crash is a failure rather than
the end of the test run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from beir_files import write_beir
from conftest import DATA

MMRAG_CORPORA = ["[null]", "[ null ]", '[null, {"id": "a", "text": "b"}]', '[\n  null,\n  {"id": "a", "text": "b"}\n]']


def command(path: str, folder, tmp_path, configs: str) -> list[str]:
    return [sys.executable, "-m", "ragloaders", "build", path, "--data-dir", str(folder), "--out",
            str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--configs", configs]


def build(path: str, folder, tmp_path, configs: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(path, folder, tmp_path, configs), capture_output=True, text=True, timeout=300)


PEAK_CHILD = """
import atexit, sys
def peak():  # VmHWM, not ru_maxrss: after fork + exec, ru_maxrss still counts the parent's pages at fork time
    kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    open(sys.argv[1], "w").write(str(kb * 1024))
atexit.register(peak)
from ragloaders.cli import main
sys.exit(main(sys.argv[2:]))
"""


def build_peak(path: str, folder, tmp_path, configs: str) -> tuple[int, str, int]:
    """(exit code, stderr, peak resident memory in bytes) of the build, measured for that process alone."""
    peak = tmp_path / "peak.txt"
    run = subprocess.run([sys.executable, "-c", PEAK_CHILD, str(peak), *command(path, folder, tmp_path, configs)[3:]],
                         capture_output=True, text=True, timeout=300)
    return run.returncode, run.stderr, int(peak.read_text()) if peak.exists() else -1


GUARDED_CHILD = r"""
import json, sys
from ragloaders.benchmarks.mmrag.builder import PIECE_PARSING
from ragloaders.benchmarks.mmrag.catalogue import CORPUS_SEPARATOR
from ragloaders.core import json_cut_tables
from ragloaders.core.json_array_cuts import NotCut
from ragloaders.core.readers.jsonl import parse_object_lines
import pyarrow as pa

corpora, chunks = json.load(sys.stdin)
for corpus in corpora:
    try:
        json_cut_tables.parse_piece(corpus.encode()[1:-1], CORPUS_SEPARATOR, PIECE_PARSING)
        raise SystemExit(f"an mmRAG piece of {corpus!r} was parsed")
    except NotCut:
        pass
schema = pa.schema([("_id", pa.string()), ("text", pa.string())])
for chunk in chunks:
    assert parse_object_lines(chunk.encode(), schema) is None, chunk
print("ok")
"""
BEIR_CHUNKS = ["null\n", 'null\n{"_id": "d", "text": "x"}\n', " null\n", "\r\nnull\n", "\ufeffnull\n"]


def test_null_at_the_start_of_what_pyarrow_would_read_never_reaches_it():
    run = subprocess.run([sys.executable, "-c", GUARDED_CHILD], input=json.dumps([MMRAG_CORPORA, BEIR_CHUNKS]),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])


@pytest.mark.slow  # the guards themselves are tried above in one child; CI runs the whole command
def test_an_mmrag_corpus_of_a_null_element_is_a_source_error_not_a_crash(tmp_path):
    folder = tmp_path / "mmrag"
    shutil.copytree(DATA / "mmrag", folder)
    (folder / "processed_documents.json").write_text(MMRAG_CORPORA[0])
    run = build("mmrag", folder, tmp_path, "corpus")
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "processed_documents.json, record 0" in run.stderr and "got null" in run.stderr, run.stderr[-2000:]


@pytest.mark.slow  # the guards themselves are tried above in one child; CI runs the whole command
def test_a_beir_file_that_begins_with_null_is_a_source_error_not_a_crash(tmp_path):
    folder = write_beir(tmp_path / "b", [("d1", "text")], [("q1", "query")], {"test": [("q1", "d1", 1)]},
                        raw={"corpus.jsonl": BEIR_CHUNKS[1].encode()})
    run = build("beir-format", folder, tmp_path, "corpus,queries")
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "corpus.jsonl, line 1" in run.stderr, run.stderr[-2000:]


DEEP = 30_000
DEEP_AND_INVALID = [  # (file, config, content, what the error says)
    ("processed_documents.json", "corpus", b"[" + b"[" * DEEP + b"\xff" + b"]" * DEEP + b"]", "depth limit exceeded"),
    pytest.param("mmrag_dev.json", "queries", b"[" + b"[" * DEEP + b"\xff" + b"]" * DEEP + b"]",
                 "depth limit exceeded", marks=pytest.mark.slow),
    pytest.param("processed_documents.json", "corpus", b'[{"id": "nq_\xff_1", "text": ' + b"[" * DEEP + b"]" * DEEP
                 + b"}]", "invalid bytes in UTF8", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("file, config, content, message", DEEP_AND_INVALID)
@pytest.mark.slow  # (seconds; CI runs it)
def test_an_mmrag_file_nested_deep_with_an_invalid_byte_is_refused_in_bounded_memory(file, config, content, message,
                                                                                      tmp_path):
    """orjson checks UTF-8 before it parses, so one invalid byte hid a depth past its 1,024 levels and the file went
    to the streaming parser, which kept the path of every open level: 30,000 levels took 2.4 GB, a 100 KB file of
    100,000 was killed for memory past 24 GB. The streaming parser now refuses a value nested past 1,024 levels as it
    opens it, and names the first problem: the depth, or the byte when it comes first (in its own words)."""
    folder = tmp_path / "mmrag"
    shutil.copytree(DATA / "mmrag", folder)
    (folder / file).write_bytes(content)
    code, stderr, peak = build_peak("mmrag", folder, tmp_path, config)
    assert peak < 1 << 30, f"peak RSS {peak >> 20} MB"
    assert code == 2, (code, stderr[-2000:])
    assert f"{file}, record 0" in stderr and message in stderr, stderr[-2000:]


@pytest.mark.slow  # (seconds; CI runs it)
def test_an_mmrag_record_with_a_deeply_nested_id_is_named_in_a_bounded_message(tmp_path):
    # orjson writes 255 levels of JSON text, Python's json recurses: the message's preview of the value must hold
    folder = tmp_path / "mmrag"
    shutil.copytree(DATA / "mmrag", folder)
    depth = 1000
    (folder / "processed_documents.json").write_text('[{"id": ' + "[" * depth + "]" * depth + ', "text": "x"}]')
    run = build("mmrag", folder, tmp_path, "corpus")
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    error = run.stderr.strip().splitlines()[-1]
    assert "processed_documents.json, record 0: `id` must be a string, got [[[" in error and len(error) < 400, error
