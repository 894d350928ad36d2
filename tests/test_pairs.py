"""`ragloaders.pairs` and `ragloaders pairs`: the rows equal a join made by hand of the run, the queries, the corpus
and the qrels; top_ranked of CRAG; batches; unknown ids in one line naming the id and the line; the output rules."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ragloaders
from conftest import assert_names, assert_source_error, run_cli
from ragloaders import SourceError
from ragloaders.lookup.pairs import PairWriter


def rows_by_id(build, config: str) -> dict[str, dict]:
    return {row["_id"]: row for dataset in build.load(config).values() for row in dataset.to_list()}


def hand_join(run_lines: list[tuple[str, str, float]], top: int, queries: dict, corpus: dict,
              qrels: dict) -> list[dict]:
    """The pairs as the contract states them, computed the plain way."""
    by_query: dict[str, list[tuple[str, float]]] = {}
    for query_id, doc_id, score in run_lines:
        by_query.setdefault(query_id, []).append((doc_id, score))
    expected = []
    for query_id, docs in by_query.items():
        ranked = sorted(docs, key=lambda d: -d[1])[:top]
        for rank, (doc_id, score) in enumerate(ranked, start=1):
            expected.append({"query-id": query_id, "query": queries[query_id]["text"], "corpus-id": doc_id,
                             "rank": rank, "score": score, "title": corpus[doc_id]["title"],
                             "text": corpus[doc_id]["text"], "label": qrels.get((query_id, doc_id))})
    return expected


@pytest.fixture(scope="module")
def nf_run(nfcorpus_build, tmp_path_factory) -> tuple[Path, list[tuple[str, str, float]]]:
    """A TREC run over three judged test queries: judged and unjudged documents, scores out of order and tied."""
    qrels = nfcorpus_build.load("qrels", split="test").to_list()
    judged = list(dict.fromkeys(row["query-id"] for row in qrels))[:3]
    corpus_ids = nfcorpus_build.load("corpus", split="corpus")["_id"][:40]
    lines = []
    for number, query_id in enumerate(judged):
        relevant = [row["corpus-id"] for row in qrels if row["query-id"] == query_id][:3]
        docs = list(dict.fromkeys(relevant + corpus_ids[number * 7: number * 7 + 6]))
        scores = [1.5, 3.0, 3.0, -1.0, 0.25, 7.0, 3.0, 2.0, 0.0, 5.5][: len(docs)]
        lines += [(query_id, doc_id, score) for doc_id, score in zip(docs, scores)]
    path = tmp_path_factory.mktemp("pairs") / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} {n} {s} test\n" for n, (q, d, s) in enumerate(lines, 1)))
    return path, lines


def test_the_pairs_equal_a_join_made_by_hand(nfcorpus_build, nf_run, tmp_path):
    path, lines = nf_run
    out = tmp_path / "pairs.parquet"
    written = ragloaders.pairs(nfcorpus_build.path, out, run=path, top=5, data_dir=nfcorpus_build.data_dir,
                               cache_dir=nfcorpus_build.cache_dir)
    qrels = {(r["query-id"], r["corpus-id"]): r["score"] for r in nfcorpus_build.load("qrels", split="test").to_list()}
    expected = hand_join(lines, 5, rows_by_id(nfcorpus_build, "queries"), rows_by_id(nfcorpus_build, "corpus"), qrels)
    table = pq.read_table(out)
    assert table.column_names == ["query-id", "query", "corpus-id", "rank", "score", "title", "text", "label"]
    assert table.to_pylist() == expected
    assert (written.rows, written.queries, written.labels_from) == (15, 3, "qrels test")
    assert any(row["label"] is None for row in expected) and any(row["label"] for row in expected)


def test_small_batches_write_the_same_rows(nfcorpus_build, nf_run, tmp_path, monkeypatch):
    path, _ = nf_run
    where = {"data_dir": nfcorpus_build.data_dir, "cache_dir": nfcorpus_build.cache_dir}
    ragloaders.pairs(nfcorpus_build.path, tmp_path / "one.parquet", run=path, top=4, **where)
    original = PairWriter.__init__

    def tiny(self, *args, **options):
        original(self, *args, **options)
        self.batch_rows = 3

    monkeypatch.setattr(PairWriter, "__init__", tiny)
    ragloaders.pairs(nfcorpus_build.path, tmp_path / "many.parquet", run=path, top=4, **where)
    assert pq.ParquetFile(tmp_path / "many.parquet").metadata.num_row_groups > 1
    assert pq.read_table(tmp_path / "many.parquet").equals(pq.read_table(tmp_path / "one.parquet"))


def test_crag_top_ranked_from_a_built_folder(crag_build, tmp_path):
    folder = str(crag_build.out)
    written = ragloaders.pairs(folder, tmp_path / "crag.parquet", from_top_ranked=True, top=2, split="test",
                               cache_dir=crag_build.cache_dir)
    top_ranked = ragloaders.load(folder, "top_ranked", split="test", cache_dir=crag_build.cache_dir).to_list()
    store = ragloaders.docs(folder, cache_dir=crag_build.cache_dir)
    queries = ragloaders.docs(folder, "queries", cache_dir=crag_build.cache_dir)
    expected = [(row["query-id"], queries[row["query-id"]]["text"], doc_id, rank, store[doc_id]["text"])
                for row in top_ranked for rank, doc_id in enumerate(row["corpus-ids"][:2], start=1)]
    table = pq.read_table(tmp_path / "crag.parquet")
    assert list(zip(*(table.column(n).to_pylist() for n in ("query-id", "query", "corpus-id", "rank", "text")))) \
        == expected
    assert table.column("label").null_count == table.column("score").null_count == table.num_rows == written.rows
    assert written.labels_from is None
    run = tmp_path / "run.trec"
    run.write_text(f"{expected[0][0]} Q0 {expected[0][2]} 1 1.0 t\n")
    # (it chose nothing, silently)
    with pytest.raises(ValueError, match=r"split \(--split\) 'validation': .* has no qrels"):
        ragloaders.pairs(folder, tmp_path / "r.parquet", run=run, split="validation", cache_dir=crag_build.cache_dir)
    assert ragloaders.pairs(folder, tmp_path / "r.parquet", run=run, cache_dir=crag_build.cache_dir).rows == 1


def test_mmrag_labels_come_from_the_split_asked(mmrag_build, tmp_path):
    qrels = mmrag_build.load("qrels", split="dev").to_list()[:6]
    run_file = tmp_path / "mm.jsonl"
    run_file.write_text("".join(json.dumps({"query-id": r["query-id"], "corpus-id": r["corpus-id"], "score": i})
                                + "\n" for i, r in enumerate(qrels)))
    where = {"data_dir": mmrag_build.data_dir, "cache_dir": mmrag_build.cache_dir}
    ragloaders.pairs("mmrag", tmp_path / "dev.parquet", run=run_file, split="dev", **where)
    labels = {(r["query-id"], r["corpus-id"]): r["score"] for r in qrels}
    table = pq.read_table(tmp_path / "dev.parquet").to_pylist()
    assert sorted((r["query-id"], r["corpus-id"], r["label"]) for r in table) == sorted(
        (q, d, g) for (q, d), g in labels.items())


def test_unknown_ids_are_one_line_naming_the_id_and_the_line(nfcorpus_build, nf_run, tmp_path):
    path, _ = nf_run
    where = ["--data-dir", nfcorpus_build.data_dir, "--cache-dir", nfcorpus_build.cache_dir]
    lines = path.read_text().splitlines()
    bad_doc = tmp_path / "bad-doc.trec"
    bad_doc.write_text("\n".join(lines[:4] + [lines[4].replace(lines[4].split()[2], "MED-999999")] + lines[5:]) + "\n")
    code, out, err = run_cli("pairs", "beir/nfcorpus", "--run", str(bad_doc), "--top", "10", "--out",
                             str(tmp_path / "p.parquet"), *where)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{bad_doc}, line 5: document 'MED-999999'" in err and "is not in beir/nfcorpus corpus" in err
    assert not list(tmp_path.glob("p.parquet*"))  # nothing written, nothing partial left
    bad_query = tmp_path / "bad-query.trec"
    first_block = next(n for n, line in enumerate(lines) if line.split()[0] != lines[0].split()[0])
    bad_query.write_text("\n".join(lines[:first_block] + ["nope Q0 MED-10 1 1.0 x"] + lines[first_block:]) + "\n")
    code, out, err = run_cli("pairs", "beir/nfcorpus", "--run", str(bad_query), "--out", str(tmp_path / "q.parquet"),
                             *where)
    assert code == 2 and f"{bad_query}, line {first_block + 1}: query 'nope' is not in beir/nfcorpus queries" in err


def test_the_output_rules_of_bm25(nfcorpus_build, nf_run, tmp_path):
    path, _ = nf_run
    where = ["--data-dir", nfcorpus_build.data_dir, "--cache-dir", nfcorpus_build.cache_dir]
    existing = tmp_path / "mine.parquet"
    existing.write_bytes(b"the user's")
    code, _, err = run_cli("pairs", "beir/nfcorpus", "--run", str(path), "--out", str(existing), *where)
    assert code == 2 and "exists; ragloaders writes" in err and existing.read_bytes() == b"the user's"
    code, _, err = run_cli("pairs", "beir/nfcorpus", "--run", str(path), "--out",
                           str(Path(nfcorpus_build.cache_dir) / "p.parquet"), *where)
    assert code == 2 and "lies inside the cache dir" in err
    code, _, err = run_cli("pairs", "beir/nfcorpus", "--run", str(path), "--out", str(tmp_path / "p.csv"), *where)
    assert code == 2 and "written as Parquet" in err
    code, _, err = run_cli("pairs", "beir/nfcorpus", "--run", str(path), "--out", str(tmp_path / "no" / "p.parquet"),
                           *where)
    assert code == 2 and f"the folder {tmp_path / 'no'} does not exist" in err
    code, _, err = run_cli("pairs", "beir/nfcorpus", "--run", str(path), "--top", "0", "--out",
                           str(tmp_path / "p.parquet"), *where)
    assert code == 2 and "top (--top) must be" in err
    code, out, err = run_cli("pairs", "beir/nfcorpus", "--run", str(path), "--top", "2", "--out",
                             str(tmp_path / "ok.parquet"), *where)
    assert code == 0 and out.startswith(f"wrote {tmp_path / 'ok.parquet'}: 6 pairs for 3 queries (labels from qrels "
                                        "test)")
    assert pa.types.is_int32(pq.read_schema(tmp_path / "ok.parquet").field("rank").type)


def test_pairs_says_one_pair_for_one_query(nfcorpus_build, nf_run, tmp_path):
    _, lines = nf_run
    query_id, doc_id, score = lines[0]
    run = tmp_path / "one.trec"
    run.write_text(f"{query_id} Q0 {doc_id} 1 {score} test\n")
    code, out, err = run_cli("pairs", "beir/nfcorpus", "--run", str(run), "--out", str(tmp_path / "one.parquet"),
                             "--data-dir", nfcorpus_build.data_dir, "--cache-dir", nfcorpus_build.cache_dir)
    assert code == 0, err
    assert out.startswith(f"wrote {tmp_path / 'one.parquet'}: 1 pair for 1 query (labels from qrels test)"), out
    assert pq.read_metadata(tmp_path / "one.parquet").num_rows == 1


def test_the_rows_equal_those_of_the_whole_run_read_at_once(nfcorpus_build, mmrag_build, nf_run, tmp_path):
    """The streamed pairs equal the pairs of the run read whole (`read_run`, the reader pairs used before), on the
    samples' runs: TREC, Parquet and JSONL."""
    from ragloaders.eval.runs import read_run, write_run

    parquet_run = tmp_path / "run.parquet"
    lines = nf_run[1]
    write_run(str(parquet_run), [(q, [d for qq, d, _ in lines if qq == q], [s for qq, _, s in lines if qq == q])
                                 for q in dict.fromkeys(q for q, _, _ in lines)])
    mm_run = tmp_path / "mm.jsonl"
    qrels = mmrag_build.load("qrels", split="dev").to_list()[:8]
    mm_run.write_text("".join(json.dumps({"query-id": r["query-id"], "corpus-id": r["corpus-id"], "score": i % 3})
                              + "\n" for i, r in enumerate(sorted(qrels, key=lambda r: r["query-id"]))))
    for build, run_file, split in ((nfcorpus_build, nf_run[0], "test"), (nfcorpus_build, parquet_run, "test"),
                                   (mmrag_build, mm_run, "dev")):
        source = "mmrag" if build is mmrag_build else build.path
        where = {"data_dir": build.data_dir, "cache_dir": build.cache_dir}
        out = tmp_path / f"{run_file.stem}-{run_file.suffix[1:]}.parquet"
        ragloaders.pairs(source, out, run=run_file, top=4, split=split, **where)
        corpus, queries = ragloaders.docs(source, **where), ragloaders.docs(source, "queries", **where)
        labels = {(r["query-id"], r["corpus-id"]): r["score"]
                  for r in ragloaders.load(source, "qrels", split=split, **where).to_list()}
        whole = [(q, [d for d, _ in ranked], [s for _, s in ranked], str(run_file))
                 for q, scored in read_run(str(run_file)).items()
                 for ranked in [sorted(scored.items(), key=lambda item: -item[1])[:4]]]
        expected = pa.concat_tables(PairWriter(corpus, queries, labels).batches(whole))
        assert pq.read_table(out).equals(expected), run_file


