"""The BM25 baseline's bounds: input a run could not be scored from (repeated or NUL ids) refused up front, memory
bounded by bytes (not rows or words), time per query set by its postings, its arguments checked, and a beir-format
qrels/ entry that is not a regular file refused."""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from beir_files import write_beir
from conftest import LOADERS, assert_names
from ragloaders.cli import main
from ragloaders.core.errors import SourceError, UsageError
from ragloaders.eval import bm25, evaluate, reranking_tables
from ragloaders.eval.bm25 import DEFAULT_SETTINGS, Analyzer, Bm25Settings, build_index, rank, top_k
from test_bm25 import nfcorpus, nfcorpus_tables  # noqa: F401  (fixtures)

BM25 = importlib.import_module("ragloaders.eval.bm25")  # (ragloaders.eval.bm25 is also the function)


def user_folder(tmp_path: Path, corpus: list, queries: list, qrels: dict | None = None) -> dict:
    """A beir-format folder and the keywords that read it (the run goes outside both)."""
    write_beir(tmp_path / "data", corpus, queries, qrels or {"test": [(queries[0][0], corpus[0][0], 1)]})
    return {"data_dir": str(tmp_path / "data"), "cache_dir": str(tmp_path / "cache")}


def dense_rankings(corpus: list[pa.Table], queries: list[tuple[str, str]], k: int, settings: Bm25Settings
                   ) -> list[tuple[str, list[str], list[float]]]:
    """Every query scored into one array over all documents and cut by `top_k`: the ranking as it was made before
    queries were scored over the documents their postings hold."""
    analyzer, vocabulary, counted = Analyzer(settings), {}, []
    for query_id, text in queries:
        terms = [vocabulary.setdefault(term, len(vocabulary)) for term in analyzer.terms(text or "")]
        counted.append((query_id, sorted({t: terms.count(t) for t in terms}.items())))
    term_ids = BM25._TermIds(analyzer, vocabulary)
    fields = [(field,) for field in settings.fields] if settings.multifield else [settings.fields]
    indexes = [build_index(corpus, term_ids, len(vocabulary), Bm25Settings(fields=f, multifield=settings.multifield),
                           field_statistics=settings.multifield) for f in fields]
    found = []
    for query_id, counts in counted:
        scores = indexes[0].scores(counts)
        for index in indexes[1:]:
            scores += index.scores(counts)
        best = top_k(scores, k)
        found.append((query_id, indexes[0].doc_ids.take(pa.array(best, pa.int64())).to_pylist(),
                      [float(s) for s in scores[best]]))
    return found


# --- 1. repeated ids ----------------------------------------------------------------------------------------------

def test_a_corpus_id_held_by_two_rows_is_refused_before_anything_is_written(tmp_path):
    where = user_folder(tmp_path, [("d1", "apple banana"), ("d2", "apple"), ("d1", "apple apple")],
                        [("q1", "apple banana")])
    run = tmp_path / "run.trec"
    with pytest.raises(SourceError) as caught:
        bm25("beir-format", out=run, **where)
    assert_names(caught.value, "corpus", "'d1'", "2 rows", "0, 2")
    assert not run.exists()


def test_a_judged_query_without_text_is_named_and_a_split_with_nothing_to_rank_writes_no_run(tmp_path, capsys):
    """A judged query missing from queries.jsonl was left out with no word ("1 line for 1 test query"), and a split
    whose judged queries are all missing (or a header-only qrels file) wrote an empty run with exit 0."""
    where = user_folder(tmp_path, [("d1", "apple"), ("d2", "pear")], [("q1", "apple")],
                        {"test": [("q1", "d1", 1), ("q9", "d2", 1)], "dev": [("q9", "d2", 1)]})
    options = ["--data-dir", where["data_dir"], "--cache-dir", where["cache_dir"]]
    assert main(["bm25", "beir-format", "--out", str(tmp_path / "test.trec"), *options]) == 0
    assert "1 query the test qrels judge is not in its queries (first 'q9'): not ranked" in capsys.readouterr().err
    assert main(["bm25", "beir-format", "--split", "dev", "--out", str(tmp_path / "dev.trec"), *options]) == 2
    assert "beir-format dev: no query to rank" in capsys.readouterr().err
    assert not (tmp_path / "dev.trec").exists()


