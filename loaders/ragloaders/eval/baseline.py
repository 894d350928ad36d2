"""`ragloaders bm25` and the optional `top_ranked` / `hard_negatives` configs: the BM25 baseline run on a
benchmark path, loaded through `ragloaders.api.load`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from ..api import load, normalized
from ..core.errors import SourceError, UsageError
from ..core.facts import EvalConventions
from ..core.log import warn
from ..core.output_target import check_output
from ..core.plural import counted
from ..core.preview import preview
from .bm25 import DEFAULT_SETTINGS, Bm25Settings, check_top_k, rank
from .data import conventions_of, corpus_tables, display_name, load_qrels, load_queries, open_scored_source
from .metrics import Qrels, require_extra
from .report import member_prefix
from .runs import NUL_UNSCORABLE, write_run

RUN_TAG = "ragloaders-bm25"
RERANKING_TOP_K = 100
"""BEIR's reranking setup re-ranks BM25's top 100."""
RERANKING_SCHEMA = pa.schema([("query-id", pa.string()), ("corpus-ids", pa.list_(pa.string())),
                              ("scores", pa.list_(pa.float32()))])
"""mteb's reranking shape (a query and document ids in rank order), and beside the ids their BM25 scores (`scores`,
aligned with `corpus-ids`, non-increasing), so that a reranking study can fuse or threshold them."""
RERANKING_CONFIGS = ("top_ranked", "hard_negatives")


@dataclass
class Bm25Run:
    """What `bm25` wrote."""

    path: str
    split: str
    out: str
    queries: int
    lines: int
    settings: Bm25Settings
    unranked: int = 0
    """Queries that got no document (no word shared with any document): they have no line in the run."""
    read: str = ""
    """For a hub repository: which commit was read (`org/name at commit <sha>`); "" otherwise."""


def _judged_queries(
    path: str, split: str, conventions: EvalConventions, where: dict
) -> tuple[list[tuple[str, str]], Qrels | None]:
    """The queries a run of this split ranks: those the split's qrels judge (every query of the split when the
    benchmark has no relevance labels), with the qrels. A judged query the queries config lacks cannot be ranked:
    one warning names how many and the first."""
    if conventions.unlabelled:
        return load_queries(path, split, **where), None
    qrels = load_qrels(path, split, **where)
    queries = load_queries(path, split, qrels, **where)
    if len(queries) < len(qrels):
        found = {query_id for query_id, _ in queries}
        absent = [query_id for query_id in qrels if query_id not in found]
        warn(f"{path}: {counted(len(absent), 'query', 'queries')} the {split} qrels judge "
             f"{'is' if len(absent) == 1 else 'are'} not in its queries (first {preview(absent[0])}): not ranked")
    return queries, qrels


TOP_K = "--top-k (top_k= in Python)"
"""bm25's option for the documents per query, as its errors name it."""


def _path_rankings(
    path: str, queries: list[tuple[str, str]], top_k: int, settings: Bm25Settings, where: dict, queries_name: str
) -> Iterator[tuple[str, list[str], list[float]]]:
    return rank(_corpus(path, settings, where), queries, top_k_docs=top_k, settings=settings,
                corpus_name=f"{path} corpus", queries_name=queries_name)


def _corpus(path: str, settings: Bm25Settings, where: dict) -> Iterator[pa.Table]:
    """corpus_tables of `_id` and the fields, a field the corpus lacks refused as a UsageError naming it."""
    tables = corpus_tables(path, ["_id", *settings.fields], **where)
    try:
        first = next(tables, None)
    except KeyError as e:  # pyarrow's select: 'Field "NAME" does not exist in schema'
        missing = [name for name in settings.fields if f'"{name}"' in str(e)]
        if not missing:
            raise
        raise UsageError(f"{path}: its corpus has no column {preview(missing[0])}, which Bm25Settings(fields=...) "
                         "names (the fields indexed are text columns of the corpus, e.g. title and text)") from None
    if first is not None:
        yield first
        yield from tables


def _refuse_unscorable_ids(ids: Iterable[str], name: str, what: str) -> None:
    """SourceError naming the first id of `ids` that eval cannot score (one holding a NUL byte)."""
    for value in ids:
        if "\0" in value:
            raise SourceError(name, f"the {what} {preview(value)} {NUL_UNSCORABLE}")


