"""Nothing from the source is lost or changed silently: hostile and odd input is refused with the file and the
line or record, the same line gets the same verdict on both reader paths, and identity and download errors are
ones a user can act on."""

import bz2
import functools
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest
import ragloaders
from conftest import DATA, LOADERS, assert_names, assert_source_error
from local_http import serve_in_thread
from ragloaders.benchmarks.beir import catalogue as beir
from ragloaders.benchmarks.crag import catalogue as crag_catalogue
from ragloaders.cli import main as cli_main
from ragloaders.core import source_files
from ragloaders.core.errors import DownloadError, SourceError
from ragloaders.core.formats import beir as beir_layout
from ragloaders.core.readers import jsonl, lines, qrels, values
from ragloaders.core.readers.json_array import iter_json_array
from ragloaders.core.readers.jsonl import Shard, read_jsonl
from ragloaders.core.readers.qrels import read_qrels
from ragloaders.core.source_files import SourceFiles
from test_crag import release_lines, tar_bytes, task3_members, write_parts

NFCORPUS_ZIP = DATA / "beir" / "nfcorpus.zip"
CRAG_EXAMPLE = DATA / "crag" / "dev_data.jsonl.bz2"
LONG = lines.BLOCK_BYTES + 1000
"""A line longer than pyarrow's block: its chunk is read line by line."""


@functools.cache
def crag_lines() -> tuple[bytes, ...]:
    """The example file's records, decompressed once per session (16 MB; the tests only read them)."""
    with bz2.open(CRAG_EXAMPLE) as f:
        return tuple(line.rstrip(b"\n") for line in f if line.strip())


@functools.cache
def crag_in_two_streams() -> tuple[bytes, bytes]:
    """The example file's records compressed as two bzip2 streams (its first five records, then the rest)."""
    lines = crag_lines()
    return bz2.compress(b"".join(line + b"\n" for line in lines[:5])), bz2.compress(
        b"".join(line + b"\n" for line in lines[5:]))


def doc(_id: str = "d", text: str = "t", **extra) -> bytes:
    return json.dumps({"_id": _id, "title": "", "text": text, **extra}).encode()


def beir_folder(folder: Path, corpus: bytes, queries: bytes | None = None, qrels: bytes | None = None) -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_bytes(corpus)
    (folder / "queries.jsonl").write_bytes(queries if queries is not None else b'{"_id": "q", "text": "x"}\n')
    qrels = qrels if qrels is not None else b"query-id\tcorpus-id\tscore\nq\td\t1\n"
    (folder / "qrels" / "test.tsv").write_bytes(qrels)
    return folder


def verdict(read, folder: Path) -> tuple:
    """("rows", rows) or ("error", message without the folder), for a reader over a file in `folder`."""
    try:
        return "rows", [row for table in read() for row in table.to_pylist()]
    except SourceError as e:
        return "error", str(e).replace(str(folder), "<folder>")


@pytest.fixture
def fast_path_use(monkeypatch) -> list:
    """Whether pyarrow (True) or the line path (False) read each chunk, in order; `fast_path_use.off = True`
    sends every chunk to the line path."""

    class Use(list):
        off = False

    used = Use()
    for module, name in ((jsonl, "_jsonl_fast"), (qrels, "_qrels_fast")):
        original = getattr(module, name)

        def spy(*args, original=original):
            table = None if used.off else original(*args)
            used.append(table is not None)
            return table

        monkeypatch.setattr(module, name, spy)
    return used


# --- qrels scores: one rule, both reader paths ------------------------------------------------------------

QRELS_ACCEPTED = {b"0": 0, b"-1": -1, b"007": 7, b"-0": 0, b"2147483647": 2147483647, b"-2147483648": -2147483648,
                  b"-02147483648": -2147483648, b"000000000001": 1, b"0" * 5000 + b"2147483647": 2147483647}
"""Score text: its value (leading zeros are no part of its size, on either path)."""
QRELS_REFUSED = {
    b"q1\td1\t": "score must be an integer",
    b"q1\td1\t0x1": "score must be an integer",
    b"q1\td1\t 1": "score must be an integer",
    b"q1\td1\t1 ": "score must be an integer",
    b"q1\td1\t+1": "score must be an integer",
    b"q1\td1\t1.0": "score must be an integer",
    b"q1\td1\t1e3": "score must be an integer",
    "q1\td1\t\uff11".encode(): "score must be an integer",  # fullwidth digit one
    "q1\td1\t\u0661".encode(): "score must be an integer",  # Arabic-Indic digit one
    b"q1\td1\t2147483648": "does not fit in int32",
    b"q1\td1\t-2147483649": "does not fit in int32",
    b"q1\td1\t" + b"9" * 40: "does not fit in int32",
    b"q\r1\td1\t1": "carriage return inside the line",
    b"q1\td1\t1\r\r": "carriage return inside the line",
    b"q1\td1": "expected 3 tab-separated columns",
    b"\xef\xbb\xbfq1\td1\t1": None,  # a BOM at a line start mid-file stays part of the id, on both paths
}