def test_reranking_tables_refuse_a_query_id_given_two_texts(tmp_path):
    """The texts of every split were merged into one dict: the last text of a repeated id was ranked, silently."""
    where = user_folder(tmp_path, [("d1", "apple"), ("d2", "pear")], [("q1", "apple"), ("q1", "pear")])
    with pytest.raises(SourceError) as caught:
        reranking_tables("beir-format", **where)
    assert_names(caught.value, "queries", "'q1'", "two texts", "'apple'", "'pear'")


def test_a_query_id_given_twice_is_refused(tmp_path, capsys):
    where = user_folder(tmp_path, [("d1", "apple banana")], [("q1", "apple"), ("q1", "banana")])
    run = tmp_path / "run.parquet"
    assert main(["bm25", "beir-format", "--out", str(run), "--data-dir", where["data_dir"],
                 "--cache-dir", where["cache_dir"]]) != 0
    assert_names(capsys.readouterr().err, "queries", "'q1'", "2 of the 2 queries", "positions 1 and 2")
    assert not run.exists()
    with pytest.raises(SourceError) as caught:  # rank itself, given the pairs
        list(rank([pa.table({"_id": ["d1"], "title": [""], "text": ["apple"]})], [("a", "x"), ("b", "y"), ("a", "z")]))
    assert_names(caught.value, "'a'", "positions 1 and 3")


# --- 2. memory bounded by bytes --------------------------------------------------------------------------------------

def test_the_corpus_is_tokenized_in_batches_of_bounded_text(monkeypatch):
    monkeypatch.setattr(BM25, "BATCH_TEXT_BYTES", 100)
    monkeypatch.setattr(BM25, "LONG_DOCUMENT_BYTES", 60)
    monkeypatch.setattr(BM25, "BATCH_ROWS", 4)
    sizes = [10, 30, 50, 20, 70, 0, 0, 0, 0, 0, 0, 5, 99, 1, 200, 40]
    table = pa.table({"_id": [f"d{i}" for i in range(len(sizes))], "title": [None if n % 2 else "t" for n in sizes],
                      "text": ["x" * (n - (n % 2 == 0 and n > 0)) for n in sizes]})
    batches = list(BM25.text_batches(table, ("title", "text")))
    assert sum(batch.num_rows for batch in batches) == table.num_rows
    assert pa.concat_tables(batches).column("_id").to_pylist() == table.column("_id").to_pylist()
    for batch in batches:
        texts = [len(t or "") + len(x or "") for t, x in zip(batch["title"].to_pylist(), batch["text"].to_pylist())]
        assert len(texts) == 1 or (sum(texts) <= 100 and len(texts) <= 4 and max(texts) <= 60), texts
    # 90 bytes | 20 (then a long row) | 70 alone | 4 rows of 1 | 1 + 1 + 5 (99 more would pass 100) | 99 | 1 | 200 | 40
    assert [b.num_rows for b in batches] == [3, 1, 1, 4, 3, 1, 1, 1, 1]


def test_the_word_cache_is_bounded_by_bytes(monkeypatch):
    monkeypatch.setattr(BM25, "WORD_CACHE_BYTES", 1 << 20)
    term_ids = BM25._TermIds(Analyzer(DEFAULT_SETTINGS), {"appl": 0})
    assert term_ids["b" * (2 << 20)] == BM25.OTHER and not term_ids  # bigger than the cache: not kept
    for i in range(200):
        assert term_ids[f"{i:05d}" * 2000] == BM25.OTHER  # 10,000 characters each
        assert sum(sys.getsizeof(word) for word in term_ids) <= 1 << 20
    assert term_ids["apples"] == 0 and "apples" in term_ids


