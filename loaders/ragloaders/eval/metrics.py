"""Scoring a run against qrels with trec_eval's own code (pytrec_eval), under BEIR's metric names.

Every number comes from pytrec_eval's RelevanceEvaluator but `R_cap@k`, which trec_eval does not have.
The names are the ones BEIR prints (`NDCG@10`, `Recall@100`, `MAP@100`, `MRR@10`, `P@10`) and map
to trec_eval measures as BEIR's EvaluateRetrieval maps them (`ndcg_cut.10`, `recall.100`,
`map_cut.100`, `P.10`). trec_eval's `recip_rank` has no cutoff, so `MRR@k` is `recip_rank` on the run
cut to its first k documents in trec_eval's own order (score descending, then document id
descending). BEIR's custom MRR ranks ties in the order the run lists them instead; the two differ only
when a tie straddles the cutoff.

`R_cap@k` is BEIR's capped recall (`EvaluateRetrieval.evaluate_custom(..., metric="r_cap")`,
beir/retrieval/custom_metrics.py `recall_cap`): the relevant documents among the first k over min(k, the number
of relevant documents), which reaches 1 when k is below that number. The first k are taken in trec_eval's order, as
for MRR@k; relevant is a grade >= `relevance_level` (BEIR's `> 0`, the same at the default level 1). BEIR
averages over the run's queries and divides by zero on a query with no relevant document; here, as for every
measure, the mean is over the judged queries, and a judged query with no relevant document scores 0.

Means are over every query of the qrels: a judged query the run does not name scores 0 on every
measure (trec_eval's `-c`), and is reported. nDCG uses the qrels grades as gains; the binary measures
count a grade >= `relevance_level` as relevant (trec_eval's `-l`, at least 1 in pytrec_eval).

A negative grade (BEIR's touche has -2) means judged non-relevant, as in trec_eval, which reads it as "in the
pool, not relevant": no gain, never relevant at any level, not counted among a query's relevant documents.
pytrec_eval's copy of trec_eval indexes an array by the grade and crashes the process (segfault) on grades
of -2 and below, so those pairs are left out of what pytrec_eval is given: for every measure here
(nDCG, recall, MAP, P, recip_rank) a judged non-relevant document and an unjudged one count the same,
and the query itself stays judged (scored, in the mean) even when every grade it has is negative.

What pytrec_eval cannot be given is refused (ValueError naming the id or grade), never passed on: an id holding a NUL
byte (its C code ends the id there, so two ids become one: it aborts the process, or scores the wrong document)
or a lone surrogate (a Python run's id that is no UTF-8: it segfaults),
and a grade above MAX_GRADE (trec_eval allocates and walks an array as long as the largest grade: a grade of 10^9
exhausts memory, and 2^63 - 1 wraps to a wrong score).
"""

from __future__ import annotations

import importlib
import re
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..core.errors import UsageError
from ..core.preview import preview
from .runs import Run

INSTALL_EVAL = "pip install 'ragloaders[eval]'"
Qrels = dict[str, dict[str, int]]


def require_extra(*modules: str) -> None:
    """ImportError naming the extra to install when a module of the `eval` extra is missing."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            raise ImportError(f"{name} is missing: {INSTALL_EVAL}") from None

"""query id -> {document id: grade}: the shape pytrec_eval takes."""


@dataclass(frozen=True)
class Family:
    """A measure family: its BEIR name and the trec_eval measure behind it."""

    name: str
    trec_measure: str
    """trec_eval's name; `.k` is appended for a cutoff."""
    trec_key: str
    """The key of pytrec_eval's result; `{k}` is the cutoff."""
    native_cutoff: bool = True
    """False when trec_eval ignores the cutoff (recip_rank): the run is cut to k documents first."""
    in_trec_eval: bool = True
    """False for a measure trec_eval does not have (R_cap), computed here."""