def qrels_verdicts(tmp_path: Path, line: bytes, fast_path_use: list) -> tuple[tuple, tuple]:
    """The verdict on a qrels file holding `line`, read as usual (pyarrow first) and read line by line."""
    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "qrels.tsv").write_bytes(b"query-id\tcorpus-id\tscore\nq0\td0\t1\n" + line + b"\nq2\td2\t2\n")
    results = []
    for line_by_line in (False, True):
        fast_path_use.off = line_by_line
        results.append(verdict(lambda: read_qrels(Shard(SourceFiles(str(folder)), "qrels.tsv")), folder))
    assert fast_path_use[-1] is False
    return results[0], results[1]


@pytest.mark.parametrize("score", list(QRELS_ACCEPTED), ids=lambda score: score[:20].decode())
def test_qrels_scores_of_ascii_digits_are_kept_on_both_paths(tmp_path, score, fast_path_use):
    short, long = qrels_verdicts(tmp_path, b"q1\td1\t" + score, fast_path_use)
    assert short == long == ("rows", [{"query-id": "q0", "corpus-id": "d0", "score": 1},
                                      {"query-id": "q1", "corpus-id": "d1", "score": QRELS_ACCEPTED[score]},
                                      {"query-id": "q2", "corpus-id": "d2", "score": 2}])


@pytest.mark.parametrize("line", list(QRELS_REFUSED), ids=repr)
def test_odd_qrels_lines_get_one_verdict_on_both_paths(tmp_path, line, fast_path_use):
    short, long = qrels_verdicts(tmp_path, line, fast_path_use)
    assert short == long
    expected = QRELS_REFUSED[line]
    if expected is None:
        assert short[0] == "rows" and short[1][1]["query-id"] == line.decode().split("\t")[0]
    else:
        assert short[0] == "error" and short[1].startswith("<folder>/qrels.tsv, line 3: ") and expected in short[1]


def test_an_empty_score_is_refused_by_build_not_loaded_as_null(tmp_path):
    folder = beir_folder(tmp_path / "scidocs", doc() + b"\n", qrels=b"query-id\tcorpus-id\tscore\nq\td\t\n")
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "qrels/test.tsv", "score", "integer", "''", line=2)


@pytest.mark.parametrize(("line", "shown"), [
    (b"q1\td1", "got 2: 'q1\\td1'"),
    (b"q1 d1 1", "got 1: 'q1 d1 1'"),
    (b"q1\td1\t1\t" + b"x" * 10_000, "got 4: 'q1\\td1\\t1\\txxx"),
])
def test_a_qrels_line_with_the_wrong_number_of_columns_is_shown_bounded(tmp_path, line, shown):
    folder = beir_folder(tmp_path / "scidocs", doc() + b"\n", qrels=b"query-id\tcorpus-id\tscore\n" + line + b"\n")
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "qrels/test.tsv", "3 tab-separated columns", shown, line=2)
    assert len(str(caught.value)) < len(str(folder)) + 300


def test_a_qrels_score_too_large_for_int32_is_shown_bounded(tmp_path):
    qrels = b"query-id\tcorpus-id\tscore\nq\td\t" + b"9" * 100_000 + b"\n"
    folder = beir_folder(tmp_path / "scidocs", doc() + b"\n", qrels=qrels)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "qrels/test.tsv", "does not fit in int32", "'999", line=2)
    assert len(str(caught.value)) < len(str(folder)) + 300


# --- JSON lines: one rule, both reader paths --------------------------------------------------------------

SCIDOCS = beir.DATASETS["beir/scidocs"]
JSONL_CASES = {
    "duplicate top-level key": (b'{"_id": "d1", "title": "", "text": "a", "text": "b"}', "duplicate key 'text'"),
    "duplicate metadata key": (b'{"_id": "d1", "title": "", "text": "a", "metadata": {"year": 1, "year": 2}}',
                               "duplicate key 'year'"),
    "unpaired high surrogate": (b'{"_id": "d1", "title": "", "text": "\\ud800"}', "unpaired surrogate escape"),
    "unpaired low surrogate in id": (b'{"_id": "\\udce9", "title": "", "text": "a"}', "unpaired surrogate escape"),
    "two high surrogates": (b'{"_id": "d1", "title": "", "text": "\\ud83d\\ud83d"}', "unpaired surrogate escape"),
    "reversed pair": (b'{"_id": "d1", "title": "", "text": "\\ude00\\ud83d"}', "unpaired surrogate escape"),
    "two objects on a line": (b'{"_id": "d1", "title": "", "text": "a"}{"_id": "d9", "title": "", "text": "b"}',
                              "invalid JSON"),
    # Each line is `{`...`}` and the rows equal the lines only if pyarrow took the raw newline inside the string
    "a string across lines beside two objects on a line": (
        b'{"_id": "d1", "title": "x}\n{y", "text": "a"}\n{"_id": "d8", "title": "", "text": "b"}'
        b'{"_id": "d9", "title": "", "text": "c"}', "invalid JSON"),
    "BOM mid-file": (b'\xef\xbb\xbf{"_id": "d1", "title": "", "text": "a"}', "invalid JSON"),
    "year beyond int64": (b'{"_id": "d1", "title": "", "text": "a", "metadata": {"year": 9223372036854775808}}',
                          "does not fit in int64"),
    "year as a float": (b'{"_id": "d1", "title": "", "text": "a", "metadata": {"year": 1.0}}', "must be an integer"),
    "null id": (b'{"_id": null, "title": "", "text": "a"}', "missing required field `_id`"),
    "valid pair": (b'{"_id": "d1", "title": "\\ud83d\\ude00", "text": "a"}', "\U0001f600"),
    "key-like text in a value": (b'{"_id": "d1", "title": "\\"text\\": 1", "text": "a"}', '"text": 1'),
    "CR between tokens": (b'{"_id": "d1",\r"title": "", "text": "a"}\r', ""),
    "title a 30-digit integer": (b'{"_id": "d1", "title": 123456789012345678901234567890, "text": "a"}',
                                 "`title` must be a string, got 123456789012345678901234567890"),
    "title a 5-digit integer": (b'{"_id": "d1", "title": 12345, "text": "a"}', "`title` must be a string, got 12345"),
}