BOUNDED_CHILD = """
import resource, sys
import pyarrow as pa
import Stemmer
from ragloaders.eval.bm25 import rank
text = "bb " * (1 << 19)  # 1.5 MB, half a million words
table = pa.table({"_id": ["d0", "d1"], "title": ["", ""], "text": [text, text]})
with open("/proc/self/statm") as f:
    vm = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm + (48 << 20),) * 2)
try:
    print(list(rank([table], [("q1", "bb"), ("q2", "")], top_k_docs=5)))
except MemoryError:
    print("MemoryError")
"""


@pytest.mark.slow  # (seconds; CI runs it)
def test_long_documents_are_ranked_in_memory_bounded_by_bytes():
    """Two documents of 1.5 MB (half a million words each) in one table: ranked within 48 MB more than the process
    held (a list of the words of a document and 36 bytes a word of the batch, as it was, took more)."""
    done = subprocess.run([sys.executable, "-c", BOUNDED_CHILD], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(LOADERS)})
    assert done.returncode == 0, done.stderr[-3000:]
    [(query, docs, scores), empty] = eval(done.stdout)  # noqa: S307  (the child's own print of plain values)
    assert (query, docs, empty) == ("q1", ["d0", "d1"], ("q2", [], [])) and scores[0] == scores[1] > 0


def test_long_documents_rank_as_short_ones(monkeypatch):
    """The same corpus ranked with every document tokenized in pieces of 3 words and in one batch: the same."""
    rng = np.random.default_rng(5)
    words = ["apple", "Apples", "the", "of", "banana", "Running", "runs", "x", "İstanbul", "straße", "ǅ", "ﬁ"]
    corpus = pa.table({"_id": [f"d{i}" for i in range(300)],
                       "title": [None if i % 7 == 0 else " ".join(rng.choice(words, 3)) for i in range(300)],
                       "text": [" ".join(rng.choice(words, rng.integers(0, 60))) for i in range(300)]})
    queries = [(f"q{j}", " ".join(rng.choice(words, rng.integers(0, 4)))) for j in range(40)]
    for pattern in (r"\w+", r"(\w+)"):
        settings = Bm25Settings(token_pattern=pattern)
        whole = list(rank([corpus], queries, top_k_docs=30, settings=settings))
        with monkeypatch.context() as patched:
            patched.setattr(BM25, "LONG_DOCUMENT_BYTES", 0)
            patched.setattr(BM25, "PIECE_WORDS", 3)
            assert list(rank([corpus], queries, top_k_docs=30, settings=settings)) == whole
        assert sum(1 for _, docs, _ in whole if docs) > 20


# --- 3. time per query set by its postings -------------------------------------------------------------------------

@pytest.mark.slow  # (seconds; CI runs it)
def test_rankings_equal_the_dense_ones_on_nfcorpus(nfcorpus_tables):  # noqa: F811
    corpus, queries = nfcorpus_tables["corpus"], nfcorpus_tables["queries"][::25]
    for settings in (DEFAULT_SETTINGS, Bm25Settings(multifield=True)):
        for k in (10, 1000):
            got = list(rank([corpus.slice(0, 1000), corpus.slice(1000)], queries, top_k_docs=k, settings=settings))
            assert got == dense_rankings([corpus.slice(0, 1000), corpus.slice(1000)], queries, k, settings)
    assert any(len(docs) == 1000 for _, docs, _ in got) and any(0 < len(docs) < 100 for _, docs, _ in got)


def test_rankings_equal_the_dense_ones_on_ties_and_odd_text():
    """Many equal scores (ties go to the earlier document, also across the cut of top_k) and stray scripts."""
    rng = np.random.default_rng(9)
    words = ["a", "b", "c", "cat", "cats", "the", "ß", "SS", "İ", "٣", "_"]
    corpus = pa.table({"_id": [f"d{i}" for i in range(2000)], "title": [""] * 2000,
                       "text": [" ".join(rng.choice(words, rng.integers(0, 4))) for _ in range(2000)]})
    queries = [(f"q{j}", " ".join(rng.choice(words, rng.integers(0, 3)))) for j in range(80)]
    for settings in (DEFAULT_SETTINGS, Bm25Settings(multifield=True)):
        for k in (1, 7, 5000):
            assert list(rank([corpus], queries, top_k_docs=k, settings=settings)) == dense_rankings(
                [corpus], queries, k, settings)