FAMILIES = {family.name.lower(): family for family in (
    Family("NDCG", "ndcg_cut", "ndcg_cut_{k}"),
    Family("Recall", "recall", "recall_{k}"),
    Family("MAP", "map_cut", "map_cut_{k}"),
    Family("P", "P", "P_{k}"),
    Family("MRR", "recip_rank", "recip_rank", native_cutoff=False),
    Family("R_cap", "", "", native_cutoff=False, in_trec_eval=False),
)}
"""BEIR's metric families by lower-case name."""


@dataclass(frozen=True)
class Metric:
    """One measure at one cutoff, e.g. NDCG@10."""

    family: Family
    cutoff: int

    @property
    def name(self) -> str:
        return f"{self.family.name}@{self.cutoff}"

    @property
    def trec_key(self) -> str:
        return self.family.trec_key.format(k=self.cutoff)


DEFAULT_METRICS = (
    "NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "NDCG@100",
    "Recall@1", "Recall@3", "Recall@5", "Recall@10", "Recall@100",
    "MAP@100", "MRR@10", "P@10",
)
"""What BEIR reports (its k values up to 100) plus MRR@10 and P@10."""

_METRIC = re.compile(r"^\s*([A-Za-z_]+)\s*@\s*(\d{1,20})\s*$")
MAX_CUTOFF = (1 << 31) - 1
"""The largest cutoff k: trec_eval reads one as a C long, pytrec_eval named a larger one a measure it then lacked."""


def parse_metrics(names: str | Iterable[str] | None) -> list[Metric]:
    """Metrics from names such as `ndcg@10,recall@100` (any case; a comma-separated string or a list);
    None gives DEFAULT_METRICS."""
    if names is None:
        names = DEFAULT_METRICS
    if isinstance(names, str):
        names = [name for name in names.split(",") if name.strip()]
    metrics = []
    for name in names:
        match = _METRIC.match(name)
        family = FAMILIES.get(match.group(1).lower()) if match else None
        if family is None or not 1 <= int(match.group(2)) <= MAX_CUTOFF:
            raise UsageError(f"unknown metric {preview(name)}; {_known_metrics()}")
        metric = Metric(family, int(match.group(2)))
        if metric not in metrics:
            metrics.append(metric)
    if not metrics:
        raise UsageError(f"no metric given; {_known_metrics()}")
    return metrics


def _known_metrics() -> str:
    known = ", ".join(f"{family.name}@k" for family in FAMILIES.values())
    return f"metrics are {known} with a cutoff k from 1 to {MAX_CUTOFF:,}, e.g. NDCG@10"


@dataclass
class Scores:
    """Mean and per-query values of each metric, keyed by the metric's BEIR name."""

    mean: dict[str, float]
    per_query: dict[str, dict[str, float]] = field(repr=False)
    unranked_queries: list[str] = field(default_factory=list)
    """Judged queries the run does not name (or whose every document was dropped): scored 0."""
    identical_ids_dropped: int = 0
    """Documents dropped because their id equals the query id (BEIR's ignore_identical_ids)."""


def without_identical_ids(run: Run) -> tuple[Run, int]:
    """The run without any document whose id equals its query id, and how many there were (BEIR's
    `ignore_identical_ids`, for datasets whose queries are also corpus entries)."""
    dropped = sum(1 for query_id, docs in run.items() if query_id in docs)
    if not dropped:
        return run, 0
    return {query_id: {d: s for d, s in docs.items() if d != query_id} for query_id, docs in run.items()}, dropped


def without_negative_grades(qrels: Mapping[str, Mapping[str, int]]) -> Qrels:
    """The qrels without the pairs graded below 0 (judged non-relevant; see the module docstring), and without a
    query left with no pair: what pytrec_eval can be given without crashing."""
    kept = ((query_id, {doc_id: grade for doc_id, grade in docs.items() if grade >= 0})
            for query_id, docs in qrels.items())
    return {query_id: docs for query_id, docs in kept if docs}


