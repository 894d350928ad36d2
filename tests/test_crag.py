"""CRAG builder on the official example file and on v4 / v5 / task-3 files generated from its real records."""

from __future__ import annotations

import bz2
import dataclasses
import functools
import http.server
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import datasets
import pytest
import ragloaders
from conftest import DATA, assert_names, assert_source_error
from local_http import serve_in_thread
from ragloaders import MissingSourceError, SourceError
from ragloaders.benchmarks.crag import builder as crag
from ragloaders.benchmarks.crag import catalogue as crag_catalogue
from ragloaders.core.html_text import html_to_text

EXAMPLE = DATA / "crag" / "dev_data.jsonl.bz2"
T12_V4, T12_V5 = "crag_task_1_and_2_dev_v4.jsonl.bz2", "crag_task_1_and_2_dev_v5.jsonl.bz2"
POPULARITY = ("head", "torso", "tail")


@functools.lru_cache(maxsize=1)
def example_records() -> tuple[dict, ...]:
    with bz2.open(EXAMPLE) as f:
        return tuple(json.loads(line) for line in f)


def release_record(record: dict, index: int, version: str) -> dict:
    """A real example record in a release's shape: alt_ans a list, both splits used, v5 with popularity.

    The HTML is cut to its first 20,000 characters to keep the fixtures quick to compress; the example file's
    own tests cover pages of 1.5 MB.
    """
    out = {k: v for k, v in record.items() if k not in ("alternative_answers", "search_results")}
    out["alt_ans"] = [f"alt {index}"] if index % 3 == 0 else []
    out["split"] = index % 2
    if version == "v5":
        out["popularity"] = POPULARITY[index % 3]
    out["search_results"] = [{**page, "page_result": page["page_result"][:20_000]} for page in record["search_results"]]
    return out