def jsonl_verdicts(tmp_path: Path, line: bytes, fast_path_use: list) -> list[tuple]:
    """The verdicts on a scidocs corpus holding `line` as line 2: read as usual (pyarrow first), read line by line,
    and read as usual with a line longer than pyarrow's block after it."""
    schema = beir_layout.source_schema(SCIDOCS, "corpus")
    results = []
    for name, extra, line_by_line in (("usual", b"", False), ("by-line", b"", True),
                                      ("long", doc("long", "x" * LONG) + b"\n", False)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "corpus.jsonl").write_bytes(doc("d0") + b"\n" + line + b"\n" + doc("d2") + b"\n" + extra)
        shard = Shard(SourceFiles(str(folder)), "corpus.jsonl")
        fast_path_use.off = line_by_line
        result = verdict(lambda shard=shard: read_jsonl(shard, schema, beir_layout.REQUIRED), folder)
        if name == "long" and result[0] == "rows":
            result = ("rows", result[1][:-1])
        results.append(result)
    return results


@pytest.mark.parametrize("case", list(JSONL_CASES))
def test_odd_json_lines_get_one_verdict_on_both_paths(tmp_path, case, fast_path_use):
    line, expected = JSONL_CASES[case]
    short, by_line, long = jsonl_verdicts(tmp_path, line, fast_path_use)
    assert short == by_line == long
    if short[0] == "error":
        assert short[1].startswith("<folder>/corpus.jsonl, line 2: ") and expected in short[1], short
    else:
        assert [row["_id"] for row in short[1]] == ["d0", "d1", "d2"]
        assert case in ("valid pair", "key-like text in a value", "CR between tokens")
        assert short[1][1]["title"] == expected


def test_a_duplicate_key_is_refused_end_to_end_naming_key_and_line(tmp_path):
    corpus = doc("d0") + b"\n" + b'{"_id": "d1", "_id": "d2", "title": "", "text": "a"}\n'
    folder = beir_folder(tmp_path / "scidocs", corpus)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "corpus.jsonl", "'_id'", line=2)


@pytest.mark.parametrize("title", [b"12345", b"123456789012345678901234567890", b"-1" + b"9" * 40])
def test_an_integer_title_of_any_size_gets_the_same_message_end_to_end(tmp_path, title):
    corpus = doc("d0") + b"\n" + b'{"_id": "d1", "title": ' + title + b', "text": "a"}\n'
    folder = beir_folder(tmp_path / "scidocs", corpus)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "corpus.jsonl", "`title`", "string", title.decode(), line=2)


@pytest.mark.parametrize("value, accepted", [(2**53, True), (-(2**53), True), (2**53 + 1, False), (10**30, False)])
def test_an_integer_in_a_float_field_is_kept_only_when_a_double_holds_it_exactly(value, accepted):
    field = pa.field("score", pa.float64())
    if accepted:
        assert values.conform({"score": value}, [field]) == {"score": value}
        return
    with pytest.raises(ValueError) as caught:
        values.conform({"score": value}, [field])
    assert_names(caught.value, "`score`", value, "double")


def test_integers_beyond_64_bits_in_json_text_metadata_stay_exact(tmp_path):
    metadata = b'{"n":123456789012345678901234567890,"m":-9223372036854775809,"k":18446744073709551615,"f":1.5}'
    corpus = b'{"_id": "d0", "title": "", "text": "a", "metadata": ' + metadata + b"}\n"
    folder = beir_folder(tmp_path / "robust04", corpus, queries=b'{"_id": "q", "text": "x", "metadata": {"a": 1}}\n')
    corpus_rows = ragloaders.load("beir/robust04", "corpus", split="corpus", data_dir=str(folder),
                                  cache_dir=str(tmp_path / "c"))
    assert json.loads(corpus_rows[0]["metadata"]) == json.loads(metadata)
    assert corpus_rows[0]["metadata"] == metadata.decode()


