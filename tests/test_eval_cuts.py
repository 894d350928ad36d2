"""Every cut `eval` scores (R_cap@k, MRR@10) comes from one sort of each query into trec_eval's order: cutting a
deeper ranking gives the same documents as sorting for that k alone, ties on the score broken by the document id
descending, and the scores equal those of each cut made on its own."""

from __future__ import annotations

import random

import pytest
from ragloaders.eval.metrics import capped_recall, cut, parse_metrics, ranking, score


def tied_run(queries: int = 30, depth: int = 150, seed: int = 3) -> dict[str, dict[str, float]]:
    """Scores from a handful of values, so most documents tie with others; ids of varied length and odd bytes."""
    rng = random.Random(seed)
    return {f"q{q}": {f"d{rng.randrange(10**rng.randint(1, 5))}\u00e9{i % 7}": float(rng.choice([0.5, 1, 1.5, -2]))
                      for i in range(depth)} for q in range(queries)}


def reference_cut(docs: dict[str, float], k: int) -> list[str]:
    return [doc for doc, _ in sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)[:k]]


@pytest.mark.parametrize("k", [1, 3, 10, 100, 1000])
def test_a_cut_of_the_single_ranking_is_the_cut_sorted_for_k_alone(k):
    run = tied_run()
    deep = ranking(run, 1000)
    assert {q: list(docs) for q, docs in cut(run, k, deep).items()} == {
        q: reference_cut(docs, k) for q, docs in run.items()}
    assert cut(run, k) == cut(run, k, deep)


def test_a_ranking_keeps_only_its_depth_in_trec_eval_order():
    run = tied_run()
    shallow = ranking(run, 5)
    assert {q: [doc for doc, _ in pairs] for q, pairs in shallow.items()} == {
        q: reference_cut(docs, 5) for q, docs in run.items()}
    assert all(len(pairs) == len(run[q]) for q, pairs in ranking(run).items())


def test_scores_with_every_cut_from_one_sort_equal_each_cut_made_alone():
    run = tied_run()
    rng = random.Random(5)
    qrels = {q: {doc: rng.randint(0, 2) for doc in rng.sample(sorted(docs), 8)} for q, docs in run.items()}
    qrels["q0"] = {"not-retrieved": 1}
    scores = score(qrels, run, parse_metrics(["R_cap@1", "R_cap@10", "R_cap@100", "MRR@10"]))
    for k in (1, 10, 100):
        alone = capped_recall(qrels, run, k, 1)
        assert {q: values[f"R_cap@{k}"] for q, values in scores.per_query.items()} == alone
    assert scores.per_query["q0"]["R_cap@10"] == 0.0
    first_relevant = {q: next((i for i, d in enumerate(reference_cut(run[q], 10), 1) if qrels[q].get(d, 0) >= 1), None)
                      for q in run}
    assert {q: values["MRR@10"] for q, values in scores.per_query.items()} == pytest.approx(
        {q: 1 / rank if rank else 0.0 for q, rank in first_relevant.items()})


def test_scores_that_differ_only_past_single_precision_tie_as_in_trec_eval():
    """trec_eval keeps each score as a C float: 1.00000001 and 1.0 tie, and the larger id ranks first. Sorting the
    doubles put MED-10 first, so MRR@1 was 1 where P@1 was 0 and pytrec_eval's own recip_rank 0.5 (MRR@1 above
    MRR@10). Every cut metric must agree with pytrec_eval on the whole run."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(11)
    run = {f"q{q}": {f"d{i}": 1.0 + rng.choice([0.0, 1e-8, 2e-8, 3e-8, 1e-7]) + (i % 3) * 0.25 for i in range(40)}
           for q in range(20)}
    run["big"] = {"a": 1e39, "b": 1e40, "c": 3.4e38}  # past a float's range: both infinite there, a tie
    qrels = {q: {doc: 1 for doc in rng.sample(sorted(docs), 2)} for q, docs in run.items()}
    ours = score(qrels, run, parse_metrics(["MRR@1000", "P@1", "R_cap@1", "R_cap@5", "NDCG@5"])).per_query
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.1", "recall.1,5"}).evaluate(run)
    for q in run:
        assert ours[q]["MRR@1000"] == pytest.approx(trec[q]["recip_rank"]), q
        assert ours[q]["R_cap@1"] == trec[q]["P_1"], q  # one relevant document, or more: P@1 is R_cap@1
        assert ours[q]["R_cap@5"] == pytest.approx(trec[q]["recall_5"]), q  # 2 relevant, min(5, 2) = 2
    ranked = [doc for doc, _ in ranking(run, 3)["big"]]
    assert ranked == ["b", "a", "c"] and ranking(run)["big"][0] == ("b", 1e40)