def write_bz2(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(bz2.compress(b"".join(line + b"\n" for line in lines), 1))
    return path


def release_lines(version: str) -> list[bytes]:
    return [json.dumps(release_record(r, i, version)).encode() for i, r in enumerate(example_records())]


@pytest.fixture(scope="session")
def v4_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("v4")
    write_bz2(folder / T12_V4, release_lines("v4"))
    return folder


@pytest.fixture(scope="session")
def v5_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("v5")
    write_bz2(folder / T12_V5, release_lines("v5"))
    return folder


def tar_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        folder = tarfile.TarInfo("crag_task_3_dev")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def task3_members(lines: list[bytes]) -> dict[str, bytes]:
    """Three JSONL shards (3, 3 and 4 records) and a non-JSONL file, as a release tar might hold."""
    cuts = [lines[:3], lines[3:6], lines[6:]]
    members = {f"crag_task_3_dev/shard_{i}.jsonl": b"".join(x + b"\n" for x in cut) for i, cut in enumerate(cuts)}
    members["crag_task_3_dev/README.txt"] = b"not data\n"
    return members


def write_parts(folder: Path, stem: str, first: int, data: bytes, count: int = 4) -> list[Path]:
    size = -(-len(data) // count)
    paths = []
    for index in range(count):
        path = folder / f"{stem}.part{first + index}"
        path.write_bytes(data[index * size:(index + 1) * size])
        paths.append(path)
    return paths


@pytest.fixture(scope="session")
def task3_archive() -> bytes:
    return bz2.compress(tar_bytes(task3_members(release_lines("v5"))), 1)


@pytest.fixture
def task3_v4(tmp_path, task3_archive) -> Path:
    write_parts(tmp_path, "crag_task_3_dev_v4.tar.bz2", 1, task3_archive)
    return tmp_path


@pytest.fixture
def task3_v5(tmp_path, task3_archive) -> Path:
    write_parts(tmp_path, "crag_task_3_dev_v5.tar.bz2", 0, task3_archive)
    return tmp_path


def load(path: str, config: str, data_dir: Path, cache: Path, **kwargs):
    return ragloaders.load(path, config, data_dir=str(data_dir), cache_dir=str(cache), **kwargs)


@pytest.fixture(scope="session")
def example(crag_build):
    """`example(config)`: the example file's config, from the session's shared build of it."""
    assert crag_build.data_dir == str(EXAMPLE.parent)
    return functools.lru_cache(maxsize=None)(crag_build.load)


def expected_default(record: dict) -> dict:
    row = {name: record.get(name) for name in crag_catalogue.RECORDS_SCHEMA.names}
    if "alternative_answers" in record:
        row["alt_ans"] = json.loads(record["alternative_answers"].replace("'", '"'))
    return row


# --- the official example file -------------------------------------------------------------------------


def test_example_default_keeps_every_value(example):
    dataset = example("records")
    # every example record has split 1: validation is empty here (and left out of a built folder)
    assert list(dataset) == ["validation", "test"] and dataset["validation"].num_rows == 0
    rows = dataset["test"].to_list()
    assert rows == [expected_default(r) for r in example_records()]
    pages = [p for row in rows for p in row["search_results"]]
    assert "nan" in [row["answer"] for row in rows]
    assert "" in [p["page_result"] for p in pages]
    modified = [p["page_last_modified"] for p in pages]
    assert "" in modified and any(m.startswith(" ") for m in modified)
    assert max(len(p["page_result"]) for p in pages) > 1_500_000
    assert all(row["alt_ans"] == [] and row["popularity"] is None for row in rows)
    assert dataset["test"].features["search_results"].feature["page_result"] == datasets.Value("large_string")


def test_example_queries(example):
    queries = example("queries")["test"]
    assert queries.column_names[:2] == ["_id", "text"]
    records = example_records()
    assert queries["_id"] == [r["interaction_id"] for r in records]
    assert queries["text"] == [r["query"] for r in records]
    assert queries["domain"] == [r["domain"] for r in records]
    assert queries["answer"] == [r["answer"] for r in records]


def test_example_corpus_one_row_per_distinct_page(example):
    corpus = example("corpus")["corpus"]
    pages = {}
    for record in example_records():
        for page in record["search_results"]:
            pages.setdefault((page["page_url"], page["page_result"]), page)
    assert corpus.num_rows == len(pages) < 50  # the example lists the same page twice in several records
    by_id = {row["_id"]: row for row in corpus}
    assert len(by_id) == corpus.num_rows
    for (url, html), page in pages.items():
        row = by_id[crag.page_id(url, html)]
        assert (row["url"], row["html"], row["title"]) == (url, html, page["page_name"])
        assert row["last_modified"] == page["page_last_modified"]
        assert row["text"] == html_to_text(html)
    assert "" in corpus["html"] and "" in corpus["text"]
    assert all(len(i) == 20 for i in by_id)


@pytest.mark.slow  # (seconds; CI runs it)
def test_corpus_ids_do_not_depend_on_file_order(example, tmp_path):
    folder = tmp_path / "reversed"
    folder.mkdir()
    lines = [json.dumps(r).encode() for r in reversed(example_records())]
    write_bz2(folder / "dev_data.jsonl.bz2", lines)
    forward = example("corpus")["corpus"]
    backward = load("crag/task_1_and_2", "corpus", folder, tmp_path / "b")["corpus"]
    assert sorted(forward["_id"]) == sorted(backward["_id"])
    assert forward["_id"] != backward["_id"]  # same ids, other order


def test_example_search_results(example):
    results = example("search_results")["test"]
    corpus_ids = set(example("corpus")["corpus"]["_id"])
    records = example_records()
    assert results.num_rows == sum(len(r["search_results"]) for r in records) == 50
    rows = results.to_list()
    assert [row["rank"] for row in rows[:5]] == [1, 2, 3, 4, 5]
    assert {row["corpus-id"] for row in rows} == corpus_ids
    first = records[0]["search_results"]
    assert rows[0]["corpus-id"] == rows[1]["corpus-id"]  # record 1 lists its first page twice: both kept
    assert [row["page_snippet"] for row in rows[:5]] == [p["page_snippet"] for p in first]


def test_example_top_ranked(example):
    ranked = example("top_ranked")["test"]
    records = example_records()
    assert ranked.column_names == ["query-id", "corpus-ids"]
    assert ranked.features["corpus-ids"] == datasets.List(datasets.Value("string"))
    assert ranked["query-id"] == [r["interaction_id"] for r in records]
    expected = [[crag.page_id(p["page_url"], p["page_result"]) for p in r["search_results"]] for r in records]
    assert ranked["corpus-ids"] == expected
    assert len(set(expected[0])) < len(expected[0])  # record 1 lists its first page twice: both positions kept
    results = example("search_results")["test"]
    assert [i for ids in ranked["corpus-ids"] for i in ids] == results["corpus-id"]
    assert {i for ids in ranked["corpus-ids"] for i in ids} == set(example("corpus")["corpus"]["_id"])


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (("a\0b", "c"), ("a", "b\0c")),  # the old url + NUL + html encoding gave both the same bytes
        (("a", "\0"), ("a\0", "")),
        ((None, "<p>x</p>"), ("", "<p>x</p>")),  # null is not ""
        (("https://x", None), ("https://x", "")),
        ((None, None), ("", "")),
        ((None, ""), ("", None)),
    ],
)
def test_page_ids_are_unambiguous(one, other):
    assert crag.page_id(*one) != crag.page_id(*other)
    assert crag.page_id(*one) == crag.page_id(*one) and len(crag.page_id(*one)) == 20