def test_a_duplicate_key_in_json_text_metadata_is_refused(tmp_path):
    corpus = b'{"_id": "d0", "title": "", "text": "a", "metadata": {"a": 1, "b": {"c": 1, "c": 1}}}\n'
    folder = beir_folder(tmp_path / "robust04", corpus)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/robust04", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "corpus.jsonl", "'c'", line=1)


@pytest.mark.parametrize("config", ["corpus", "queries"])
@pytest.mark.parametrize("content", [b"", b"\n \n\t\n"], ids=["empty", "blank lines"])
def test_an_empty_corpus_or_queries_file_is_refused(tmp_path, config, content):
    folder = beir_folder(tmp_path / "scidocs", doc() + b"\n")
    (folder / f"{config}.jsonl").write_bytes(content)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", config, data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, f"{config}.jsonl", "no records")


@pytest.mark.parametrize("content", [b"query-id\tcorpus-id\tscore\n", b"query-id\tcorpus-id\tscore\r\n\n\n"],
                         ids=["header", "header and blank lines"])
def test_a_qrels_file_with_no_judgement_is_refused(tmp_path, content, capsys):
    """Its split had no row and went unpublished with a warning: a folder of one qrels/test.tsv was built, exit 0,
    with no qrels at all."""
    folder = beir_folder(tmp_path / "data", doc() + b"\n", qrels=content)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir-format", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "test.tsv", "no judgements")
    assert cli_main(["build", "beir-format", "--data-dir", str(folder), "--out", str(tmp_path / "out")]) == 2
    assert "test.tsv: no judgements" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("num_proc", [None, 2])
@pytest.mark.parametrize("config", ["corpus", "queries"])
def test_a_blank_file_read_in_several_byte_ranges_is_refused_too(tmp_path, config, num_proc, monkeypatch):
    """A file larger than SHARD_BYTES is read in line-aligned byte ranges: before, none of them was the whole file,
    so none said "no records", and the build left the config out with exit 0 (`validate` then said OK)."""
    monkeypatch.setattr(jsonl, "SHARD_BYTES", 4 << 10)
    folder = beir_folder(tmp_path / "scidocs", doc() + b"\n")
    (folder / f"{config}.jsonl").write_bytes(b" \n" * (10 << 10))  # 20 KiB of blank lines: 5 byte ranges
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", config, data_dir=str(folder), cache_dir=str(tmp_path / "c"), num_proc=num_proc)
    assert_source_error(caught.value, f"{config}.jsonl", "no records")
    record = doc() if config == "corpus" else json.dumps({"_id": "q", "text": "t"}).encode()
    (folder / f"{config}.jsonl").write_bytes(b" \n" * (10 << 10) + record + b"\n")  # one record in the last range
    loaded = ragloaders.load("beir/scidocs", config, data_dir=str(folder), cache_dir=str(tmp_path / "c"),
                             num_proc=num_proc)
    assert loaded[config].num_rows == 1


def test_json_arrays_refuse_duplicate_keys_and_unpaired_surrogates_naming_the_record():
    with pytest.raises(SourceError) as caught:
        list(iter_json_array(io.BytesIO(b'[{"a": 1}, {"r": [{"chunk_id": "x", "chunk_id": "y"}]}]'), "mmrag_dev.json"))
    assert_source_error(caught.value, "mmrag_dev.json", "'chunk_id'", record=1)
    with pytest.raises(SourceError) as caught:
        list(iter_json_array(io.BytesIO(b'[{"a": 1}, {"a": 2}, {"q": "\\udce9"}]'), "mmrag_dev.json"))
    assert_source_error(caught.value, "mmrag_dev.json", "surrogate", record=2)
    assert list(iter_json_array(io.BytesIO(b'[{"q": "\\ud83d\\ude00"}]'), "ok.json")) == [(0, {"q": "\U0001f600"})]


@pytest.mark.slow
def test_crag_records_follow_the_same_json_rules(tmp_path):
    lines = crag_lines()
    for name, bad, message in [
        ("surrogate", lines[1].replace(b'"query": "', b'"query": "\\ud800', 1), "surrogate"),
        ("duplicate", lines[1].replace(b'"query": ', b'"query": "x", "query": ', 1), "'query'"),
    ]:
        path = tmp_path / name / "dev_data.jsonl.bz2"
        path.parent.mkdir()
        path.write_bytes(bz2.compress(b"\n".join([lines[0], bad, *lines[2:]]) + b"\n"))
        with pytest.raises(SourceError) as caught:
            ragloaders.load("crag/task_1_and_2", "records", data_dir=str(path.parent), cache_dir=str(tmp_path / "c"))
        assert_source_error(caught.value, "dev_data.jsonl.bz2", message, record=2)