def test_a_query_whose_lines_are_apart_is_one_line_naming_both(nfcorpus_build, nf_run, tmp_path):
    path, lines = nf_run
    text = path.read_text().splitlines()
    apart = tmp_path / "apart.trec"
    apart.write_text("\n".join(text[1:] + text[:1]) + "\n")
    first = lines[0][0]
    block = sum(1 for q, _, _ in lines if q == first) - 1
    code, _, err = run_cli("pairs", "beir/nfcorpus", "--run", str(apart), "--out", str(tmp_path / "p.parquet"),
                           "--data-dir", nfcorpus_build.data_dir, "--cache-dir", nfcorpus_build.cache_dir)
    assert code == 2 and len(err.splitlines()) == 1
    assert (f"{apart}, line {len(text)}: query {first!r} comes back after other queries (its earlier lines end at line "
            f"{block})") in err
    assert not list(tmp_path.glob("p.parquet*"))


def test_missing_skip_leaves_out_unknown_queries_and_documents(nfcorpus_build, nf_run, tmp_path):
    path, lines = nf_run
    where = {"data_dir": nfcorpus_build.data_dir, "cache_dir": nfcorpus_build.cache_dir}
    text = path.read_text().splitlines()
    first = lines[0][0]
    block = sum(1 for q, _, _ in lines if q == first)
    # the first query's best document is unknown; an unknown query sits between the first and second query
    best = max(range(block), key=lambda i: lines[i][2])
    text[best] = text[best].replace(f" {lines[best][1]} ", " MED-999999 ")
    text[block:block] = ["nope Q0 MED-10 1 9 x", "nope Q0 MED-14 2 8 x"]
    damaged = tmp_path / "damaged.trec"
    damaged.write_text("\n".join(text) + "\n")
    code, out, err = run_cli("pairs", "beir/nfcorpus", "--run", str(damaged), "--top", "3", "--out",
                             str(tmp_path / "skip.parquet"), "--missing", "skip", "--data-dir", where["data_dir"],
                             "--cache-dir", where["cache_dir"])
    assert code == 0, err
    assert err.splitlines() == ["ragloaders: warning: --missing skip: skipped 1 query not in the queries (all their "
                                "pairs; first 'nope') and 1 pair whose document is not in the corpus (first "
                                "'MED-999999')"]
    assert out.startswith(f"wrote {tmp_path / 'skip.parquet'}: 8 pairs for 3 queries")
    table = pq.read_table(tmp_path / "skip.parquet").to_pylist()
    assert "nope" not in {r["query-id"] for r in table} and "MED-999999" not in {r["corpus-id"] for r in table}
    assert [r["rank"] for r in table if r["query-id"] == first] == [2, 3]  # rank 1 was the unknown document
    code, _, err = run_cli("pairs", "beir/nfcorpus", "--run", str(damaged), "--out", str(tmp_path / "e.parquet"),
                           "--data-dir", where["data_dir"], "--cache-dir", where["cache_dir"])
    assert code == 2 and f"{damaged}, line {block + 1}: query 'nope' is not in" in err
    written = ragloaders.pairs(nfcorpus_build.path, tmp_path / "py.parquet", run=damaged, top=3, missing="skip",
                               **where)
    assert (written.rows, written.queries, written.skipped_queries, written.skipped_documents,
            written.first_skipped_query, written.first_skipped_document) == (8, 3, 1, 1, "nope", "MED-999999")
    assert pq.read_table(tmp_path / "py.parquet").to_pylist() == table
    with pytest.raises(ValueError) as caught:
        ragloaders.pairs(nfcorpus_build.path, tmp_path / "x.parquet", run=damaged, missing="ignore", **where)
    assert_names(caught.value, "missing", "error, skip", "'ignore'")


