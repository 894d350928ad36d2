"""BEIR's conventions on the official nfcorpus zip: capped recall (`R_cap@k`, beir/retrieval/custom_metrics.py
`recall_cap`) against a computation of its own, identical ids dropped for every BEIR and beir-format path unless
--keep-identical-ids, a shared query/corpus id a warning for beir-format, and the BM25 scores of top_ranked."""

from __future__ import annotations

import csv
import io
import json
import os
import zipfile

import pytest
from conftest import DATA
from ragloaders import cli
from ragloaders.eval import bm25, evaluate, read_run, reranking_tables

NFCORPUS_ZIP = DATA / "beir" / "nfcorpus.zip"


@pytest.fixture(scope="module")
def nfcorpus_run(nfcorpus_build, tmp_path_factory) -> dict:
    """The BM25 run of the nfcorpus test queries (top 100), from the shared build's cache."""
    where = {"data_dir": nfcorpus_build.data_dir, "cache_dir": nfcorpus_build.cache_dir}
    out = tmp_path_factory.mktemp("nf-run") / "bm25.trec"
    bm25("beir/nfcorpus", out=out, top_k=100, **where)
    return {"run": str(out), "where": where}


def official_test_qrels() -> dict[str, dict[str, int]]:
    """nfcorpus/qrels/test.tsv read straight from the zip."""
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        text = archive.read("nfcorpus/qrels/test.tsv").decode("utf-8")
    qrels: dict[str, dict[str, int]] = {}
    for row in csv.DictReader(io.StringIO(text), delimiter="\t"):
        qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def trec_lines(path: str) -> dict[str, list[tuple[str, float]]]:
    ranked: dict[str, list[tuple[str, float]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            query_id, _, doc_id, _, score, _ = line.split()
            ranked.setdefault(query_id, []).append((doc_id, float(score)))
    return ranked


def test_capped_recall_is_beirs_on_the_official_zip(nfcorpus_run):
    qrels, ranked = official_test_qrels(), trec_lines(nfcorpus_run["run"])
    names = "R_cap@1,R_cap@10,R_cap@100,P@1,Recall@100"
    report = evaluate("beir/nfcorpus", nfcorpus_run["run"], metrics=names, **nfcorpus_run["where"])
    for k in (1, 10, 100):
        total = 0.0
        for query_id, grades in qrels.items():
            relevant = [d for d, g in grades.items() if g > 0]  # BEIR's rule: a grade above 0
            hits = sorted(ranked.get(query_id, []), key=lambda pair: (pair[1], pair[0]), reverse=True)[:k]
            found = sum(1 for d, _ in hits if grades.get(d, 0) > 0)
            total += found / min(len(relevant), k) if relevant else 0.0
        assert report.metrics[f"R_cap@{k}"] == pytest.approx(total / len(qrels), abs=1e-12), k
    assert report.metrics["R_cap@1"] == pytest.approx(report.metrics["P@1"])  # min(1, relevant) is 1
    assert report.metrics["R_cap@100"] > report.metrics["Recall@100"]  # some queries have > 100 relevant documents
    assert any(len([g for g in grades.values() if g > 0]) > 100 for grades in qrels.values())


def test_a_beir_report_carries_capped_recall_by_default(nfcorpus_run):
    report = evaluate("beir/nfcorpus", nfcorpus_run["run"], **nfcorpus_run["where"])
    assert {"NDCG@10", "R_cap@1", "R_cap@3", "R_cap@5", "R_cap@10", "R_cap@100"} <= set(report.metrics)
    assert 0 < report.metrics["R_cap@10"] <= 1


def with_self_matches(run_file: str, out, every: int) -> tuple[str, int]:
    """The run with each `every`-th query's own id ranked first (above its best document)."""
    ranked = read_run(run_file)
    lines, added = [], 0
    for n, (query_id, docs) in enumerate(ranked.items()):
        if n % every == 0:
            docs = {query_id: max(docs.values()) + 1.0, **docs}
            added += 1
        lines += [f"{query_id} Q0 {doc_id} {rank} {score} t" for rank, (doc_id, score) in enumerate(docs.items(), 1)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(out), added


def test_identical_ids_are_dropped_for_every_beir_path_unless_kept(nfcorpus_run, tmp_path, capsys):
    where = nfcorpus_run["where"]
    selfish, added = with_self_matches(nfcorpus_run["run"], tmp_path / "selfish.trec", every=3)
    plain = evaluate("beir/nfcorpus", nfcorpus_run["run"], metrics="NDCG@10,MRR@10", **where)
    dropped = evaluate("beir/nfcorpus", selfish, metrics="NDCG@10,MRR@10", **where)
    assert added > 50 and dropped.identical_ids_dropped == added
    assert dropped.metrics == plain.metrics  # BEIR's default: as if the run had not named them
    assert dropped.unknown_documents == []  # the query ids are no corpus ids, but dropped, they are not scored
    assert any(f"identical ids dropped: {added} retrieved" in line for line in dropped.conventions)
    args = ["eval", "beir/nfcorpus", "--run", selfish, "--metrics", "ndcg@10", "--data-dir", where["data_dir"],
            "--cache-dir", where["cache_dir"], "--json"]
    assert cli.main(args) == 0
    assert json.loads(capsys.readouterr().out)["identical_ids_dropped"] == added
    assert cli.main([*args, "--keep-identical-ids"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identical_ids_dropped"] == 0 and report["metrics"]["NDCG@10"] < plain.metrics["NDCG@10"]
    assert any("identical ids kept (--keep-identical-ids)" in line for line in report["conventions"])
    assert report["unknown_documents"]["count"] == added  # kept and scored: not in the corpus, so said


@pytest.mark.slow
def test_beir_format_drops_identical_ids_too(nfcorpus_run, tmp_path):
    """The same zip read as the user's own data (beir-format) is scored as BEIR scores it."""
    where = nfcorpus_run["where"]
    selfish, added = with_self_matches(nfcorpus_run["run"], tmp_path / "selfish.trec", every=3)
    plain = evaluate("beir/nfcorpus", nfcorpus_run["run"], metrics="NDCG@10,R_cap@10", **where)
    own = evaluate("beir-format", selfish, metrics="NDCG@10,R_cap@10", data_dir=str(NFCORPUS_ZIP),
                   cache_dir=where["cache_dir"])
    assert own.identical_ids_dropped == added and own.metrics == plain.metrics


def test_a_shared_query_and_corpus_id_is_a_warning_for_beir_format(tmp_path, capsys):
    """The official zip extracted, plus a query whose id is a real corpus id: beir-format warns and exits 0;
    catalogued nfcorpus, which declares no such defect, still calls it a structural error."""
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        archive.extractall(tmp_path)
    folder = tmp_path / "nfcorpus"
    with open(folder / "queries.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "MED-10", "text": "a query named like a document"}) + "\n")
    common = ["--data-dir", str(folder), "--cache-dir", str(tmp_path / "cache")]
    assert cli.main(["validate", "beir-format", *common]) == 0
    out = capsys.readouterr().out
    assert "query ids that are also corpus ids: 1" in out
    assert "WARNING shared_ids in queries: 1 query ids are also corpus ids: 'MED-10'" in out and "ERROR" not in out
    assert cli.main(["validate", "beir/nfcorpus", *common]) == 1
    assert "ERROR shared_ids in queries" in capsys.readouterr().out


@pytest.mark.slow
def test_top_ranked_and_hard_negatives_carry_aligned_non_increasing_scores(nfcorpus_run):
    tables = reranking_tables("beir/nfcorpus", top_k=20, **nfcorpus_run["where"])
    ranked = trec_lines(nfcorpus_run["run"])
    top = tables["top_ranked"]["test"].to_pylist()
    assert len(top) == 323 and sum(1 for row in top if row["corpus-ids"]) > 300
    for row in top:
        assert len(row["scores"]) == len(row["corpus-ids"]) and row["scores"] == sorted(row["scores"], reverse=True)
        # the same documents and scores (float32) as the bm25 run's first 20
        assert row["corpus-ids"] == [d for d, _ in ranked.get(row["query-id"], [])[:20]]
        assert row["scores"] == pytest.approx([s for _, s in ranked.get(row["query-id"], [])[:20]], rel=1e-6)
    negatives = {row["query-id"]: row for row in tables["hard_negatives"]["test"].to_pylist()}
    for row in top:
        scored = dict(zip(row["corpus-ids"], row["scores"]))
        negative = negatives[row["query-id"]]
        assert negative["scores"] == [scored[d] for d in negative["corpus-ids"]]


# --- what was scored: the identity block -------------------------------------------------------------------------


def sha256_file(path) -> str:
    import hashlib

    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_the_report_names_the_catalogue_files_the_split_the_conventions_and_the_run(nfcorpus_run, capsys):
    where = nfcorpus_run["where"]
    args = ["eval", "beir/nfcorpus", "--run", nfcorpus_run["run"], "--metrics", "ndcg@10",
            "--data-dir", where["data_dir"], "--cache-dir", where["cache_dir"]]
    assert cli.main([*args, "--json"]) == 0
    identity = json.loads(capsys.readouterr().out)["identity"]
    import ragloaders

    assert identity["ragloaders"] == ragloaders.__version__
    assert identity["source"] == {"form": "benchmark path", "path": "beir/nfcorpus", "files": [
        {"name": "nfcorpus.zip", "bytes": NFCORPUS_ZIP.stat().st_size, "sha256": sha256_file(NFCORPUS_ZIP)}]}
    assert identity["split"] == "test"
    assert identity["conventions"] == {"relevance_level": 1, "identical_ids": "dropped", "identical_ids_dropped": 0}
    run = nfcorpus_run["run"]
    assert identity["run"] == {"file": "bm25.trec", "bytes": os.path.getsize(run), "sha256": sha256_file(run)}
    assert cli.main(args) == 0
    last = capsys.readouterr().out.splitlines()[-2:]
    assert last[0].startswith("scored: ragloaders ") and sha256_file(NFCORPUS_ZIP) in last[0]
    assert last[1].startswith("scored: split test;") and sha256_file(run) in last[1]


def qrels_digest(path) -> dict:
    """The qrels of a Parquet file as the identity names them, computed the plain way."""
    import hashlib

    import pyarrow.parquet as pq

    grades: dict[str, dict[str, int]] = {}
    for row in pq.read_table(path).to_pylist():
        grades.setdefault(row["query-id"], {})[row["corpus-id"]] = row["score"]
    lines = "".join(f"{q}\t{d}\t{g}\n" for q, docs in grades.items() for d, g in docs.items())
    return {"pairs": sum(map(len, grades.values())), "sha256": hashlib.sha256(lines.encode()).hexdigest()}


def test_a_built_folder_is_named_by_its_manifest_digest_and_the_qrels_scored(nfcorpus_build, nfcorpus_run):
    report = evaluate(str(nfcorpus_build.out), nfcorpus_run["run"], metrics="ndcg@10",
                      cache_dir=nfcorpus_build.cache_dir, keep_identical_ids=True)
    source = report.identity["source"]
    assert source == {"form": "built folder", "folder": str(nfcorpus_build.out),
                      "manifest_sha256": sha256_file(nfcorpus_build.out / ".ragloaders-manifest.json"),
                      "qrels": qrels_digest(nfcorpus_build.out / "qrels" / "test-00000-of-00001.parquet")}
    assert source["qrels"]["pairs"] == 12334
    assert report.identity["conventions"]["identical_ids"] == "kept (--keep-identical-ids)"
    assert evaluate("mmrag", {"ott_552": {"d": 1.0}}, data_dir=str(DATA / "mmrag"), metrics="ndcg@10",
                    cache_dir=nfcorpus_build.cache_dir).identity["run"] == {"file": None}  # (a test query)


def test_a_built_folder_whose_qrels_changed_is_named_by_the_qrels_actually_scored(nfcorpus_build, nfcorpus_run,
                                                                                  tmp_path):
    """A copy of the folder, scored, then its qrels file rewritten with every grade 0 (same rows, same manifest).
    Its identity named the manifest alone, the same for both. With the file's time set back (as `cp -p`, `rsync -t`
    or `tar x` do), datasets' cache, keyed on the time, still gives the old rows: the identity then named the new
    file's sha256 while the old qrels were scored. It names the qrels scored, by their content, whatever the cache
    does, and a fresh cache scores and names the new ones."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, copy)
    cache = str(tmp_path / "cache")
    first = evaluate(str(copy), nfcorpus_run["run"], metrics="ndcg@10", cache_dir=cache)
    qrels = copy / "qrels" / "test-00000-of-00001.parquet"
    before = qrels_digest(qrels)
    stat = qrels.stat()
    table = pq.read_table(qrels)
    pq.write_table(table.set_column(2, "score", pa.array([0] * table.num_rows, table.schema.field("score").type)),
                   qrels)
    os.utime(qrels, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    kept_time = evaluate(str(copy), nfcorpus_run["run"], metrics="ndcg@10", cache_dir=cache)
    fresh = evaluate(str(copy), nfcorpus_run["run"], metrics="ndcg@10", cache_dir=str(tmp_path / "fresh"))
    assert first.identity["source"]["qrels"] == before and first.metrics["NDCG@10"] > 0
    assert kept_time.identity["source"]["qrels"] == (before if kept_time.metrics == first.metrics else
                                                     qrels_digest(qrels))
    assert fresh.metrics["NDCG@10"] == 0 and fresh.identity["source"]["qrels"] == qrels_digest(qrels) != before
    assert fresh.identity["source"]["manifest_sha256"] == first.identity["source"]["manifest_sha256"]


def test_the_readmes_example_report_is_the_bundled_zips():
    """The README's JSON report names the bundled nfcorpus.zip by its real size and sha256, and holds every key
    eval's identity block has."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = next(part.split("```", 1)[0] for part in readme.split("```json\n")[1:] if '"identity"' in part)
    identity = json.loads(block)["identity"]
    assert identity["source"]["files"] == [
        {"name": "nfcorpus.zip", "bytes": NFCORPUS_ZIP.stat().st_size, "sha256": sha256_file(NFCORPUS_ZIP)}]
    assert set(identity) == {"ragloaders", "source", "split", "conventions", "run"}