@pytest.mark.slow
def test_a_bom_starts_a_crag_file_as_it_may_any_benchmarks_and_only_there(tmp_path):
    """The README's rule for every benchmark's JSON: a UTF-8 BOM is skipped at the start of a file only. CRAG's
    records refused it (`invalid JSON`), where BEIR's lines and mmRAG's arrays skip it."""
    lines = crag_lines()
    plain = ragloaders.load("crag/task_1_and_2", "queries", split="test", data_dir=str(CRAG_EXAMPLE.parent),
                            cache_dir=str(tmp_path / "c"))
    for name, data in (("start", b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n"),
                       ("mid-file", b"\n".join([lines[0], b"\xef\xbb\xbf" + lines[1], *lines[2:]]) + b"\n")):
        path = tmp_path / name / "dev_data.jsonl.bz2"
        path.parent.mkdir()
        path.write_bytes(bz2.compress(data))
        load = functools.partial(ragloaders.load, "crag/task_1_and_2", "queries", split="test",
                                 data_dir=str(path.parent), cache_dir=str(tmp_path / "c"))
        if name == "start":
            assert load().to_list() == plain.to_list()
        else:
            with pytest.raises(SourceError) as caught:
                load()
            assert_source_error(caught.value, "dev_data.jsonl.bz2", "invalid JSON", record=2)


def test_invalid_json_in_a_megabyte_crag_record_shows_the_text_at_the_error_bounded(tmp_path):
    lines = crag_lines()
    bad = lines[1].replace(b'"query": "', b'"query": @"', 1)  # a real record of a megabyte, broken at its query
    (tmp_path / "dev_data.jsonl.bz2").write_bytes(bz2.compress(lines[0] + b"\n" + bad + b"\n", 1))
    with pytest.raises(SourceError) as caught:
        ragloaders.load("crag/task_1_and_2", "records", data_dir=str(tmp_path), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "dev_data.jsonl.bz2", "invalid JSON", "at '@\"", "after '", '"query": ',
                        record=2)
    assert len(str(caught.value)) < len(str(tmp_path)) + 400


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_invalid_json_in_a_long_beir_line_shows_the_text_at_the_error_bounded(tmp_path, where):
    long = b'"' + b"x" * 1_500_000 + b'"'
    text = {"start": b"@" + long + b', "n": ' + long, "middle": long + b" @, " + b'"n": ' + long,
            "end": long + b', "n": ' + long + b" @"}[where]
    corpus = doc("d0") + b"\n" + b'{"_id": "d1", "title": "", "text": ' + text + b"}\n"
    folder = beir_folder(tmp_path / "scidocs", corpus)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/scidocs", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    shown = {"start": ("at '@\"xxx", "after '"), "middle": ("at '@, \"n\": \"xxx", "after 'xxx"),
             "end": ("at '@}'", "after 'xxx")}
    assert_source_error(caught.value, "corpus.jsonl", "invalid JSON", *shown[where], line=2)
    assert len(str(caught.value)) < len(str(folder)) + 400


# --- bz2: data a decoder would skip -----------------------------------------------------------------------

@pytest.mark.parametrize("between", [b"GARBAGE!", b"BZh0", b"\0" * 8], ids=["garbage", "damaged header", "zeros"])
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_crag_multi_stream_bz2_with_bad_bytes_between_streams_is_refused_with_the_offset(tmp_path, between):
    first, second = crag_in_two_streams()
    path = tmp_path / "dev_data.jsonl.bz2"
    path.write_bytes(first + between + (second[4:] if between == b"BZh0" else second))
    with pytest.raises(SourceError) as caught:
        ragloaders.load("crag/task_1_and_2", "records", data_dir=str(tmp_path), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "dev_data.jsonl.bz2", f"offset {len(first):,}", "bzip2")
    assert cli_main(["build", "crag/task_1_and_2", "--data-dir", str(tmp_path), "--out", str(tmp_path / "out"),
                     "--cache-dir", str(tmp_path / "c2")]) != 0


# --- zip damage -------------------------------------------------------------------------------------------