def test_a_query_whose_every_pair_is_skipped_is_not_counted_and_an_empty_run_writes_nothing(nfcorpus_build, nf_run,
                                                                                           tmp_path):
    """`--missing skip` counted a known query whose documents were all unknown among the queries written; a run with
    no line wrote an empty Parquet file (and said "0 pairs for 0 queries"), which eval refuses to score."""
    path, lines = nf_run
    where = {"data_dir": nfcorpus_build.data_dir, "cache_dir": nfcorpus_build.cache_dir}
    first = lines[0][0]
    damaged = tmp_path / "unknown-documents.trec"
    damaged.write_text("".join(line.replace(f" {d} ", f" UNKNOWN-{d} ") if q == first else line
                               for line, (q, d, _) in zip(path.read_text().splitlines(keepends=True), lines)))
    written = ragloaders.pairs(nfcorpus_build.path, tmp_path / "skip.parquet", run=damaged, top=3, missing="skip",
                               **where)
    table = pq.read_table(tmp_path / "skip.parquet")
    assert written.queries == len(set(table.column("query-id").to_pylist())) == 2 and first not in table.column(
        "query-id").to_pylist()
    every_one_unknown = tmp_path / "all-unknown.trec"
    every_one_unknown.write_text("nope Q0 MED-10 1 9 x\n" + "".join(line.replace(f" {d} ", f" UNKNOWN-{d} ") for line, (
        _, d, _) in zip(path.read_text().splitlines(keepends=True), lines)))
    with pytest.raises(ValueError) as caught:
        ragloaders.pairs(nfcorpus_build.path, tmp_path / "none.parquet", run=every_one_unknown, missing="skip",
                         **where)
    assert_names(caught.value, "no pair to write", "1 query not in the queries")
    assert not (tmp_path / "none.parquet").exists()
    for name in ("empty.trec", "empty.jsonl"):
        (tmp_path / name).write_text("")
        with pytest.raises(SourceError) as caught:
            ragloaders.pairs(nfcorpus_build.path, tmp_path / f"{name}.parquet", run=tmp_path / name, **where)
        assert_source_error(caught.value, name, "holds no result: no pair to write")
        assert not (tmp_path / f"{name}.parquet").exists()