def test_a_query_costs_its_postings_not_the_corpus(monkeypatch):
    """A query without a known term is answered without scoring; one whose postings touch 2 of 5,000 documents
    scores 2 values, not 5,000 (the whole array is only for a query whose postings are a large share of them)."""
    corpus = pa.table({"_id": [f"d{i}" for i in range(5000)], "title": [""] * 5000,
                       "text": ["rare word" if i in (10, 4000) else f"common {i}" for i in range(5000)]})
    picked: list[int] = []
    monkeypatch.setattr(BM25, "top_k", lambda scores, k: picked.append(len(scores)) or top_k(scores, k))
    dense = []
    monkeypatch.setattr(BM25.QueryTermIndex, "scores", lambda self, counts: dense.append(1) or np.zeros(0))
    ranked = list(rank([corpus], [("none", "the of"), ("unknown", "zebra"), ("rare", "rare")], top_k_docs=10))
    assert ranked[:2] == [("none", [], []), ("unknown", [], [])]
    assert ranked[2][1] == ["d10", "d4000"] and ranked[2][2][0] == ranked[2][2][1] > 0
    assert picked == [2] and not dense


# --- 4. arguments ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("top_k", [float("nan"), 2.5, "5", True, None, 10.0])
def test_a_top_k_that_is_not_a_whole_number_is_named(tmp_path, top_k):
    where = user_folder(tmp_path, [("d1", "apple")], [("q1", "apple")])
    with pytest.raises(UsageError) as caught:
        bm25("beir-format", out=tmp_path / "run.trec", top_k=top_k, **where)
    assert_names(caught.value, "--top-k", "top_k=", "whole number", "at least 1")
    assert not (tmp_path / "run.trec").exists()
    with pytest.raises(UsageError) as caught:
        list(rank([], [("q1", "apple")], top_k_docs=top_k))
    assert_names(caught.value, "top_k_docs", "whole number")
    with pytest.raises(UsageError) as caught:
        reranking_tables("beir-format", top_k=top_k, **where)
    assert_names(caught.value, "top_k must be a whole number")


@pytest.mark.parametrize(("keywords", "facts"), [
    ({"k1": float("nan")}, ["k1", "finite number >= 0", "nan"]),
    ({"k1": -1}, ["k1", "-1"]),
    ({"k1": "0.9"}, ["k1", "'0.9'"]),
    ({"b": 1.5}, ["b", "from 0 to 1", "1.5"]),
    ({"b": float("inf")}, ["b", "inf"]),
    ({"fields": "text"}, ["fields", "tuple of strings"]),
    ({"fields": ()}, ["fields", "distinct text columns"]),
    ({"fields": ("text", "text")}, ["fields", "distinct"]),
    ({"token_pattern": "(\\w+"}, ["token_pattern", "not a regular expression"]),
])
def test_settings_out_of_range_are_refused_when_made(keywords, facts):
    with pytest.raises(UsageError) as caught:
        Bm25Settings(**keywords)
    assert_names(caught.value, "Bm25Settings(", *facts)


def test_an_unknown_stemmer_or_field_is_named(tmp_path):
    where = user_folder(tmp_path, [("d1", "apple")], [("q1", "apple")])
    with pytest.raises(UsageError) as caught:
        bm25("beir-format", out=tmp_path / "run.trec", settings=Bm25Settings(stemmer="klingon"), **where)
    assert_names(caught.value, "stemmer='klingon'", "not a PyStemmer algorithm", "english", "porter")
    with pytest.raises(UsageError) as caught:
        bm25("beir-format", out=tmp_path / "run.trec", settings=Bm25Settings(fields=("nosuch",)), **where)
    assert_names(caught.value, "'nosuch'", "fields=", "corpus has no column")
    assert not (tmp_path / "run.trec").exists()
    table = pa.table({"_id": ["d1"], "text": ["apple"], "n": [3]})
    for fields, facts in ((("title", "text"), ["'title'", "its columns are '_id', 'text', 'n'"]),
                          (("n",), ["'n'", "int64", "not text"])):
        with pytest.raises(UsageError) as caught:
            list(rank([table], [("q1", "apple")], settings=Bm25Settings(fields=fields)))
        assert_names(caught.value, *facts)