def damaged_zip(tmp_path: Path, how: str) -> Path:
    """nfcorpus.zip rewritten with one member damaged: its CRC, its deflate data, its local header's name (unlike
    the central directory's), the compression method or the encryption flag the central directory gives it, or the
    file cut short."""
    path = tmp_path / "nfcorpus.zip"
    data = bytearray(NFCORPUS_ZIP.read_bytes())
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        info = archive.getinfo("nfcorpus/queries.jsonl")
    header = info.header_offset
    name_length, extra_length = int.from_bytes(data[header + 26:header + 28], "little"), int.from_bytes(
        data[header + 28:header + 30], "little")
    start = header + 30 + name_length + extra_length
    end = data.rfind(b"PK\x05\x06")
    entry = int.from_bytes(data[end + 16:end + 20], "little")  # the member's central directory entry
    while data[entry + 46:entry + 46 + len(info.filename)] != info.filename.encode():
        lengths = [int.from_bytes(data[entry + i:entry + i + 2], "little") for i in (28, 30, 32)]
        entry += 46 + sum(lengths)
    if how == "crc":  # both CRC copies (local header and central directory) changed: the data no longer match
        wrong = ((info.CRC ^ 0xFFFFFFFF) & 0xFFFFFFFF).to_bytes(4, "little")
        data[header + 14:header + 18] = wrong
        data[entry + 16:entry + 20] = wrong
    elif how == "local name":
        data[header + 30 + name_length - 1] ^= 0x20  # the last letter's case: the same length
    elif how == "method":
        data[entry + 10:entry + 12] = (98).to_bytes(2, "little")
    elif how == "encrypted":
        data[entry + 8] |= 1
    elif how == "deflate":
        data[start:start + 4] = b"\xff" * 4  # a first deflate block of the reserved type 3
    else:
        data = data[: len(data) // 2]
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how, damage", [
    ("crc", "Bad CRC-32"), ("deflate", "invalid block type"),
    # zipfile raises these when the member is opened, where the others come as it is read: before, each was
    # "DatasetGenerationError: An error occurred while generating the dataset", naming neither archive nor member
    ("local name", "and header b'nfcorpus/queries.jsonL' differ"),
    ("method", "compression method is not supported"),
    ("encrypted", "is encrypted"),
])
def test_a_damaged_zip_member_names_archive_member_and_damage(tmp_path, how, damage, monkeypatch):
    path = damaged_zip(tmp_path, how)
    monkeypatch.setitem(beir.DATASETS, "beir/nfcorpus", beir.DATASETS["beir/nfcorpus"].__class__(
        **{**beir.DATASETS["beir/nfcorpus"].__dict__, "md5": None}))  # reach the member, past the md5 check
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/nfcorpus", "queries", data_dir=str(path), cache_dir=str(tmp_path / "c"))
    assert_source_error(error.value, "nfcorpus.zip:nfcorpus/queries.jsonl", "damaged zip member", damage)


@pytest.mark.parametrize("joined", ["another zip before", "junk before", "junk after", "another zip after"])
def test_zip_bytes_that_belong_to_no_member_are_refused(tmp_path, joined):
    """zipfile reads a zip from its end: of two joined zips it reads the last one's members and passes over the
    other's in silence, and it ignores bytes after the end record. Every byte must belong to the zip, as every byte
    of a bzip2 file must belong to a stream."""
    official = NFCORPUS_ZIP.read_bytes()
    with zipfile.ZipFile(other := io.BytesIO(), "w") as archive:
        archive.writestr("nfcorpus/corpus.jsonl", doc() + b"\n")
    extra = {"another zip before": other.getvalue(), "junk before": b"MZ" + b"\0" * 510,
             "another zip after": other.getvalue(), "junk after": b"\0" * 100}[joined]
    path = tmp_path / "nfcorpus.zip"
    path.write_bytes(extra + official if joined.endswith("before") else official + extra)
    with pytest.raises(SourceError) as caught:
        SourceFiles(str(path))
    assert_source_error(caught.value, "nfcorpus.zip", "belong to none of its members")
    if joined.endswith("before"):
        assert f"{len(extra):,} bytes before" in str(caught.value)
    assert SourceFiles(str(NFCORPUS_ZIP)).exists("nfcorpus/corpus.jsonl")  # the official zip, every byte its own


def test_a_truncated_zip_is_a_source_error_not_a_missing_folder(tmp_path):
    path = damaged_zip(tmp_path, "cut")
    for data_dir in (path, tmp_path):
        with pytest.raises(SourceError) as caught:
            ragloaders.load("beir/nfcorpus", "queries", data_dir=str(data_dir), cache_dir=str(tmp_path / "c"))
        assert_source_error(caught.value, "nfcorpus.zip", "zip file", "data_dir")


