"""mmRAG scored as its authors score it: ranx's NDCG/MAP/Hits (ranx itself is the oracle), the routing config and
`eval --routing`, and the report that puts the paper's measures first."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DATA, assert_source_error
from ragloaders.api import load
from ragloaders.cli import main
from ragloaders.core.errors import SourceError
from ragloaders.eval import evaluate, evaluate_routing, ranx_order, ranx_score, read_routing_run
from ragloaders.eval.ranx_metrics import parse_ranx_metrics, query_values, quicksort_order

if importlib.util.find_spec("ranx") is None:  # looked up, not imported: ranx (Numba) loads in the oracle's process only
    pytest.skip("ranx is not installed (the `test` extra): it is the oracle of these tests", allow_module_level=True)
ORACLE = DATA.parent / "ranx_oracle.py"
SAMPLE = DATA / "mmrag"
PAPER = ["ndcg@1", "ndcg@3", "ndcg@5", "map@1", "map@3", "map@5", "hits@1", "hits@3", "hits@5"]
ROUTING = ["ndcg@5", "hits@1", "hits@2", "hits@3", "hits@4", "hits@5"]
DATASETS = ("tat", "triviaqa", "ott", "kg", "nq")


class Oracle:
    """tests/ranx_oracle.py in one subprocess for the module: ranx's (or numba's) answers, a crash there a failure."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, str(ORACLE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)

    def __call__(self, request: dict) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the ranx oracle died (exit status {self.process.wait()})"
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0


_ORACLE: list[Oracle] = []


@pytest.fixture(scope="module")
def ranx_process():
    """The oracle subprocess, started for the first test that asks for it (Numba compiles ranx there: minutes)."""
    _ORACLE.append(Oracle())
    yield
    _ORACLE.pop().close()


def compares_with_ranx(test):
    """A test that asks the oracle: slow (CI and --runslow run it)."""
    return pytest.mark.slow(pytest.mark.usefixtures("ranx_process")(test))


def oracle(request: dict) -> dict:
    """ranx's (or numba's) answer to a request of tests/ranx_oracle.py."""
    return _ORACLE[-1](request)


def ranx_figures(cases: list[tuple[dict, dict, list[str]]]) -> list[dict[str, dict[str, float]]]:
    """For each (qrels, run, metrics): ranx.evaluate per query on the judged queries the run ranks, as the authors
    call it (a Run built once from the dict; ranx's `make_comparable` would sort the run a second time, which moves
    ties again); every other judged query 0, as a judged query without results gets in ranx."""
    ranked = [sorted(q for q in qrels if run.get(q)) for qrels, run, _ in cases]
    answers = oracle({"evaluate": [[{q: qrels[q] for q in ids}, {q: run[q] for q in ids}, metrics]
                                   for ids, (qrels, run, metrics) in zip(ranked, cases)]})["evaluate"]
    results = []
    for ids, (qrels, _, metrics), values in zip(ranked, cases, answers):
        figures = {query_id: dict.fromkeys(metrics, 0.0) for query_id in qrels}
        for i, query_id in enumerate(ids):  # ranx keeps queries sorted by id
            figures[query_id] = {m: values[m][i] for m in metrics}
        results.append(figures)
    return results


def ranx_name(metric: str) -> str:
    family, k = metric.split("@")
    return {"ndcg": "NDCG", "map": "MAP", "hits": "Hits"}[family] + "@" + k


