"""What a run is scored against, loaded through `ragloaders.api.load`: a source's evaluation conventions,
its qrels, its queries and its corpus.

A source is a benchmark path, a folder ragloaders built, or a hub dataset repository in ragloaders' or mteb's layout
(`open_source` makes a repository a local folder once). A folder or repository is read by config role, as mteb reads
it: queries from `query` when it exists else `queries`, qrels from `default` when it exists else `qrels`, and the
requested split of a config or else its only split."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..api import configs_of, is_benchmark_path, load, normalized
from ..benchmarks import BENCHMARKS, benchmark_of
from ..core.errors import UsageError
from ..core.facts import EvalConventions
from ..core.hub_repository import Repository, open_repository, refuse_revision
from ..core.log import warn
from ..core.plural import counted
from ..core.preview import preview
from .identity import config_sources
from .metrics import Qrels
from .prepared_record import record_splits, recorded_splits, source_identities

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
    raise UsageError(f"unknown path {preview(path)}; `ragloaders list` shows the known paths")


ROLE_CONFIGS = {"qrels": ("default", "qrels"), "queries": ("query", "queries"), "corpus": ("corpus",)}
"""role -> the config names a folder or repository may give it, the one mteb prefers first."""


def display_name(source: str) -> str:
    """How a report names a source: a benchmark path without stray slashes, a folder or repository as given."""
    return normalized(source) if is_benchmark_path(source) else source


@dataclass(frozen=True)
class OpenSource:
    """A SOURCE made ready to read: what the loaders below read, the conventions it is scored by, and the built
    folder or hub repository (at the commit read) it is, if it is not a benchmark path."""

    read: str
    conventions: EvalConventions
    repository: Repository | None = None


def open_source(source: str, benchmark: str | None = None, revision: str | None = None) -> tuple[str, EvalConventions]:
    """(what the loaders below read, the conventions runs on it are scored by) for a SOURCE: a benchmark path as it
    is; a built folder or hub repository (at `revision`: a commit, branch or tag) as a local folder (the hub cache's
    copy of a repository), scored by the conventions of `benchmark` (`--as`) or else of the path its card says
    ragloaders built it from."""
    opened = open_scored_source(source, benchmark, revision)
    return opened.read, opened.conventions


def open_scored_source(source: str, benchmark: str | None = None, revision: str | None = None) -> OpenSource:
    """`open_source`, with the repository (and the commit read) kept."""
    if is_benchmark_path(source):
        if benchmark is not None:
            raise UsageError(f"{source} is a benchmark path: --as is for a built folder or a hub repository")
        refuse_revision(source, revision, "a benchmark path (built from its source files)")
        return OpenSource(normalized(source), conventions_of(source))
    repository = open_repository(source, revision).local()
    named = benchmark or repository.built_from()
    if named is None:
        raise UsageError(f"{source}: its card does not say which benchmark it holds (it was not built by ragloaders), "
                         "so the conventions to score it by are not known; pass --as PATH, e.g. --as beir/scifact")
    try:
        conventions = conventions_of(named)
    except ValueError:
        raise UsageError(f"{source}: {preview(named)} is not a benchmark path (`ragloaders list` shows them)") from None
    if conventions.mean_over:
        raise UsageError(f"{source}: a folder or repository holds one path, not the group {named}; pass a member")
    return OpenSource(repository.folder, conventions, repository)


def config_for(path: str, role: str) -> str:
    """The config that plays `role` (qrels, queries, corpus) in a benchmark path, folder or repository."""
    if is_benchmark_path(path):
        if role not in configs_of(path):
            raise UsageError(f"{path} has no {role} config")
        return role
    configs = open_repository(path).configs()
    found = next((name for name in ROLE_CONFIGS[role] if name in configs), None)
    if found is None:
        raise UsageError(f"{path} has no {' or '.join(ROLE_CONFIGS[role])} config; its configs are "
                         f"{', '.join(configs)}")
    return found


def require_labels(path: str, conventions: EvalConventions) -> None:
    """Refuse to score a path whose benchmark has no relevance labels."""
    if conventions.unlabelled:
        raise UsageError(f"{path} cannot be scored: {conventions.unlabelled}")


def _splits(path: str, config: str, *, data_dir: str | None = None, cache_dir: str | None = None
            ) -> dict[str, pa.Table]:
    """{split: table} of a config, its id column named `_id` (mteb also accepts `id`). A benchmark path's config is
    read as `prepared_record` recorded it while that holds (pyarrow alone); else through `load`, and recorded."""
    where = {"data_dir": data_dir, "cache_dir": cache_dir}
    benchmark = is_benchmark_path(path)
    if benchmark and (recorded := recorded_splits(path, config, **where)) is not None:
        return {name: with_ids(table) for name, table in recorded.items()}
    if benchmark and config not in configs_of(path):
        raise UsageError(f"{path} has no {config} config")
    if benchmark:
        sources = config_sources(path, config, **where)
        before = source_identities(sources, data_dir)
    loaded = load(path, config, **where)
    tables = {name: dataset.data.table for name, dataset in loaded.items()}
    if benchmark:
        from ..core.datasets_compat import cache_files  # (imports datasets, which `load` has imported)

        files = {name: (cache_files(dataset), tables[name]) for name, dataset in loaded.items()}
        record_splits(path, config, files, sources, before, **where)
    return {name: with_ids(table) for name, table in tables.items()}


def _split(path: str, config: str, split: str, **where: str | None) -> pa.Table:
    """The split of a config; in a folder or repository a config's only split stands for any (`split_read`)."""
    splits = _splits(path, config, **where)
    return splits[split_read(path, config, split, list(splits))]


