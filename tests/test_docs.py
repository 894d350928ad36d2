"""`ragloaders.docs` and `ragloaders docs`: rows by id from every sample (benchmark path with data_dir, built folder,
hub repository), ids byte for byte, the kept index rebuilt when its data changes or it is damaged, two processes
building it at once, and the command's one-line errors."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import ragloaders
from conftest import assert_names, assert_source_error
from conftest import run_cli as run
from ragloaders import cli
from ragloaders.lookup import DocumentNotFound, DuplicateIdError
from ragloaders.lookup.docstore import kept_index_path
from ragloaders.lookup.id_hash import string_hash, string_hashes
from ragloaders.lookup.id_index import HEADER, IdIndex

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = [("nfcorpus_build", "corpus", "path"), ("nfcorpus_build", "queries", "path"),
           pytest.param("crag_build", "corpus", "folder", marks=pytest.mark.slow),  # preparing it takes 7 s
           ("crag_build", "queries", "folder"),
           ("mmrag_build", "corpus", "path"), ("mmrag_build", "queries", "folder")]
"""(sample, config, read from): the benchmark path with its data_dir, or the folder `ragloaders build` wrote (CRAG's
corpus is prepared from the built folder, which is quicker than from the bz2 file)."""


def loaded_table(build, config: str) -> pa.Table:
    """Every split of `config` as `ragloaders.load` gives it, one after another."""
    return pa.concat_tables([dataset.data.table for dataset in build.load(config).values()])


def source_of(build, via: str) -> tuple[str, dict]:
    """(source, where) of a shared build read from its benchmark path or from its built folder."""
    if via == "path":
        return build.path, {"data_dir": build.data_dir, "cache_dir": build.cache_dir}
    return str(build.out), {"cache_dir": build.cache_dir}




@pytest.mark.parametrize("fixture, config, via", SAMPLES)
def test_every_row_of_every_sample_is_found_by_its_id(fixture, config, via, request):
    source, where = source_of(request.getfixturevalue(fixture), via)
    table = pa.concat_tables([dataset.data.table for dataset in ragloaders.load(source, config, **where).values()])
    store = ragloaders.docs(source, config, **where)
    ids = table.column("_id").to_pylist()
    assert len(store) == len(ids) > 0
    assert pa.Table.from_pylist(store.get_many(ids), schema=table.schema).equals(table)
    assert store.rows_of(ids[::-1]).tolist() == list(range(len(ids)))[::-1]
    for row in (0, len(ids) // 2, len(ids) - 1):
        assert store[ids[row]] == table.slice(row, 1).to_pylist()[0]
        assert ids[row] in store and store.get(ids[row]) == store[ids[row]]


def test_a_built_folder_gives_the_rows_of_the_path(nfcorpus_build, tmp_path):
    folder_store = ragloaders.docs(str(nfcorpus_build.out), "corpus", cache_dir=str(tmp_path / "c"))
    table = loaded_table(nfcorpus_build, "corpus")
    ids = table.column("_id").to_pylist()
    assert pa.Table.from_pylist(folder_store.get_many(ids), schema=table.schema).equals(table)


def test_missing_ids_asked_ids_and_order(nfcorpus_build):
    store = ragloaders.docs(nfcorpus_build.path, data_dir=nfcorpus_build.data_dir, cache_dir=nfcorpus_build.cache_dir)
    rows = store.get_many(["MED-14", "med-14", "MED-10", "MED-14", "", "MED-14 ", "\ud800", "MED-1O"])
    assert [r and r["_id"] for r in rows] == ["MED-14", None, "MED-10", "MED-14", None, None, None, None]
    with pytest.raises(DocumentNotFound) as caught:
        store["MED-014"]
    assert isinstance(caught.value, KeyError) and caught.value.id == "MED-014"
    assert_names(caught.value, "'MED-014'")
    assert store.get("nope", "fallback") == "fallback" and "nope" not in store and 10 not in store
    with pytest.raises(TypeError) as caught:
        store.get_many(["MED-10", 10])
    assert_names(caught.value, "strings", "int", "10")
    for wrong in (10, None, b"MED-10"):
        with pytest.raises(TypeError) as caught:
            store[wrong]
        assert_names(caught.value, "strings", type(wrong).__name__, str(wrong))
        with pytest.raises(TypeError) as caught:
            store.get_many(["MED-10", wrong])
        assert_names(caught.value, "strings", type(wrong).__name__, str(wrong))
    assert store.get("\ud800") is None and "\ud800" not in store  # no Arrow string holds a lone surrogate
    long_id = "x" * 5000
    with pytest.raises(KeyError) as caught:
        store[long_id]
    assert len(str(caught.value)) < 300 and "5,000 characters" in str(caught.value)
    assert store.get_many([]) == []


def test_a_source_without_ids_is_one_clear_error(nfcorpus_build):
    with pytest.raises(ValueError) as caught:
        ragloaders.docs(nfcorpus_build.path, "qrels", data_dir=nfcorpus_build.data_dir,
                        cache_dir=nfcorpus_build.cache_dir)
    assert_names(caught.value, "beir/nfcorpus qrels", "_id", "query-id, corpus-id, score")


def test_revision_is_refused_where_load_refuses_it(nfcorpus_build):
    with pytest.raises(ValueError) as by_docs:
        ragloaders.docs(nfcorpus_build.path, data_dir=nfcorpus_build.data_dir, revision="main")
    with pytest.raises(ValueError) as by_load:
        ragloaders.load(nfcorpus_build.path, "corpus", data_dir=nfcorpus_build.data_dir, revision="main")
    assert str(by_docs.value) == str(by_load.value)


# --- ids byte for byte ---------------------------------------------------------------------------------------

ODD_IDS = ["00123", "123 ", " 123", "0", "é", "e\u0301", "É", "q\u00a01", "a\tb", "line\u2028sep", "🦀", "\x1c",
           "<dbpedia:Émile_Gilbert>", "x" * 3000, "MED-10", "med-10", "１２３", "\ufeffbom"]


def write_beir_folder(folder: Path, ids: list[str]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for number, doc_id in enumerate(ids):
            f.write(json.dumps({"_id": doc_id, "title": f"t{number}", "text": f"text {number}"}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "text"}) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\t0\t1\n", encoding="utf-8")
    return folder


def test_odd_ids_are_found_byte_for_byte_and_nothing_else(tmp_path):
    folder = write_beir_folder(tmp_path / "odd", ODD_IDS)
    store = ragloaders.docs("beir-format", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert [store[doc_id]["title"] for doc_id in ODD_IDS] == [f"t{n}" for n in range(len(ODD_IDS))]
    for near in ["123", "0123", "00123 ", "123", "e", "ê", "q 1", "a b", "🦀 ", "Med-10", "x" * 2999, "bom",
                 "\x1c ", "123"]:
        assert near not in store, near
    assert store.get_many(["123", "00123"]) == [None, store["00123"]]


def test_a_repeated_id_is_refused_at_indexing_naming_it(tmp_path):
    folder = write_beir_folder(tmp_path / "dup", ["a", "00123", "b", "00123", "c"])
    with pytest.raises(DuplicateIdError) as caught:
        ragloaders.docs("beir-format", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert_source_error(caught.value, "corpus", "'00123'", "(1, 3)")


def test_hash_collisions_never_give_a_wrong_row(monkeypatch):
    """Every id given the same hash: each lookup must still compare bytes and find only its own row."""
    import ragloaders.lookup.id_index as id_index

    monkeypatch.setattr(id_index, "string_hashes", lambda values: np.zeros(len(values), dtype=np.uint64))
    monkeypatch.setattr(id_index, "string_hash", lambda value: 0)
    ids = pa.chunked_array([pa.array(ODD_IDS[:9]), pa.array(ODD_IDS[9:])])
    index = IdIndex.build(ids, "test")
    asked = ODD_IDS + ["123", "nope"]
    assert index.rows_of(asked).tolist() == list(range(len(ODD_IDS))) + [-1, -1]
    assert [index.row_of(doc_id) for doc_id in asked] == list(range(len(ODD_IDS))) + [-1, -1]
    with pytest.raises(DuplicateIdError) as caught:
        IdIndex.build(pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", "b"])]), "test")
    assert_source_error(caught.value, "test", "'b'", "(1, 3)")
    with pytest.raises(DuplicateIdError) as caught:  # ids of two splits: each row named in its split
        IdIndex.build(pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", "b"])]), "test", [("dev", 2), ("test", 2)])
    assert_source_error(caught.value, "test", "'b'", "(dev row 1, test row 1)")


def test_the_hash_is_the_same_for_any_slicing_or_offset_type():
    values = ODD_IDS + ["", "a", ""]
    whole = string_hashes(pa.array(values))
    assert whole.tolist() == [string_hash(value) for value in values]  # the one-id path agrees
    assert len(set(whole.tolist())) == len(set(values))
    assert (string_hashes(pa.array(values, pa.large_string())) == whole).all()
    assert (string_hashes(pa.array(values).slice(3, 7)) == whole[3:10]).all()
    assert (string_hashes(pa.chunked_array([pa.array(values[:5]), pa.array(values[5:])])) == whole).all()


# --- the kept index -----------------------------------------------------------------------------------------


@pytest.fixture
def own_copy(nfcorpus_build, tmp_path) -> tuple[str, str]:
    """(a copy of the built nfcorpus folder, a cache of its own): tests that change files change these."""
    folder = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, folder, ignore=shutil.ignore_patterns(".ragloaders*"))
    return str(folder), str(tmp_path / "cache")


def open_store(folder: str, cache: str):
    store = ragloaders.docs(folder, "corpus", cache_dir=cache)
    files = [entry["filename"] for dataset in ragloaders.load(folder, "corpus", cache_dir=cache).values()
             for entry in dataset.cache_files]
    assert store.kept_at == kept_index_path(files)
    return store, Path(store.kept_at), files


def test_the_index_is_kept_and_reopened_without_a_rebuild(own_copy, monkeypatch):
    store, kept, _ = open_store(*own_copy)
    assert kept.is_file() and kept.stat().st_size == HEADER.size + 8 * len(store)
    monkeypatch.setattr(IdIndex, "build", classmethod(lambda cls, ids, name: pytest.fail("rebuilt")))
    again, _, _ = open_store(*own_copy)
    assert again["MED-10"] == store["MED-10"]


def test_a_changed_data_file_means_a_new_index(own_copy):
    store, kept, files = open_store(*own_copy)
    first = kept.stat().st_ino
    os.utime(files[0], ns=(0, 10**18))  # same bytes, another modification time
    again, kept_again, _ = open_store(*own_copy)
    assert kept_again == kept and kept.stat().st_ino != first
    assert again["MED-10"] == store["MED-10"]


def test_a_replaced_data_file_gives_the_new_rows(own_copy):
    """The Arrow file `load` maps replaced by another (as datasets writes a new one): the new rows, by a new index."""
    folder, cache = own_copy
    store, kept, files = open_store(folder, cache)
    assert store.get("NEW-1") is None
    with pa.ipc.open_stream(pa.memory_map(files[0])) as reader:
        table = reader.read_all()
    ids = table.column("_id").to_pylist()
    old, ids[0] = ids[0], "NEW-1"
    table = table.set_column(0, table.schema.field(0), pa.array(ids, table.schema.field(0).type))
    replacement = files[0] + ".new"
    with pa.ipc.new_stream(replacement, table.schema) as writer:
        writer.write_table(table)
    os.replace(replacement, files[0])
    again, _, _ = open_store(folder, cache)
    assert again["NEW-1"]["text"] == table.column("text")[0].as_py() and old not in again


@pytest.mark.parametrize("damage", ["truncate", "flip a byte", "empty", "wrong rows, right checksum"])
def test_a_damaged_kept_index_is_never_trusted(own_copy, damage):
    store, kept, _ = open_store(*own_copy)
    data = bytearray(kept.read_bytes())
    if damage == "truncate":
        data = data[: len(data) - 5]
    elif damage == "flip a byte":
        data[HEADER.size + 3] ^= 0x40
    elif damage == "empty":
        data = bytearray()
    else:  # an index as an adversary could forge it: rows swapped between entries, the checksum recomputed
        entries = np.frombuffer(bytes(data[HEADER.size:]), dtype=np.uint64).copy()
        mask = np.uint64((1 << struct.unpack_from("<Q", data, 16)[0]) - 1)
        entries = (entries & ~mask) | np.roll(entries & mask, 1)
        data[HEADER.size:] = entries.tobytes()
        struct.pack_into("<Q", data, 24, zlib.crc32(entries.tobytes()))
    kept.write_bytes(bytes(data))
    again, _, _ = open_store(*own_copy)
    ids = store.table.column("_id").to_pylist()
    rows = again.get_many(ids)
    if damage == "wrong rows, right checksum":  # not detected, but no lookup gives another id's row
        assert all(row is None or row["_id"] == doc_id for row, doc_id in zip(rows, ids))
    else:
        assert [row["_id"] for row in rows] == ids
        assert kept.stat().st_size == HEADER.size + 8 * len(ids)


def _open_and_report(folder: str, cache: str, barrier, results) -> None:
    barrier.wait()
    store = ragloaders.docs(folder, "corpus", cache_dir=cache)
    results.put((len(store), [row["_id"] for row in store.get_many(["MED-10", "MED-14", "nope"]) if row]))


def test_two_processes_building_the_index_at_once(own_copy):
    folder, cache = own_copy
    ragloaders.load(folder, "corpus", cache_dir=cache)  # the Arrow data prepared: both processes race on the index
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [context.Process(target=_open_and_report, args=(folder, cache, barrier, results)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert [results.get(timeout=5) for _ in workers] == [(3633, ["MED-10", "MED-14"])] * 2
    store, kept, _ = open_store(folder, cache)
    assert kept.stat().st_size == HEADER.size + 8 * len(store)
    assert not [p for p in kept.parent.iterdir() if p.name.endswith(".partial")]


# --- the command ------------------------------------------------------------------------------------------------


def test_the_command_prints_one_json_line_per_id_in_order(nfcorpus_build):
    where = ["--data-dir", nfcorpus_build.data_dir, "--cache-dir", nfcorpus_build.cache_dir]
    code, out, _ = run("docs", "beir/nfcorpus", "MED-14", "MED-10", "MED-14", *where)
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["_id"] for row in rows] == ["MED-14", "MED-10", "MED-14"]
    store = ragloaders.docs("beir/nfcorpus", data_dir=nfcorpus_build.data_dir, cache_dir=nfcorpus_build.cache_dir)
    assert rows[1] == store["MED-10"]
    code, out, _ = run("docs", "beir/nfcorpus", "PLAIN-3", "--config", "queries", *where)
    assert code == 0 and json.loads(out)["text"] == "Breast Cancer Cells Feed on Cholesterol"


def test_the_command_errors_in_one_line(nfcorpus_build):
    where = ["--data-dir", nfcorpus_build.data_dir, "--cache-dir", nfcorpus_build.cache_dir]
    code, out, err = run("docs", "beir/nfcorpus", "MED-10", "med-10", "nope", *where)
    assert (code, out) == (2, "")
    assert err.splitlines() == ["ragloaders: error: beir/nfcorpus corpus has no row with _id 'med-10' (2 of the 3 ids "
                                "asked are missing); ids are compared byte for byte (--missing skip prints the others)"]
    code, out, err = run("docs", "beir/nfcorpus", "MED-10", "med-10", "--missing", "skip", *where)
    assert code == 0 and [json.loads(line)["_id"] for line in out.splitlines()] == ["MED-10"]
    assert "1 id(s) not in beir/nfcorpus corpus, skipped: 'med-10'" in err
    code, out, err = run("docs", "beir/nfcorpus", "x", "--config", "qrels", *where)
    assert code == 2 and len(err.splitlines()) == 1 and "has no _id column" in err


# --- a hub repository (the fake hub) ----------------------------------------------------------------------------

HUB_SCRIPT = r"""
import json, os, sys
from fake_hub import FakeHub, http
from huggingface_hub import set_client_factory
hub = FakeHub(sys.argv[1])
set_client_factory(lambda: http.Client(transport=http.MockTransport(hub.handle), follow_redirects=True))
files = {}
for root, _, names in os.walk(sys.argv[2]):
    for name in names:
        path = os.path.join(root, name)
        relative = os.path.relpath(path, sys.argv[2]).replace(os.sep, "/")
        if not relative.startswith(".ragloaders"):
            files[relative] = open(path, "rb").read()