def random_case(seed: int) -> tuple[dict, dict]:
    """Graded qrels (0/1/2, some queries with no grade above 0) and a run with many ties, runs of 1 to 200
    documents (insertion sort and quicksort in ranx), a judged query left out, queries the qrels lack, empty
    rankings, and unjudged documents."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(40):
        query_id = f"q{q:02d}"
        docs = [f"d{i}" for i in range(rng.randint(1, 50))]
        judged = rng.sample(docs, rng.randint(1, len(docs)))
        qrels[query_id] = {d: (0 if q % 9 == 0 else rng.choice([0, 0, 1, 2])) for d in judged}
        if q % 7 == 3:
            continue  # a judged query the run leaves out
        size = rng.choice([0, 1, 2, 5, 15, 16, 17, 40, 200])
        pool = docs + [f"x{i}" for i in range(size)]
        run[query_id] = {d: rng.randint(0, 5) / 2 for d in rng.sample(pool, min(size, len(pool)))}
    run["not-judged"] = {"d1": 1.0}
    return qrels, run


@compares_with_ranx
def test_paper_measures_equal_ranx_on_random_runs():
    metrics = PAPER + ["ndcg@10", "map@100", "hits@20"]
    cases = [(*random_case(seed), metrics) for seed in range(4)]
    for (qrels, run, _), theirs in zip(cases, ranx_figures(cases)):
        ours = ranx_score(qrels, run, parse_ranx_metrics(metrics))
        assert set(ours.per_query) == set(theirs)
        for query_id, values in theirs.items():
            assert ours.per_query[query_id] == pytest.approx({ranx_name(m): v for m, v in values.items()}, abs=1e-9)
        for metric in metrics:
            mean = sum(v[metric] for v in theirs.values()) / len(theirs)
            assert ours.mean[ranx_name(metric)] == pytest.approx(mean, abs=1e-9)
        assert sorted(ours.unranked_queries) == sorted(q for q in qrels if not run.get(q))


@compares_with_ranx
def test_relevance_level_2_equals_ranx_l2_measures():
    """`--relevance-level 2`: ranx's `-l2` measures drop grade-1 chunks from the gains and the ideal alike."""
    metrics = ["ndcg@1", "ndcg@5", "map@3", "map@100", "hits@1", "hits@5"]
    qrels, run = random_case(11)
    [theirs] = ranx_figures([(qrels, run, [f"{m}-l2" for m in metrics])])
    ours = ranx_score(qrels, run, parse_ranx_metrics(metrics), relevance_level=2).per_query
    assert any(grade == 1 for grades in qrels.values() for grade in grades.values())
    for query_id, values in theirs.items():
        assert ours[query_id] == pytest.approx({ranx_name(m): values[f"{m}-l2"] for m in metrics}, abs=1e-9)


@compares_with_ranx
def test_tie_order_is_ranx_run_order_which_keeps_the_run_order_only_up_to_15_documents():
    rng = random.Random(7)
    runs = [{f"d{i}": float(rng.randint(0, 3)) for i in range(size)}
            for size in (1, 2, 5, 14, 15, 16, 17, 30, 64, 257) for _ in range(2)]
    differs = 0
    for docs, expected in zip(runs, oracle({"orders": runs})["orders"]):
        assert ranx_order(docs) == expected, len(docs)
        stable = sorted(docs, key=lambda d: -docs[d])
        if len(docs) <= 15:
            assert expected == stable
        differs += expected != stable
    assert differs > 0, "long tied runs are reordered by ranx's quicksort"


@compares_with_ranx
def test_quicksort_order_sorts_and_matches_numba_argsort():
    rng = random.Random(3)
    keys = [[float(rng.randint(-3, 3)) for _ in range(size)] for size in (0, 1, 2, 16, 17, 33, 500)]
    for values, expected in zip(keys, oracle({"argsort": keys})["argsort"]):
        assert quicksort_order(values) == expected
        assert [values[i] for i in quicksort_order(values)] == sorted(values)


def numba_quicksort(keys: list) -> list[int]:
    """numba's quicksort (as quicksort_order emulates it), written plainly with `<` alone: the oracle its vectorised
    partition is checked against, and the sort McIlroy's adversary runs against."""
    order = list(range(len(keys)))

    def insertion(low: int, high: int) -> None:
        for i in range(low + 1, high + 1):
            moving, j = order[i], i
            while j > low and keys[moving] < keys[order[j - 1]]:
                order[j] = order[j - 1]
                j -= 1
            order[j] = moving

    def partition(low: int, high: int) -> int:
        mid = (low + high) >> 1
        for a, b in ((low, mid), (mid, high), (low, mid)):
            if keys[order[b]] < keys[order[a]]:
                order[a], order[b] = order[b], order[a]
        pivot = keys[order[mid]]
        order[high], order[mid] = order[mid], order[high]
        i, j = low, high - 1
        while True:
            while i < high and keys[order[i]] < pivot:
                i += 1
            while j >= low and pivot < keys[order[j]]:
                j -= 1
            if i >= j:
                break
            order[i], order[j] = order[j], order[i]
            i, j = i + 1, j - 1
        order[i], order[high] = order[high], order[i]
        return i

    pending = [(0, len(keys) - 1)] if len(keys) > 1 else []
    while pending:
        low, high = pending.pop()
        while high - low >= 15:
            pivot = partition(low, high)
            if high - pivot > pivot - low:
                if high > pivot:
                    pending.append((pivot + 1, high))
                high = pivot - 1
            else:
                if pivot > low:
                    pending.append((low, pivot - 1))
                low = pivot + 1
        insertion(low, high)
    return order