def test_pages_that_shared_an_id_are_all_in_corpus(tmp_path):
    pages = [("a\0b", "c"), ("a", "b\0c"), ("https://x", None), ("https://x", ""), ("https://x", "")]
    record = {"interaction_id": "q1", "query": "q", "split": 1, "search_results": [
        {"page_name": f"p{i}", "page_url": url, "page_snippet": "s", "page_result": html, "page_last_modified": ""}
        for i, (url, html) in enumerate(pages)]}
    write_bz2(tmp_path / T12_V5, [json.dumps(record).encode()])
    corpus = load("crag/task_1_and_2", "corpus", tmp_path, tmp_path / "c")["corpus"]
    assert [(row["url"], row["html"], row["title"]) for row in corpus] == [(u, h, f"p{i}") for i, (u, h) in
                                                                         enumerate(pages[:4])]
    assert corpus["text"][2:4] == [None, ""]
    ranked = load("crag/task_1_and_2", "top_ranked", tmp_path, tmp_path / "c")["test"]
    ids = ranked[0]["corpus-ids"]
    assert ids[:4] == corpus["_id"] and len(set(ids)) == 4 and ids[3] == ids[4]


def test_example_streaming_equals_prepared(example, tmp_path):
    prepared = example("records")["test"].to_list()
    streamed = load("crag/task_1_and_2", "records", EXAMPLE.parent, tmp_path, streaming=True)
    assert list(streamed["test"]) == prepared
    assert list(streamed["validation"]) == []


def test_example_corpus_streaming_equals_prepared(example, tmp_path):
    # streamed, `corpus` reads the source itself: the same pages, texts and order as from prepared `records`
    prepared = example("corpus")["corpus"].to_list()
    streamed = list(load("crag/task_1_and_2", "corpus", EXAMPLE.parent, tmp_path, streaming=True)["corpus"])
    assert len(streamed) == len(prepared) == 38 and streamed == prepared  # (the 38 distinct pages)


# --- v4 and v5 release shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v4", "v5"])
def test_release_default(version, v4_dir, v5_dir, tmp_path):
    folder = v4_dir if version == "v4" else v5_dir
    dataset = load("crag/task_1_and_2", "records", folder, tmp_path)
    records = [release_record(r, i, version) for i, r in enumerate(example_records())]
    assert dataset["validation"].to_list() == [expected_default(r) for r in records if r["split"] == 0]
    assert dataset["test"].to_list() == [expected_default(r) for r in records if r["split"] == 1]
    popularity = set(list(dataset["validation"]["popularity"]) + list(dataset["test"]["popularity"]))
    assert popularity == ({None} if version == "v4" else set(POPULARITY))


