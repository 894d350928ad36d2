"""BEIR: real official nfcorpus.zip and scifact cut, generated fixtures for every shape, bad input."""

import dataclasses
import functools
import http.server
import json
import os
import shutil
import zipfile
from pathlib import Path

import datasets
import pyarrow as pa
import pytest
import ragloaders
from beir_files import write_beir
from conftest import DATA, assert_names, assert_source_error
from local_http import serve_in_thread
from ragloaders.benchmarks.beir import catalogue as beir
from ragloaders.cli import main as cli_main
from ragloaders.core.errors import MissingSourceError, SourceError
from ragloaders.core.formats import beir as beir_layout
from ragloaders.core.readers import jsonl
from ragloaders.core.source_files import md5_of

NFCORPUS_ZIP = DATA / "beir" / "nfcorpus.zip"
NFCORPUS_COUNTS = {"corpus": 3_633, "queries": 3_237, "train": 110_575, "dev": 11_385, "test": 12_334}


def source_lines(data: bytes) -> list[bytes]:
    """The non-blank lines of a file, as the source counts them."""
    return [line for line in data.splitlines() if line.strip()]


def rows(dataset) -> list[dict]:
    return [dict(row) for row in dataset]


@pytest.fixture(scope="module")
def nfcorpus_extracted(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("nfcorpus-extracted")
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        archive.extractall(folder)
    return folder / "nfcorpus"


@pytest.fixture(scope="module")
def nfcorpus_loaded(nfcorpus_build) -> dict:
    """Every config of the official zip, from the session's shared build (built from DATA/beir, the zip's folder)."""
    assert nfcorpus_build.data_dir == str(NFCORPUS_ZIP.parent)
    return {config: nfcorpus_build.load(config) for config in beir_layout.CONFIG_PLANS}


def test_nfcorpus_zip_is_the_official_file():
    from ragloaders.core.source_files import md5_of

    assert md5_of(str(NFCORPUS_ZIP)) == beir.DATASETS["beir/nfcorpus"].md5
    assert NFCORPUS_ZIP.stat().st_size == beir.DATASETS["beir/nfcorpus"].zip_bytes


def test_nfcorpus_counts_equal_published_and_source_line_counts(nfcorpus_loaded):
    assert nfcorpus_loaded["corpus"]["corpus"].num_rows == NFCORPUS_COUNTS["corpus"]
    assert nfcorpus_loaded["queries"]["queries"].num_rows == NFCORPUS_COUNTS["queries"]
    assert list(nfcorpus_loaded["qrels"]) == ["train", "dev", "test"]
    for split in ("train", "dev", "test"):
        assert nfcorpus_loaded["qrels"][split].num_rows == NFCORPUS_COUNTS[split]
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        assert len(source_lines(archive.read("nfcorpus/corpus.jsonl"))) == NFCORPUS_COUNTS["corpus"]
        assert len(source_lines(archive.read("nfcorpus/queries.jsonl"))) == NFCORPUS_COUNTS["queries"]
        for split in ("train", "dev", "test"):
            raw = archive.read(f"nfcorpus/qrels/{split}.tsv")
            assert b"\r\n" in raw  # the official qrels use CRLF line ends
            assert len(source_lines(raw)) - 1 == NFCORPUS_COUNTS[split]


def test_nfcorpus_values_byte_for_byte(nfcorpus_loaded):
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        corpus = [json.loads(line) for line in source_lines(archive.read("nfcorpus/corpus.jsonl"))]
        test_qrels = [line.decode().split("\t") for line in source_lines(archive.read("nfcorpus/qrels/test.tsv"))[1:]]
    loaded = nfcorpus_loaded["corpus"]["corpus"]
    assert loaded.column_names == ["_id", "title", "text", "url"]
    assert loaded["_id"] == [d["_id"] for d in corpus]
    assert loaded["text"] == [d["text"] for d in corpus]
    assert loaded["url"] == [d["metadata"]["url"] for d in corpus]
    qrels = nfcorpus_loaded["qrels"]["test"]
    assert qrels.features == datasets.Features(
        {"query-id": datasets.Value("string"), "corpus-id": datasets.Value("string"), "score": datasets.Value("int32")}
    )
    assert qrels["query-id"] == [q for q, _, _ in test_qrels]
    assert qrels["corpus-id"] == [d for _, d, _ in test_qrels]  # no "\r" left on any id
    assert qrels["score"] == [int(s) for _, _, s in test_qrels]


def test_zip_and_extracted_folder_give_the_same_rows(nfcorpus_loaded, nfcorpus_extracted, tmp_path):
    for config in beir_layout.CONFIG_PLANS:
        from_folder = ragloaders.load("beir/nfcorpus", config, data_dir=str(nfcorpus_extracted),
                                      cache_dir=str(tmp_path))
        for split in from_folder:
            assert from_folder[split].features == nfcorpus_loaded[config][split].features
            assert from_folder[split].data.table.equals(nfcorpus_loaded[config][split].data.table)


def test_streaming_gives_the_same_rows(nfcorpus_loaded, tmp_path):
    streamed = ragloaders.load("beir/nfcorpus", "queries", data_dir=str(NFCORPUS_ZIP.parent), streaming=True,
                               cache_dir=str(tmp_path))
    assert rows(streamed["queries"]) == rows(nfcorpus_loaded["queries"]["queries"])
    one_split = ragloaders.load("beir/nfcorpus", "qrels", split="dev", data_dir=str(NFCORPUS_ZIP.parent),
                                streaming=True, cache_dir=str(tmp_path))
    assert isinstance(one_split, datasets.IterableDataset)
    assert rows(one_split) == rows(nfcorpus_loaded["qrels"]["dev"])


def test_split_argument_returns_one_dataset(tmp_path):
    dev = ragloaders.load("beir/nfcorpus", "qrels", split="dev", data_dir=str(NFCORPUS_ZIP.parent),
                          cache_dir=str(tmp_path))
    assert isinstance(dev, datasets.Dataset)
    assert dev.num_rows == NFCORPUS_COUNTS["dev"]


def test_nfcorpus_cut_keeps_crlf_qrels_and_query_urls(tmp_path):
    folder = DATA / "beir" / "nfcorpus-cut"
    queries = ragloaders.load("beir/nfcorpus", "queries", split="queries", data_dir=str(folder),
                              cache_dir=str(tmp_path))
    source = [json.loads(line) for line in source_lines((folder / "queries.jsonl").read_bytes())]
    assert queries["_id"] == [q["_id"] for q in source]
    assert queries["url"] == [q["metadata"]["url"] for q in source]
    qrels = ragloaders.load("beir/nfcorpus", "qrels", data_dir=str(folder), cache_dir=str(tmp_path))
    for split in ("train", "dev", "test"):
        raw = (folder / "qrels" / f"{split}.tsv").read_bytes()
        assert qrels[split].num_rows == len(source_lines(raw)) - 1
        assert not any("\r" in value for value in qrels[split]["corpus-id"])


def test_scifact_corpus_cut(tmp_path):
    folder = DATA / "beir" / "scifact"
    corpus = ragloaders.load("beir/scifact", "corpus", split="corpus", data_dir=str(folder), cache_dir=str(tmp_path))
    source = [json.loads(line) for line in source_lines((folder / "corpus.jsonl").read_bytes())]
    assert corpus.num_rows == len(source) == 5
    assert corpus.column_names == ["_id", "title", "text"]
    assert corpus["_id"] == [d["_id"] for d in source]
    assert corpus["title"] == [d["title"] for d in source]


def test_ids_stay_strings_byte_for_byte(tmp_path):
    ids = ["00123", "0", "1e5", "007.50", " 42", "NaN", "<dbpedia:Émile_Gilbert>"]
    corpus = [{"_id": i, "title": "", "text": f"doc {i}"} for i in ids]
    queries = [{"_id": i, "text": f"query {i}"} for i in ids]
    last = b'{"_id": "000", "text": "no newline at the end"}'  # last line without "\n"
    folder = write_beir(tmp_path / "fiqa", corpus, queries,
                        {s: [(i, i, score) for i, score in zip(ids, [0, -2, 4, 1, 0, -1, 2])]
                         for s in ("train", "dev", "test")},
                        raw={"queries.jsonl": b"".join(json.dumps(q).encode() + b"\n" for q in queries) + last})
    cache = str(tmp_path / "cache")
    loaded_corpus = ragloaders.load("beir/fiqa", "corpus", split="corpus", data_dir=str(folder), cache_dir=cache)
    loaded_queries = ragloaders.load("beir/fiqa", "queries", split="queries", data_dir=str(folder), cache_dir=cache)
    loaded_qrels = ragloaders.load("beir/fiqa", "qrels", split="test", data_dir=str(folder), cache_dir=cache)
    assert loaded_corpus["_id"] == ids
    assert loaded_corpus["title"] == [""] * len(ids)
    assert loaded_queries["_id"] == ids + ["000"]
    assert loaded_queries["text"][-1] == "no newline at the end"
    assert loaded_qrels["query-id"] == ids and loaded_qrels["corpus-id"] == ids
    assert loaded_qrels["score"] == [0, -2, 4, 1, 0, -1, 2]


def test_non_ascii_and_control_characters_round_trip(tmp_path):
    texts = ["naïve café — 東京", "tab\there", "bell\u0007 nul\u0000 esc\u001b", "line\nbreak", "emoji 🧬", ""]
    corpus = [{"_id": f"d{i}", "title": t, "text": t} for i, t in enumerate(texts)]
    folder = write_beir(tmp_path / "quora", corpus, [{"_id": "q", "text": texts[2]}],
                        {"dev": [("q", "d5", 0)], "test": [("q", "d0", 1)]})
    loaded = ragloaders.load("beir/quora", "corpus", split="corpus", data_dir=str(folder),
                             cache_dir=str(tmp_path / "c"))
    assert loaded["text"] == texts and loaded["title"] == texts
    queries = ragloaders.load("beir/quora", "queries", split="queries", data_dir=str(folder),
                              cache_dir=str(tmp_path / "c"))
    assert queries["text"] == [texts[2]]
    qrels = ragloaders.load("beir/quora", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert qrels["dev"]["corpus-id"] == ["d5"] and qrels["dev"].features["score"] == datasets.Value("int32")


METADATA_CASES = {
    "beir/trec-covid": (
        {"url": "https://x.org/1", "pubmed_id": "32165633"},
        {"query": "coronavirus origin", "narrative": "seeking range of information"},
    ),
    "beir/webis-touche2020": (
        {"stance": "CON", "url": "https://www.debate.org/debates/x/1/"},
        {"description": "A user might ...", "narrative": "Highly relevant arguments ..."},
    ),
    "beir/scidocs": (
        {"authors": ["a1", "a2"], "year": 2017, "cited_by": ["c1"], "references": []},
        {"authors": [], "year": 2011, "cited_by": [], "references": ["r1", "r2"]},
    ),
    "beir/cqadupstack/android": ({"tags": ["root", "adb"]}, {"tags": ["wifi"]}),
    "beir/dbpedia-entity": ({"url": "<http://dbpedia.org/resource/Émile_Gilbert>"}, {}),
}


@pytest.mark.parametrize("path", sorted(METADATA_CASES))
def test_every_fixed_metadata_shape_becomes_typed_columns(path, tmp_path):
    doc_meta, query_meta = METADATA_CASES[path]
    dataset = beir.DATASETS[path]
    corpus = [{"_id": "d1", "title": "T", "text": "x", "metadata": doc_meta},
              {"_id": "d2", "title": "", "text": "y", "metadata": {}}]
    queries = [{"_id": "q1", "text": "what", "metadata": query_meta}]
    folder = write_beir(tmp_path / "src", corpus, queries, {s: [("q1", "d1", 1)] for s in dataset.splits})
    cache = str(tmp_path / "cache")
    loaded = ragloaders.load(path, "corpus", split="corpus", data_dir=str(folder), cache_dir=cache)
    assert loaded.column_names == ["_id", "title", "text"] + [f.name for f in dataset.doc_metadata or ()]
    assert {k: loaded[0][k] for k in doc_meta} == doc_meta
    assert all(loaded[1][k] is None for k in doc_meta)  # absent metadata stays null, not ""
    queries_loaded = ragloaders.load(path, "queries", split="queries", data_dir=str(folder), cache_dir=cache)
    assert {k: queries_loaded[0][k] for k in query_meta} == query_meta


def test_metadata_keyed_by_doc_id_is_kept_as_json_text(tmp_path):
    meta = {"4983": [{"sentences": [0, 1], "label": "SUPPORT"}], "0019": []}
    queries = [{"_id": "1", "text": "claim", "metadata": meta}, {"_id": "2", "text": "other", "metadata": {}}]
    folder = write_beir(tmp_path / "scifact", [{"_id": "4983", "title": "t", "text": "x"}], queries,
                        {"train": [], "test": [("1", "4983", 1)]})
    loaded = ragloaders.load("beir/scifact", "queries", split="queries", data_dir=str(folder),
                             cache_dir=str(tmp_path / "c"))
    assert loaded.features["metadata"] == datasets.Value("string")
    assert [json.loads(m) for m in loaded["metadata"]] == [meta, {}]


def test_unexpected_metadata_key_is_an_error_not_a_drop(tmp_path):
    corpus = [{"_id": "a", "title": "", "text": "x", "metadata": {"url": "u"}},
              {"_id": "b", "title": "", "text": "y", "metadata": {"url": "u", "surprise": 1}}]
    folder = write_beir(tmp_path / "nf", corpus, [], {})
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/nfcorpus", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert error.value.line == 2 and "surprise" in str(error.value) and "corpus.jsonl" in str(error.value)


def cqadupstack_zip(path: Path, forums: dict[str, list[str]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for forum, doc_ids in forums.items():
            root = f"cqadupstack/{forum}"
            archive.writestr(f"{root}/corpus.jsonl", "".join(
                json.dumps({"_id": d, "title": f"{forum} {d}", "text": forum, "metadata": {"tags": [forum]}}) + "\n"
                for d in doc_ids))
            archive.writestr(f"{root}/queries.jsonl", json.dumps(
                {"_id": f"q-{forum}", "text": "?", "metadata": {"tags": []}}) + "\n")
            archive.writestr(f"{root}/qrels/test.tsv", f"query-id\tcorpus-id\tscore\nq-{forum}\t{doc_ids[0]}\t1\n")
    return path


def test_cqadupstack_forums_are_separate_datasets_with_repeating_ids(tmp_path, monkeypatch):
    assert len([p for p in beir.DATASETS if p.startswith("beir/cqadupstack/")]) == 12
    source = tmp_path / "src"
    source.mkdir()
    cqadupstack_zip(source / "cqadupstack.zip", {"android": ["1", "2"], "gis": ["1", "3", "4"]})
    for forum in ("android", "gis"):  # a local zip is checked against the catalogue's md5: let it know this one
        path = f"beir/cqadupstack/{forum}"
        monkeypatch.setitem(beir.DATASETS, path, dataclasses.replace(beir.DATASETS[path],
                                                                     md5=md5_of(str(source / "cqadupstack.zip"))))
    cache = str(tmp_path / "cache")
    android = ragloaders.load("beir/cqadupstack/android", "corpus", split="corpus", data_dir=str(source),
                              cache_dir=cache)
    gis = ragloaders.load("beir/cqadupstack/gis", "corpus", split="corpus", data_dir=str(source), cache_dir=cache)
    assert android["_id"] == ["1", "2"] and android["tags"] == [["android"]] * 2
    assert gis["_id"] == ["1", "3", "4"] and gis["title"][0] == "gis 1"
    with zipfile.ZipFile(source / "cqadupstack.zip") as archive:
        archive.extractall(tmp_path / "extracted")
    for data_dir in (tmp_path / "extracted", tmp_path / "extracted" / "cqadupstack",
                     tmp_path / "extracted" / "cqadupstack" / "gis"):
        again = ragloaders.load("beir/cqadupstack/gis", "corpus", split="corpus", data_dir=str(data_dir),
                                cache_dir=cache)
        assert again["_id"] == ["1", "3", "4"]


def test_num_proc_splits_one_file_into_line_aligned_ranges(tmp_path, monkeypatch):
    corpus = [{"_id": f"{i:06d}", "title": "", "text": "word " * (i % 50)} for i in range(3000)]
    folder = write_beir(tmp_path / "msmarco", corpus, [], {})
    monkeypatch.setattr(jsonl, "SHARD_BYTES", 16 << 10)
    shards = jsonl.shards_of(ragloaders.core.source_files.SourceFiles(str(folder)), "corpus.jsonl")
    assert len(shards) > 4 and shards[0].start == 0 and shards[-1].end == (folder / "corpus.jsonl").stat().st_size
    single = ragloaders.load("beir/msmarco", "corpus", split="corpus", data_dir=str(folder),
                             cache_dir=str(tmp_path / "a"))
    parallel = ragloaders.load("beir/msmarco", "corpus", split="corpus", data_dir=str(folder),
                               cache_dir=str(tmp_path / "b"), num_proc=2)
    assert single["_id"] == parallel["_id"] == [d["_id"] for d in corpus]
    assert parallel["text"] == [d["text"] for d in corpus]


def test_malformed_json_line_names_file_and_line(tmp_path):
    folder = write_beir(tmp_path / "arguana", [], [], {}, raw={
        "corpus.jsonl": b'{"_id": "a", "title": "", "text": "x"}\n{"_id": "b", "title": "", "text": "y"\n'})
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/arguana", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert error.value.line == 2 and str(folder / "corpus.jsonl") in str(error.value)
    assert "invalid JSON" in str(error.value) and "cut short" not in str(error.value)
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "a", "title": "", "text": "x"}\n{"_id": "b", "title": "", "te')
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/arguana", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "d"))
    assert_source_error(error.value, "corpus.jsonl", "JSON", "cut short", line=2)
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "a", "title": "", "text": "x"}\n{"_id": "b", "_id": "c"}')
    with pytest.raises(SourceError) as error:  # whole: not cut
        ragloaders.load("beir/arguana", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "e"))
    assert_source_error(error.value, "corpus.jsonl", "'_id'", line=2)
    assert "cut short" not in str(error.value)
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "a", "title": "", "text": "x"}\r{"_id": "b", "text": "y"}\r')
    with pytest.raises(SourceError) as error:  # bare CR line ends: one long unended line, not a cut file
        ragloaders.load("beir/arguana", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "f"))
    assert_source_error(error.value, "corpus.jsonl", "carriage returns with no line feed", line=1)
    assert "cut short" not in str(error.value)