def test_the_vectorised_partition_sorts_as_numba_quicksort_does():
    rng = random.Random(11)
    for _ in range(300):
        size = rng.choice([0, 1, 2, 15, 16, 17, 40, 100, 1000])
        distinct = rng.choice([1, 2, 3, 10, size + 1])
        keys = [float(rng.randrange(distinct)) for _ in range(size)]
        if rng.random() < 0.3:
            keys.sort(reverse=rng.random() < 0.5)
            keys.append(keys[0] if keys else 0.0)
        assert quicksort_order(keys) == numba_quicksort(keys), keys


def quicksort_killer(size: int) -> list[float]:
    """Keys that make numba's quicksort quadratic: McIlroy's adversary run against it (a key is fixed only when a
    comparison needs it; the rest, "gas", end tied above every fixed one)."""
    fixed: dict[int, int] = {}

    class Key:
        def __init__(self, index: int):
            self.index = index

        def __lt__(self, other: Key) -> bool:
            if self.index not in fixed and other.index not in fixed:
                fixed[self.index] = len(fixed)
            if self.index not in fixed:
                return False
            return other.index not in fixed or fixed[self.index] < fixed[other.index]

    numba_quicksort([Key(i) for i in range(size)])
    return [float(fixed.get(i, size)) for i in range(size)]


def test_a_quadratic_tie_order_is_sorted_in_numpy_or_refused_and_one_that_cannot_matter_is_not_sorted(
        monkeypatch):
    """A run's scores arranged as a median-of-three killer made ranx_order take n^2/4 Python steps (64,000 documents
    of one query: 14 s for 2.3 MB). Ties among documents of one gain are ordered by a stable sort (the measures cannot
    tell); ties between different gains need ranx's own order, whose partitions are made in numpy, and which is
    refused past QUICKSORT_WORK elements."""
    from ragloaders.core.errors import UsageError
    from ragloaders.eval import ranx_metrics

    keys = quicksort_killer(2_048)
    keys[keys.index(max(key for key in keys if key < 2_048))] = 2_048.0  # the last key fixed ties with the gas
    assert quicksort_order(keys) == numba_quicksort(keys)
    monkeypatch.setattr(ranx_metrics, "QUICKSORT_WORK", 2_048 * 64)  # far below a killer's n^2/4
    with pytest.raises(ranx_metrics.CostlyTieOrder):
        quicksort_order(keys)
    docs = {f"d{i}": -key for i, key in enumerate(keys)}
    tied = [doc for doc, score in docs.items() if score == -2_048.0]
    assert len(tied) == 2
    metrics = parse_ranx_metrics(["ndcg@10", "hits@2048"])
    unjudged = ranx_score({"q": {"elsewhere": 1}}, {"q": docs}, metrics)
    assert unjudged.per_query["q"] == {"NDCG@10": 0.0, "Hits@2048": 0.0}
    with pytest.raises(UsageError, match="query 'q' of the run: 2,048 scores with ties, in an order that makes"):
        ranx_score({"q": {tied[0]: 1}}, {"q": docs}, metrics)
    equal_gains = ranx_score({"q": {doc: 1 for doc in tied}}, {"q": docs}, metrics)
    assert equal_gains.per_query["q"]["Hits@2048"] == len(tied)


def test_a_sorted_run_with_a_tie_appended_is_scored_not_refused():
    """Median-of-three degrades on a descending run with a document appended that ties its top score (a merged
    run): 1,000 documents took 23 times the first budget, which refused it."""
    docs = {f"d{i}": 1000.0 - i for i in range(999)} | {"late": 1000.0}
    metrics = parse_ranx_metrics(["ndcg@10"])
    scored = ranx_score({"q": {"late": 1}}, {"q": docs}, metrics)
    expected = query_values({"late": 1}, [list(docs)[i] for i in numba_quicksort([-s for s in docs.values()])],
                            metrics)
    assert scored.per_query["q"] == expected


def test_hits_counts_relevant_chunks_and_map_divides_by_all_relevant():
    qrels = {"q": {"a": 2, "b": 1, "c": 0, "d": 1}}
    run = {"q": {"c": 9.0, "a": 8.0, "x": 7.0, "b": 6.0, "d": 5.0}}
    values = ranx_score(qrels, run, parse_ranx_metrics(["hits@1", "hits@5", "map@3", "ndcg@1"])).per_query["q"]
    assert values["Hits@1"] == 0.0 and values["Hits@5"] == 3.0  # a count: c has grade 0, so a, b, d
    assert values["MAP@3"] == pytest.approx((1 / 2) / 3)  # a at rank 2; three relevant chunks
    assert values["NDCG@1"] == 0.0