def split_read(path: str, config: str, split: str, splits: Sequence[str]) -> str:
    """Which of a config's `splits` is read for `split`: itself if there; in a folder or repository the config's
    only split otherwise (mteb's rule), with a warning naming both (read for `test`, a `train` split is other
    labels); else a UsageError naming the splits there are."""
    if split in splits:
        return split
    if len(splits) != 1 or is_benchmark_path(path):
        raise UsageError(f"{path} {config} has no split {preview(split)}; its splits are {', '.join(splits)}")
    warn(f"{path} {config} has no split {preview(split)}: its only split, {preview(splits[0])}, is read instead "
         "(mteb's rule for a folder or repository)")
    return splits[0]


def _role_config(path: str, role: str) -> str:
    """`config_for`, without making a benchmark path's builder: its config of a role is the role's name (and a
    missing one is refused where it is read)."""
    return role if is_benchmark_path(path) else config_for(path, role)


def with_ids(table: pa.Table) -> pa.Table:
    """The table with its id column named `_id` (mteb also accepts `id`)."""
    names = table.column_names
    if "_id" in names or "id" not in names:
        return table
    return table.rename_columns(["_id" if name == "id" else name for name in names])


def load_qrels(path: str, split: str, *, data_dir: str | None = None, cache_dir: str | None = None) -> Qrels:
    """The split's qrels as {query id: {document id: grade}}, in file order (a repeated pair keeps its last grade,
    as BEIR's loader and pytrec_eval do)."""
    return load_grades(path, _role_config(path, "qrels"), "corpus-id", split, data_dir=data_dir, cache_dir=cache_dir)


def load_grades(
    path: str, config: str, item_column: str, split: str, *, data_dir: str | None = None,
    cache_dir: str | None = None,
) -> Qrels:
    """A config of (`query-id`, `item_column`, `score`) rows as {query id: {item: grade}}, in file order (a
    repeated pair keeps its last grade): the qrels, or mmRAG's `routing` labels (item column `dataset`)."""
    table = _split(path, config, split, data_dir=data_dir, cache_dir=cache_dir)
    refuse_null_grades(table, ("query-id", item_column, "score"), f"{path} {config} {split}")
    grades: Qrels = {}
    for query_id, item, grade in zip(*(table.column(n).to_pylist() for n in ("query-id", item_column, "score"))):
        grades.setdefault(query_id, {})[item] = grade
    return grades


def refuse_null_grades(table: pa.Table, columns: Sequence[str], name: str) -> None:
    """UsageError naming the split (`name`: `beir/x qrels test`), the column and the first row, when a column of a
    grade's (query id, item, grade) holds a null: read from a data file edited since its build (`validate` lists
    each such row as `null_values`), it could be neither compared nor scored, and a null grade would read as "not
    judged"."""
    for column in columns:
        if table.column(column).null_count:
            row = pc.index(pc.is_null(table.column(column)), True).as_py()
            raise UsageError(f"{name}: `{column}` is null in {counted(table.column(column).null_count, 'row')} "
                             f"(the first is row {row:,}); every judgement needs a query, an item and a grade")


def load_queries(
    path: str, split: str, only: Iterable[str] | None = None, *, data_dir: str | None = None,
    cache_dir: str | None = None,
) -> list[tuple[str, str]]:
    """(query id, text) of the split's queries, in file order; `only` keeps those ids. A benchmark whose
    `queries` config has one split for every query (BEIR's `queries`) gives that split, filtered by `only`."""
    splits = _splits(path, _role_config(path, "queries"), data_dir=data_dir, cache_dir=cache_dir)
    if split in splits:
        table = splits[split]
    elif len(splits) == 1 and only is not None:
        table = next(iter(splits.values()))
    else:
        raise UsageError(f"{path} queries has no split {preview(split)}; its splits are {', '.join(splits)}")
    pairs = zip(table.column("_id").to_pylist(), table.column("text").to_pylist())
    if only is None:
        return list(pairs)
    keep = set(only)
    return [(query_id, text) for query_id, text in pairs if query_id in keep]