def test_every_release_has_one_schema(example, v4_dir, v5_dir, tmp_path):
    features = [
        (example(config) if folder == EXAMPLE.parent else load("crag/task_1_and_2", config, folder, tmp_path))[
            "test"].features for config in ("records", "queries") for folder in (EXAMPLE.parent, v4_dir, v5_dir)
    ]
    assert features[0] == features[1] == features[2] and features[3] == features[4] == features[5]


def test_both_splits_from_one_decompression(v5_dir, tmp_path, monkeypatch):
    opened = []
    original = crag.open_bz2
    monkeypatch.setattr(crag, "open_bz2", lambda *a, **k: opened.append(a) or original(*a, **k))
    dataset = load("crag/task_1_and_2", "search_results", v5_dir, tmp_path, num_proc=2)
    assert len(opened) == 1
    assert dataset["validation"].num_rows == dataset["test"].num_rows == 25
    assert not list(Path(tmp_path).rglob("*spool*"))  # the spool is gone with the build


def test_a_cache_build_holds_at_most_the_finished_cache_and_a_spool_file_on_disk(tmp_path, monkeypatch):
    # The example's records are all of the test split: the validation pass keeps every one in the spool, which
    # the test split then reads back, deleting each spool file once read. Into datasets' cache the spool is left
    # uncompressed (it holds what the cache will, so no CPU goes to compressing it), and so the cache and the
    # spool together stay within the finished cache and one spool file.
    from ragloaders.benchmarks.crag import spool as crag_spool
    from ragloaders.core import batch_spool

    monkeypatch.setattr(batch_spool, "FILE_BYTES", 256 << 10)
    sizes, codecs = [], set()
    write, replay = batch_spool.BatchSpool.write_table, crag_spool.Spool.replay

    def look() -> None:
        sizes.append(sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()))

    def written(self, *args):
        codecs.add(self.compression)
        write(self, *args)
        look()

    def replayed(self):
        for table in replay(self):
            look()
            yield table

    monkeypatch.setattr(batch_spool.BatchSpool, "write_table", written)
    monkeypatch.setattr(crag_spool.Spool, "replay", replayed)
    dataset = load("crag/task_1_and_2", "records", EXAMPLE.parent, tmp_path)
    look()

    assert dataset["test"].num_rows == 10 and dataset["validation"].num_rows == 0
    assert codecs == {None}
    assert not list(tmp_path.rglob("*spool*"))
    assert sizes[-1] > 10 << 20 and max(sizes) <= sizes[-1] + 2 * batch_spool.FILE_BYTES, (max(sizes), sizes[-1])


def test_newest_release_wins_and_release_picks(v4_dir, v5_dir, tmp_path):
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(v4_dir / T12_V4, both)
    shutil.copy(v5_dir / T12_V5, both)
    builder = ragloaders.builder("crag/task_1_and_2", "records", data_dir=str(both))
    assert builder.source_in(str(both)).release.name == "v5"
    newest = load("crag/task_1_and_2", "records", both, tmp_path / "c", split="test")
    assert set(newest["popularity"]) != {None}
    picked = ragloaders.builder("crag/task_1_and_2", "records", data_dir=str(both), release="v4",
                                cache_dir=str(tmp_path / "d"))
    picked.download_and_prepare()
    assert set(picked.as_dataset(split="test")["popularity"]) == {None}
    with pytest.raises(ValueError) as caught:
        ragloaders.builder("crag/task_1_and_2", "records", release="v6")
    assert_names(caught.value, "'v6'", "v5, v4, example")


def test_load_passes_config_kwargs_like_load_dataset(v4_dir, v5_dir, tmp_path):
    """`ragloaders.load(..., release="v4")` sets the config parameter, as `load_dataset(..., **config_kwargs)` does;
    each release gets its own cache, so asking for v5 after v4 never serves v4's rows."""
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(v4_dir / T12_V4, both)
    shutil.copy(v5_dir / T12_V5, both)
    cache = str(tmp_path / "cache")
    v4 = ragloaders.load("crag/task_1_and_2", "queries", data_dir=str(both), cache_dir=cache, release="v4")
    v5 = ragloaders.load("crag/task_1_and_2", "queries", data_dir=str(both), cache_dir=cache, release="v5")
    assert set(v4["test"]["popularity"]) == {None} and set(v5["test"]["popularity"]) != {None}
    assert ragloaders.builder("crag/task_1_and_2", "queries", release="v4").config.release == "v4"
    with pytest.raises(ValueError) as caught:
        ragloaders.load("crag/task_1_and_2", "queries", data_dir=str(both), release="v6")
    assert_names(caught.value, "'v6'", "v5, v4, example")