# --- 5. qrels/ entries that are not regular files ------------------------------------------------------------------

@pytest.mark.parametrize("keep_test", [True, False])
@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling link"])
def test_a_qrels_tsv_that_is_not_a_regular_file_is_named(tmp_path, kind, keep_test):
    where = user_folder(tmp_path, [("d1", "apple")], [("q1", "apple")])
    qrels = Path(where["data_dir"]) / "qrels"
    if not keep_test:
        (qrels / "test.tsv").unlink()
    odd = qrels / "dev.tsv"
    {"fifo": os.mkfifo, "folder": os.mkdir, "dangling link": lambda p: os.symlink(qrels / "gone.tsv", p)}[kind](odd)
    with pytest.raises(SourceError) as caught:
        bm25("beir-format", out=tmp_path / "run.trec", **where)
    assert caught.value.path == str(odd)
    assert_names(caught.value, "not a regular file", "qrels/<split>.tsv")
    (qrels / "notes.txt").write_text("read me")  # a file of another name is still no split and no error
    if kind == "folder":
        odd.rmdir()
    else:
        odd.unlink()
    if keep_test:
        assert bm25("beir-format", out=tmp_path / "run.trec", **where).lines == 1


# --- 6. ids no run can be scored with -------------------------------------------------------------------------------

@pytest.mark.parametrize("out", ["run.trec", "run.parquet", "run.jsonl"])
def test_an_id_holding_a_nul_byte_is_refused_whatever_the_format(tmp_path, out):
    where = user_folder(tmp_path, [("d1", "apple"), ("d\0x", "apple apple")], [("q1", "apple")])
    with pytest.raises(SourceError) as caught:
        bm25("beir-format", out=tmp_path / out, **where)
    assert_names(caught.value, "corpus", "document id", "'d\\x00x'", "NUL byte", "no run format carries")
    assert ".parquet or .jsonl instead" not in str(caught.value)
    assert not (tmp_path / out).exists()
    where = user_folder(tmp_path / "q", [("d1", "apple")], [("q\0", "apple")])
    with pytest.raises(SourceError) as caught:
        bm25("beir-format", out=tmp_path / out, **where)
    assert_names(caught.value, "queries", "query id", "'q\\x00'", "no run format carries")


def test_a_run_bm25_writes_is_scored_by_eval(tmp_path):
    """The ids bm25 accepts are ones eval scores: odd but legal ids (a leading zero, a non-breaking space)."""
    where = user_folder(tmp_path, [("00123", "apple"), ("d\u00a01", "apple banana"), ("123", "banana")],
                        [("q1", "apple banana")], {"test": [("q1", "d\u00a01", 1)]})
    bm25("beir-format", out=tmp_path / "run.trec", **where)
    report = evaluate("beir-format", str(tmp_path / "run.trec"), metrics="MRR@10", **where)
    assert math.isclose(report.metrics["MRR@10"], 1.0)


def test_a_long_document_is_tokenized_as_findall_tokenizes_it_when_a_group_takes_no_part(monkeypatch):
    """A long document's words came from its match objects: a pattern's one group that took no part in a match gave
    None (findall gives ""), which reached the stemmer as a TypeError; short documents and queries were fine."""
    settings = Bm25Settings(token_pattern=r"(?:(x)|y)\w*")
    table = pa.table({"_id": ["long", "short"], "title": ["", ""], "text": ["xa ya " * 40, "xa ya"]})
    monkeypatch.setattr(BM25, "LONG_DOCUMENT_BYTES", 1 << 30)
    whole = list(rank([table], [("q", "x")], settings=settings))
    monkeypatch.setattr(BM25, "LONG_DOCUMENT_BYTES", 64)
    assert list(rank([table], [("q", "x")], settings=settings)) == whole and whole[0][1]
