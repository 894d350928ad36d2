"""ragloaders.eval: run files, metrics against pytrec_eval on the raw official qrels, conventions, the CLI."""

from __future__ import annotations

import csv
import io
import json
import logging
import random
import re
import subprocess
import sys
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytrec_eval
from conftest import DATA, assert_names, assert_source_error
from ragloaders.cli import main
from ragloaders.core.errors import SourceError
from ragloaders.eval import DEFAULT_METRICS, evaluate, parse_metrics, read_run, score, write_run
from ragloaders.eval.data import conventions_of
from ragloaders.eval.metrics import cut, without_identical_ids

NFCORPUS_ZIP = DATA / "beir" / "nfcorpus.zip"
TREC_MEASURES = {"NDCG": "ndcg_cut", "Recall": "recall", "MAP": "map_cut", "P": "P"}


@pytest.fixture(scope="module")
def nfcorpus(nfcorpus_build) -> dict:
    """Where the official nfcorpus.zip is, and the session's cache, where the shared build prepared it."""
    assert nfcorpus_build.data_dir == str(NFCORPUS_ZIP.parent)
    return {"data_dir": nfcorpus_build.data_dir, "cache_dir": nfcorpus_build.cache_dir}


def raw_qrels(split: str) -> dict[str, dict[str, int]]:
    """The official qrels file read by hand: csv over the zip member, no ragloaders code."""
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive, archive.open(f"nfcorpus/qrels/{split}.tsv") as f:
        rows = list(csv.reader(io.TextIOWrapper(f, encoding="utf-8", newline=""), delimiter="\t"))
    assert rows[0] == ["query-id", "corpus-id", "score"]
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in rows[1:]:
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return qrels


def raw_ids(member: str) -> list[str]:
    with zipfile.ZipFile(NFCORPUS_ZIP) as archive:
        return [json.loads(line)["_id"] for line in archive.read(f"nfcorpus/{member}").splitlines()]


def random_run(seed: int) -> tuple[dict, dict[str, dict[str, int]], list[str]]:
    """A run on the test queries with many ties, 20% of the judged queries missing, queries of other splits, an
    unknown query and unknown documents; with the test qrels and the judged queries left out."""
    rng = random.Random(seed)
    qrels, docs = raw_qrels("test"), raw_ids("corpus.jsonl")
    left_out = rng.sample(sorted(qrels), len(qrels) // 5)
    run: dict[str, dict[str, float]] = {}
    for query_id in qrels:
        if query_id in left_out:
            continue
        candidates = rng.sample(sorted(qrels[query_id]), min(5, len(qrels[query_id]))) + rng.sample(docs, 120)
        run[query_id] = {doc_id: float(rng.randint(0, 12)) / 4 for doc_id in candidates}
    for query_id in list(raw_qrels("train"))[:7]:
        run.setdefault(query_id, {rng.choice(docs): 1.0})
    run["NOT-A-QUERY"] = {docs[0]: 1.0}
    run[next(iter(run))]["NOT-A-DOC"] = 99.0
    return run, qrels, left_out


def expected_means(qrels, run, metrics, relevance_level: int) -> tuple[dict[str, float], dict[str, dict]]:
    """pytrec_eval itself on hand-built dicts; a judged query missing from the run counts 0; MRR@k is trec_eval's
    recip_rank when the first relevant document is within the first k (1/rank >= 1/k), else 0."""
    measures = {f"{TREC_MEASURES[m.family.name]}.{m.cutoff}" for m in metrics if m.family.name != "MRR"}
    measures.add("recip_rank")
    results = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=relevance_level).evaluate(run)
    per_query = {}
    for query_id in qrels:
        result = results.get(query_id)
        values = {}
        for m in metrics:
            if result is None:
                values[m.name] = 0.0
            elif m.family.name == "MRR":
                rr = result["recip_rank"]
                values[m.name] = rr if rr >= 1 / m.cutoff - 1e-12 else 0.0
            else:
                values[m.name] = result[f"{TREC_MEASURES[m.family.name]}_{m.cutoff}"]
        per_query[query_id] = values
    return {m.name: sum(v[m.name] for v in per_query.values()) / len(qrels) for m in metrics}, per_query