def test_error_line_numbers_count_from_the_file_start_in_later_shards(tmp_path, monkeypatch):
    good = b"".join(json.dumps({"_id": str(i), "title": "", "text": "t" * 100}).encode() + b"\n" for i in range(500))
    folder = write_beir(tmp_path / "arguana", [], [], {}, raw={"corpus.jsonl": good + b'{"_id": 7, "text": "x"}\n'})
    monkeypatch.setattr(jsonl, "SHARD_BYTES", 8 << 10)
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/arguana", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert error.value.line == 501 and "`_id` must be a string" in str(error.value)


def test_missing_required_field_is_an_error(tmp_path):
    folder = write_beir(tmp_path / "arguana", [{"_id": "a", "title": ""}], [], {})
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/arguana", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(error.value, "corpus.jsonl", "`text`", line=1)
    assert error.value.line == 1


@pytest.mark.parametrize("line, facts", [
    (b"q1\td1\n", ("3 tab-separated columns", "got 2")),
    (b"q1\td1\t1\textra\n", ("3 tab-separated columns", "got 4")),
    (b"q1\td1\thigh\n", ("score", "integer", "'high'")),
])
def test_bad_qrels_line_names_file_and_line(tmp_path, line, facts):
    qrels = b"query-id\tcorpus-id\tscore\nq0\td0\t1\n" + line
    folder = write_beir(tmp_path / "arguana", [], [], {}, raw={"qrels/test.tsv": qrels})
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/arguana", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(error.value, "qrels/test.tsv", *facts, line=3)
    assert error.value.line == 3 and error.value.path.endswith("qrels/test.tsv")