def raw_records(split: str) -> list[dict]:
    """The sample's query file read with json, no ragloaders code."""
    return json.loads((SAMPLE / f"mmrag_{split}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def where(mmrag_build) -> dict:
    """The sample and the session's cache, where the shared build prepared it."""
    assert mmrag_build.data_dir == str(SAMPLE)
    return {"data_dir": mmrag_build.data_dir, "cache_dir": mmrag_build.cache_dir}


@compares_with_ranx
def test_eval_mmrag_gives_the_paper_measures_as_ranx_on_the_raw_file(where, tmp_path):
    records = raw_records("test")
    qrels = {r["id"]: r["relevant_chunks"] for r in records}
    rng = random.Random(11)
    lines, run = [], {}
    for record in records[1:]:  # the first query is left out: it scores 0
        chunks = list(record["relevant_chunks"]) + ["nq_0_0"]
        rng.shuffle(chunks)
        run[record["id"]] = {c: float(rng.randint(0, 2)) for c in chunks}
        lines += [f"{record['id']} Q0 {c} {i} {s} t\n" for i, (c, s) in enumerate(run[record["id"]].items(), 1)]
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    report = evaluate("mmrag", str(path), per_query=True, **where)
    [theirs] = ranx_figures([(qrels, run, PAPER)])
    assert list(report.authors_metrics) == [ranx_name(m) for m in PAPER]
    for metric in PAPER:
        assert report.authors_metrics[ranx_name(metric)] == pytest.approx(
            sum(v[metric] for v in theirs.values()) / len(theirs), abs=1e-9)
    assert report.unranked_queries == [records[0]["id"]]
    assert "NDCG@10" in report.metrics  # BEIR's set beside

    assert main(["eval", "mmrag", "--run", str(path), "--data-dir", where["data_dir"], "--cache-dir",
                 where["cache_dir"], "--json"]) == 0


def test_cli_text_puts_the_paper_first_and_states_each_tie_rule(where, tmp_path, capsys):
    path = tmp_path / "run.trec"
    first = raw_records("test")[0]
    path.write_text("".join(f"{first['id']} Q0 {c} 1 1.0 t\n" for c in first["relevant_chunks"]))
    assert main(["eval", "mmrag", "--run", str(path), "--data-dir", where["data_dir"], "--cache-dir",
                 where["cache_dir"]]) == 0
    text = capsys.readouterr().out
    assert text.index("mmRAG paper's measures") < text.index("Hits@5") < text.index("BEIR's measures")
    assert "convention: mmRAG paper's measures: ranx's order" in text
    assert ("convention: BEIR's measures: trec_eval's order: score descending (compared in single precision, as "
            "trec_eval holds it), then document id descending") in text
    assert main(["eval", "mmrag", "--run", str(path), "--json", "--data-dir", where["data_dir"], "--cache-dir",
                 where["cache_dir"]]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data)[:4] == ["path", "split", "task", "authors_metrics"]
    assert len(data["conventions"]) == 2


# --- routing ---------------------------------------------------------------------------------------------------


def test_routing_config_is_dataset_score_row_by_row(where):
    routing = load("mmrag", "routing", **where)
    assert set(routing) == {"train", "dev", "test"}
    for split, dataset in routing.items():
        expected = [{"query-id": r["id"], "dataset": d, "score": g}
                    for r in raw_records(split) for d, g in r["dataset_score"].items()]
        assert dataset.to_list() == expected
        assert dataset.features["score"] == datasets.Value("int32")


def test_routing_config_is_in_the_built_folder(tmp_path):
    out = tmp_path / "hub"
    assert main(["build", "mmrag", "--data-dir", str(SAMPLE), "--out", str(out), "--cache-dir",
                 str(tmp_path / "c")]) == 0
    assert "routing" in datasets.get_dataset_config_names(str(out))
    theirs = datasets.load_dataset(str(out), "routing", split="dev", cache_dir=str(tmp_path / "hc"))
    assert theirs.to_list() == [{"query-id": r["id"], "dataset": d, "score": g}
                                for r in raw_records("dev") for d, g in r["dataset_score"].items()]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "`routing`" in card and "| BM25 | 0.531 | 0.525 | 0.534 |" in card and "arXiv:2505.11180" in card


def routing_run(seed: int, records: list[dict]) -> dict:
    rng = random.Random(seed)
    run = {}
    for record in records[1:]:
        names = list(DATASETS)
        rng.shuffle(names)
        run[record["id"]] = {name: float(rng.randint(0, 2)) for name in names[: rng.randint(1, 5)]}
    return run


def write_routing(run: dict, path, fmt: str) -> None:
    rows = [(q, d, s) for q, ranked in run.items() for d, s in ranked.items()]
    if fmt == "trec":
        path.write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(rows, 1)))
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps({"query-id": q, "dataset": d, "score": s}) + "\n" for q, d, s in rows))
    else:
        pq.write_table(pa.table({"query-id": [r[0] for r in rows], "dataset": [r[1] for r in rows],
                                 "score": [r[2] for r in rows]}), path)