MAX_GRADE = 1 << 16
"""The largest qrels grade scored: far above any benchmark's (0 to 4), far below what trec_eval's memory allows."""


def refuse_what_trec_eval_cannot_hold(qrels: Mapping[str, Mapping[str, int]], run: Run,
                                      qrels_name: str = "qrels") -> None:
    """ValueError for an id holding a NUL byte or a lone surrogate (qrels or run) or a grade above MAX_GRADE (module
    docstring); `qrels_name` says which qrels (`beir/x qrels test`)."""
    for source, pairs in ((qrels_name, qrels), ("run", run)):
        for query_id, docs in pairs.items():
            if source == "run" and _unholdable(query_id + "".join(docs)) is None:
                continue  # (one check of all the query's ids joined; each id looked at only if that fails)
            for what, value in (("query id", query_id), *(("document id", doc_id) for doc_id in docs)):
                if problem := _unholdable(value):
                    raise UsageError(f"{source}: {what} {preview(value)} {problem}")
            if pairs is qrels:
                for doc_id, grade in docs.items():
                    if grade > MAX_GRADE:
                        raise UsageError(f"{qrels_name}: query {preview(query_id)}, document {preview(doc_id)}: grade "
                                         f"{grade} is above "
                                         f"{MAX_GRADE}, the largest trec_eval is given (its memory grows with it)")


def refuse_nulls(qrels: Mapping[str, Mapping[str, int]], qrels_name: str = "qrels") -> None:
    """UsageError naming the qrels (`qrels_name`, `beir/x qrels test`) and a pair, when a query id, document id or
    grade of theirs is null (None): read from a data file whose column holds a null (`validate` lists each such
    row as `null_values`), it could be neither compared nor given to pytrec_eval."""
    for query_id, docs in qrels.items():
        if query_id is None:
            example = f" (with document {preview(next(iter(docs)))})" if docs else ""
            raise UsageError(f"{qrels_name}: a query-id is null{example}; every pair needs a query id")
        if None in docs:
            raise UsageError(f"{qrels_name}: a corpus-id of query {preview(query_id)} is null; every pair needs a "
                             "document id")
        if None in docs.values():
            doc_id = next(doc_id for doc_id, grade in docs.items() if grade is None)
            raise UsageError(f"{qrels_name}: the score of query {preview(query_id)}, document {preview(doc_id)} is "
                             "null; every pair needs a grade")


def _unholdable(value: str) -> str | None:
    if "\0" in value:
        return "holds a NUL byte, which trec_eval cannot hold (it ends the id there)"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone surrogate, which UTF-8 cannot hold (pytrec_eval crashes on it)"
    return None


def ranking(run: Run, depth: int | None = None) -> dict[str, list[tuple[str, float]]]:
    """Each query's first `depth` (None: all) (document id, score) pairs in trec_eval's order: score descending, as
    trec_eval compares scores (in single precision: it keeps each as a C float, so 1.00000001 and 1.0 tie), then
    document id descending. Sorted once here, then cut at every k up to `depth` that is scored (`cut`'s `ranked`);
    only the first `depth` are kept, so a deep run is not held twice. The scores returned are the run's own."""
    ranked = {}
    for query_id, docs in run.items():
        as_trec_eval_holds_them = array("f", docs.values())  # rounded to nearest; past float's range, infinity
        order = sorted(zip(as_trec_eval_holds_them, docs, docs.values()), reverse=True)  # ids unique: scores unseen
        ranked[query_id] = [(doc_id, value) for _, doc_id, value in order[:depth]]
    return ranked


def cut(run: Run, k: int, ranked: Mapping[str, list[tuple[str, float]]] | None = None) -> Run:
    """Each query's first k documents in trec_eval's order (`ranking`): score descending, then document id descending.
    `ranked`: `ranking(run, depth)` with depth k or more, when it is already at hand."""
    ranked = ranking(run, k) if ranked is None else ranked
    return {query_id: dict(pairs[:k]) for query_id, pairs in ranked.items()}