def test_qrels_without_header_is_an_error(tmp_path):
    folder = write_beir(tmp_path / "arguana", [], [], {}, raw={"qrels/test.tsv": b"q0\td0\t1\n"})
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/arguana", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(error.value, "qrels/test.tsv", repr("query-id\tcorpus-id\tscore"), r"b'q0\td0", line=1)
    assert error.value.line == 1


def test_a_bom_before_the_qrels_header_is_skipped_and_one_anywhere_else_is_refused(tmp_path):
    """A spreadsheet's UTF-8 BOM before the header is no part of it (as at the start of a JSONL or run file); one
    starting a later line is that line's query id's first character; a second one before the header is refused."""
    bom = b"\xef\xbb\xbf"
    qrels = bom + b"query-id\tcorpus-id\tscore\r\nq0\td0\t1\r\n" + bom + b"q1\td1\t2\r\n"
    folder = write_beir(tmp_path / "arguana", [], [], {}, raw={"qrels/test.tsv": qrels})
    rows = ragloaders.load("beir/arguana", "qrels", split="test", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert rows.to_list() == [{"query-id": "q0", "corpus-id": "d0", "score": 1},
                              {"query-id": "\ufeffq1", "corpus-id": "d1", "score": 2}]
    (folder / "qrels" / "test.tsv").write_bytes(bom + bom + b"query-id\tcorpus-id\tscore\nq0\td0\t1\n")
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/arguana", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(error.value, "qrels/test.tsv", repr("query-id\tcorpus-id\tscore"), line=1)


def test_missing_file_is_named(tmp_path):
    folder = write_beir(tmp_path / "nfcorpus", [], [], {"train": [], "test": []})  # dev.tsv missing
    with pytest.raises(MissingSourceError, match=r"qrels/dev\.tsv"):
        ragloaders.load("beir/nfcorpus", "qrels", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingSourceError) as error:
        ragloaders.load("beir/nfcorpus", "corpus", data_dir=str(tmp_path / "empty"), cache_dir=str(tmp_path / "c"))
    assert_names(error.value, tmp_path / "empty", "corpus.jsonl", "nfcorpus.zip")
    with pytest.raises(MissingSourceError) as error:
        ragloaders.load("beir/nfcorpus", "corpus", data_dir=str(tmp_path / "absent"), cache_dir=str(tmp_path / "c"))
    assert_names(error.value, tmp_path / "absent", "data_dir")


def test_datasets_that_cannot_be_downloaded_say_where_to_get_them(tmp_path):
    for name in ("bioasq", "signal1m", "trec-news", "robust04"):
        with pytest.raises(MissingSourceError) as error:
            ragloaders.load(f"beir/{name}", "corpus", cache_dir=str(tmp_path))
        assert_names(error.value, name, "https://", "data_dir")


def test_a_failed_build_leaves_nothing_a_later_call_takes_as_complete(tmp_path):
    folder = write_beir(tmp_path / "arguana", [{"_id": "a", "title": "", "text": "x"}], [], {})
    good = (folder / "corpus.jsonl").read_bytes()
    (folder / "corpus.jsonl").write_bytes(good + b"not json\n")
    cache = tmp_path / "cache"
    with pytest.raises(SourceError):
        ragloaders.load("beir/arguana", "corpus", data_dir=str(folder), cache_dir=str(cache))
    assert not [p for p in cache.rglob("dataset_info.json")]
    (folder / "corpus.jsonl").write_bytes(good + good.replace(b'"a"', b'"b"'))
    assert ragloaders.load("beir/arguana", "corpus", split="corpus", data_dir=str(folder),
                           cache_dir=str(cache))["_id"] == ["a", "b"]


def test_editing_a_source_file_rebuilds(tmp_path):
    folder = write_beir(tmp_path / "arguana", [{"_id": "a", "title": "", "text": "old"}], [], {})
    cache = str(tmp_path / "cache")
    assert ragloaders.load("beir/arguana", "corpus", split="corpus", data_dir=str(folder), cache_dir=cache)["text"] == [
        "old"]
    (folder / "corpus.jsonl").write_text(json.dumps({"_id": "a", "title": "", "text": "new, longer"}) + "\n")
    assert ragloaders.load("beir/arguana", "corpus", split="corpus", data_dir=str(folder), cache_dir=cache)["text"] == [
        "new, longer"]


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A local HTTP server on 127.0.0.1 standing in for the official BEIR download site."""
    root = tmp_path / "site"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serve_in_thread(server)
    monkeypatch.setenv(beir.BASE_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    yield root
    server.shutdown()


def test_download_verifies_md5_and_is_cached(served, tmp_path):
    shutil.copy(NFCORPUS_ZIP, served / "nfcorpus.zip")
    cache = str(tmp_path / "cache")
    qrels = ragloaders.load("beir/nfcorpus", "qrels", cache_dir=cache)
    assert qrels["test"].num_rows == NFCORPUS_COUNTS["test"]
    (served / "nfcorpus.zip").unlink()  # the second config comes from the download cache
    assert ragloaders.load("beir/nfcorpus", "queries", split="queries", cache_dir=cache).num_rows == 3_237


def test_download_with_wrong_size_is_refused(served, tmp_path):
    with zipfile.ZipFile(served / "nfcorpus.zip", "w") as archive:
        archive.writestr("nfcorpus/corpus.jsonl", '{"_id": "x", "title": "", "text": "tampered"}\n')
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/nfcorpus", "corpus", cache_dir=str(tmp_path / "cache"))
    size = (served / "nfcorpus.zip").stat().st_size
    assert_source_error(error.value, "nfcorpus.zip", f"{size} bytes", 2448432, "--data-dir")


def test_download_with_wrong_md5_is_refused_and_not_kept(served, tmp_path):
    tampered = bytearray(NFCORPUS_ZIP.read_bytes())
    tampered[len(tampered) // 2] ^= 0xFF  # same size, different content
    (served / "nfcorpus.zip").write_bytes(bytes(tampered))
    cache = str(tmp_path / "cache")
    with pytest.raises(SourceError) as error:
        ragloaders.load("beir/nfcorpus", "corpus", cache_dir=cache)
    assert_source_error(error.value, "nfcorpus.zip", f"expected {beir.DATASETS['beir/nfcorpus'].md5}", "--data-dir")
    shutil.copy(NFCORPUS_ZIP, served / "nfcorpus.zip")  # the mirror is fixed: the next call downloads again
    assert ragloaders.load("beir/nfcorpus", "corpus", split="corpus", cache_dir=cache).num_rows == 3_633


def test_build_then_load_dataset_round_trip(tmp_path, nfcorpus_build, nfcorpus_loaded):
    out = nfcorpus_build.out
    assert out.is_dir() and [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []  # no work folder
    for config in beir_layout.CONFIG_PLANS:
        published = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hf"))
        assert list(published) == list(nfcorpus_loaded[config])
        for split in published:
            assert published[split].features == nfcorpus_loaded[config][split].features
            assert published[split].data.table.equals(nfcorpus_loaded[config][split].data.table)
        streamed = datasets.load_dataset(str(out), config, split=list(published)[0], streaming=True)
        assert rows(streamed.take(50)) == rows(published[list(published)[0]].select(range(50)))


def test_cli_list_and_build(tmp_path, capsys):
    assert cli_main(["list"]) == 0
    listed = dict(line.split("\t")[:2] for line in capsys.readouterr().out.splitlines())  # path, configs, sizes
    # msmarco and the 17 BEIR test sets other than cqadupstack, cqadupstack's 12 forums, and its group line
    assert len([p for p in listed if p.startswith("beir/")]) == 18 + 12 + 1
    assert listed["beir/cqadupstack"].startswith("a group of 12 paths")
    assert listed["beir/scifact"] == "corpus queries qrels"
    out = tmp_path / "out"
    assert cli_main(["build", "beir/scifact", "--data-dir", str(DATA / "beir" / "scifact"), "--out", str(out),
                     "--cache-dir", str(tmp_path / "c")]) == 2  # scifact cut has no queries.jsonl
    assert "queries.jsonl" in capsys.readouterr().err and not out.exists()


def test_schemas_never_use_the_json_feature_type():
    for dataset in beir.DATASETS.values():
        for config in beir_layout.CONFIG_PLANS:
            schema = beir_layout.output_schema(dataset, config)
            features = datasets.Features.from_arrow_schema(schema)
            assert "Json" not in repr(features)
            assert schema.field("_id" if config != "qrels" else "query-id").type == pa.string()


def test_cache_identity_differs_per_dataset_and_source(tmp_path):
    a = ragloaders.builder("beir/nfcorpus", "corpus", data_dir=str(NFCORPUS_ZIP.parent), cache_dir=str(tmp_path))
    b = ragloaders.builder("beir/scifact", "corpus", data_dir=str(DATA / "beir" / "scifact"), cache_dir=str(tmp_path))
    c = ragloaders.builder("beir/nfcorpus", "corpus", cache_dir=str(tmp_path))
    assert len({a.cache_dir, b.cache_dir, c.cache_dir}) == 3
    assert os.path.commonpath([a.cache_dir, str(tmp_path)]) == str(tmp_path)