# --- errors name the file and the record ----------------------------------------------------------------


def broken_file(tmp_path: Path, number: int, line: bytes) -> Path:
    lines = release_lines("v4")[:4]
    lines[number - 1] = line
    return write_bz2(tmp_path / T12_V4, lines)


@pytest.mark.parametrize(
    ("line", "facts"),
    [
        (b'{"interaction_id": "x", "query": "q", "split": 0', ("JSON",)),
        (b'{"interaction_id": "x", "query": "q", "split": 0, "extra": 1}', ("'extra'", "'interaction_id'")),
        (b'{"query": "q", "split": 0}', ("`interaction_id`",)),
        (b'{"interaction_id": "x", "query": "q", "split": 2}', ("`split`", "0 (validation)", "1 (test)", "got 2")),
        (b'{"interaction_id": "x", "query": "q", "split": 0, "alternative_answers": "oops"}',
         ("`alternative_answers`", "'oops'")),
        (b'{"interaction_id": "x", "query": "q", "split": 0, "search_results": [{"page_rank": 1}]}',
         ("'page_rank'", "`search_results[0]`")),
        (b'{"interaction_id": "x", "query": 7, "split": 0}', ("`query`", "string", "got 7")),
        (b'{"interaction_id": "x", "query": "q", "split": 0, "search_results": [null]}',
         ("`search_results[0]`", "object", "null")),
    ],
)
def test_bad_record_names_file_and_record(tmp_path, line, facts):
    path = broken_file(tmp_path, 3, line)
    with pytest.raises(SourceError) as caught:
        load("crag/task_1_and_2", "records", tmp_path, tmp_path / "cache")
    assert_source_error(caught.value, T12_V4, *facts, record=3)
    assert caught.value.path == str(path) and caught.value.record == 3


def test_missing_fields_are_null(tmp_path):
    write_bz2(tmp_path / T12_V4, [b'{"interaction_id": "x", "query": "q", "split": 1}'])
    row = load("crag/task_1_and_2", "records", tmp_path, tmp_path / "cache")["test"][0]
    assert row["answer"] is None and row["search_results"] is None and row["alt_ans"] is None