STREAM_CHILD = r"""
import json, sys
import ragloaders
source, data_dir, cache_dir, small, big, out = sys.argv[1:]
def status(key):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(key))
where = dict(data_dir=data_dir, cache_dir=cache_dir)
ragloaders.pairs(source, out + ".warm.parquet", run=small, top=10, **where)  # imports, opened stores, index: warm
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets VmHWM to the current RSS
before = status("VmRSS:")
written = ragloaders.pairs(source, out, run=big, top=10, **where)
print(json.dumps({"added": status("VmHWM:") - before, "rows": written.rows, "queries": written.queries}))
"""


@pytest.mark.slow  # a 2.2M-line run (80 MB) generated and read in a child: CI runs it
def test_a_run_of_two_million_pairs_is_read_in_bounded_memory(nfcorpus_build, nf_run, tmp_path):
    """600 queries x every document of nfcorpus (2.2M lines, 80 MB): read whole (read_run), pairs added 345 MB of
    peak RSS; streamed, what it adds stays under 120 MB (69 MB measured: one batch of lines, one query, one output
    batch)."""
    import subprocess
    import sys

    queries = nfcorpus_build.load("queries", split="queries")["_id"][:600]
    corpus = nfcorpus_build.load("corpus", split="corpus")["_id"]
    big = tmp_path / "big.trec"
    with open(big, "w") as f:
        for query_id in queries:
            f.writelines([f"{query_id} Q0 {doc_id} {rank} {-rank / 7:.6f} big\n"
                          for rank, doc_id in enumerate(corpus, start=1)])
    done = subprocess.run([sys.executable, "-c", STREAM_CHILD, nfcorpus_build.path, nfcorpus_build.data_dir,
                           nfcorpus_build.cache_dir, str(nf_run[0]), str(big), str(tmp_path / "big.parquet")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["rows"], figures["queries"]) == (6000, 600)
    assert figures["added"] < 120 << 20, figures
    print(f"peak RSS added by pairs of a 2.2M-line run: {figures['added'] / 1e6:.0f} MB")
    table = pq.read_table(tmp_path / "big.parquet", columns=["query-id", "corpus-id", "rank"])
    assert table.column("corpus-id").to_pylist()[:10] == corpus[:10]
    assert table.column("query-id").to_pylist()[::10] == queries


def test_a_folder_whose_qrels_have_another_split_says_which_split_labelled_the_pairs(tmp_path, cache_dir):
    """A folder whose qrels hold only `train`: asked for `test`, its only split is read (mteb's rule, as `eval`
    reads it), and the pairs said 'labels from qrels test' while their labels were train's. Now the message names
    the split read and a warning says it stood in for the one asked; `eval` warns the same."""
    source = tmp_path / "src"
    (source / "qrels").mkdir(parents=True)
    (source / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "one"}\n'
                                         '{"_id": "d2", "title": "", "text": "two"}\n')
    (source / "queries.jsonl").write_text('{"_id": "q1", "text": "which"}\n')
    (source / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    folder = tmp_path / "built"
    assert run_cli("build", "beir-format", "--data-dir", str(source), "--out", str(folder), "--cache-dir",
                   cache_dir)[0] == 0
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    code, out, err = run_cli("pairs", str(folder), "--run", str(run), "--split", "test", "--out",
                             str(tmp_path / "pairs.parquet"))
    assert code == 0, err
    assert "labels from qrels train" in out and "labels from qrels test" not in out, out
    warning = f"{folder} qrels has no split 'test': its only split, 'train', is read instead"
    assert warning in err, err
    assert pq.read_table(tmp_path / "pairs.parquet").column("label").to_pylist() == [None, 1]
    code, out, err = run_cli("eval", str(folder), "--run", str(run), "--split", "test")
    assert code == 0 and warning in err, err
    code, out, err = run_cli("pairs", "beir-format", "--data-dir", str(source), "--run", str(run), "--split", "test",
                             "--out", str(tmp_path / "refused.parquet"))
    assert code == 2 and "beir-format qrels has no split 'test'; its splits are train" in err, err


def test_a_batch_holds_at_most_its_bytes_of_documents_whatever_their_mean(tmp_path, monkeypatch):
    """20 documents of 100 KB among 2,000 of a few bytes, and 30 queries that each rank the 20 large ones: the rows
    per batch came from the mean document (~1 KB here), so one batch held all 600 pairs, 60 MB of text, where the
    limit says 1 MB (the helper's case: 700 MB of memory against 227 MB for the same run over small documents).
    Each written table now holds at most the limit of text, or one document; the rows are those of one batch."""
    import importlib

    pairs = importlib.import_module("ragloaders.lookup.pairs")

    source = tmp_path / "src"
    (source / "qrels").mkdir(parents=True)
    big = {f"big{i}": f"{i} " + "x" * 100_000 for i in range(20)}
    with open(source / "corpus.jsonl", "w") as f:
        for doc_id, text in [*big.items(), *((f"small{i}", "tiny") for i in range(2000))]:
            f.write(json.dumps({"_id": doc_id, "title": "", "text": text}) + "\n")
    (source / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": "x"}) + "\n" for i in range(30)))
    (source / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\tbig0\t1\n")
    run = tmp_path / "run.trec"
    run.write_text("".join(f"q{q} Q0 {doc_id} {n} {20 - n} t\n" for q in range(30) for n, doc_id in enumerate(big, 1)))
    where = {"data_dir": str(source), "cache_dir": str(tmp_path / "cache")}
    ragloaders.pairs("beir-format", tmp_path / "whole.parquet", run=run, top=20, **where)
    monkeypatch.setattr(pairs, "BATCH_BYTES", 1 << 20)
    ragloaders.pairs("beir-format", tmp_path / "cut.parquet", run=run, top=20, **where)
    cut = pq.ParquetFile(tmp_path / "cut.parquet")
    texts = [sum(map(len, cut.read_row_group(group, columns=["text"]).column("text").to_pylist()))
             for group in range(cut.num_row_groups)]
    assert len(texts) >= 60 and max(texts) <= 1 << 20, texts
    assert pq.read_table(tmp_path / "cut.parquet").equals(pq.read_table(tmp_path / "whole.parquet"))
    assert pq.read_table(tmp_path / "cut.parquet").num_rows == 600


@pytest.mark.parametrize("form", ["parquet", "trec with a BOM"])
def test_an_unknown_query_is_located_in_any_run_form(form, nfcorpus_build, nf_run, tmp_path):
    """The record of a Parquet run is found batch by batch (the whole run was read as numpy objects again, 554 MB
    for 3M rows); a TREC run starting with a BOM lost its line number (the BOM stayed in the first query id)."""
    path, lines = nf_run
    rows = [("nope", "MED-10", 1.0), *lines]
    if form == "parquet":
        run = tmp_path / "run.parquet"
        pq.write_table(pa.table({"query-id": [q for q, _, _ in rows], "corpus-id": [d for _, d, _ in rows],
                                 "score": [s for _, _, s in rows]}), run, row_group_size=4)
        where = f"{run}, record 1"
    else:
        run = tmp_path / "run.trec"
        run.write_bytes(b"\xef\xbb\xbf" + "".join(f"{q} Q0 {d} {n} {s} t\n" for n, (q, d, s) in enumerate(rows, 1))
                        .encode())
        where = f"{run}, line 1"
    code, _, err = run_cli("pairs", str(nfcorpus_build.out), "--run", str(run), "--out", str(tmp_path / "p.parquet"),
                           "--cache-dir", nfcorpus_build.cache_dir)
    assert code == 2 and f"{where}: query 'nope' is not in" in err, err