hub.seed_repo("org/nf", files)
import ragloaders
store = ragloaders.docs("org/nf", cache_dir=sys.argv[3])
print(json.dumps([len(store), store["MED-10"], store.get_many(["MED-14", "nope"])]))
"""


@pytest.mark.slow
def test_a_hub_repository_gives_the_rows_of_the_path(nfcorpus_build, tmp_path):
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
                       HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=f"{ROOT / 'loaders'}{os.pathsep}{ROOT / 'tests'}")
    done = subprocess.run([sys.executable, "-c", HUB_SCRIPT, str(tmp_path / "hub"), str(nfcorpus_build.out),
                           str(tmp_path / "cache")], env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    count, med10, many = json.loads(done.stdout.strip().splitlines()[-1])
    store = ragloaders.docs(nfcorpus_build.path, data_dir=nfcorpus_build.data_dir, cache_dir=nfcorpus_build.cache_dir)
    assert (count, med10, many) == (len(store), store["MED-10"], [store["MED-14"], None])


def test_rows_are_taken_chunk_by_chunk_in_the_order_asked():
    from ragloaders.lookup.chunked_take import ChunkedRows

    table = pa.table({"_id": [f"{i:03d}" for i in range(50)], "n": list(range(50))})
    chunked = pa.concat_tables([table.slice(0, 1), table.slice(1, 20), table.slice(21, 0), table.slice(21)])
    rows = np.array([49, 0, 20, 21, 0, 33, 1])
    assert ChunkedRows(chunked).take(rows).equals(table.take(pa.array(rows)))
    assert ChunkedRows(chunked.column("_id")).take(rows).equals(table.column("_id").take(pa.array(rows)).chunk(0))
    assert ChunkedRows(chunked).take(np.zeros(0, dtype=np.int64)).num_rows == 0


@pytest.mark.parametrize("damage", ["one of two files deleted", "a file replaced by fewer rows"])
def test_a_split_with_fewer_rows_than_its_card_says_is_named_in_one_line(own_copy, damage):
    """A data file deleted (of a split cut into two) or replaced by a valid Parquet file of fewer rows: every file
    still reads, so only the card's row count tells. `load`, `docs` and the CLI say which config and split, both
    counts and what to do, in one line, where datasets said only that the split sizes did not match."""
    import pyarrow.parquet as pq

    folder, cache = own_copy
    corpus = Path(folder) / "corpus"
    table = pq.read_table(corpus / "corpus-00000-of-00001.parquet")
    half = table.num_rows // 2
    if damage == "one of two files deleted":  # cut in two as a split larger than one file is, then one lost
        (corpus / "corpus-00000-of-00001.parquet").unlink()
        pq.write_table(table.slice(0, half), corpus / "corpus-00000-of-00002.parquet")
        pq.write_table(table.slice(half), corpus / "corpus-00001-of-00002.parquet")
        whole = ragloaders.load(folder, "corpus", split="corpus", cache_dir=cache + "-whole")
        assert whole.num_rows == table.num_rows  # the two files are a valid layout of the split
        (corpus / "corpus-00001-of-00002.parquet").unlink()
    else:
        pq.write_table(table.slice(0, half), corpus / "corpus-00000-of-00001.parquet")
    card = os.path.join(folder, "README.md")
    with pytest.raises(ragloaders.SourceError) as caught:
        ragloaders.load(folder, "corpus", cache_dir=cache)
    assert_names(caught.value, card, "'corpus'", f"{half:,} rows", f"card declares {table.num_rows:,}",
                 "ragloaders validate", "build the folder again")
    code, _, err = run("docs", folder, "MED-10", "--cache-dir", cache)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"ragloaders: error: {card}: "), err


@pytest.mark.parametrize("damage", ["middle", "footer"])
def test_a_damaged_parquet_file_of_a_folder_is_named_in_one_line(own_copy, damage):
    folder, cache = own_copy
    corpus = Path(folder) / "corpus" / "corpus-00000-of-00001.parquet"
    data = bytearray(corpus.read_bytes())
    if damage == "middle":  # the footer still reads: only reading the pages finds it
        data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    else:
        del data[len(data) // 2:]
    corpus.write_bytes(bytes(data))
    code, _, err = run("docs", folder, "MED-10", "--cache-dir", cache)
    assert code == 2 and err.count("\n") == 1 and "--debug" not in err, err
    assert err.startswith(f"ragloaders: error: {corpus}: not a readable Parquet file (")
    assert "build the folder again" in err
    code, out, err = run("validate", folder, "--cache-dir", cache)  # a finding in the report, not a crash
    assert code == 1 and "ERROR column_type in corpus" in out and err == "", (out, err)


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_reader_that_stops_reading_ends_docs_quietly(nfcorpus_build, tmp_path):
    """`ragloaders docs ... | head`: the reader closing the pipe printed `ragloaders: error: [Errno 32] Broken pipe`
    and exit 2; now nothing is printed and the status is 141 (128 + SIGPIPE, as a shell reports it)."""
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "loaders"),
                   "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    process = subprocess.Popen([sys.executable, "-m", "ragloaders", "docs", str(nfcorpus_build.out),
                                *["MED-10"] * 3_000, "--cache-dir", nfcorpus_build.cache_dir],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment)
    assert process.stdout.read(10) == b'{"_id":"ME'
    process.stdout.close()
    error = process.stderr.read()
    assert process.wait(timeout=120) == 141 and error == b"", error[-2000:]


DOCS_PEAK = """
import contextlib, os, sys
from ragloaders.cli import main
with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
    code = main(["docs", *sys.argv[1:]])
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, peak_kb // 1024)
"""


@pytest.mark.slow  # (two children, 170 MB of pages printed: seconds; CI runs it)
def test_docs_prints_as_it_goes_in_memory_bounded_whatever_the_number_of_ids(crag_build, tmp_path):
    """Every row was made before the first was printed: 400 ids of CRAG's largest page (1.7 MB of HTML and text)
    took 2.9 GB. Now rows are made and printed PRINTED_AT_ONCE at a time."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    corpus = pq.read_table(next((crag_build.out / "corpus").glob("*.parquet")), columns=["_id", "html"])
    largest = corpus.column("_id")[pc.index(pc.binary_length(corpus.column("html")),
                                            pc.max(pc.binary_length(corpus.column("html")))).as_py()].as_py()
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "loaders"),
                   "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    peaks = []
    for times in (1, 100):
        done = subprocess.run([sys.executable, "-c", DOCS_PEAK, str(crag_build.out), *[largest] * times,
                               "--cache-dir", crag_build.cache_dir], capture_output=True, text=True, env=environment,
                              timeout=300)
        code, peak = map(int, done.stdout.split())
        assert code == 0, done.stderr[-2000:]
        peaks.append(peak)
    assert peaks[1] - peaks[0] < 100, peaks  # (the 100 rows hold 170 MB of HTML and text)


