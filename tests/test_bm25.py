"""The BM25 baseline: BEIR's published nfcorpus figure from the official zip, bm25s's own scores, batching,
ties, the reranking configs, and every benchmark (BEIR groups and self-matches, mmRAG, CRAG)."""

from __future__ import annotations

import importlib
import json
import math
import shutil

import datasets
import numpy as np
import pyarrow as pa
import pytest
import pytrec_eval
import ragloaders
import Stemmer
from beir_files import write_beir
from conftest import DATA, assert_names
from ragloaders.cli import main
from ragloaders.eval import bm25, evaluate, read_run, reranking_tables
from ragloaders.eval.bm25 import DEFAULT_SETTINGS, Analyzer, Bm25Settings, rank, top_k

NFCORPUS_ZIP = DATA / "beir" / "nfcorpus.zip"
PUBLISHED = {"pyserini_flat": 0.3218, "pyserini_multifield": 0.3254, "beir_paper": 0.325}
"""BM25 nDCG@10 on NFCorpus test: Pyserini's BEIR regression (flat index) and the BEIR paper (Elasticsearch)."""
CQADUPSTACK_FORUMS = ("android", "english", "gaming", "gis", "mathematica", "physics", "programmers", "stats", "tex",
                      "unix", "webmasters", "wordpress")


@pytest.fixture(scope="module")
def nfcorpus(nfcorpus_build) -> dict:
    """The official zip and the session's cache, where the shared build prepared it."""
    assert nfcorpus_build.data_dir == str(NFCORPUS_ZIP.parent)
    return {"data_dir": nfcorpus_build.data_dir, "cache_dir": nfcorpus_build.cache_dir}


def nfcorpus_queries(nfcorpus: dict) -> list[tuple[str, str]]:
    queries = ragloaders.load("beir/nfcorpus", "queries", split="queries", **nfcorpus).data.table
    return list(zip(queries.column("_id").to_pylist(), queries.column("text").to_pylist()))


@pytest.fixture(scope="module")
def nfcorpus_tables(nfcorpus) -> dict:
    corpus = ragloaders.load("beir/nfcorpus", "corpus", split="corpus", **nfcorpus).data.table
    return {"corpus": corpus, "queries": nfcorpus_queries(nfcorpus)}


def test_nfcorpus_reproduces_the_published_bm25_figure(nfcorpus, tmp_path, capsys):
    run = tmp_path / "nfcorpus.trec"
    where = ["--data-dir", nfcorpus["data_dir"], "--cache-dir", nfcorpus["cache_dir"]]
    assert main(["bm25", "beir/nfcorpus", "--out", str(run), *where]) == 0
    assert main(["eval", "beir/nfcorpus", "--run", str(run), "--metrics", "ndcg@10", "--json", *where]) == 0
    report = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    ndcg = report["metrics"]["NDCG@10"]
    assert abs(ndcg - PUBLISHED["pyserini_flat"]) <= 0.005, ndcg
    assert report["judged_queries"] == 323
    assert report["unknown_queries"]["count"] == report["unknown_documents"]["count"] == 0
    # a judged query is missing from the run only when none of its terms occurs in the corpus
    ranked = read_run(str(run))
    assert all(1 <= len(docs) <= 1000 for docs in ranked.values())
    assert report["unranked_queries"]["count"] == 323 - len(ranked)
    analyzer = Analyzer(DEFAULT_SETTINGS)
    corpus = ragloaders.load("beir/nfcorpus", "corpus", split="corpus", **nfcorpus)
    vocabulary = {term for row in corpus for term in analyzer.terms(f"{row['title']} {row['text']}")}
    texts = dict(nfcorpus_queries(nfcorpus))
    for query_id in report["unranked_queries"]["examples"]:
        assert not set(analyzer.terms(texts[query_id])) & vocabulary, query_id
    first = run.read_text().split("\n", 1)[0].split()
    assert first[1::2] == ["Q0", "1", "ragloaders-bm25"]