def bm25(
    path: str,
    *,
    out: str | os.PathLike,
    split: str = "test",
    top_k: int = 1000,
    settings: Bm25Settings = DEFAULT_SETTINGS,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    benchmark: str | None = None,
    revision: str | None = None,
) -> Bm25Run:
    """Rank the corpus of `path` for each query of `split` with BM25 and write the top `top_k` as a run to `out`
    (TREC, or a table for `.parquet` / `.jsonl`). A group path (beir/cqadupstack) ranks each member's corpus for its
    own queries and writes one run whose ids are `<member>/<id>`. `path` may also be a built folder or a hub
    repository (at `revision`: a commit, branch or tag; see data.open_source; `benchmark` names its path when its
    card does not)."""
    check_top_k(top_k, TOP_K)
    shown = display_name(path)
    # the rules every writer follows
    out = check_output(out, kind="file", data_dir=data_dir, cache_dir=cache_dir, source=path)
    opened = open_scored_source(path, benchmark, revision)
    path, conventions = opened.read, opened.conventions
    require_extra("Stemmer")
    where = {"data_dir": data_dir, "cache_dir": cache_dir}
    counted = {"queries": 0, "unranked": 0}

    def rankings() -> Iterator[tuple[str, list[str], list[float]]]:
        for member in conventions.mean_over or (path,):
            prefix = member_prefix(path, member) if conventions.mean_over else ""
            queries, _ = _judged_queries(member, split, conventions if member == path else conventions_of(member),
                                         where)
            counted["queries"] += len(queries)
            named = shown if member == path else member  # (a repository's source as given, not its cache folder)
            queries_name = f"{named} queries ({split})"
            _refuse_unscorable_ids((query_id for query_id, _ in queries), queries_name, "query id")
            for query_id, doc_ids, scores in _path_rankings(member, queries, top_k, settings, where, queries_name):
                _refuse_unscorable_ids(doc_ids, f"{named} corpus", "document id")
                counted["unranked"] += not doc_ids
                yield prefix + query_id, [prefix + doc_id for doc_id in doc_ids], scores
        if not counted["queries"]:  # (an empty run would look like a complete one)
            raise UsageError(f"{shown} {split}: no query to rank (its qrels judge none, or none that its queries "
                             "hold); no run written")

    lines = write_run(out, rankings(), tag=RUN_TAG)
    read = opened.repository.describe() if opened.repository and opened.repository.repo_id else ""
    return Bm25Run(shown, split, out, counted["queries"], lines, settings, counted["unranked"], read)


def reranking_tables(
    path: str,
    *,
    top_k: int = RERANKING_TOP_K,
    settings: Bm25Settings = DEFAULT_SETTINGS,
    data_dir: str | None = None,
    cache_dir: str | None = None,
) -> dict[str, dict[str, pa.Table]]:
    """{`top_ranked` | `hard_negatives`: {qrels split: table of `query-id`, `corpus-ids`, `scores` (the BM25 score
    of each id, aligned)}} from one BM25 pass over
    the corpus for the judged queries of every qrels split. `top_ranked` lists the BM25 top `top_k` in rank order;
    `hard_negatives` the same without the documents judged relevant (grade >= the benchmark's relevance level).
    Where the benchmark ignores identical ids (arguana, quora), a query's own document is left out of both."""
    check_top_k(top_k, "top_k")
    path = normalized(path)
    conventions = conventions_of(path)
    require_extra("Stemmer")
    if conventions.unlabelled or conventions.mean_over:
        raise UsageError(f"{path}: top_ranked and hard_negatives are built for a path with relevance labels "
                         f"({conventions.unlabelled or 'build each member path'})")
    where = {"data_dir": data_dir, "cache_dir": cache_dir}
    splits = list(load(path, "qrels", **where))
    judged = {split: load_qrels(path, split, **where) for split in splits}
    union = dict.fromkeys(query_id for qrels in judged.values() for query_id in qrels)
    queries = _all_queries(path, union, where)
    depth = top_k + 1 if conventions.ignore_identical_ids else top_k
    ranked: dict[str, list[tuple[str, float]]] = {}
    for query_id, doc_ids, scores in _path_rankings(path, queries, depth, settings, where, f"{path} queries"):
        pairs = [(doc_id, score) for doc_id, score in zip(doc_ids, scores)
                 if not (conventions.ignore_identical_ids and doc_id == query_id)]
        ranked[query_id] = pairs[:top_k]
    tables: dict[str, dict[str, pa.Table]] = {name: {} for name in RERANKING_CONFIGS}
    for split, qrels in judged.items():
        order = [query_id for query_id in ranked if query_id in qrels]
        negatives = [[(d, s) for d, s in ranked[q] if qrels[q].get(d, 0) < conventions.relevance_level]
                     for q in order]
        for name, lists in (("top_ranked", [ranked[q] for q in order]), ("hard_negatives", negatives)):
            tables[name][split] = pa.table([order, [[d for d, _ in pairs] for pairs in lists],
                                            [[s for _, s in pairs] for pairs in lists]], schema=RERANKING_SCHEMA)
    return tables


def _all_queries(path: str, only: dict[str, None], where: dict) -> list[tuple[str, str]]:
    """(query id, text) of the queries in `only`, from every split of the queries config; a SourceError naming a
    query id given two texts (which one to rank is not known)."""
    seen: dict[str, str] = {}
    for split in load(path, "queries", **where):
        for query_id, text in load_queries(path, split, only, **where):
            if seen.setdefault(query_id, text) != text:
                raise SourceError(f"{path} queries", f"the query id {preview(query_id)} is given two texts "
                                                     f"({preview(seen[query_id])} and {preview(text)}): which one "
                                                     "to rank is not known")
    return list(seen.items())


def reranking_description(top_k: int = RERANKING_TOP_K, settings: Bm25Settings = DEFAULT_SETTINGS) -> dict[str, str]:
    """What a dataset card says about how each reranking config was made."""
    made = f"{settings.describe()}; top {top_k} per judged query, made by `ragloaders build --with`"
    return {
        "top_ranked": f"BM25 candidates in rank order (mteb's reranking shape: `query-id`, `corpus-ids`), with "
                      f"their BM25 scores beside them (`scores`, aligned with `corpus-ids`, non-increasing): {made}.",
        "hard_negatives": f"`top_ranked` without the documents judged relevant (grade >= the relevance level), "
                          f"`scores` aligned as there: {made}.",
    }
