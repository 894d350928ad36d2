"""`ragloaders eval`: score a run against a benchmark path, with that benchmark's conventions, and say
what in the run could not be matched to the benchmark.

Every path gets BEIR's trec_eval set. A benchmark whose authors score another way gets their measures first:
mmRAG's paper table (ranx, see ranx_metrics), and mmRAG's routing task (`evaluate_routing`). The report states
the tie rule behind each set."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import UsageError
from ..core.facts import AuthorsMeasures, EvalConventions
from ..core.plural import counted
from ..core.preview import preview
from .data import (
    all_query_ids,
    conventions_of,
    corpus_tables,
    display_name,
    load_grades,
    load_qrels,
    missing_doc_ids_started,
    open_scored_source,
    require_labels,
)
from .identity import identity, identity_lines, qrels_identity, source_identity
from .metrics import DEFAULT_METRICS, Metric, parse_metrics, require_extra, score
from .ranx_metrics import RANX_TIES, TREC_EVAL_TIES, parse_ranx_metrics, ranx_score
from .routing import read_routing_run
from .runs import Run, checked_run, read_run

EXAMPLES = 5
"""How many ids a report shows for each kind of mismatch."""
BEIR_SET = "BEIR's measures (trec_eval via pytrec_eval)"
BEIR_SHORT = "BEIR's measures"


@dataclass
class EvalReport:
    """The scores of one run on one path and split, and everything in the run that did not match the benchmark."""

    path: str
    split: str
    relevance_level: int
    metrics: dict[str, float]
    """Mean over the judged queries (over the member paths' means for a group path), by BEIR metric name."""
    judged_queries: int
    per_query: dict[str, dict[str, float]] | None = None
    members: dict[str, dict[str, float]] = field(default_factory=dict)
    """For a group path (beir/cqadupstack): each member path's means."""
    unranked_queries: list[str] = field(default_factory=list)
    """Judged queries the run does not rank: each scored 0."""
    unknown_queries: list[str] = field(default_factory=list)
    """Query ids of the run that the benchmark does not have: not scored."""
    unjudged_queries: int = 0
    """Queries of the run that the benchmark has but this split does not judge: not scored."""
    unknown_documents: list[str] = field(default_factory=list)
    """Document ids of the run missing from the corpus (scored as not relevant, as trec_eval does)."""
    identical_ids_dropped: int = 0
    notes: list[str] = field(default_factory=list)
    authors_title: str = ""
    """What `authors_metrics` are and where they come from; empty when the authors' measures are BEIR's."""
    authors_metrics: dict[str, float] = field(default_factory=dict)
    """The authors' own measures (mmRAG: the paper's ranx measures), by the name the paper prints."""
    authors_per_query: dict[str, dict[str, float]] | None = None
    conventions: list[str] = field(default_factory=list)
    """The conventions applied: which tie rule each set of measures follows."""
    task: str = "retrieval"
    """`retrieval` (a run of documents) or `routing` (a run of mmRAG's source datasets)."""
    identity: dict[str, Any] | None = None
    """What was scored (eval.identity): ragloaders' version, the source and what pins it, the split, the conventions,
    the run file's sha256."""
    scored_qrels: dict[str, Any] | None = field(default=None, repr=False)
    """`identity.qrels_identity` of the qrels scored against (a single path's)."""

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data; metric names are the keys. `authors_metrics` (when the authors' measures
        are not BEIR's) comes first, as in the text."""
        data: dict[str, Any] = {"path": self.path, "split": self.split, "task": self.task}
        if self.authors_title:
            data["authors_metrics"] = {"title": self.authors_title, "metrics": self.authors_metrics}
        data.update({"relevance_level": self.relevance_level, "judged_queries": self.judged_queries,
                     "metrics": self.metrics})
        if self.members:
            data["members"] = self.members
        for name in ("unranked_queries", "unknown_queries", "unknown_documents"):
            ids = getattr(self, name)
            data[name] = {"count": len(ids), "examples": ids[:EXAMPLES]}
        data["unjudged_queries"] = self.unjudged_queries
        data["identical_ids_dropped"] = self.identical_ids_dropped
        data["conventions"] = self.conventions
        data["notes"] = self.notes
        if self.per_query is not None:
            data["per_query"] = self.per_query
        if self.authors_per_query is not None:
            data["authors_per_query"] = self.authors_per_query
        if self.identity is not None:
            data["identity"] = self.identity
        return data

    def warnings(self) -> list[str]:
        """One line for each kind of mismatch between the run and the benchmark."""
        lines = []
        for ids, one, many in (
            (self.unranked_queries, "judged query is not in the run (scored 0)",
             "judged queries are not in the run (each scored 0)"),
            (self.unknown_queries, f"query of the run is not in {self.path} (not scored)",
             f"queries of the run are not in {self.path} (not scored)"),
            (self.unknown_documents, "dataset of the run is not among the routing labels' (scored not relevant)",
             "datasets of the run are not among the routing labels' (scored not relevant)")
            if self.task == "routing" else
            (self.unknown_documents, f"document of the run is not in the {self.path} corpus (scored not relevant)",
             f"documents of the run are not in the {self.path} corpus (scored not relevant)"),
        ):
            if ids:
                lines.append(f"{counted(len(ids), one, many)}, e.g. {', '.join(map(preview, ids[:EXAMPLES]))}")
        return lines

    def text(self) -> str:
        """The report as a person reads it: the authors' measures first, then BEIR's set, the conventions, notes and
        warnings (and per-query rows if kept)."""
        lines = [f"{self.path} {self.split}: {counted(self.judged_queries, 'judged query', 'judged queries')}, "
                 f"relevance level {self.relevance_level}"]
        if self.authors_title:
            lines.append(self.authors_title + ":")
            lines += [f"  {name:<12} {value:.5f}" for name, value in self.authors_metrics.items()]
        if self.metrics:
            lines.append(BEIR_SET + ":")
            lines += [f"  {name:<12} {value:.5f}" for name, value in self.metrics.items()]
        for member, means in self.members.items():
            lines.append(f"  {member}: " + ", ".join(f"{name} {value:.5f}" for name, value in means.items()))
        if self.unjudged_queries:
            one = self.unjudged_queries == 1
            lines.append(f"note: {counted(self.unjudged_queries, 'query', 'queries')} of the run "
                         f"{'is' if one else 'are'} not judged in {self.split} (not scored)")
        if self.identical_ids_dropped:
            one = self.identical_ids_dropped == 1
            lines.append(f"note: {counted(self.identical_ids_dropped, 'retrieved document')} equal to "
                         f"{'its' if one else 'their'} query {'was' if one else 'were'} dropped")
        lines += [f"convention: {convention}" for convention in self.conventions]
        lines += [f"note: {note}" for note in self.notes]
        lines += [f"warning: {warning}" for warning in self.warnings()]
        tables = [t for t in (self.authors_per_query, self.per_query) if t is not None]
        if tables:
            names = [name for t in tables for name in next(iter(t.values()), {})]
            prefixes = ["authors:"] * len(self.authors_metrics) if self.authors_per_query is not None else []
            headers = [p + n for p, n in zip(prefixes + [""] * len(names), names)]
            lines.append("\t".join(["query-id", *headers]))
            for query_id in tables[0]:
                values = [f"{v:.5f}" for t in tables for v in t[query_id].values()]
                lines.append("\t".join([query_id, *values]))
        if self.identity is not None:
            lines += identity_lines(self.identity)
        return "\n".join(lines)


def evaluate(
    path: str,
    run: Run | str | os.PathLike,
    *,
    split: str = "test",
    metrics: str | Iterable[str] | None = None,
    relevance_level: int | None = None,
    per_query: bool = False,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    benchmark: str | None = None,
    revision: str | None = None,
    keep_identical_ids: bool = False,
) -> EvalReport:
    """Score `run` (a run file, or {query id: {document id: score}}) against the `split` qrels of `path`, the way
    the benchmark's authors do (see EvalConventions); `relevance_level` overrides the benchmark's. `path` may also
    be a built folder or a hub repository (at `revision`: a commit, branch or tag; see data.open_source;
    `benchmark` names its path when its card does not). Where the benchmark drops a retrieved document whose id is
    its query's (BEIR's ignore_identical_ids, every BEIR and beir-format path), `keep_identical_ids` keeps them; the
    report says which, and how many were dropped. With `metrics` None: DEFAULT_METRICS and the benchmark's extra
    measures (BEIR: R_cap@k)."""
    shown = display_name(path)
    opened = open_scored_source(path, benchmark, revision)
    path, conventions = opened.read, opened.conventions
    require_labels(shown, conventions)
    require_extra("pytrec_eval")
    given = run
    run = checked_run(run) if isinstance(run, dict) else read_run(os.fspath(run))
    chosen = parse_metrics((*DEFAULT_METRICS, *conventions.extra_metrics) if metrics is None else metrics)
    level = conventions.relevance_level if relevance_level is None else relevance_level
    where = {"data_dir": data_dir, "cache_dir": cache_dir}
    if conventions.mean_over:
        report = _evaluate_group(path, run, conventions, split, chosen, level, per_query, where, keep_identical_ids)
    else:
        report = _evaluate_path(shown, path, run, conventions, split, chosen, level, per_query, where,
                                keep_identical_ids)
    require_a_scored_query(report, given, run)
    source = source_identity(shown, conventions.mean_over or (path,), opened.repository, qrels=report.scored_qrels,
                             **where)
    report.identity = identity(source, split, given, relevance_level=level,
                               ignore_identical_ids=conventions.ignore_identical_ids,
                               keep_identical_ids=keep_identical_ids, dropped=report.identical_ids_dropped)
    return report


def _evaluate_path(
    shown: str, path: str, run: Run, conventions: EvalConventions, split: str, chosen: list[Metric], level: int,
    per_query: bool, where: dict, keep_identical_ids: bool,
) -> EvalReport:
    qrels = load_qrels(path, split, **where)
    known = all_query_ids(path, **where)
    drop = conventions.ignore_identical_ids and not keep_identical_ids
    # a dropped document is not scored, so it is not reported as missing from the corpus either
    doc_ids = _scored_doc_ids(run, drop)
    unknown_documents = missing_doc_ids_started(doc_ids, corpus_tables(path, ["_id"], **where))
    scores = score(qrels, run, chosen, relevance_level=level, ignore_identical_ids=drop,
                   qrels_name=f"{shown} qrels {split}")
    scored_qrels = qrels_identity(qrels)
    report = EvalReport(
        shown, split, level, scores.mean, len(qrels), scores.per_query if per_query else None,
        unranked_queries=scores.unranked_queries,
        unknown_queries=[query_id for query_id in run if query_id not in known],
        unjudged_queries=sum(1 for query_id in run if query_id in known and query_id not in qrels),
        unknown_documents=unknown_documents(),
        identical_ids_dropped=scores.identical_ids_dropped,
        notes=list(conventions.notes),
        conventions=[f"{BEIR_SHORT}: {TREC_EVAL_TIES}", *identical_ids_convention(conventions, keep_identical_ids,
                                                                                 scores.identical_ids_dropped)],
        scored_qrels=scored_qrels,
    )
    if conventions.authors_retrieval:
        _add_authors_measures(report, conventions.authors_retrieval, qrels, run, per_query)
    return report


def _scored_doc_ids(run: Run, drop_identical: bool) -> list[str]:
    """Every document id of the run in its order (once per query that ranks it), without a document whose id is its
    query's when `drop_identical`."""
    doc_ids: list[str] = []
    for query_id, docs in run.items():
        # (list.extend of the dict copies its keys in C: a generator over a million ids costs several times more)
        doc_ids.extend((d for d in docs if d != query_id) if drop_identical and query_id in docs else docs)
    return doc_ids


def identical_ids_convention(conventions: EvalConventions, keep: bool, dropped: int) -> list[str]:
    """The report's line on identical ids, where the benchmark drops them (none elsewhere)."""
    if not conventions.ignore_identical_ids:
        return []
    if keep:
        return ["identical ids kept (--keep-identical-ids): a retrieved document whose id is its query's is scored, "
                "where BEIR's EvaluateRetrieval (ignore_identical_ids=True) drops it"]
    return [f"identical ids dropped: {dropped} retrieved documents whose id is their query's, as BEIR's "
            "EvaluateRetrieval (ignore_identical_ids=True) and Pyserini's --remove-query do (--keep-identical-ids "
            "keeps them)"]


def _add_authors_measures(
    report: EvalReport, authors: AuthorsMeasures, qrels: dict, run: Run, per_query: bool
) -> None:
    ranx = ranx_score(qrels, run, parse_ranx_metrics(authors.metrics), relevance_level=report.relevance_level)
    report.authors_title, report.authors_metrics = authors.title, ranx.mean
    report.authors_per_query = ranx.per_query if per_query else None
    report.conventions.insert(0, f"{authors.short}: {RANX_TIES}; Hits@k counts the relevant items in the top k; a "
                                 "judged query the run leaves out scores 0, as with ranx's make_comparable")


def evaluate_routing(
    path: str,
    run: Run | str | os.PathLike,
    *,
    split: str = "test",
    per_query: bool = False,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    benchmark: str | None = None,
    revision: str | None = None,
) -> EvalReport:
    """Score a routing run (a routing run file, or {query id: {dataset: score}}) of mmRAG against the `split` of its
    `routing` config with the authors' routing measures (ranx: NDCG@5, Hits@1 ... Hits@5). `path` may also be a
    folder or hub repository built from mmrag (at `revision`; `benchmark`, mmrag, when its card does not say so)."""
    shown = display_name(path)
    opened = open_scored_source(path, benchmark, revision)
    path, authors = opened.read, opened.conventions.authors_routing
    if authors is None:
        raise UsageError(f"{shown} has no routing task; routing runs are scored on mmrag")
    given = run
    run = checked_run(run) if isinstance(run, dict) else read_routing_run(run)
    where = {"data_dir": data_dir, "cache_dir": cache_dir}
    labels = load_grades(path, "routing", "dataset", split, **where)
    known = all_query_ids(path, **where)
    datasets = (dataset for ranked in run.values() for dataset in ranked)
    labelled = {dataset for grades in labels.values() for dataset in grades}
    report = EvalReport(
        shown, split, 1, {}, len(labels), task="routing",
        unknown_queries=[query_id for query_id in run if query_id not in known],
        unjudged_queries=sum(1 for query_id in run if query_id in known and query_id not in labels),
        unknown_documents=list(dict.fromkeys(d for d in datasets if d not in labelled)),
        notes=["routing labels are each query's `dataset_score` (the `routing` config): NDCG uses them as gains, "
               "Hits counts the datasets with a score >= 1"],
    )
    _add_authors_measures(report, authors, labels, run, per_query)
    report.unranked_queries = [query_id for query_id in labels if not run.get(query_id)]
    require_a_scored_query(report, given, run)
    report.identity = identity(source_identity(shown, (path,), opened.repository, **where), split, given,
                               relevance_level=1,
                               ignore_identical_ids=False, keep_identical_ids=False, dropped=0)
    return report


def require_a_scored_query(report: EvalReport, given: Run | str | os.PathLike, run: Run) -> None:
    """Refuse a run that ranks nothing for any query the split judges: every measure would be 0, a report that looks
    like a result of a run that is empty or of another split (BEIR's EvaluateRetrieval divides by zero on it)."""
    if not report.judged_queries or len(report.unranked_queries) < report.judged_queries:
        return
    name = "" if isinstance(given, dict) else f"{os.fspath(given)}: "
    kind = "routing run" if report.task == "routing" else "run"
    item = "dataset" if report.task == "routing" else "document"
    if not run:
        raise UsageError(f"{name}the {kind} holds no result: nothing to score")
    if not any(run.values()):
        raise UsageError(f"{name}the {kind} ranks no {item} for any of its {counted(len(run), 'query', 'queries')}: "
                         "nothing to score")
    unranked = set(report.unranked_queries)
    if report.identical_ids_dropped and any(query_id in unranked for query_id in run):
        raise UsageError(f"{name}every document the {kind} ranks for its judged queries is the query itself, dropped "
                         f"as BEIR does ({counted(report.identical_ids_dropped, 'document')}): nothing to score; "
                         "--keep-identical-ids scores them")
    others = [f"{counted(len(report.unknown_queries), 'is', 'are')} not in {report.path}"] if report.unknown_queries \
        else []
    if report.unjudged_queries:
        others.append(f"{counted(report.unjudged_queries, 'is', 'are')} judged in another split only")
    example = next(iter(run))
    raise UsageError(f"{name}no query of the {kind} ({counted(len(run), 'query', 'queries')}, e.g. "
                     f"{preview(example)}{'; ' + ', '.join(others) if others else ''}) is judged in {report.path}'s "
                     f"{report.split} split: a run of another benchmark or split? (--split chooses the split)")


def member_prefix(group: str, member: str) -> str:
    """How a member path's ids are prefixed in a group run: `beir/cqadupstack/android` -> `android/`."""
    return member[len(group) + 1:] + "/"


def _evaluate_group(
    path: str, run: Run, conventions: EvalConventions, split: str, metrics: list[Metric], level: int,
    per_query: bool, where: dict, keep_identical_ids: bool = False,
) -> EvalReport:
    """A group path: the run's ids are `<member>/<id>`; each member is scored alone and the means averaged."""
    prefixes = {member_prefix(path, member): member for member in conventions.mean_over}
    runs: dict[str, Run] = {member: {} for member in conventions.mean_over}
    foreign: dict[str, set[str]] = {member: set() for member in conventions.mean_over}
    """Per member: documents of its queries that carry another prefix (kept whole, so scored not relevant; the
    members' own ids hold no `/`)."""
    unknown_queries = []
    for query_id, docs in run.items():
        prefix = query_id.split("/", 1)[0] + "/"
        if prefix not in prefixes or query_id == prefix:
            unknown_queries.append(query_id)
            continue
        member = prefixes[prefix]
        others = [doc_id for doc_id in docs if not doc_id.startswith(prefix)]
        foreign[member].update(others)
        if bare := next((doc_id for doc_id in others if "/" not in doc_id), None):
            # kept whole, it would equal the member's own id of that name and be scored as that document
            raise UsageError(f"run: query {preview(query_id)} ranks the document {preview(bare)}, which names no "
                             f"forum; a {path} run names every document <forum>/<id>, as its queries (what "
                             f"`ragloaders bm25 {path}` writes)")
        runs[member][query_id[len(prefix):]] = {
            doc_id[len(prefix):] if doc_id.startswith(prefix) else doc_id: s for doc_id, s in docs.items()
        }
    names = [m.name for m in metrics]
    report = EvalReport(path, split, level, {}, 0, {} if per_query else None, notes=list(conventions.notes),
                        conventions=[f"{BEIR_SHORT}: {TREC_EVAL_TIES}"])
    for member, member_run in runs.items():
        part = _evaluate_path(member, member, member_run, conventions_of(member), split, metrics, level, per_query,
                              where, keep_identical_ids)
        prefix = member_prefix(path, member)
        report.members[member] = part.metrics
        report.judged_queries += part.judged_queries
        if per_query:
            report.per_query.update({prefix + q: values for q, values in part.per_query.items()})
        report.unranked_queries += [prefix + q for q in part.unranked_queries]
        report.unknown_queries += [prefix + q for q in part.unknown_queries]
        report.unjudged_queries += part.unjudged_queries
        report.unknown_documents += [d if d in foreign[member] else prefix + d for d in part.unknown_documents]
        report.identical_ids_dropped += part.identical_ids_dropped
    report.unknown_queries = unknown_queries + report.unknown_queries
    report.metrics = {name: sum(means[name] for means in report.members.values()) / len(report.members)
                      for name in names}
    report.conventions += identical_ids_convention(conventions, keep_identical_ids, report.identical_ids_dropped)
    return report