@pytest.mark.slow
def test_multifield_reproduces_pyserinis_multifield_figure(nfcorpus, tmp_path, capsys):
    """Title and text as two fields, each with its own BM25 statistics (N and the average length over the documents
    holding a term in the field, as Lucene counts them), scores summed: Pyserini's multifield nfcorpus figure."""
    run = tmp_path / "multifield.trec"
    where = ["--data-dir", nfcorpus["data_dir"], "--cache-dir", nfcorpus["cache_dir"]]
    assert main(["bm25", "beir/nfcorpus", "--multifield", "--out", str(run), *where]) == 0
    assert "as separate fields (Pyserini's multifield" in capsys.readouterr().out
    assert main(["eval", "beir/nfcorpus", "--run", str(run), "--metrics", "ndcg@10", "--json", *where]) == 0
    ndcg = json.loads(capsys.readouterr().out)["metrics"]["NDCG@10"]
    assert abs(ndcg - PUBLISHED["pyserini_multifield"]) <= 0.005, ndcg
    corpus = ragloaders.load("beir/nfcorpus", "corpus", split="corpus", **nfcorpus).data.table
    run_queries = read_run(str(run))
    query_id = next(iter(run_queries))
    [expected] = multifield_scores(corpus, [dict(nfcorpus_queries(nfcorpus))[query_id]])
    ranked = run_queries[query_id]
    assert all(math.isclose(ranked[d], expected[d], rel_tol=1e-4) for d in ranked)
    assert sorted(expected, key=expected.get, reverse=True)[:len(ranked)] == list(ranked)


def multifield_scores(corpus: pa.Table, queries: list[str]) -> list[dict[str, float]]:
    """Each query's multifield BM25 score of every document (those above 0), computed here: per field, Lucene's BM25
    with N and the average length over the documents holding a term in that field; the fields' scores summed."""
    from collections import Counter

    analyzer = Analyzer(DEFAULT_SETTINGS)
    fields = []
    for field in ("title", "text"):
        docs = [Counter(analyzer.terms(value or "")) for value in corpus.column(field).to_pylist()]
        lengths = np.array([sum(d.values()) for d in docs], dtype=float)
        fields.append((docs, lengths, int((lengths > 0).sum())))
    found = []
    for query in queries:
        total = np.zeros(corpus.num_rows)
        for docs, lengths, holding in fields:
            for term in analyzer.terms(query):
                tf = np.array([d[term] for d in docs], dtype=float)
                df = int((tf > 0).sum())
                idf = math.log(1 + (holding - df + 0.5) / (df + 0.5))
                total += idf * tf / (tf + 0.9 * (1 - 0.4 + 0.4 * lengths / (lengths.sum() / holding)))
        found.append({doc_id: float(v) for doc_id, v in zip(corpus.column("_id").to_pylist(), total) if v > 0})
    return found


@pytest.mark.slow
def test_multifield_counts_only_the_documents_holding_a_field(nfcorpus_tables):
    """nfcorpus with every third title blanked: the title field's N and average length are over the documents that
    still have one (Lucene's field statistics), which a flat count over every document would get wrong."""
    corpus = nfcorpus_tables["corpus"]
    titles = [title if i % 3 else "" for i, title in enumerate(corpus.column("title").to_pylist())]
    corpus = corpus.set_column(corpus.schema.get_field_index("title"), "title", pa.array(titles, pa.string()))
    queries = nfcorpus_tables["queries"][:5]
    settings = Bm25Settings(multifield=True)
    computed = multifield_scores(corpus, [text for _, text in queries])
    ranked = list(rank([corpus], queries, top_k_docs=50, settings=settings))
    assert [query_id for query_id, _, _ in ranked] == [query_id for query_id, _ in queries]
    for (_, doc_ids, scores), expected in zip(ranked, computed):
        assert doc_ids and all(math.isclose(s, expected[d], rel_tol=1e-4) for d, s in zip(doc_ids, scores))
        assert scores == sorted(scores, reverse=True)


@pytest.mark.slow  # (seconds; CI runs it)
def test_scores_equal_bm25s_on_the_same_tokens(nfcorpus_tables):
    import bm25s  # imported here: it imports numba, a second of every worker's start

    corpus, queries = nfcorpus_tables["corpus"], nfcorpus_tables["queries"][::40]
    analyzer = Analyzer(DEFAULT_SETTINGS)
    texts = [f"{t} {x}" for t, x in zip(corpus.column("title").to_pylist(), corpus.column("text").to_pylist())]
    tokens = [analyzer.terms(text) for text in texts]
    tokenizer = bm25s.tokenization.Tokenizer(splitter=r"\w+", stopwords="en", stemmer=Stemmer.Stemmer("english"))
    assert tokenizer.tokenize(texts[:500], return_as="string", show_progress=False) == tokens[:500]
    reference = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    reference.index(tokens, show_progress=False)
    ids = corpus.column("_id").to_pylist()
    for query_id, doc_ids, scores in rank([corpus], queries, top_k_docs=50):
        expected = reference.get_scores(analyzer.terms(dict(queries)[query_id]))
        position = {doc_id: i for i, doc_id in enumerate(ids)}
        assert np.allclose(scores, expected[[position[d] for d in doc_ids]], rtol=1e-5)
        best = np.sort(expected[expected > 0])[::-1][:50]
        assert np.allclose(scores, best, rtol=1e-5), query_id


