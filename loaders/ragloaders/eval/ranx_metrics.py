"""nDCG@k, MAP@k and Hits@k as ranx computes them: the measures mmRAG's authors report (nju-websoft/mmRAG,
`mmrag_experiments/eval.py` for chunk retrieval, `mmrag_experiments/exp/routing/eval.py` for routing).

Written here with numpy, checked against ranx itself in the tests (to 1e-9). What ranx does, and so what
this module does:

- Order. `ranx.Run(dict)` sorts each query's documents with numba's `np.argsort` (its quicksort) on the
  negated scores, in the order the run lists them. A query with at most 15 documents is sorted by insertion
  sort, so equal scores keep the run's order; with 16 or more, ties end up wherever that quicksort
  (median-of-three pivot, two-sided partition, insertion sort below 16 elements) leaves them.
  `ranx_order` reproduces that sort exactly (its partitions made with numpy); scoring follows it only where tied
  documents differ in relevance or gain (the measures depend on those alone), and refuses a query whose scores make
  it quadratic past QUICKSORT_WORK (CostlyTieOrder).
  trec_eval instead breaks ties by document id.
- Relevance. A document is relevant when its grade is >= the relevance level (1): grade 0 counts as not
  judged relevant, and nDCG's gains are the grades themselves (Järvelin's form, gain / log2(rank + 1)).
- nDCG@k: DCG of the first k ranked documents over DCG of the k best grades (1 when that is 0).
- MAP@k: the sum of precision at each relevant document within the first k, over the number of relevant
  documents the qrels hold (not over min(k, R)).
- Hits@k: how many relevant documents are among the first k (a count, not a rate: it can exceed 1).
- A query without any relevant document scores 0 on every measure and counts in the mean; a judged query the
  run does not name scores 0 (ranx's `make_comparable`); queries of the run that the qrels lack are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import UsageError
from ..core.preview import preview
from .metrics import Scores
from .runs import Run

RANX_TIES = ("ranx's order: score descending; equal scores keep the run's order in a query of up to 15 "
             "documents, and follow numba's quicksort (as ranx.Run sorts) in a longer one")
TREC_EVAL_TIES = ("trec_eval's order: score descending (compared in single precision, as trec_eval holds it), then "
                  "document id descending")
INSERTION_SORT_BELOW = 16
"""numba's quicksort sorts a range of fewer elements than this by insertion sort (SMALL_QUICKSORT + 1)."""
FAMILIES = {"ndcg": "NDCG", "map": "MAP", "hits": "Hits"}
_NAME = re.compile(r"^\s*([A-Za-z]+)\s*@\s*(\d+)\s*$")


@dataclass(frozen=True)
class RanxMetric:
    """One ranx measure at one cutoff, named as the mmRAG paper prints it (`NDCG@5`, `MAP@5`, `Hits@5`)."""

    family: str
    cutoff: int

    @property
    def name(self) -> str:
        return f"{self.family}@{self.cutoff}"


def parse_ranx_metrics(names: Iterable[str]) -> list[RanxMetric]:
    """Metrics from names such as `ndcg@5`, `Hits@1` (any case)."""
    metrics = []
    for name in names:
        match = _NAME.match(name)
        family = FAMILIES.get(match.group(1).lower()) if match else None
        if family is None or int(match.group(2)) < 1:
            raise UsageError(f"unknown metric {preview(name)}; ranx metrics here are NDCG@k, MAP@k and Hits@k, k >= 1")
        metrics.append(RanxMetric(family, int(match.group(2))))
    return metrics


def _insertion_sort(keys: np.ndarray, order: np.ndarray, low: int, high: int) -> None:
    """Sort order[low..high] (inclusive) by keys; stable."""
    for i in range(low + 1, high + 1):
        moving = order[i]
        value = keys[moving]
        j = i
        while j > low and value < keys[order[j - 1]]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = moving


class CostlyTieOrder(ValueError):
    """The quicksort that ranx's order follows would handle more than QUICKSORT_WORK elements: scores arranged (a
    "median-of-three killer") to make it quadratic, at a size where that is minutes."""


QUICKSORT_WORK = 2_000_000_000
"""Elements partitioned at most (seconds of numpy): a quadratic order of up to ~90,000 documents is still sorted as
ranx sorts it; a larger one is refused."""


def _partition(keys: np.ndarray, order: np.ndarray, low: int, high: int) -> int:
    """Median-of-three pivot parked at `high`, two indices moving inwards; returns the pivot's final place.

    The two indices stop at the elements not below (left) and not above (right) the pivot and swap them while they
    have not crossed: that pairs the k-th such element from the left with the k-th from the right for as long as
    the first lies left of the second, so the swaps are found and made with numpy, not an element at a time."""
    mid = (low + high) >> 1
    if keys[order[mid]] < keys[order[low]]:
        order[low], order[mid] = order[mid], order[low]
    if keys[order[high]] < keys[order[mid]]:
        order[high], order[mid] = order[mid], order[high]
    if keys[order[mid]] < keys[order[low]]:
        order[low], order[mid] = order[mid], order[low]
    pivot = keys[order[mid]]
    order[high], order[mid] = order[mid], order[high]
    values = keys[order[low:high]]
    left = np.flatnonzero(values >= pivot) + low
    right = (np.flatnonzero(values <= pivot) + low)[::-1]
    pairs = min(len(left), len(right))
    crossed = np.flatnonzero(left[:pairs] >= right[:pairs])
    swaps = int(crossed[0]) if len(crossed) else pairs
    if swaps:
        moved = order[left[:swaps]]
        order[left[:swaps]] = order[right[:swaps]]
        order[right[:swaps]] = moved
    place = min(int(left[swaps]) if swaps < len(left) else high, int(right[swaps - 1]) if swaps else high)
    order[place], order[high] = order[high], order[place]
    return place