def test_ids_from_a_file_or_stdin_are_taken_byte_for_byte_after_those_given(nfcorpus_build, tmp_path, capsys,
                                                                            monkeypatch):
    """A command line holds neither a NUL byte nor millions of ids: --ids-from FILE (or - for stdin) takes one id per
    line, after the arguments' ids; a CRLF line end is a line end; an empty line or invalid UTF-8 names its line."""
    where = ["--cache-dir", nfcorpus_build.cache_dir]
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"MED-14\r\nMED-10\n MED-10\n")
    assert cli.main(["docs", str(nfcorpus_build.out), "MED-118", "--ids-from", str(ids), "--missing", "skip",
                     *where]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["_id"] for line in captured.out.splitlines()] == ["MED-118", "MED-14", "MED-10"]
    assert "1 id(s) not in" in captured.err and "' MED-10'" in captured.err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"MED-10\n\xff\n")))
    assert cli.main(["docs", str(nfcorpus_build.out), "--ids-from", "-", *where]) == 2
    assert "<stdin>, line 2: invalid UTF-8" in capsys.readouterr().err
    ids.write_bytes(b"MED-10\n\nMED-14\n")
    assert cli.main(["docs", str(nfcorpus_build.out), "--ids-from", str(ids), *where]) == 2
    assert f"{ids}, line 2: an empty line" in capsys.readouterr().err
    assert cli.main(["docs", str(nfcorpus_build.out), *where]) == 2
    assert "docs takes the ids to print" in capsys.readouterr().err
    assert cli.main(["docs", str(nfcorpus_build.out), "--ids-from", str(tmp_path), *where]) == 2
    assert f"--ids-from {tmp_path}: a folder; give a file of ids" in capsys.readouterr().err
    ids.write_bytes(b"\xef\xbb\xbfMED-10\n")  # a BOM at the start is no part of the first id
    assert cli.main(["docs", str(nfcorpus_build.out), "--ids-from", str(ids), *where]) == 0
    assert json.loads(capsys.readouterr().out)["_id"] == "MED-10"
    ids.write_bytes(b"")
    assert cli.main(["docs", str(nfcorpus_build.out), "--ids-from", str(ids), *where]) == 2
    assert f"{ids}: holds no id" in capsys.readouterr().err
    monkeypatch.setattr("ragloaders.lookup.command.MAX_ID_BYTES", 1_000)
    ids.write_bytes(b"MED-10\n" + b"x" * 5_000)  # (as /dev/zero would be: no line end, read a bounded part only)
    assert cli.main(["docs", str(nfcorpus_build.out), "--ids-from", str(ids), *where]) == 2
    assert f"{ids}, line 2: a line longer than 1,000 bytes" in capsys.readouterr().err