def test_batches_and_word_cache_do_not_change_the_ranking(nfcorpus_tables, monkeypatch):
    corpus, queries = nfcorpus_tables["corpus"].slice(0, 400), nfcorpus_tables["queries"][:60]
    whole = list(rank([corpus], queries, top_k_docs=20))
    # the function ragloaders.eval.bm25 shadows the module of the same name
    monkeypatch.setattr(importlib.import_module("ragloaders.eval.bm25"), "WORD_CACHE_LIMIT", 3)
    one_by_one = list(rank((corpus.slice(i, 1) for i in range(corpus.num_rows)), queries, top_k_docs=20))
    assert one_by_one == whole
    assert sum(1 for _, docs, _ in whole if docs) > 40


def test_ties_go_to_the_earlier_document_and_zero_scores_are_never_returned():
    scores = np.array([0.0, 2.0, 1.0, 2.0, 1.0, 1.0, 0.0], dtype=np.float32)
    assert top_k(scores, 2).tolist() == [1, 3]
    assert top_k(scores, 4).tolist() == [1, 3, 2, 4]
    assert top_k(scores, 100).tolist() == [1, 3, 2, 4, 5]
    assert top_k(np.zeros(5, dtype=np.float32), 3).tolist() == []


def test_odd_queries_and_documents():
    corpus = pa.table({"_id": ["00123", "d 2", "é3", "4"], "title": [None, "Cats", "", "the"],
                       "text": ["cats and dogs", "", "Le chat: cats' cat", None]})
    queries = [("q1", "cat"), ("stop", "The and of"), ("empty", ""), ("none", None), ("dup", "cat cat dogs")]
    ranked = {q: (d, s) for q, d, s in rank([corpus.slice(0, 2), corpus.slice(2)], queries, top_k_docs=10)}
    # by hand: "cat" is in 3 of 4 documents; lengths after stopwords 2, 1, 4 ("le chat cats cat"), 0
    idf, avgdl = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5)), 7 / 4
    expected = {doc: idf * tf / (tf + 0.9 * (0.6 + 0.4 * length / avgdl))
                for doc, tf, length in (("00123", 1, 2), ("d 2", 1, 1), ("é3", 2, 4))}
    assert ranked["q1"][0] == ["é3", "d 2", "00123"]
    assert ranked["q1"][1] == pytest.approx([expected[d] for d in ranked["q1"][0]], rel=1e-6)
    assert ranked["stop"] == ranked["empty"] == ranked["none"] == ([], [])
    assert ranked["dup"][0][0] == "00123"
    assert list(rank([corpus.slice(0, 0)], queries[:1])) == [("q1", [], [])]
    with pytest.raises(ValueError) as caught:
        list(rank([corpus], queries, top_k_docs=0))
    assert_names(caught.value, "top_k_docs must be at least 1", "got 0")


@pytest.mark.parametrize("top_k", [0, -3])
def test_a_top_k_below_1_is_named_as_each_caller_gave_it(nfcorpus, tmp_path, capsys, top_k):
    with pytest.raises(ValueError) as caught:
        bm25("beir/nfcorpus", out=tmp_path / "run.trec", top_k=top_k, **nfcorpus)
    assert_names(caught.value, "--top-k", "top_k=", "must be at least 1", f"got {top_k}")
    assert not (tmp_path / "run.trec").exists()  # refused before anything is read or written
    with pytest.raises(ValueError) as caught:  # (top_k=0 once ranked 1 document: BEIR leaves a query's own out)
        reranking_tables("beir/nfcorpus", top_k=top_k, **nfcorpus)
    assert_names(caught.value, "top_k must be at least 1", f"got {top_k}")  # not the depth it asked of rank
    assert "top_k_docs" not in str(caught.value)
    assert main(["bm25", "beir/nfcorpus", "--out", str(tmp_path / "cli.trec"), "--top-k", str(top_k),
                 "--data-dir", nfcorpus["data_dir"], "--cache-dir", nfcorpus["cache_dir"]]) != 0
    assert_names(capsys.readouterr().err, "--top-k", f"got {top_k}")


