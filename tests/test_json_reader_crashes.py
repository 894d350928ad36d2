"""pyarrow 26's JSON reader crashes the process (SIGSEGV) on a buffer that begins with `null`: the readers that hand
it bytes (BEIR's JSONL chunks, mmRAG's array pieces) never give it one. Each case runs the command line in a fresh
process, so a crash is a failure rather than the end of the test run."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from beir_files import write_beir
from conftest import DATA

MMRAG_CORPORA = ["[null]", "[ null ]", '[null, {"id": "a", "text": "b"}]', '[\n  null,\n  {"id": "a", "text": "b"}\n]']


def build(path: str, folder, tmp_path, configs: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragloaders", "build", path, "--data-dir", str(folder), "--out",
                           str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--configs", configs],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("corpus", MMRAG_CORPORA)
def test_an_mmrag_corpus_of_a_null_element_is_a_source_error_not_a_crash(corpus, tmp_path):
    folder = tmp_path / "mmrag"
    shutil.copytree(DATA / "mmrag", folder)
    (folder / "processed_documents.json").write_text(corpus)
    run = build("mmrag", folder, tmp_path, "corpus")
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "processed_documents.json, record 0" in run.stderr and "got null" in run.stderr, run.stderr[-2000:]


@pytest.mark.parametrize("file", ["corpus.jsonl", "queries.jsonl"])
@pytest.mark.parametrize("content", [b"null\n", b"null\n" + b'{"_id": "d", "text": "x"}\n', b" null\n"])
def test_a_beir_file_that_begins_with_null_is_a_source_error_not_a_crash(file, content, tmp_path):
    folder = write_beir(tmp_path / "b", [("d1", "text")], [("q1", "query")], {"test": [("q1", "d1", 1)]},
                        raw={file: content})
    run = build("beir-format", folder, tmp_path, "corpus,queries")
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert f"{file}, line 1" in run.stderr, run.stderr[-2000:]