@pytest.mark.parametrize("relevance_level", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_eval_equals_pytrec_eval_on_the_raw_qrels(nfcorpus, seed, relevance_level):
    run, qrels, left_out = random_run(seed)
    metrics = parse_metrics([*DEFAULT_METRICS, "MRR@1", "MRR@100", "P@1", "MAP@10", "NDCG@1000"])
    report = evaluate("beir/nfcorpus", run, metrics=[m.name for m in metrics], relevance_level=relevance_level,
                      per_query=True, **nfcorpus)
    means, per_query = expected_means(qrels, run, metrics, relevance_level)
    assert list(report.metrics) == [m.name for m in metrics]
    for name, value in means.items():
        assert report.metrics[name] == pytest.approx(value, abs=1e-9), name
    assert report.per_query.keys() == per_query.keys()
    for query_id, values in per_query.items():
        assert report.per_query[query_id] == pytest.approx(values, abs=1e-9), query_id
    assert report.judged_queries == len(qrels)
    assert sorted(report.unranked_queries) == sorted(left_out)
    assert report.unknown_queries == ["NOT-A-QUERY"]
    assert report.unjudged_queries == 7
    assert report.unknown_documents == ["NOT-A-DOC"]
    assert report.relevance_level == relevance_level


def test_graded_qrels_feed_ndcg_as_gains_and_binary_metrics_by_level():
    qrels = {"q": {"a": 2, "b": 1, "c": 0}}
    run = {"q": {"b": 3.0, "a": 2.0, "c": 1.0}}
    metrics = parse_metrics("ndcg@3,p@1,recall@1")
    at_1, at_2 = score(qrels, run, metrics).mean, score(qrels, run, metrics, relevance_level=2).mean
    assert at_1["NDCG@3"] == at_2["NDCG@3"] < 1.0
    assert (at_1["P@1"], at_1["Recall@1"]) == (1.0, 0.5)
    assert (at_2["P@1"], at_2["Recall@1"]) == (0.0, 0.0)


NEGATIVE_GRADES_SCRIPT = """
import json, random, sys
from ragloaders.eval import parse_metrics, score
metrics = parse_metrics("NDCG@3,NDCG@10,Recall@5,MAP@10,P@3,MRR@10")
results = {}
for seed in sys.argv[1:]:
    rng = random.Random(int(seed))
    qrels = {f"q{i}": {f"d{j}": rng.randint(-5, 2) for j in rng.sample(range(12), rng.randint(1, 6))}
             for i in range(60)}
    qrels["all-negative"] = {"d0": -2, "d1": -3}
    run = {q: {f"d{j}": float(rng.randint(0, 5)) for j in range(10)} for q in qrels}
    results[seed] = {"qrels": qrels, "run": run,
                     "scores": [score(qrels, run, metrics, relevance_level=level).per_query for level in (1, 2)]}
print(json.dumps(results))
"""
NEGATIVE_GRADE_SEEDS = (0, 1)


@pytest.fixture(scope="module")
def negative_grades_scored() -> dict[str, dict]:
    """Every seed's random qrels with negative grades and run, and their scores, from one child."""
    done = subprocess.run([sys.executable, "-c", NEGATIVE_GRADES_SCRIPT, *map(str, NEGATIVE_GRADE_SEEDS)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("seed", NEGATIVE_GRADE_SEEDS)
def test_negative_grades_are_judged_non_relevant_and_never_crash(seed, negative_grades_scored):
    """pytrec_eval segfaults on grades of -2 and below: scored in a subprocess so a crash fails the test. trec_eval
    reads a negative grade as judged non-relevant; at relevance levels 1 and 2 that is what grade 0 means, so every
    measure must equal pytrec_eval's on the qrels with 0 in place of each negative grade."""
    result = negative_grades_scored[str(seed)]
    zeroed = {q: {d: max(grade, 0) for d, grade in docs.items()} for q, docs in result["qrels"].items()}
    metrics = parse_metrics("NDCG@3,NDCG@10,Recall@5,MAP@10,P@3,MRR@10")
    for level, per_query in zip((1, 2), result["scores"]):
        _, expected = expected_means(zeroed, result["run"], metrics, level)
        assert per_query.keys() == expected.keys()
        for query_id, values in expected.items():
            assert per_query[query_id] == pytest.approx(values, abs=1e-9), (level, query_id)
        assert per_query["all-negative"] == {m.name: 0.0 for m in metrics}


@pytest.mark.parametrize("level", [0, -1])
def test_a_relevance_level_below_1_is_refused_in_words(level):
    with pytest.raises(ValueError) as caught:
        score({"q": {"a": -2, "b": 0}}, {"q": {"a": 1.0}}, parse_metrics("P@1"), relevance_level=level)
    assert_names(caught.value, "--relevance-level", "-l", "65536", f"got {level}")


def test_mrr_cut_follows_trec_eval_tie_order():
    # equal scores: trec_eval ranks the larger document id first
    run = {"q": {"d1": 1.0, "d3": 1.0, "d2": 1.0, "d0": 2.0}}
    assert list(cut(run, 3)["q"]) == ["d0", "d3", "d2"]
    qrels = {"q": {"d1": 1}}
    mrr = score(qrels, run, parse_metrics("MRR@3,MRR@4")).mean
    assert mrr == {"MRR@3": 0.0, "MRR@4": 0.25}


def test_identical_ids_are_dropped_only_when_the_convention_says_so():
    run = {"q1": {"q1": 9.0, "d1": 1.0}, "q2": {"q2": 5.0}}
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    dropped, count = without_identical_ids(run)
    assert count == 2 and dropped == {"q1": {"d1": 1.0}, "q2": {}}
    assert run["q1"] == {"q1": 9.0, "d1": 1.0}, "the caller's run is not changed"
    metrics = parse_metrics("MRR@10")
    assert score(qrels, run, metrics).mean["MRR@10"] == 0.25
    ignored = score(qrels, run, metrics, ignore_identical_ids=True)
    assert ignored.mean["MRR@10"] == 0.5
    assert ignored.identical_ids_dropped == 2
    assert ignored.unranked_queries == ["q2"]


METRIC_CHOICES = "NDCG@k, Recall@k, MAP@k, P@k, MRR@k, R_cap@k"


@pytest.mark.parametrize("names, facts", [
    ("ndcg", ["'ndcg'", METRIC_CHOICES]), ("foo@10", ["'foo@10'", METRIC_CHOICES]),
    ("ndcg@0", ["'ndcg@0'", METRIC_CHOICES, "k from 1 to 2,147,483,647"]), ("", ["no metric", METRIC_CHOICES]),
])
def test_bad_metric_names(names, facts):
    with pytest.raises(ValueError) as caught:
        parse_metrics(names)
    assert_names(caught.value, *facts)


def test_metric_names_any_case_keep_beir_spelling():
    assert [m.name for m in parse_metrics("ndcg@10, RECALL@100,map@100,mrr@10,p@10,NDCG@10")] == [
        "NDCG@10", "Recall@100", "MAP@100", "MRR@10", "P@10"]


def test_conventions_are_declared_per_benchmark():
    assert conventions_of("beir/arguana").ignore_identical_ids
    assert conventions_of("beir/quora").ignore_identical_ids
    assert conventions_of("beir/nfcorpus").ignore_identical_ids  # BEIR's default, every BEIR path
    assert conventions_of("beir/cqadupstack/android").ignore_identical_ids
    assert conventions_of("beir-format").ignore_identical_ids and not conventions_of("mmrag").ignore_identical_ids
    assert "R_cap@10" in conventions_of("beir/nfcorpus").extra_metrics and not conventions_of("mmrag").extra_metrics
    group = conventions_of("beir/cqadupstack")
    assert len(group.mean_over) == 12 and all(p.startswith("beir/cqadupstack/") for p in group.mean_over)
    assert conventions_of("mmrag").relevance_level == 1
    assert conventions_of("crag/task_1_and_2").unlabelled
    with pytest.raises(ValueError) as caught:
        conventions_of("beir/nope")
    assert_names(caught.value, "'beir/nope'", "ragloaders list")


def test_crag_eval_refuses_with_a_reason(tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_text("q Q0 d 1 1.0 t\n")
    with pytest.raises(ValueError) as caught:
        evaluate("crag/task_1_and_2", str(run))
    assert_names(caught.value, "crag/task_1_and_2", "relevance labels")
    assert main(["eval", "crag/task_1_and_2", "--run", str(run)]) == 2
    assert "no relevance labels" in capsys.readouterr().err


# --- run files ---------------------------------------------------------------------------------------------------


def test_trec_run_keeps_ids_byte_for_byte(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("00123 Q0 <dbpedia:Émile_Gilbert> 1 2.5 tag\n00123\tQ0\t007 2 -1e-3 tag\nq2 0 d 1 3 x\n",
                    encoding="utf-8")
    assert read_run(str(path)) == {"00123": {"<dbpedia:Émile_Gilbert>": 2.5, "007": -0.001}, "q2": {"d": 3.0}}


TREC_FIELDS = "query-id Q0 doc-id rank score tag"


@pytest.mark.parametrize("text, line, facts", [  # a count of fields as "got N": a bare digit may be in the path
    ("q Q0 d 1 1.0 t\nq Q0 e 2 1.0\n", 2, ["6 fields", TREC_FIELDS, "got 5"]),
    ("q Q0 d 1 nan t\n", 1, ["field 5", "score", "finite number", "'nan'"]),
    ("q Q0 d 1 inf t\n", 1, ["field 5", "score", "finite number", "'inf'"]),
    ("q Q0 d 1 high t\n", 1, ["field 5", "score", "finite number", "'high'"]),
    ("q Q0 d one 1.0 t\n", 1, ["field 4", "rank", "integer", "'one'"]),
    ("q Q0 d 1 1.0 t\nq Q0 d 2 0.5 t\n", 2, ["'d'", "'q'", "twice"]),
    ("q Q0 d 1 1.0 t\n\nq Q0 e 2 0.5 t\n", 2, ["6 fields", "got 0"]),
    ("q Q0 d 1 1.0 t extra\n", 1, ["6 fields", "got 7"]),
])
def test_bad_trec_lines_name_file_and_line(tmp_path, text, line, facts):
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(SourceError) as error:
        read_run(str(path))
    assert_source_error(error.value, "run.trec", *facts, line=line)
    assert error.value.path == str(path)


BOM = "\ufeff"


@pytest.mark.parametrize("suffix", [".trec", ".jsonl"])
def test_a_bom_at_the_start_of_a_run_is_never_part_of_the_first_query_id(tmp_path, suffix):
    path = tmp_path / f"run{suffix}"
    rankings = [("q1", ["d1"], [2.0]), ("q2", ["d2"], [1.0])]
    write_run(str(path), rankings)
    path.write_bytes(BOM.encode() + path.read_bytes())
    run = read_run(str(path))
    assert sorted(run) == ["q1", "q2"]
    assert score({"q1": {"d1": 1}, "q2": {"d2": 1}}, run, parse_metrics("NDCG@10")).mean == {"NDCG@10": 1.0}


def test_a_bom_after_the_start_of_a_trec_run_is_part_of_a_field(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(f"q Q0 d 1 1 t\n{BOM}q Q0 d 1 1 t\n", encoding="utf-8")
    assert read_run(str(path)) == {"q": {"d": 1.0}, f"{BOM}q": {"d": 1.0}}


@pytest.mark.parametrize("field, value", [
    ("score", "1_000"), ("score", "\u0661\u0662"), ("score", "\uff11\uff12"), ("score", "0x1p3"), ("score", "1e999"),
    ("score", "Infinity"), ("score", "1.5\u00a0"), ("rank", "1_000"), ("rank", "\u0663"), ("rank", "\uff13"),
    ("rank", "1.0"),
])
def test_trec_numbers_are_ascii_decimal(tmp_path, field, value):
    fields = {"rank": "1", "score": "2.5", field: value}
    path = tmp_path / "run.trec"
    path.write_text(f"q Q0 d1 1 1 t\nq Q0 d2 {fields['rank']} {fields['score']} t\n", encoding="utf-8")
    number, kind = {"rank": (4, "integer"), "score": (5, "finite number")}[field]
    with pytest.raises(SourceError) as error:
        read_run(str(path))
    assert_source_error(error.value, "run.trec", f"field {number}", field, kind, "ASCII", repr(value), line=2)
    assert error.value.path == str(path)


@pytest.mark.parametrize("value, expected", [
    ("+1", 1.0), ("-0", 0.0), ("1.", 1.0), (".5", 0.5), ("1E3", 1000.0), ("2.5e-1", 0.25), ("-7e+0", -7.0),
])
def test_trec_scores_in_every_ascii_notation(tmp_path, value, expected):
    path = tmp_path / "run.trec"
    path.write_text(f"q Q0 d +3 {value} t\n")
    assert read_run(str(path)) == {"q": {"d": expected}}


@pytest.mark.parametrize("separator", ["\x1c", "\u00a0", "\u2003", "\u3000", "\x85"])
def test_only_space_and_tab_separate_trec_fields(tmp_path, separator):
    """A Unicode space (or an ASCII file separator) is part of the id, byte for byte, as trec_eval reads it."""
    path = tmp_path / "run.trec"
    path.write_text(f"q{separator}1 Q0 d{separator}2 1 1.5 t\n", encoding="utf-8")
    assert read_run(str(path)) == {f"q{separator}1": {f"d{separator}2": 1.5}}
    path.write_text(f"q Q0{separator}d 1 1.5 t\n", encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        read_run(str(path))
    assert_source_error(caught.value, "run.trec", "6 fields", "got 5", line=1)


@pytest.mark.parametrize("text, facts", [
    (b"q Q0 d\r 1 1.5 t\n", ["field 3", "doc-id", "carriage return"]),
    (b"q\x0b Q0 d 1 1.5 t\n", ["field 1", "query-id", "vertical tab"]),
    (b"q Q0 d 1 1.5 t\x0c\n", ["field 6", "tag", "form feed"]),
])
def test_whitespace_trec_eval_splits_on_is_refused(tmp_path, text, facts):
    path = tmp_path / "run.trec"
    path.write_bytes(b"q Q0 e 1 1 t\r\n" + text)
    with pytest.raises(SourceError) as error:
        read_run(str(path))
    assert_source_error(error.value, "run.trec", *facts, line=2)


def test_trec_run_crlf_and_padding(tmp_path):
    path = tmp_path / "run.trec"
    path.write_bytes(b"\t q  Q0\t\td 1 1.5 t \r\n")
    assert read_run(str(path)) == {"q": {"d": 1.5}}


@pytest.mark.parametrize("ending", [b"\r", b"\r\r", b"\r\r\n"])
def test_crs_at_the_end_of_the_last_line_are_its_line_end(tmp_path, ending):
    """With or without an LF after them, CRs that end the file end its last line (the module docstring's rule),
    never part of the tag; a CR before the last line's end that is followed by more is still refused."""
    path = tmp_path / "run.trec"
    path.write_bytes(b"q Q0 d 1 1.5 t\r\nq Q0 e 2 0.5 t" + ending)
    assert read_run(str(path)) == {"q": {"d": 1.5, "e": 0.5}}
    path.write_bytes(b"q Q0 d 1 1.5 t\r\nq Q0 e 2 0.5 t" + ending.rstrip(b"\n") + b" ")
    with pytest.raises(SourceError) as error:
        read_run(str(path))
    assert_source_error(error.value, "run.trec", "field 6", "tag", "carriage return", line=2)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_table_runs_take_no_score_as_text(tmp_path, suffix):
    path = tmp_path / f"run{suffix}"
    if suffix == ".jsonl":
        path.write_text('{"query-id": "q", "corpus-id": "d", "score": "1_000"}\n')
        line, facts = 1, ["`score`", "number", '"1_000"']
    else:
        pq.write_table(pa.table({"query-id": ["q"], "corpus-id": ["d"], "score": ["1_000"]}), path)
        line, facts = None, ["`score`", "numeric", "string"]
    with pytest.raises(SourceError) as caught:
        read_run(str(path))
    assert_source_error(caught.value, f"run{suffix}", *facts, line=line)


def test_trec_run_with_invalid_utf8(tmp_path):
    path = tmp_path / "run.trec"
    path.write_bytes(b"q Q0 d 1 1.0 t\nq Q0 \xff\xfe 2 1.0 t\n")
    with pytest.raises(SourceError) as error:
        read_run(str(path))
    assert_source_error(error.value, "run.trec", "field 3", "doc-id", "UTF-8", repr(b"\xff\xfe"), line=2)


@pytest.mark.parametrize("suffix", [".trec", ".parquet", ".jsonl"])
def test_write_then_read_round_trip(tmp_path, suffix):
    rankings = [("00123", ["d 1" if suffix != ".trec" else "d1", "007"], [1.5, 0.25]), ("q2", [], []),
                ("q3", ["<x:É>"], [3.0])]
    path = tmp_path / f"run{suffix}"
    assert write_run(str(path), rankings) == 3
    expected = {query_id: dict(zip(docs, scores)) for query_id, docs, scores in rankings if docs}
    assert read_run(str(path)) == expected


def test_trec_refuses_ids_it_cannot_hold_and_leaves_nothing(tmp_path):
    path = tmp_path / "run.trec"
    with pytest.raises(ValueError) as caught:
        write_run(str(path), [("q1", ["good"], [1.0]), ("q 2", ["d"], [1.0])])
    assert_names(caught.value, "query id", "'q 2'", ".parquet", ".jsonl")
    assert list(tmp_path.iterdir()) == []


ODD_BUT_READABLE = ["q\u00a0nbsp", "g\x1cs", "l\u2028s", "n\x85l", "i\u3000s", "z\u200bw", "a\ufeff"]
"""Unicode whitespace and separators a TREC run reads back inside a field (it splits on ASCII space and tab)."""


def test_trec_writes_every_id_it_reads_back(tmp_path):
    rankings = [(query_id, [f"d{query_id}", query_id], [2.0, 1.0]) for query_id in ODD_BUT_READABLE]
    rankings.insert(1, ("\ufeffsecond", ["\ufeffdoc"], [1.0]))  # U+FEFF is a BOM only at the very start
    path = tmp_path / "run.trec"
    assert write_run(str(path), rankings) == 2 * len(ODD_BUT_READABLE) + 1
    assert read_run(str(path)) == {query_id: dict(zip(docs, scores)) for query_id, docs, scores in rankings}


@pytest.mark.parametrize("bad", ["", "a b", "a\tb", "a\nb", "a\rb", "a\x0bb", "a\x0cb", "a\x00b", "\ud800"])
@pytest.mark.parametrize("where", ["query", "doc", "tag"])
def test_trec_refuses_exactly_what_it_could_not_read_back(tmp_path, bad, where):
    path = tmp_path / "run.trec"
    query_id, doc_id, tag = ("q" if where != "query" else bad), ("d" if where != "doc" else bad), (
        "t" if where != "tag" else bad)
    with pytest.raises(ValueError) as caught:
        write_run(str(path), [("q0", ["d0"], [1.0]), (query_id, [doc_id], [1.0])], tag=tag)
    # no format holds a lone surrogate, and eval refuses a NUL in every format
    remedy = (["surrogate"] if bad == "\ud800" else ["NUL byte", "no run format carries"] if bad == "a\x00b" else
              [".parquet", ".jsonl"])
    assert_names(caught.value, {"query": "query id", "doc": "document id", "tag": "run tag"}[where], repr(bad), *remedy)
    assert list(tmp_path.iterdir()) == []


def test_a_first_query_id_starting_with_a_bom_is_refused(tmp_path):
    path = tmp_path / "run.trec"
    with pytest.raises(ValueError) as caught:
        write_run(str(path), [("empty", [], []), ("\ufeffq", ["d"], [1.0])])
    assert_names(caught.value, repr("\ufeffq"), "U+FEFF", ".parquet", ".jsonl")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "run.parquet"
    write_run(str(path), [("q", ["d"], [1.0])])

    def failing():
        yield "q", ["e"], [2.0]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_run(str(path), failing())
    assert read_run(str(path)) == {"q": {"d": 1.0}}
    assert [p.name for p in tmp_path.iterdir()] == ["run.parquet"]


@pytest.mark.parametrize("writer", ["write_run", "write_verdicts"])
def test_a_killed_writes_leftover_is_named_by_the_next_write_and_kept(tmp_path, caplog, writer):
    """A kill leaves `NAME.XXXXXXXX.incomplete` (mkstemp's 8 random characters); the next write to NAME names every
    such leftover in one warning of the `ragloaders` logger, one line (the command line prints it so), and deletes
    none (the name alone does not prove the file is ragloaders')."""
    from ragloaders.eval.crag_answers import AnswerReport

    target = tmp_path / "out.jsonl"
    leftovers = [tmp_path / "out.jsonl.k3x_9abc.incomplete", tmp_path / "out.jsonl.00000000.incomplete"]
    others = [tmp_path / "out.jsonl.mine.incomplete", tmp_path / "other.jsonl.k3x_9abc.incomplete"]
    for path in leftovers + others:
        path.write_bytes(b"half")
    if writer == "write_run":
        write_run(str(target), [("q", ["d"], [1.0])])
    else:
        AnswerReport(str(tmp_path), [], {}, {}, []).write_verdicts(target)
    warnings = [r for r in caplog.records if r.name.startswith("ragloaders") and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0].getMessage()
    warning = warnings[0].getMessage()
    assert all(str(path) in warning for path in leftovers) and not any(path.name in warning for path in others)
    assert all(path.read_bytes() == b"half" for path in leftovers + others)
    assert sorted(tmp_path.iterdir()) == sorted([target, *leftovers, *others])
    target.unlink()
    for path in leftovers:
        path.unlink()
    caplog.clear()
    write_run(str(target), [("q", ["d"], [1.0])])
    assert not [r for r in caplog.records if r.name.startswith("ragloaders")]



def test_a_write_in_progress_is_not_named_a_leftover_and_one_finished_first_is_not_overwritten(tmp_path, caplog):
    """Two runs writing one output: the second named the first one's live partial file as an interrupted write to
    delete, and the one finishing second failed with the raw `[Errno 17] File exists: NAME.XXXX.incomplete -> NAME`.
    A partial file is locked while it is written; the warning names only unlocked ones, and the loser says the file
    appeared while it was written, keeping the winner's."""
    import os

    from ragloaders.core.output_target import partial_file, write_new_file

    target = tmp_path / "out.trec"
    handle, live = partial_file(str(target))  # another run, writing
    try:
        def written_meanwhile(partial: str) -> int:
            with open(partial, "w") as f:
                f.write("q Q0 d 1 1.0 mine\n")
            target.write_text("the winner's\n")  # the other run finishes first
            return 0

        with pytest.raises(FileExistsError, match=re.escape("appeared while it was written (another run writing it?)")):
            write_new_file(str(target), written_meanwhile)
        assert target.read_text() == "the winner's\n"
        assert not [r for r in caplog.records if r.name.startswith("ragloaders")], "the live file named a leftover"
    finally:
        os.close(handle)  # the other run killed: its file is a leftover now
    target.unlink()
    write_run(str(target), [("q", ["d"], [1.0])])
    [warning] = [r.getMessage() for r in caplog.records if r.name.startswith("ragloaders")]
    assert live in warning and os.path.exists(live)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, os.path.basename(live)])


def test_a_filesystem_without_locks_still_writes_and_leaks_nothing(tmp_path, monkeypatch):
    """Where flock fails (ENOLCK: NFS without lockd, some FUSE mounts) every write failed, leaving its partial file
    and its descriptor behind: locking is now best effort."""
    import errno
    import fcntl
    import os

    def no_locks(handle, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    descriptors = len(os.listdir("/proc/self/fd"))
    for n in range(3):
        write_run(str(tmp_path / f"run{n}.trec"), [("q", ["d"], [1.0])])
    assert len(os.listdir("/proc/self/fd")) == descriptors
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run0.trec", "run1.trec", "run2.trec"]

RUN_COLUMNS = "query-id, corpus-id, score"


@pytest.mark.parametrize("table, facts", [
    (pa.table({"query-id": [1], "corpus-id": ["d"], "score": [1.0]}), ["`query-id`", "strings", "int64"]),
    (pa.table({"query-id": ["q"], "corpus-id": ["d"]}), [RUN_COLUMNS, "['score']"]),
    (pa.table({"query-id": ["q"], "corpus-id": ["d"], "score": [1.0], "rank": [1]}), [RUN_COLUMNS, "['rank']"]),
    (pa.table({"query-id": ["q"], "corpus-id": ["d"], "score": ["1"]}), ["`score`", "numeric", "string"]),
])
def test_bad_parquet_run_schema(tmp_path, table, facts):
    path = tmp_path / "run.parquet"
    pq.write_table(table, path)
    with pytest.raises(SourceError) as caught:
        read_run(str(path))
    assert_source_error(caught.value, "run.parquet", *facts)


@pytest.mark.parametrize("column, values, record, facts", [
    ("query-id", ["q", None, "q"], 2, ["`query-id`", "null"]),
    ("score", [1.0, 2.0, float("nan")], 3, ["score", "finite number", "nan"]),
    ("corpus-id", ["d", "e", "d"], 3, ["'d'", "'q'", "twice"]),
])
def test_bad_parquet_run_rows_name_the_record(tmp_path, column, values, record, facts):
    data = {"query-id": ["q", "q", "q"], "corpus-id": ["d", "e", "f"], "score": [1.0, 2.0, 3.0], column: values}
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table(data), path)
    with pytest.raises(SourceError) as error:
        read_run(str(path))
    assert_source_error(error.value, "run.parquet", *facts, record=record)


@pytest.mark.parametrize("line, facts", [
    ('{"query-id": 123, "corpus-id": "d", "score": 1}', ["`query-id`", "string", "got 123"]),
    ('{"query-id": "q", "corpus-id": "d"}', ["`score`", "null"]),
    ('{"query-id": "q", "corpus-id": "d", "score": 1, "rank": 1}', [RUN_COLUMNS, "'rank'"]),
    ('{"query-id": "q", "corpus-id": "d", "score": 1', ["JSON", "column 47"]),
    ('{"query-id": "q", "corpus-id": "d", "score": true}', ["`score`", "number", "true"]),
])
def test_bad_jsonl_run_lines(tmp_path, line, facts):
    path = tmp_path / "run.jsonl"
    path.write_text('{"query-id": "q", "corpus-id": "a", "score": 0.5}\n' + line + "\n")
    with pytest.raises(SourceError) as error:
        read_run(str(path))
    assert_source_error(error.value, "run.jsonl", *facts, line=2)


RUN_SHAPE = "{document id: score}"


@pytest.mark.parametrize("run, facts", [
    ({1: {"d": 1.0}}, [RUN_SHAPE, "1: dict"]), ({"q": {7: 1.0}}, ["'q'", "document id 7", "string"]),
    ({"q": {"d": "1"}}, ["'q'", "'d'", "finite number", "'1'"]),
    ({"q": {"d": float("inf")}}, ["'q'", "'d'", "finite number", "inf"]),
    ({"q": {"d": True}}, ["'q'", "'d'", "finite number", "True"]), ({"q": [("d", 1.0)]}, [RUN_SHAPE, "'q': list"]),
])
def test_python_runs_are_checked_not_converted(run, facts):
    with pytest.raises(ValueError) as caught:
        evaluate("beir/nfcorpus", run)
    assert_names(caught.value, *facts)


def test_missing_run_file(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        read_run(str(tmp_path / "nope.trec"))
    assert_names(caught.value, tmp_path / "nope.trec")


# --- CLI ---------------------------------------------------------------------------------------------------------


def test_cli_json_equals_the_python_function(nfcorpus, tmp_path, capsys):
    run, _, _ = random_run(3)
    path = tmp_path / "run.trec"
    write_run(str(path), [(q, list(docs), list(docs.values())) for q, docs in run.items()])
    args = ["eval", "beir/nfcorpus", "--run", str(path), "--data-dir", nfcorpus["data_dir"],
            "--cache-dir", nfcorpus["cache_dir"]]
    assert main([*args, "--json", "--metrics", "ndcg@10,mrr@10", "--per-query"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = evaluate("beir/nfcorpus", str(path), metrics="ndcg@10,mrr@10", per_query=True, **nfcorpus).as_json()
    assert printed == json.loads(json.dumps(expected))
    assert list(printed["metrics"]) == ["NDCG@10", "MRR@10"]
    assert printed["unknown_queries"] == {"count": 1, "examples": ["NOT-A-QUERY"]}
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "NDCG@10" in text and "warning: 1 query of the run is not in beir/nfcorpus" in text


def test_cli_says_which_extra_to_install(monkeypatch, tmp_path, capsys):
    path = tmp_path / "run.trec"
    path.write_text("PLAIN-2 Q0 MED-10 1 1.0 t\n")
    monkeypatch.setitem(__import__("sys").modules, "pytrec_eval", None)
    assert main(["eval", "beir/nfcorpus", "--run", str(path), "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pip install 'ragloaders[eval]'" in err