@pytest.mark.slow  # (seconds; CI runs it)
def test_reranking_tables_are_the_bm25_top_k(nfcorpus, nfcorpus_tables):
    tables = reranking_tables("beir/nfcorpus", top_k=100, **nfcorpus)
    assert set(tables) == {"top_ranked", "hard_negatives"}
    assert set(tables["top_ranked"]) == {"train", "dev", "test"}
    test = tables["top_ranked"]["test"].to_pylist()
    qrels = ragloaders.load("beir/nfcorpus", "qrels", split="test", **nfcorpus).data.table.to_pylist()
    judged = {}
    for row in qrels:
        judged.setdefault(row["query-id"], {})[row["corpus-id"]] = row["score"]
    assert [row["query-id"] for row in test] == [q for q, _ in nfcorpus_tables["queries"] if q in judged]
    queries = [(row["query-id"], dict(nfcorpus_tables["queries"])[row["query-id"]]) for row in test[:25]]
    expected = {q: d for q, d, _ in rank([nfcorpus_tables["corpus"]], queries, top_k_docs=100)}
    negatives = {row["query-id"]: row["corpus-ids"] for row in tables["hard_negatives"]["test"].to_pylist()}
    for row in test[:25]:
        query_id = row["query-id"]
        assert row["corpus-ids"] == expected[query_id]
        assert negatives[query_id] == [d for d in expected[query_id] if judged[query_id].get(d, 0) < 1]
    assert any(len(negatives[q]) < len(expected[q]) for q in expected)


def test_arguana_self_matches_are_ignored_end_to_end(tmp_path):
    docs = {"a1": "nuclear power is safe and clean", "a2": "nuclear power is dangerous and dirty",
            "a3": "solar panels are cheap"}
    write_beir(tmp_path / "data" / "arguana", list(docs.items()), [("a1", docs["a1"])], {"test": [("a1", "a2", 1)]})
    where = {"data_dir": str(tmp_path / "data"), "cache_dir": str(tmp_path / "cache")}  # the run goes outside both
    bm25("beir/arguana", out=tmp_path / "run.trec", **where)
    assert list(read_run(str(tmp_path / "run.trec"))["a1"]) == ["a1", "a2"]
    report = evaluate("beir/arguana", str(tmp_path / "run.trec"), metrics="MRR@10", **where)
    assert report.metrics == {"MRR@10": 1.0} and report.identical_ids_dropped == 1
    tables = reranking_tables("beir/arguana", **where)
    [top] = tables["top_ranked"]["test"].to_pylist()
    assert (top["query-id"], top["corpus-ids"], len(top["scores"])) == ("a1", ["a2"], 1) and top["scores"][0] > 0
    assert tables["hard_negatives"]["test"].to_pylist() == [{"query-id": "a1", "corpus-ids": [], "scores": []}]


def test_cqadupstack_is_the_mean_of_its_forums_from_one_prefixed_run(tmp_path, capsys):
    for n, forum in enumerate(CQADUPSTACK_FORUMS):
        # the same ids in every forum (as in the real zip); forum n's query finds its duplicate first iff n is even
        best, other = f"{forum} install guide", f"{forum} problem"
        docs = {"1": other, "2": best} if n % 2 == 0 else {"1": best, "2": other}
        write_beir(tmp_path / "data" / "cqadupstack" / forum, list(docs.items()), [("9", f"{forum} install")],
                   {"test": [("9", "2", 1)]})
    where = ["--data-dir", str(tmp_path / "data"), "--cache-dir", str(tmp_path / "cache")]
    run = tmp_path / "run.trec"
    assert main(["bm25", "beir/cqadupstack", "--out", str(run), *where]) == 0
    lines = run.read_text().splitlines()
    assert lines[0].split()[:3] == ["android/9", "Q0", "android/2"] and len(lines) == 24
    assert main(["eval", "beir/cqadupstack", "--run", str(run), "--metrics", "MRR@10", "--json", *where]) == 0
    report = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert len(report["members"]) == 12 and report["judged_queries"] == 12
    assert report["members"]["beir/cqadupstack/android"] == {"MRR@10": 1.0}
    assert report["members"]["beir/cqadupstack/english"] == {"MRR@10": 0.5}
    assert report["metrics"]["MRR@10"] == pytest.approx((6 * 1.0 + 6 * 0.5) / 12)
    # a run naming another forum's document or an unknown forum says so
    run.write_text("android/9 Q0 gaming/2 1 1.0 t\nandroid/9 Q0 android/2 2 0.5 t\nnope/9 Q0 nope/1 1 1 t\n")
    report = evaluate("beir/cqadupstack", str(run), metrics="MRR@10", data_dir=str(tmp_path / "data"),
                      cache_dir=str(tmp_path / "cache"))
    assert report.members["beir/cqadupstack/android"] == {"MRR@10": 0.5}
    assert report.unknown_queries == ["nope/9"] and report.unknown_documents == ["gaming/2"]
    assert len(report.unranked_queries) == 11
    # a document without a forum prefix was kept whole, so it equalled the forum's own id of that name: `2` was
    # scored as android/2 (MRR@10 1.0), and `1` beside android/1 overwrote its score
    for bare in ("android/9 Q0 2 1 1.0 t\n", "android/9 Q0 android/1 1 2.0 t\nandroid/9 Q0 1 2 1.0 t\n"):
        run.write_text(bare)
        with pytest.raises(ValueError, match=r"query 'android/9' ranks the document '[12]', which names no forum"):
            evaluate("beir/cqadupstack", str(run), metrics="MRR@10", data_dir=str(tmp_path / "data"),
                     cache_dir=str(tmp_path / "cache"))