def all_query_ids(path: str, *, data_dir: str | None = None, cache_dir: str | None = None) -> set[str]:
    """Every query id of the path, in any split."""
    splits = _splits(path, _role_config(path, "queries"), data_dir=data_dir, cache_dir=cache_dir)
    return {query_id for table in splits.values() for query_id in table.column("_id").to_pylist()}


def corpus_tables(
    path: str, columns: Sequence[str], *, data_dir: str | None = None, cache_dir: str | None = None
) -> Iterator[pa.Table]:
    """The corpus in tables of CORPUS_BATCH_ROWS rows holding `columns` (slices of the memory-mapped Arrow file)."""
    table = _split(path, _role_config(path, "corpus"), "corpus", data_dir=data_dir, cache_dir=cache_dir)
    table = table.select(list(columns))
    for start in range(0, table.num_rows, CORPUS_BATCH_ROWS):
        yield table.slice(start, CORPUS_BATCH_ROWS)


MIN_LOOKUP_ROWS = 1 << 20
"""Corpus ids looked up at once, at least (or as many as the ids asked about): each lookup hashes its corpus ids
and probes every id still missing."""


def missing_doc_ids(doc_ids: Iterable[str], corpus: Iterable[pa.Table]) -> list[str]:
    """The ids of `doc_ids` that no corpus `_id` equals, once each, in their given order (the corpus is scanned
    once, and only until every id is found), compared as Arrow strings (`pyarrow.compute.is_in`): no Python string
    is made of a corpus id, and only the missing ids are deduplicated in Python."""
    return missing_doc_ids_started(doc_ids, corpus)()


def missing_doc_ids_started(doc_ids: Iterable[str], corpus: Iterable[pa.Table]) -> Callable[[], list[str]]:
    """`missing_doc_ids` begun: the ids and the corpus rows of the first lookup are gathered here, and the lookups
    run in a thread; the function returned waits for them and gives missing_doc_ids' answer (or raises its error).
    Arrow's kernels release the GIL, so the caller's own work (scoring) goes on beside the first lookup, which for
    a corpus of up to MIN_LOOKUP_ROWS rows is the whole scan."""
    given = list(doc_ids)
    try:
        missing = pa.array(given, pa.large_string())
    except (UnicodeEncodeError, pa.ArrowInvalid):  # a lone surrogate (a run given in Python): no corpus id has one
        found = _missing_doc_ids_in_python(list(dict.fromkeys(given)), corpus)
        return lambda: found
    tables = iter(corpus)
    first = _lookup_rows(tables, len(missing)) if given else []
    pool = ThreadPoolExecutor(1, thread_name_prefix="ragloaders-corpus-lookup")
    lookup = pool.submit(_missing_positions, missing, first, tables)
    pool.shutdown(wait=False)
    return lambda: list(dict.fromkeys(given[index] for index in lookup.result()))


def _lookup_rows(tables: Iterator[pa.Table], wanted: int) -> list[pa.Array]:
    """The `_id` chunks of the next corpus tables, until they hold max(MIN_LOOKUP_ROWS, wanted) rows or the corpus
    ends."""
    chunks: list[pa.Array] = []
    rows = 0
    for table in tables:
        chunks.extend(table.column("_id").cast(pa.large_string()).chunks)
        rows += table.num_rows
        if rows >= max(MIN_LOOKUP_ROWS, wanted):
            break
    return chunks


def _missing_positions(missing: pa.Array, chunks: list[pa.Array], tables: Iterator[pa.Table]) -> list[int]:
    """The positions in `missing` of the ids that no corpus id equals: `chunks` looked up first, then the rest of
    `tables`, a lookup's rows at a time, until nothing is missing."""
    positions = pa.array(np.arange(len(missing)))
    while chunks and len(missing):
        absent = pc.invert(pc.is_in(missing, value_set=pa.concat_arrays(chunks)))
        missing, positions = missing.filter(absent), positions.filter(absent)
        chunks = _lookup_rows(tables, len(missing)) if len(missing) else []
    return positions.to_pylist()


def _missing_doc_ids_in_python(ordered: list[str], corpus: Iterable[pa.Table]) -> list[str]:
    missing = set(ordered)
    for table in corpus:
        if not missing:
            break
        missing.difference_update(table.column("_id").to_pylist())
    return [doc_id for doc_id in ordered if doc_id in missing]