def quicksort_order(keys: Sequence[float]) -> list[int]:
    """The permutation numba's `np.argsort(keys)` (kind quicksort) returns. CostlyTieOrder when its partitions would
    handle more than QUICKSORT_WORK elements (an order that makes quicksort quadratic), before doing so."""
    values = np.asarray(keys, dtype=np.float64)
    order = np.arange(len(values), dtype=np.int64)
    if len(values) < 2:
        return order.tolist()
    budget = QUICKSORT_WORK
    pending = [(0, len(values) - 1)]
    while pending:
        low, high = pending.pop()
        while high - low >= INSERTION_SORT_BELOW - 1:
            budget -= high - low + 1
            if budget < 0:
                raise CostlyTieOrder(f"{len(values):,} scores with ties, in an order that makes numba's quicksort (and "
                                     "so ranx, whose tie order this follows) take quadratic time")
            pivot = _partition(values, order, low, high)
            if high - pivot > pivot - low:  # the larger part waits; the smaller one is sorted first
                if high > pivot:
                    pending.append((pivot + 1, high))
                high = pivot - 1
            else:
                if pivot > low:
                    pending.append((low, pivot - 1))
                low = pivot + 1
        _insertion_sort(values, order, low, high)
    return order.tolist()


def stable_order(docs: Mapping[str, float]) -> list[str]:
    """The document ids of one query by score, highest first, equal scores in the run's order."""
    doc_ids, keys = list(docs), [-float(score) for score in docs.values()]
    return [doc_ids[i] for i in sorted(range(len(keys)), key=keys.__getitem__)]


def ranx_order(docs: Mapping[str, float]) -> list[str]:
    """The document ids of one query in the order ranx ranks them (see the module docstring)."""
    keys = [-float(score) for score in docs.values()]
    if len(keys) < INSERTION_SORT_BELOW or len(set(keys)) == len(keys):
        # insertion sort is stable, and without ties every correct sort gives the same order
        return stable_order(docs)
    doc_ids = list(docs)
    return [doc_ids[i] for i in quicksort_order(keys)]


def query_values(grades: Mapping[str, int], ranked: Sequence[str], metrics: Sequence[RanxMetric],
                 relevance_level: int = 1) -> dict[str, float]:
    """Each metric for one query: `grades` its qrels, `ranked` its documents in ranx's order."""
    relevant = {doc_id: grade for doc_id, grade in grades.items() if grade >= relevance_level}
    if not relevant:
        return {m.name: 0.0 for m in metrics}
    ideal = np.array(sorted(relevant.values(), reverse=True), dtype=np.float64)
    values = {}
    for metric in metrics:
        top = ranked[:metric.cutoff]
        gains = np.array([relevant.get(doc_id, 0) for doc_id in top], dtype=np.float64)
        hits = np.array([doc_id in relevant for doc_id in top], dtype=np.float64)
        if metric.family == "Hits":
            values[metric.name] = float(hits.sum())
        elif metric.family == "MAP":
            precision = np.cumsum(hits) / np.arange(1, len(top) + 1)
            values[metric.name] = float((precision * hits).sum() / len(relevant))
        else:
            dcg = float(np.sum(gains / np.log2(np.arange(1, len(top) + 1) + 1)))
            best = ideal[:metric.cutoff]
            idcg = float(np.sum(best / np.log2(np.arange(1, len(best) + 1) + 1)))
            values[metric.name] = dcg / (idcg or 1.0)
    return values


def _scoring_order(query_id: str, docs: Mapping[str, float], grades: Mapping[str, int],
                   relevance_level: int) -> list[str]:
    """`docs` in an order whose relevance and gains are those of ranx_order's, which the measures depend on alone:
    ranx_order itself where scores tie between documents that differ in them (a judged document with a grade of at
    least `relevance_level` is relevant and gains its grade; any other, judged or not, neither), else score
    descending with equal scores in the run's order. A UsageError naming the query when ranx_order's quicksort
    would be quadratic (CostlyTieOrder)."""
    gains_of_score: dict[float, set[int | None]] = {}
    for doc_id, score in docs.items():
        grade = grades.get(doc_id)
        gains_of_score.setdefault(-float(score), set()).add(
            grade if grade is not None and grade >= relevance_level else None)
    if all(len(gains) == 1 for gains in gains_of_score.values()):
        return stable_order(docs)
    try:
        return ranx_order(docs)
    except CostlyTieOrder as e:
        raise UsageError(f"query {preview(query_id)} of the run: {e}; break its ties (documents of different grades "
                         "share a score) to score it") from None


def ranx_score(qrels: Mapping[str, Mapping[str, int]], run: Run, metrics: Sequence[RanxMetric], *,
               relevance_level: int = 1) -> Scores:
    """Per-query values and means over every query of `qrels`, as `ranx.evaluate` gives them when the run is made
    comparable to the qrels (a judged query missing from the run scores 0; other queries of the run are ignored)."""
    per_query = {query_id: query_values(grades, _scoring_order(query_id, run.get(query_id, {}), grades,
                                                               relevance_level), metrics, relevance_level)
                 for query_id, grades in qrels.items()}
    mean = {m.name: float(np.mean([v[m.name] for v in per_query.values()])) if per_query else 0.0 for m in metrics}
    unranked = [query_id for query_id in qrels if not run.get(query_id)]
    return Scores(mean, per_query, unranked)