def test_mmrag_graded_qrels_bm25_and_eval(tmp_path):
    """mmRAG's real test queries over a corpus written so that BM25 finds grade-2 chunks first, grade-1 chunks next;
    eval equals pytrec_eval on the grades read from the raw query file, at relevance levels 1 and 2."""
    folder = tmp_path / "mmrag"
    folder.mkdir()
    for name in ("mmrag_train.json", "mmrag_dev.json", "mmrag_test.json"):
        shutil.copy(DATA / "mmrag" / name, folder / name)
    records = json.loads((folder / "mmrag_test.json").read_text(encoding="utf-8"))
    words = {2: lambda q: q, 1: lambda q: " ".join(q.split()[: len(q.split()) // 2]), 0: lambda q: "unrelated"}
    chunks = {chunk: f"generated {words[grade](r['query'])}"
              for r in records for chunk, grade in r["relevant_chunks"].items()}
    (folder / "processed_documents.json").write_text(
        json.dumps([{"id": i, "text": t} for i, t in chunks.items()], indent=4), encoding="utf-8")
    where = {"data_dir": str(folder), "cache_dir": str(tmp_path / "cache")}
    result = bm25("mmrag", out=tmp_path / "run.parquet", top_k=20, **where)
    assert result.queries == len(records)
    run = read_run(str(tmp_path / "run.parquet"))
    qrels = {r["id"]: dict(r["relevant_chunks"]) for r in records}
    for level in (1, 2):
        report = evaluate("mmrag", run, metrics="ndcg@10,recall@10,p@1", relevance_level=level, **where)
        expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10", "P.1"},
                                                  relevance_level=level).evaluate(run)
        for name, key in (("NDCG@10", "ndcg_cut_10"), ("Recall@10", "recall_10"), ("P@1", "P_1")):
            assert report.metrics[name] == pytest.approx(sum(v[key] for v in expected.values()) / len(qrels)), name
        assert report.unknown_documents == report.unknown_queries == report.unranked_queries == []
        assert report.metrics["NDCG@10"] > 0.5
    assert any("graded 0/1/2" in note for note in report.notes)


def test_crag_pages_are_ranked_but_not_scored(tmp_path, capsys):
    where = ["--data-dir", str(DATA / "crag"), "--cache-dir", str(tmp_path / "cache")]
    run = tmp_path / "run.jsonl"
    assert main(["bm25", "crag/task_1_and_2", "--top-k", "3", "--out", str(run), *where]) == 0
    ranked = read_run(str(run))
    pages = ragloaders.load("crag/task_1_and_2", "corpus", split="corpus", data_dir=str(DATA / "crag"),
                            cache_dir=str(tmp_path / "cache")).data.table.column("_id").to_pylist()
    assert len(ranked) == 10 and all(len(docs) <= 3 and set(docs) <= set(pages) for docs in ranked.values())
    assert main(["eval", "crag/task_1_and_2", "--run", str(run), *where]) == 2
    assert "no relevance labels" in capsys.readouterr().err


def test_crag_has_no_reranking_configs(tmp_path):
    with pytest.raises(ValueError) as caught:
        reranking_tables("crag/task_1_and_2", data_dir=str(DATA / "crag"))
    assert_names(caught.value, "crag/task_1_and_2", "top_ranked", "hard_negatives", "relevance labels")



def test_build_with_reranking_configs_loads_and_says_how_they_were_made(nfcorpus, nfcorpus_with_reranking, tmp_path):
    out = nfcorpus_with_reranking
    expected = reranking_tables("beir/nfcorpus", **nfcorpus)
    for config in ("top_ranked", "hard_negatives"):
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hf"))
        assert set(loaded) == {"train", "dev", "test"}
        assert loaded["test"].to_list() == expected[config]["test"].to_pylist()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "| **beir/nfcorpus** | 0.3218 | 0.3254 |" in card and "ragloaders bm25 beir/nfcorpus --out bm25.trec" in card
    assert "- `hard_negatives`: `top_ranked` without the documents judged relevant" in card
    assert "k1=0.9, b=0.4" in card and "top 100 per judged query" in card


def test_build_with_refuses_unknown_configs_and_crag(tmp_path, capsys):
    assert main(["build", "beir/nfcorpus", "--out", str(tmp_path / "o"), "--with", "negatives"]) == 2
    assert "unknown config(s) negatives" in capsys.readouterr().err
    assert main(["build", "crag/task_1_and_2", "--out", str(tmp_path / "o"), "--with", "top_ranked",
                 "--data-dir", str(DATA / "crag")]) == 2
    assert "relevance labels" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_build_configs_naming_what_with_makes_says_so_in_one_line(tmp_path, capsys):
    for configs in ("top_ranked", "qrels,hard_negatives,top_ranked"):
        assert main(["build", "beir/nfcorpus", "--out", str(tmp_path / "o"), "--data-dir", str(DATA / "beir"),
                     "--configs", configs, "--with", "top_ranked"]) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        named = "top_ranked is" if configs == "top_ranked" else "hard_negatives,top_ranked are"
        assert f"--configs: {named} not built from the source of beir/nfcorpus but made by --with" in line
    # CRAG: its own top_ranked is a config; --with makes nothing for a path without relevance labels, so no hint
    assert main(["build", "crag/task_1_and_2", "--out", str(tmp_path / "o"), "--data-dir", str(DATA / "crag"),
                 "--configs", "hard_negatives"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "unknown config(s) hard_negatives; the configs of crag/task_1_and_2 are" in line and "--with" not in line
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_push_with_stages_the_reranking_configs_as_build_does(nfcorpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGLOADERS_STAGING", str(tmp_path / "staging"))
    where = ["--data-dir", nfcorpus["data_dir"], "--cache-dir", nfcorpus["cache_dir"]]
    assert main(["push", "beir/nfcorpus", "--repo-id", "me/nf", "--dry-run", "--with", "top_ranked,hard_negatives",
                 *where]) == 0
    listed = capsys.readouterr().out
    for config in ("top_ranked", "hard_negatives"):
        assert [line for line in listed.splitlines() if f": {config}/test-" in line], listed
    staged = tmp_path / "staging" / "me--nf" / "beir--nfcorpus"
    card = (staged / "README.md").read_text(encoding="utf-8")
    assert "- `hard_negatives`: `top_ranked` without the documents judged relevant" in card
    loaded = datasets.load_dataset(str(staged), "top_ranked", split="test", cache_dir=str(tmp_path / "hf"))
    assert loaded.to_list() == reranking_tables("beir/nfcorpus", **nfcorpus)["top_ranked"]["test"].to_pylist()
    # the configs asked for are part of the staged build's identity: without --with it is built again, not reused
    assert main(["push", "beir/nfcorpus", "--repo-id", "me/nf", "--dry-run", *where]) == 0
    listed = capsys.readouterr().out
    assert "reusing the staged build" not in listed and "top_ranked/" not in listed
    assert not (staged / "top_ranked").exists() and "hard_negatives" not in (staged / "README.md").read_text()


def test_push_with_refuses_unknown_configs_and_a_built_folder_before_staging(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGLOADERS_STAGING", str(tmp_path / "staging"))
    assert main(["push", "beir/nfcorpus", "--repo-id", "me/nf", "--dry-run", "--with", "negatives"]) == 2
    assert "unknown config(s) negatives" in capsys.readouterr().err and not (tmp_path / "staging").exists()
    folder = tmp_path / "built"
    folder.mkdir()
    (folder / "README.md").write_text("---\n---\n")
    assert main(["push", str(folder), "--repo-id", "me/nf", "--dry-run", "--with", "top_ranked"]) == 2
    assert "pushed as it is" in capsys.readouterr().err
