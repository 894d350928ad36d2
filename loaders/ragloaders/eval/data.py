"""What a run is scored against, loaded through `ragloaders.api.load`: a path's evaluation conventions,
its qrels, its queries and its corpus."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import datasets
import pyarrow as pa

from ..api import configs_of, load
from ..benchmarks import BENCHMARKS, benchmark_of
from ..core.facts import EvalConventions
from .metrics import Qrels

CORPUS_BATCH_ROWS = 20_000


def conventions_of(path: str) -> EvalConventions:
    """The evaluation conventions a path's benchmark declares (also for a group path such as beir/cqadupstack)."""
    try:
        return benchmark_of(path).eval_conventions(path)
    except KeyError:
        pass
    for benchmark in BENCHMARKS:
        if path.split("/")[0] == benchmark.name and (conventions := benchmark.eval_conventions(path)).mean_over:
            return conventions
    raise ValueError(f"unknown path {path!r}; `ragloaders list` shows the known paths")


def require_labels(path: str, conventions: EvalConventions) -> None:
    """Refuse to score a path whose benchmark has no relevance labels."""
    if conventions.unlabelled:
        raise ValueError(f"{path} cannot be scored: {conventions.unlabelled}")


def _split(path: str, config: str, split: str, **kwargs) -> datasets.Dataset:
    splits = load(path, config, **kwargs)
    if split not in splits:
        raise ValueError(f"{path} {config} has no split {split!r}; its splits are {', '.join(splits)}")
    return splits[split]


def load_qrels(path: str, split: str, *, data_dir: str | None = None, cache_dir: str | None = None) -> Qrels:
    """The split's qrels as {query id: {document id: grade}}, in file order (a repeated pair keeps its last grade,
    as BEIR's loader and pytrec_eval do)."""
    return load_grades(path, "qrels", "corpus-id", split, data_dir=data_dir, cache_dir=cache_dir)


def load_grades(
    path: str, config: str, item_column: str, split: str, *, data_dir: str | None = None,
    cache_dir: str | None = None,
) -> Qrels:
    """A config of (`query-id`, `item_column`, `score`) rows as {query id: {item: grade}}, in file order (a
    repeated pair keeps its last grade): the qrels, or mmRAG's `routing` labels (item column `dataset`)."""
    if config not in configs_of(path):
        raise ValueError(f"{path} has no {config} config")
    table = _split(path, config, split, data_dir=data_dir, cache_dir=cache_dir).data.table
    grades: Qrels = {}
    for query_id, item, grade in zip(*(table.column(n).to_pylist() for n in ("query-id", item_column, "score"))):
        grades.setdefault(query_id, {})[item] = grade
    return grades


def load_queries(
    path: str, split: str, only: Iterable[str] | None = None, *, data_dir: str | None = None,
    cache_dir: str | None = None,
) -> list[tuple[str, str]]:
    """(query id, text) of the split's queries, in file order; `only` keeps those ids. A benchmark whose
    `queries` config has one split for every query (BEIR's `queries`) gives that split, filtered by `only`."""
    splits = load(path, "queries", data_dir=data_dir, cache_dir=cache_dir)
    if split in splits:
        dataset = splits[split]
    elif len(splits) == 1 and only is not None:
        dataset = next(iter(splits.values()))
    else:
        raise ValueError(f"{path} queries has no split {split!r}; its splits are {', '.join(splits)}")
    table = dataset.data.table
    pairs = zip(table.column("_id").to_pylist(), table.column("text").to_pylist())
    if only is None:
        return list(pairs)
    keep = set(only)
    return [(query_id, text) for query_id, text in pairs if query_id in keep]


def all_query_ids(path: str, *, data_dir: str | None = None, cache_dir: str | None = None) -> set[str]:
    """Every query id of the path, in any split."""
    splits = load(path, "queries", data_dir=data_dir, cache_dir=cache_dir)
    return {query_id for dataset in splits.values() for query_id in dataset.data.table.column("_id").to_pylist()}


def corpus_tables(
    path: str, columns: Sequence[str], *, data_dir: str | None = None, cache_dir: str | None = None
) -> Iterator[pa.Table]:
    """The corpus in tables of CORPUS_BATCH_ROWS rows holding `columns` (slices of the memory-mapped Arrow file)."""
    if "corpus" not in configs_of(path):
        raise ValueError(f"{path} has no corpus config")
    table = _split(path, "corpus", "corpus", data_dir=data_dir, cache_dir=cache_dir).data.table.select(list(columns))
    for start in range(0, table.num_rows, CORPUS_BATCH_ROWS):
        yield table.slice(start, CORPUS_BATCH_ROWS)


def missing_doc_ids(doc_ids: Iterable[str], corpus: Iterable[pa.Table]) -> list[str]:
    """The ids of `doc_ids` that no corpus `_id` equals, in their given order (the corpus is scanned once, and
    only until every id is found)."""
    ordered = list(dict.fromkeys(doc_ids))
    missing = set(ordered)
    for table in corpus:
        if not missing:
            break
        missing.difference_update(table.column("_id").to_pylist())
    return [doc_id for doc_id in ordered if doc_id in missing]