@compares_with_ranx
def test_routing_equals_ranx_in_every_run_format(where, tmp_path):
    records = raw_records("test")
    labels = {r["id"]: r["dataset_score"] for r in records}
    runs = [routing_run(seed, records) for seed in (0, 1)]
    for seed, (run, theirs) in enumerate(zip(runs, ranx_figures([(labels, run, ROUTING) for run in runs]))):
        for fmt in ("trec", "jsonl", "parquet"):
            path = tmp_path / f"routing-{seed}.{fmt}"
            write_routing(run, path, fmt)
            assert read_routing_run(path) == run
            report = evaluate_routing("mmrag", path, per_query=True, **where)
            assert list(report.authors_metrics) == [ranx_name(m) for m in ROUTING]
            for metric in ROUTING:
                assert report.authors_metrics[ranx_name(metric)] == pytest.approx(
                    sum(v[metric] for v in theirs.values()) / len(theirs), abs=1e-9)
            assert report.unranked_queries == [records[0]["id"]]
            assert report.metrics == {}
            assert report.identity["run"]["file"] == path.name and report.identity["split"] == "test"
            assert report.text().splitlines()[-1].startswith("scored: split test;") and path.name in report.text()


def test_routing_on_a_built_folder_equals_routing_on_the_path(mmrag_build, where, tmp_path, capsys):
    """`eval ./mmrag --routing` was "unknown path './mmrag'", though --help offers a built folder as SOURCE."""
    records = raw_records("test")
    path = tmp_path / "routing.trec"
    write_routing(routing_run(0, records), path, "trec")
    on_path = evaluate_routing("mmrag", path, per_query=True, **where)
    on_folder = evaluate_routing(str(mmrag_build.out), path, per_query=True, cache_dir=where["cache_dir"])
    assert on_folder.authors_metrics == on_path.authors_metrics and on_folder.authors_metrics
    assert on_folder.authors_per_query == on_path.authors_per_query
    forms = (on_folder.identity["source"]["form"], on_path.identity["source"]["form"])
    assert forms == ("built folder", "benchmark path")
    assert main(["eval", str(mmrag_build.out), "--routing", str(path), "--cache-dir", where["cache_dir"]]) == 0
    assert capsys.readouterr().out.startswith(f"{mmrag_build.out} test: 12 judged queries")


def test_routing_on_a_folder_whose_card_names_no_benchmark_takes_as(mmrag_build, where, tmp_path, capsys):
    """`--as mmrag` was asked for by the error, then ignored (evaluate_routing took no benchmark)."""
    import re
    import shutil

    folder = tmp_path / "mm"
    shutil.copytree(mmrag_build.out, folder)
    card = folder / "README.md"
    card.write_text(re.sub(r".*built by ragloaders from.*\n", "", card.read_text()))
    path = tmp_path / "routing.trec"
    write_routing(routing_run(0, raw_records("test")), path, "trec")
    options = ["--routing", str(path), "--cache-dir", where["cache_dir"]]
    assert main(["eval", str(folder), *options]) == 2
    assert "pass --as PATH" in capsys.readouterr().err
    assert main(["eval", str(folder), *options, "--as", "mmrag"]) == 0
    assert capsys.readouterr().out.startswith(f"{folder} test: 12 judged queries")