def test_truncated_bz2_is_an_error(tmp_path):
    data = bz2.compress(b"".join(line + b"\n" for line in release_lines("v4")), 1)
    (tmp_path / T12_V4).write_bytes(data[: len(data) // 2])
    with pytest.raises(SourceError) as caught:
        load("crag/task_1_and_2", "records", tmp_path, tmp_path / "cache")
    assert_source_error(caught.value, T12_V4, "truncated")
    assert T12_V4 in caught.value.path


def test_no_files_lists_expected_names(tmp_path):
    with pytest.raises(MissingSourceError) as caught:
        load("crag/task_1_and_2", "records", tmp_path, tmp_path / "cache")
    assert_names(caught.value, tmp_path, T12_V5, T12_V4, "dev_data.jsonl.bz2")
    with pytest.raises(MissingSourceError) as caught:
        load("crag/task_3", "records", tmp_path, tmp_path / "cache")
    assert_names(caught.value, *(f"crag_task_3_dev_v5.tar.bz2.part{n}" for n in range(4)))
    assert str(caught.value).count("crag_task_3_dev_v5.tar.bz2") == 5  # the four parts, or the file whole


# --- task 3: a tar of JSONL shards, bz2, cut into parts ---------------------------------------------------


@pytest.mark.parametrize("fixture", ["task3_v4", "task3_v5"])
def test_task3_reads_every_member_through_the_parts(fixture, request, tmp_path):
    folder = request.getfixturevalue(fixture)
    dataset = load("crag/task_3", "records", folder, tmp_path / "cache")
    records = [release_record(r, i, "v5") for i, r in enumerate(example_records())]
    assert dataset["validation"].to_list() == [expected_default(r) for r in records if r["split"] == 0]
    assert dataset["test"].to_list() == [expected_default(r) for r in records if r["split"] == 1]
    assert not list(folder.glob("*.tar")) and not list(folder.rglob("*.jsonl"))  # nothing joined or extracted


def test_task3_streaming(task3_v5, tmp_path):
    prepared = load("crag/task_3", "queries", task3_v5, tmp_path / "cache")
    streamed = load("crag/task_3", "queries", task3_v5, tmp_path / "cache", streaming=True)
    for split in ("validation", "test"):
        assert list(streamed[split]) == prepared[split].to_list()


def test_task3_joined_archive_accepted(tmp_path, task3_archive):
    (tmp_path / "crag_task_3_dev_v4.tar.bz2").write_bytes(task3_archive)
    assert load("crag/task_3", "search_results", tmp_path, tmp_path / "cache")["test"].num_rows == 25


@pytest.mark.parametrize("missing", ["part2", "part4"])
def test_task3_missing_part(task3_v4, tmp_path, missing):
    (task3_v4 / f"crag_task_3_dev_v4.tar.bz2.{missing}").unlink()
    with pytest.raises(SourceError) as caught:
        load("crag/task_3", "records", task3_v4, tmp_path / "cache")
    assert_source_error(caught.value, missing, "missing")
    assert caught.value.path.endswith(missing)


def test_task3_bad_line_names_member_and_record(tmp_path):
    lines = release_lines("v5")
    lines[4] = b'{"interaction_id": "x", "query": "q", "split": 0, "oops": 1}'
    archive = bz2.compress(tar_bytes(task3_members(lines)), 1)
    write_parts(tmp_path, "crag_task_3_dev_v5.tar.bz2", 0, archive)
    with pytest.raises(SourceError, match="oops") as caught:
        load("crag/task_3", "records", tmp_path, tmp_path / "cache")
    assert caught.value.path == f"{tmp_path}/crag_task_3_dev_v5.tar.bz2.part*:crag_task_3_dev/shard_1.jsonl"
    assert caught.value.record == 2


# --- download ---------------------------------------------------------------------------------------------


@pytest.fixture
def mirror(v5_dir, tmp_path, monkeypatch):
    """The v5 file served over HTTP on 127.0.0.1 at `<base>/data/<file>`."""
    root = tmp_path / "mirror"
    (root / "data").mkdir(parents=True)
    shutil.copy(v5_dir / T12_V5, root / "data")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serve_in_thread(server)
    monkeypatch.setenv(crag_catalogue.BASE_URL_ENV, f"http://127.0.0.1:{server.server_port}")
    yield os.path.getsize(root / "data" / T12_V5)
    server.shutdown()


def with_v5_size(monkeypatch, size: int) -> None:
    releases = tuple(dataclasses.replace(r, sizes=(size,)) if (r.task, r.name) == ("task_1_and_2", "v5") else r
                     for r in crag.RELEASES)
    monkeypatch.setattr(crag, "RELEASES", releases)


def test_download_checks_size(mirror, monkeypatch, tmp_path):
    with_v5_size(monkeypatch, mirror)
    dataset = ragloaders.load("crag/task_1_and_2", "queries", cache_dir=str(tmp_path / "ok"))
    assert dataset["validation"].num_rows + dataset["test"].num_rows == 10
    with_v5_size(monkeypatch, mirror + 1)
    with pytest.raises(SourceError) as caught:
        ragloaders.load("crag/task_1_and_2", "queries", cache_dir=str(tmp_path / "bad"))
    assert_source_error(caught.value, T12_V5, f"{mirror} bytes", mirror + 1)


def test_official_urls():
    release = ragloaders.builder("crag/task_3", "records").releases()[0]
    assert [d.url for d in release.downloads()][0] == (
        "https://github.com/facebookresearch/CRAG/raw/refs/heads/main/data/crag_task_3_dev_v5.tar.bz2.part0"
    )
    assert sum(d.size for d in release.downloads()) == 3 * 2_147_483_648 + 1_283_117_287


# --- memory: tables bounded by bytes ----------------------------------------------------------------------


def test_tables_bounded_by_bytes(v5_dir, monkeypatch):
    monkeypatch.setattr(crag, "BATCH_BYTES", 150_000)
    builder = ragloaders.builder("crag/task_1_and_2", "records", data_dir=str(v5_dir))
    source = builder.source_in(str(v5_dir))
    tables = [table for _, table in builder._tables_from_source(source, split=1)]
    assert sum(t.num_rows for t in tables) == 5 and len(tables) >= 2
    largest_record = max(len(line) for line in release_lines("v5"))
    assert all(t.nbytes <= 150_000 + 2 * largest_record for t in tables)


# --- ragloaders validate and build -------------------------------------------------------------------------


def test_validate_knows_crag(v5_dir, tmp_path):
    from ragloaders.publish.validate import integrity

    report = integrity("crag/task_1_and_2", data_dir=str(v5_dir), cache_dir=str(tmp_path))
    # a 10-record file named like v5 is not the published v5 file: its counts are shown, not compared
    assert report["errors"] == [] and report["source"]["release"] == "v5"
    assert set(report["source"]["not_compared"]) >= {"records", "queries"}
    note = report["source"]["files"][0]["note"]
    assert "the official crag_task_1_and_2_dev_v5.jsonl.bz2 is 739,310,088 bytes" in note
    assert {f["published"] for f in report["splits"] if f["config"] == "queries" and "published" in f} <= {None}
    assert {(f["check"], f["config"]) for f in report["warnings"]} == {("duplicate_pairs", "search_results")}


# --- ragloaders build round trip --------------------------------------------------------------------------


def test_build_round_trips_through_load_dataset(v5_dir, tmp_path):
    from ragloaders.cli import main

    out = tmp_path / "hub"
    assert main(["build", "crag/task_1_and_2", "--data-dir", str(v5_dir), "--out", str(out),
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    for config in crag.SCHEMAS:
        ours = load("crag/task_1_and_2", config, v5_dir, tmp_path / "cache")
        hub = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hub-cache"))
        assert set(hub) == set(ours)
        for split in ours:
            assert hub[split].features == ours[split].features
            assert hub[split].to_list() == ours[split].to_list()


def test_page_ids_hashed_from_arrow_equal_page_id_of_the_python_strings(crag_build):
    """The derived configs hash pages from the `records` Arrow data; the ids must be `page_id`'s, for the real pages
    and for null, empty and non-ASCII fields, in an array sliced at an offset."""
    import pyarrow as pa

    records = crag_build.load("records")["test"].data.table.column("search_results").combine_chunks()
    pages = records.flatten()
    expected = [crag.page_id(p["page_url"], p["page_result"]) for p in pages.to_pylist()]
    assert len(expected) == 50 and crag.page_ids_of(pages) == expected
    fields = [(None, None), ("", ""), (None, ""), ("", None), ("https://é.example/日本", "<p>\U0001f600</p>"),
              ("u", "h")]
    odd = [{"page_url": url, "page_result": html} for url, html in fields]
    array = pa.array(odd * 2, pa.struct([("page_url", pa.string()), ("page_result", pa.large_string())]))[3:10]
    assert crag.page_ids_of(array) == [crag.page_id(p["page_url"], p["page_result"]) for p in array.to_pylist()]
    assert len(set(crag.page_ids_of(array[:4]))) == 4  # null and "" told apart


@pytest.mark.parametrize("cache", [pytest.param(True, marks=pytest.mark.slow), False])
def test_a_build_hashes_each_page_once_and_a_changed_records_file_is_hashed_again(cache, example, tmp_path,
                                                                                   monkeypatch):
    # corpus hashes every page of `records` for its ids; search_results and top_ranked take those ids (PAGE_IDS)
    # instead of reading the HTML again (from Parquet they do not read it at all), while the file is unchanged.
    from ragloaders.publish.build import build_folder

    hashed, hash_pages = [], crag.page_ids_of
    monkeypatch.setattr(crag, "page_ids_of", lambda pages: hashed.append(len(pages)) or hash_pages(pages))
    crag.PAGE_IDS.clear()
    build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(EXAMPLE.parent),
                 cache_dir=str(tmp_path / "cache") if cache else None)
    assert sum(hashed) == 50  # the example's 10 records x 5 pages, hashed once
    expected = {row["query-id"]: row["corpus-ids"] for row in example("top_ranked")["test"]}
    parquet = sorted((tmp_path / "out" / "records").glob("*.parquet"))
    columns, fields = crag.RECORD_COLUMNS["top_ranked"], crag.PAGE_FIELDS["top_ranked"]
    read = lambda: {row["interaction_id"]: [page[crag.PAGE_ID] for page in row["search_results"]]  # noqa: E731
                    for row, _ in crag.page_record_rows_from([str(p) for p in parquet], columns, fields)}
    hashed.clear()
    assert read() == expected and sum(hashed) == 50  # these Parquet files were not read whole before: hashed
    assert read() == expected and sum(hashed) == 50  # now known
    os.utime(parquet[0])  # the same bytes, but the file is not known to be unchanged: hashed again
    assert read() == expected and sum(hashed) == 100


@pytest.mark.slow  # (seconds; CI runs it)
def test_corpus_from_arrow_pages_is_cut_and_valued_as_the_row_path(monkeypatch):
    # `corpus` keeps the pages as Arrow data and extracts their text in worker processes; its tables must be the
    # ones a plain row-by-row reading of the same records makes (each new page once, its text `html_to_text` here),
    # cut at the same rows: by rows, by bytes (counted in characters of HTML and text: the bounds below fall one
    # character either side of a cut), with text batches that cut records apart from tables.
    import pyarrow as pa
    from ragloaders.core.readers.arrow_batches import tables_from_rows

    source = crag.CragBuilder("crag/task_1_and_2", "corpus").source_in(str(EXAMPLE.parent))
    seen: set[str] = set()
    rows = []
    for record, _ in source.records():
        for page in record["search_results"]:
            if (pid := crag.id_of(page)) not in seen:
                seen.add(pid)
                html = page["page_result"]
                text = None if html is None else html_to_text(html)
                rows.append(({"_id": pid, "title": page["page_name"], "text": text, "html": html,
                              "url": page["page_url"], "last_modified": page["page_last_modified"]},
                             len(html or "") + len(text or "")))
    first_two = rows[0][1] + rows[1][1]
    assert rows[0][0]["html"].encode() != rows[0][0]["html"].encode("latin-1", "replace")  # not ASCII

    def record_pages():
        for table, _, _ in source.record_tables():
            pages = pa.concat_arrays([chunk.flatten() for chunk in table.column("search_results").chunks])
            yield pages, crag.page_ids_of(pages)

    for max_rows, max_bytes in ((4, 700_000), (1000, first_two), (1000, first_two + 1)):
        monkeypatch.setattr(crag, "BATCH_ROWS", max_rows)
        monkeypatch.setattr(crag, "BATCH_BYTES", max_bytes)
        monkeypatch.setattr(crag, "TEXT_BATCH_BYTES", 500_000)
        by_rows = list(tables_from_rows(iter(rows), crag.SCHEMAS["corpus"], max_rows=max_rows, max_bytes=max_bytes))
        by_arrow = list(crag.corpus_tables(crag.new_page_batches(record_pages())))
        assert [t.num_rows for t in by_arrow] == [t.num_rows for t in by_rows]
        for arrow, from_rows in zip(by_arrow, by_rows):
            assert arrow.schema == from_rows.schema and arrow.equals(from_rows)
        if max_rows == 4:
            assert any(t.num_rows == 4 for t in by_rows) and any(t.num_rows < 4 for t in by_rows[:-1])
        else:
            assert (by_rows[0].num_rows == 2) == (max_bytes == first_two)