def capped_recall(
    qrels: Mapping[str, Mapping[str, int]], run: Run, k: int, relevance_level: int,
    ranked: Mapping[str, list[tuple[str, float]]] | None = None,
) -> dict[str, float]:
    """BEIR's R_cap@k of each query of `run` that `qrels` judges (module docstring): relevant documents in the first
    k (trec_eval's order) over min(k, relevant documents); 0 for a query with no relevant document. `ranked`:
    `ranking(run, depth)` with depth k or more, when it is already at hand."""
    ranked = ranking(run, k) if ranked is None else ranked
    values = {}
    for query_id, pairs in ranked.items():
        grades = qrels.get(query_id)
        if grades is None:
            continue
        relevant = sum(1 for grade in grades.values() if grade >= relevance_level)
        found = sum(1 for doc_id, _ in pairs[:k] if grades.get(doc_id, 0) >= relevance_level)
        values[query_id] = found / min(k, relevant) if relevant else 0.0
    return values


def score(
    qrels: Mapping[str, Mapping[str, int]],
    run: Run,
    metrics: Iterable[Metric],
    *,
    relevance_level: int = 1,
    ignore_identical_ids: bool = False,
    qrels_name: str = "qrels",
) -> Scores:
    """Score `run` against `qrels` with pytrec_eval: per query and the mean over every query of `qrels`
    (`qrels_name` names them in errors)."""
    require_extra("pytrec_eval")
    import pytrec_eval

    if not 1 <= relevance_level <= MAX_GRADE:  # pytrec_eval takes a C int: 2^31 was a misleading TypeError
        raise UsageError(f"relevance level (--relevance-level, relevance_level=) must be 1 or more (trec_eval's -l) "
                         f"and at most {MAX_GRADE} (MAX_GRADE), got {preview(relevance_level)}")
    refuse_nulls(qrels, qrels_name)
    metrics = list(metrics)
    judged = list(qrels)
    qrels = without_negative_grades(qrels)
    dropped = 0
    if ignore_identical_ids:
        run, dropped = without_identical_ids(run)
    judged_run = {query_id: run[query_id] for query_id in qrels if query_id in run}
    refuse_what_trec_eval_cannot_hold(qrels, judged_run, qrels_name)
    values: dict[str, dict[str, float]] = {query_id: {} for query_id in judged_run}
    native = [m for m in metrics if m.family.native_cutoff and m.family.in_trec_eval]
    if native:
        measures = {f"{m.family.trec_measure}.{m.cutoff}" for m in native}
        results = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=relevance_level).evaluate(judged_run)
        for query_id, result in results.items():
            values[query_id].update({m.name: result[m.trec_key] for m in native})
    cutoffs = [m.cutoff for m in metrics if not m.family.native_cutoff or not m.family.in_trec_eval]
    ranked = ranking(judged_run, max(cutoffs)) if cutoffs else {}
    for metric in (m for m in metrics if not m.family.in_trec_eval):
        for query_id, value in capped_recall(qrels, judged_run, metric.cutoff, relevance_level, ranked).items():
            values[query_id][metric.name] = value
    for metric in (m for m in metrics if not m.family.native_cutoff and m.family.in_trec_eval):
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {metric.family.trec_measure}, relevance_level=relevance_level)
        for query_id, result in evaluator.evaluate(cut(judged_run, metric.cutoff, ranked)).items():
            values[query_id][metric.name] = result[metric.trec_key]
    zero = {m.name: 0.0 for m in metrics}
    per_query = {query_id: {**zero, **values.get(query_id, {})} for query_id in judged}
    unranked = [query_id for query_id in judged if not run.get(query_id)]
    mean = {m.name: (sum(v[m.name] for v in per_query.values()) / len(per_query)) if per_query else 0.0
            for m in metrics}
    return Scores(mean, per_query, unranked, dropped)