def test_routing_run_problems_are_named(where, tmp_path, capsys):
    record = raw_records("test")[0]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"query-id": record["id"], "dataset": "NQ", "score": 1}) + "\n")
    report = evaluate_routing("mmrag", path, **where)
    assert report.unknown_documents == ["NQ"]
    assert "1 dataset of the run is not among the routing labels' (scored not relevant)" in report.text()
    for text, line, facts in (
        ('{"query-id": "a", "corpus-id": "nq", "score": 1}\n', 1, ["query-id, dataset, score", "'corpus-id'"]),
        ('{"query-id": 7, "dataset": "nq", "score": 1}\n', 1, ["`query-id`", "string", "got 7"]),
        ('{"query-id": "a", "dataset": "nq", "score": 1}\n{"query-id": "a", "dataset": "nq", "score": 2}\n', 2,
         ["dataset 'nq'", "'a'", "twice"]),
    ):
        path.write_text(text)
        with pytest.raises(SourceError) as caught:
            read_routing_run(path)
        assert_source_error(caught.value, "r.jsonl", *facts, line=line)
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"query-id": ["a"], "corpus-id": ["nq"], "score": [1.0]}), bad)
    with pytest.raises(SourceError) as caught:
        read_routing_run(bad)
    assert_source_error(caught.value, "bad.parquet", "query-id, dataset, score", "['dataset']", "['corpus-id']")
    args = ["--data-dir", where["data_dir"], "--cache-dir", where["cache_dir"]]
    assert main(["eval", "beir/nfcorpus", "--routing", str(path), *args]) == 2
    assert "no routing task" in capsys.readouterr().err
    assert main(["eval", "mmrag", "--routing", str(path), "--metrics", "ndcg@10", *args]) == 2
    assert main(["eval", "mmrag", "--routing", str(path), "--tokenizer", "t.json", *args]) == 2
    assert "apply to CRAG answers" in capsys.readouterr().err


def test_a_routing_table_names_its_own_columns_in_errors(tmp_path):
    """Routing tables share the retrieval run's table reader: a null or wrong column is named as the routing run
    has it (`dataset`), never as a retrieval run's `corpus-id`."""
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"query-id": ["a", "a"], "dataset": ["nq", None], "score": [1.0, 2.0]}), path)
    with pytest.raises(SourceError) as error:
        read_routing_run(path)
    assert_source_error(error.value, "r.parquet", "`dataset`", "null", record=2)
    pq.write_table(pa.table({"query-id": ["a"], "dataset": [3], "score": [1.0]}), path)
    with pytest.raises(SourceError) as error:
        read_routing_run(path)
    assert_source_error(error.value, "r.parquet", "`dataset`", "strings", "int64")
    lines = tmp_path / "r.jsonl"
    lines.write_text('{"query-id": "a", "dataset": "nq", "score": 1}\n{"query-id": "a", "score": 2}\n')
    with pytest.raises(SourceError) as error:
        read_routing_run(lines)
    assert_source_error(error.value, "r.jsonl", "`dataset`", "null", line=2)
    lines.write_text('{"query-id": "a", "dataset": "nq\\u00a0x", "score": 1}\n')
    assert read_routing_run(lines) == {"a": {"nq\u00a0x": 1.0}}


@pytest.mark.parametrize("form", ["trec", "trec with tabs", "parquet", "jsonl"])
def test_a_dataset_listed_twice_in_a_routing_run_is_called_a_dataset(tmp_path, form):
    if form.startswith("trec"):
        path = tmp_path / "r.trec"
        separator = "\t" if form == "trec with tabs" else " "
        path.write_text("".join(separator.join(["a", "Q0", "nq", str(rank), str(score), "t"]) + "\n"
                                for rank, score in ((1, 2.0), (2, 1.0))))
        where = {"line": 2}
    elif form == "parquet":
        path = tmp_path / "r.parquet"
        pq.write_table(pa.table({"query-id": ["a", "a"], "dataset": ["nq", "nq"], "score": [2.0, 1.0]}), path)
        where = {"record": 2}
    else:
        path = tmp_path / "r.jsonl"
        path.write_text("".join(json.dumps({"query-id": "a", "dataset": "nq", "score": score}) + "\n"
                                for score in (2, 1)))
        where = {"line": 2}
    with pytest.raises(SourceError) as caught:
        read_routing_run(path)
    assert_source_error(caught.value, path.name, "dataset 'nq'", "twice", "query 'a'", **where)
    assert "document" not in str(caught.value)
    if form.startswith("trec"):
        path.write_text("a Q0 nq\0x 1 1.0 t\n")
        with pytest.raises(SourceError) as caught:
            read_routing_run(path)
        assert_source_error(caught.value, path.name, "dataset id 'nq\\x00x'", "NUL", line=1)