def test_a_local_zip_is_checked_against_the_catalogue_md5_once_per_identity(tmp_path, monkeypatch):
    repacked = tmp_path / "repacked" / "nfcorpus.zip"
    repacked.parent.mkdir()
    with zipfile.ZipFile(NFCORPUS_ZIP) as source, zipfile.ZipFile(repacked, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
    expected = beir.DATASETS["beir/nfcorpus"].md5
    actual = source_files.md5_of(str(repacked))
    with pytest.raises(SourceError) as caught:
        ragloaders.load("beir/nfcorpus", "queries", data_dir=str(repacked.parent), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "repacked/nfcorpus.zip", actual, expected)

    official = tmp_path / "official" / "nfcorpus.zip"
    official.parent.mkdir()
    shutil.copy(NFCORPUS_ZIP, official)
    computed = []
    monkeypatch.setattr(source_files, "md5_of",
                        lambda path: computed.append(path) or source_files.file_digest(path, "md5"))
    for _ in range(3):  # streaming prepares nothing, so only the marker in the cache spares the second check
        stream = ragloaders.load("beir/nfcorpus", "queries", streaming=True, data_dir=str(official),
                                 cache_dir=str(tmp_path / "c"))
        assert next(iter(stream["queries"]))["_id"]
    assert computed == [str(official)]
    os.utime(official)  # a new identity: checked again
    ragloaders.load("beir/nfcorpus", "queries", streaming=True, data_dir=str(official), cache_dir=str(tmp_path / "c"))
    assert computed == [str(official)] * 2


# --- cache identity ---------------------------------------------------------------------------------------

def test_an_edit_that_keeps_size_and_mtime_is_noticed(tmp_path):
    folder = beir_folder(tmp_path / "scidocs", doc("d0", "alpha") + b"\n")
    cache = str(tmp_path / "c")
    first = ragloaders.load("beir/scidocs", "corpus", split="corpus", data_dir=str(folder), cache_dir=cache)
    assert first[0]["text"] == "alpha"
    corpus = folder / "corpus.jsonl"
    before = corpus.stat()
    corpus.write_bytes(doc("d0", "omega") + b"\n")  # same size
    os.utime(corpus, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `touch -r` would
    assert (corpus.stat().st_size, corpus.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = ragloaders.load("beir/scidocs", "corpus", split="corpus", data_dir=str(folder), cache_dir=cache)
    assert again[0]["text"] == "omega"


def test_zip_identity_notices_a_replaced_zip_with_restored_mtime(tmp_path):
    path = tmp_path / "nfcorpus.zip"
    shutil.copy(NFCORPUS_ZIP, path)
    identity = SourceFiles(str(path), root="nfcorpus").identity([])
    stat = path.stat()
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert SourceFiles(str(path), root="nfcorpus").identity([]) != identity


# --- downloads --------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Failing(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_error(int(self.path.rsplit("/", 2)[-2]))

    do_HEAD = do_GET  # noqa: N815

    def log_message(self, *args):
        pass


@pytest.fixture
def failing_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    serve_in_thread(server)
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("failure", ["refused", "404", "500"])
def test_a_failed_download_is_one_error_naming_url_cause_and_remedy(tmp_path, monkeypatch, failure, failing_server,
                                                                     capsys):
    base = f"http://127.0.0.1:{free_port()}" if failure == "refused" else f"{failing_server}/{failure}"
    monkeypatch.setenv(beir.BASE_URL_ENV, base)
    with pytest.raises(DownloadError) as error:
        ragloaders.load("beir/nfcorpus", "qrels", cache_dir=str(tmp_path / "c"))
    message = str(error.value)
    assert message.startswith(f"{base}/nfcorpus.zip: download failed (")
    assert "--data-dir" in message and beir.BASE_URL_ENV in message
    assert (failure in message) if failure != "refused" else ("connect" in message.lower())
    assert isinstance(error.value, ragloaders.DownloadError) and isinstance(error.value, SourceError)

    assert cli_main(["build", "beir/nfcorpus", "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert f"{base}/nfcorpus.zip: download failed" in err[-1] and "Traceback" not in "\n".join(err)


def test_a_failed_crag_download_names_its_mirror_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(crag_catalogue.BASE_URL_ENV, f"http://127.0.0.1:{free_port()}")
    with pytest.raises(DownloadError, match=crag_catalogue.BASE_URL_ENV):
        ragloaders.load("crag/task_1_and_2", "queries", cache_dir=str(tmp_path / "c"))


# --- data_dir as the file itself; a wrong split -----------------------------------------------------------

def test_data_dir_may_be_the_zip_itself(tmp_path):
    queries = ragloaders.load("beir/nfcorpus", "queries", split="queries", data_dir=str(NFCORPUS_ZIP),
                              cache_dir=str(tmp_path / "c"))
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        assert queries.num_rows == len(archive.read("nfcorpus/queries.jsonl").splitlines())


def test_data_dir_may_be_the_crag_file_itself(tmp_path):
    records = ragloaders.load("crag/task_1_and_2", "queries", data_dir=str(CRAG_EXAMPLE), cache_dir=str(tmp_path / "c"))
    assert sum(split.num_rows for split in records.values()) == len(crag_lines())


def test_data_dir_may_be_a_task_3_part(tmp_path):
    archive = bz2.compress(tar_bytes(task3_members(release_lines("v5"))), 1)
    parts = write_parts(tmp_path, "crag_task_3_dev_v5.tar.bz2", 0, archive)
    queries = ragloaders.load("crag/task_3", "queries", data_dir=str(parts[2]), cache_dir=str(tmp_path / "c"))
    assert sum(split.num_rows for split in queries.values()) == len(release_lines("v5"))


def test_a_wrong_split_is_reported_before_any_build_in_one_line(tmp_path):
    cache = tmp_path / "c"
    with pytest.raises(ValueError) as error:
        ragloaders.load("beir/nfcorpus", "qrels", split="validation", data_dir=str(NFCORPUS_ZIP), cache_dir=str(cache))
    message = str(error.value)
    assert "\n" not in message and "'validation'" in message and "train, dev, test" in message
    assert not cache.exists() or not any(cache.rglob("*.arrow"))
    with pytest.raises(ValueError) as error:
        ragloaders.load("crag/task_1_and_2", "queries", split="train", data_dir=str(CRAG_EXAMPLE),
                        cache_dir=str(cache), streaming=True)
    assert_names(error.value, "'train'", "validation, test")


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_line_chunks_cover_the_file_exactly_with_their_first_line_numbers(monkeypatch, bom):
    monkeypatch.setattr(lines, "BLOCK_BYTES", 7)
    text_lines = [b"x" * ((i * 37) % 61) for i in range(400)]  # empty lines, lines shorter and longer than a read
    data = b"\n".join(text_lines) + b"\n" + b"no newline at the end"
    chunks = list(lines.iter_line_chunks(io.BytesIO(bom + data), "f", skip_bom=True))
    assert b"".join(chunk for _, chunk in chunks) == data
    offset = 0
    for index, (first, chunk) in enumerate(chunks):
        assert first == data[:offset].count(b"\n") + 1
        assert chunk.endswith(b"\n") or index == len(chunks) - 1
        offset += len(chunk)


OUT_OF_MEMORY_CHILD = """
import resource, sys
from ragloaders.cli import main
with open("/proc/self/statm") as f:
    vm = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm + int(sys.argv[1]),) * 2)
sys.exit(main(["build", "beir-format", "--data-dir", sys.argv[2], "--out", sys.argv[3], "--cache-dir", sys.argv[4]]))
"""


@pytest.mark.slow  # (a 64 MB line parsed in a child; CI runs it)
@pytest.mark.parametrize("file, line", [("corpus.jsonl", 1), ("qrels/test.tsv", 2)])
@pytest.mark.parametrize("headroom_mb", [160, 350])  # (with less, a thread cannot start: nothing to do with a line)
def test_memory_run_out_on_a_long_line_names_the_file_and_line(tmp_path, file, line, headroom_mb):
    """A line of 64 MB (a JSONL text, or a qrels id) parsed with less memory left than parsing it takes: one line
    naming the file and line; before, "DatasetGenerationError: An error occurred while generating the dataset", or
    orjson's "Not enough memory" given as invalid JSON."""
    long = "x" * (64 << 20)
    in_corpus = file == "corpus.jsonl"
    folder = beir_folder(tmp_path / "data", doc(text=long if in_corpus else "t") + b"\n",
                         qrels=f"query-id\tcorpus-id\tscore\nq\t{'d' if in_corpus else long}\t1\n".encode())
    done = subprocess.run([sys.executable, "-c", OUT_OF_MEMORY_CHILD, str(headroom_mb << 20), str(folder),
                           str(tmp_path / "out"), str(tmp_path / "cache")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(LOADERS)})
    assert done.returncode == 2, done.stderr[-3000:]
    [message] = done.stderr.strip().splitlines()[-1:]
    assert message.startswith(f"ragloaders: error: {folder / file}, line {line}: memory ran out parsing the lines "
                              "from here"), message[:500]


def test_orjson_out_of_memory_is_memory_run_out_not_invalid_json(monkeypatch):
    """orjson refuses a text it could not allocate a buffer for as a JSONDecodeError "Not enough memory ...": that is
    no fault of the text's, so it is a MemoryError, which the readers report as memory run out (above), not as
    "invalid JSON"."""
    from ragloaders.core.readers import strict_json

    def out_of_memory(text):
        raise strict_json.orjson.JSONDecodeError("Not enough memory to allocate buffer for parsing", "", 0)

    def out_of_memory_past_its_result(text):  # what CPython makes of an error set while a result is returned
        try:
            raise MemoryError
        except MemoryError as e:
            raise SystemError("<built-in function loads> returned a result with an exception set") from e

    for loads in (out_of_memory, out_of_memory_past_its_result):
        monkeypatch.setattr(strict_json.orjson, "loads", loads)
        with pytest.raises(MemoryError):
            strict_json.loads_strict(b'{"a": 1}')


def test_a_qrels_line_of_many_tabs_is_refused_without_a_list_of_its_columns():
    """The columns are counted before the line is split: a line of a million tabs was a list of a million strings
    (a 50 MB line of tabs peaked at 785 MB) before it was refused."""
    import tracemalloc

    line = b"q\t" * (1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=f"got {(1 << 20) + 1}: "):
            qrels.qrels_fields(line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(line), peak  # the line decoded, and its preview


def test_memory_run_out_reading_a_line_names_the_file_and_line():
    """CRAG's records are read with iter_lines: a 530-byte bz2 of one 700 MB line ran out of memory in `readline`
    and said only "DatasetGenerationError: An error occurred while generating the dataset"."""

    class ShortOfMemory(io.BytesIO):
        def readline(self, size: int = -1) -> bytes:
            if self.tell() > 0:
                raise MemoryError
            return super().readline(size)

    with pytest.raises(SourceError) as caught:
        list(lines.iter_lines(ShortOfMemory(b'{"a": 1}\n{"b": 2}\n'), "records.jsonl"))
    assert_source_error(caught.value, "records.jsonl", "memory ran out", line=2)
