"""`ragloaders validate`: is what a benchmark gives complete and consistent?

Works on any benchmark path through its builders, and on any repository in BEIR / mteb layout (a built folder or
a hub repo id, `integrity_of_repository`), with pyarrow compute (no Python loop per row).
Checks, per config and split: row counts against the counts the benchmark publishes, relations
(`qrels`, or CRAG's `search_results`) pointing at queries or docs that do not exist, duplicate
ids, duplicate (query, doc) pairs, ids that are both a query and a doc, null ids and grades, empty texts, and the
score histogram.

What each benchmark publishes and which upstream defects it declares come from its `Benchmark`
(core.facts): a finding covered by a declared `KnownDefect` is a warning (exit 0); any other
finding is a structural error (exit 1). Published counts belong to a release: they are compared only as
`publish.provenance` rules (the files read are that release's official files, or cannot be told apart from
them); a sample or another release is reported as such, its counts shown but not compared. A repository is
checked without source files: no published counts, and no declared defects unless its card (`built_from`) or
`--as` names the benchmark path. Paths arrive normalised (`api.normalized`, at the public entry points).

One `Plan` says what to check in a target, a benchmark path (`plan_for_path`) or a built folder or hub repository
(`plan_for_repository`); `inspect` carries it out. The report's types and its rendering are in `validate_report`,
reading a repository's card in `repository` and `core/card_yaml`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasets.exceptions import DataFilesNotFoundError, DatasetGenerationError, SplitsVerificationError

from ..api import builder, configs_of, registry
from ..benchmarks import benchmark_of
from ..core.errors import SourceError, UsageError
from ..core.facts import Benchmark, KnownDefect, PublishedCounts
from ..core.hub_repository import (
    Repository,
    checked_repository_card,
    config_builder,
    is_hub_snapshot,
    no_data_files_error,
    require_own_data_files,
    rows_unlike_card,
    too_deep_error,
)
from ..core.output_target import MANIFEST
from ..core.plural import counted
from ..core.prepared_cache import PreparedCache
from ..core.preview import one_line, preview, previews
from .cached_split import CachedSplit
from .provenance import files_read, published_of, source_report
from .recorded_files import RecordedFiles, check_recorded_files
from .repository_card import built_from_card, card_text, declared_files
from .validate_report import Finding, Report, SplitFacts, finding

RELATION_CONFIGS = ("qrels", "search_results")
RELATION_COLUMNS = ("query-id", "corpus-id")
"""In a repository, any config with these columns is checked as relations (mteb reads qrels from `default`)."""
SAMPLE_IDS = 20
"""How many offending ids a finding lists (its count is always complete)."""

CHECKS = ("count", "missing_queries", "missing_docs", "duplicate_ids", "duplicate_pairs", "shared_ids",
          "duplicate_keys", "column_type", "altered_files", "null_values")


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_number(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


ENTITY_TYPES = {"_id": (_is_text, "strings"), "title": (_is_text, "strings"), "text": (_is_text, "strings")}
RELATION_TYPES = {"query-id": (_is_text, "strings"), "corpus-id": (_is_text, "strings"),
                  "score": (_is_number, "numbers")}
"""The type each checked column must have, when present: a repository not built by ragloaders may hold anything."""


def column_problems(schema: pa.Schema, expected: Mapping[str, tuple[Any, str]]) -> list[tuple[str, str]]:
    """(column, what is wrong) for each column of `expected` in `schema` whose type is not the expected one."""
    problems = []
    for name, (accepts, what) in expected.items():
        if name in schema.names:
            kind = schema.field(name).type
            if pa.types.is_null(kind):
                problems.append((name, f"column `{name}` holds only nulls (no type), expected {what}"))
            elif not accepts(kind):
                problems.append((name, f"column `{name}` is {kind}, expected {what}"))
    return problems


def _sample(ids: pa.Array | pa.ChunkedArray) -> list[str]:
    return ids.slice(0, SAMPLE_IDS).to_pylist()


def repeated_groups(table: pa.Table, keys: list[str]) -> pa.Table:
    """The distinct values of `keys` that occur in more than one row of `table`, with their `count_all`, in the
    order of their first row (a grouping's own order changes from run to run when it runs on threads, and with it
    the examples a report shows and a card's bytes)."""
    groups = table.select(keys).append_column(FIRST_ROW, row_numbers(table.num_rows)).group_by(keys).aggregate(
        [([], "count_all"), (FIRST_ROW, "min")])
    repeated = groups.filter(pc.greater(groups.column("count_all"), 1))
    return repeated.sort_by(f"{FIRST_ROW}_min").drop_columns([f"{FIRST_ROW}_min"])


def row_numbers(count: int) -> pa.Array:
    """0, 1, ... count - 1 (int64) in a buffer Arrow allocated. A grouping (Acero) may drop its last reference to
    its input on one of Arrow's threads as the interpreter exits; a buffer numpy owns then takes the GIL on that
    thread, which ends it, and C++ aborts the process after the report was printed ("terminate called without an
    active exception": exit 134 in about one `validate` of ten)."""
    buffer = pa.allocate_buffer(count * 8)
    np.frombuffer(buffer, dtype=np.int64)[:] = np.arange(count, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), count, [None, buffer])


FIRST_ROW = "\0row"
"""A column name no source has (a NUL), for the row numbers `repeated_groups` orders by."""


def duplicates(values: pa.ChunkedArray) -> pa.Array:
    """The values that occur more than once."""
    counts = pc.value_counts(values)
    return counts.field("values").filter(pc.greater(counts.field("counts"), 1))


NULL_CHECKED = ("_id", "query-id", "corpus-id", "score")
"""The columns in which a null is a `null_values` finding: an id, or a qrels grade (each row needs one)."""


class NullRows:
    """The rows of one split holding a null in a NULL_CHECKED column, fed a record batch (or table) at a time in
    row order: how many, how many per column, and the first SAMPLE_IDS shown as `row N: column value, ...` (N: the
    row's index in the split, from 0; each value previewed)."""

    def __init__(self) -> None:
        self.rows = 0
        self.by_column: dict[str, int] = {}
        self.sample: list[str] = []
        self.seen = 0
        """Rows fed so far: the split's index of the next batch's first row."""

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        masks = []
        for name in (name for name in NULL_CHECKED if name in batch.column_names):
            if nulls := batch.column(name).null_count:
                self.by_column[name] = self.by_column.get(name, 0) + nulls
                masks.append(pc.is_null(batch.column(name)))
        if masks:
            mask = masks[0]
            for more in masks[1:]:
                mask = pc.or_(mask, more)
            indices = pc.indices_nonzero(mask).to_pylist()
            self.rows += len(indices)
            for index in indices[:SAMPLE_IDS - len(self.sample)]:
                [row] = batch.slice(index, 1).to_pylist()
                self.sample.append(f"row {self.seen + index}: "
                                   + ", ".join(f"{name} {preview(value, 30)}" for name, value in row.items()))
        self.seen += batch.num_rows

    def message(self) -> str:
        """What is null, column by column."""
        return "; ".join(f"`{name}` is null in {counted(count, 'row', grouped=True)}"
                         for name, count in self.by_column.items())


def ids_and_empty_texts(rows: CachedSplit, nulls: NullRows) -> tuple[pa.ChunkedArray, int, list[str]]:
    """(every `_id`, count and first ids of rows whose `text` is empty or only whitespace), from one read of the
    two columns, a record batch at a time (the texts are not kept); one compute call per batch. The rows with a null
    `_id` are fed to `nulls`."""
    ids, total, sample = [], 0, []
    for batch in rows.batches(["_id", "text"]):
        nulls.add(batch)
        ids.append(pa.concat_arrays([batch.column("_id")]))  # a copy: the batch's buffer also holds its texts
        lengths = pc.utf8_length(pc.utf8_trim_whitespace(batch.column("text")))
        empty = pc.fill_null(pc.equal(lengths, 0), True)
        found = pc.sum(empty).as_py() or 0
        if found:
            total += found
            if len(sample) < SAMPLE_IDS:
                sample += batch.column("_id").filter(empty).slice(0, SAMPLE_IDS - len(sample)).to_pylist()
    return pa.chunked_array(ids, rows.schema.field("_id").type), total, sample


def missing(ids: pa.ChunkedArray, known: pa.Array | None) -> pa.Array:
    """The distinct `ids` that are not in `known`."""
    distinct = pc.unique(ids)
    if known is None:
        return distinct
    return distinct.filter(pc.invert(pc.is_in(distinct, value_set=known)))


Loaded = Mapping[str, Mapping[str, "datasets.Dataset | CachedSplit"]]
"""{config: {split: prepared dataset}}: DatasetDicts, or their splits already as CachedSplit."""


def _splits(loaded: Loaded, config: str) -> dict[str, CachedSplit]:
    return {split: rows if isinstance(rows, CachedSplit) else CachedSplit(rows)
            for split, rows in loaded[config].items()}


class _Inspection:
    """Findings and per-split facts, gathered config by config."""

    def __init__(self, path: str, files: Mapping[tuple[str, str], str] | None = None):
        self.path = path
        self.files = dict(files or {})
        """(config, split) -> the data file(s) it was read from, as a finding names them."""
        self.findings: list[Finding] = []
        self.splits: list[SplitFacts] = []
        self.ids: dict[str, pa.Array] = {}
        """config -> distinct `_id`s over all its splits."""

    def add(self, check: str, config: str, split: str | None, ids: pa.Array, message: str) -> None:
        self.findings.append(finding(check, config, split, _sample(ids), len(ids), message))

    def null_values(self, config: str, split: str, nulls: NullRows) -> None:
        """A `null_values` finding for the split's rows with a null id (or grade), if any."""
        if nulls.rows:
            self.findings.append(finding("null_values", config, split, nulls.sample, nulls.rows, nulls.message()))

    def well_typed(self, config: str, split: str, rows: CachedSplit, expected: Mapping[str, tuple[Any, str]]) -> bool:
        """Whether the split's checked columns have their types; else a `column_type` finding naming the file and
        the columns (the split's other checks are skipped: they would fail on the types)."""
        problems = column_problems(rows.schema, expected)
        if problems:
            where = self.files.get((config, split), f"{config}/{split}")
            self.findings.append(finding("column_type", config, split, [name for name, _ in problems], len(problems),
                                          f"{where}: " + "; ".join(problem for _, problem in problems)))
        return not problems

    def entities(self, config: str, splits: dict[str, CachedSplit], role: str | None = None) -> None:
        """corpus / queries (`role`, by default the config's name): duplicate ids per split, empty texts;
        remembers the ids."""
        all_ids = []
        for split, rows in splits.items():
            facts: SplitFacts = {"config": config, "split": split, "rows": rows.num_rows}
            if "_id" in rows.column_names and self.well_typed(config, split, rows, ENTITY_TYPES):
                empty, nulls = None, NullRows()
                if "text" in rows.column_names:
                    ids, count, sample = ids_and_empty_texts(rows, nulls)
                    empty = (count, sample)
                else:
                    table = rows.columns(["_id"])
                    nulls.add(table)
                    ids = table.column("_id")
                self.null_values(config, split, nulls)
                if nulls.rows:  # a null is no id: not a duplicate of another null, nor one a relation could name
                    ids = pc.drop_null(ids)
                all_ids.append(ids)
                repeated = duplicates(ids)
                facts["duplicate_ids"] = len(repeated)
                if len(repeated):
                    self.add("duplicate_ids", config, split, repeated, f"{counted(len(repeated), 'id', grouped=True)} "
                             f"{'occurs' if len(repeated) == 1 else 'occur'} more than once")
                if empty is not None:
                    facts["empty_texts"], facts["empty_text_ids"] = empty
            self.splits.append(facts)
        if all_ids:
            chunks = [c for ids in all_ids for c in ids.chunks]
            self.ids[role or config] = pc.unique(pa.chunked_array(chunks, pa.string()))

    def relations(self, config: str, splits: dict[str, CachedSplit]) -> None:
        """qrels / search_results: dangling ids, duplicate pairs, score histogram."""
        for split, rows in splits.items():
            if not self.well_typed(config, split, rows, RELATION_TYPES):
                self.splits.append({"config": config, "split": split, "rows": rows.num_rows})
                continue
            table = rows.columns([name for name in (*RELATION_COLUMNS, "score") if name in rows.column_names])
            nulls = NullRows()
            nulls.add(table)
            self.null_values(config, split, nulls)
            facts: SplitFacts = {"config": config, "split": split, "rows": table.num_rows}
            histogram_of = table.column("score") if "score" in table.column_names else None
            if any(nulls.by_column.get(name) for name in RELATION_COLUMNS):  # the pairs checked are those of two ids
                table = table.filter(pc.and_(pc.is_valid(table.column("query-id")),
                                             pc.is_valid(table.column("corpus-id"))))
            queries, docs = table.column("query-id"), table.column("corpus-id")
            facts["queries"], facts["docs"] = pc.count_distinct(queries).as_py(), pc.count_distinct(docs).as_py()
            for check, ids, target, what in (
                ("missing_queries", queries, "queries", "query id"), ("missing_docs", docs, "corpus", "corpus id")
            ):
                if target in self.ids:
                    absent = missing(ids, self.ids[target])
                    facts[check] = len(absent)
                    if len(absent):
                        verb = "is" if len(absent) == 1 else "are"
                        self.add(check, config, split, absent,
                                 f"{counted(len(absent), what, grouped=True)} {verb} not in `{target}`")
            repeated = repeated_groups(table, ["query-id", "corpus-id"])
            facts["duplicate_pairs"] = repeated.num_rows
            if repeated.num_rows:
                labels = pc.binary_join_element_wise(repeated.column("query-id"), repeated.column("corpus-id"), " -> ")
                self.add("duplicate_pairs", config, split, labels.combine_chunks(),
                         f"{counted(repeated.num_rows, '(query-id, corpus-id) pair', grouped=True)} "
                         f"{'occurs' if repeated.num_rows == 1 else 'occur'} more than once")
            if histogram_of is not None:
                counts = pc.value_counts(histogram_of)
                histogram = sorted(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()),
                                   key=lambda pair: (pair[0] is None, pair[0] or 0))  # a null grade last
                facts["score_histogram"] = {"null" if score is None else str(score): count
                                            for score, count in histogram}
            self.splits.append(facts)

    def keyed(self, config: str, splits: dict[str, CachedSplit], key: tuple[str, ...]) -> None:
        """A config with declared key columns: its rows, and the key values that occur more than once."""
        for split, rows in splits.items():
            facts: SplitFacts = {"config": config, "split": split, "rows": rows.num_rows}
            if key:
                repeated = repeated_groups(rows.columns(list(key)), list(key))
                facts["duplicate_keys"] = repeated.num_rows
                if repeated.num_rows:
                    parts = [pc.cast(repeated.column(name), pa.string()) for name in key]
                    labels = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, " | ")
                    self.add("duplicate_keys", config, split, labels.combine_chunks(),
                             f"{repeated.num_rows:,} {'value' if repeated.num_rows == 1 else 'values'} of "
                             f"({', '.join(key)}) {'occurs' if repeated.num_rows == 1 else 'occur'} more than once")
            self.splits.append(facts)

    def shared_ids(self) -> int | None:
        if "queries" not in self.ids or "corpus" not in self.ids:
            return None
        queries = self.ids["queries"]
        shared = queries.filter(pc.is_in(queries, value_set=self.ids["corpus"]))
        if len(shared):
            self.add("shared_ids", "queries", None, shared, f"{len(shared):,} query ids are also corpus ids")
        return len(shared)

    def rows(self, config: str, splits: dict[str, CachedSplit]) -> None:
        """Any other config: its rows per split."""
        self.splits += [{"config": config, "split": split, "rows": rows.num_rows} for split, rows in splits.items()]

    def counts(self, published: Mapping[tuple[str, str | None], int], not_compared: Mapping[str, str]) -> None:
        for (config, split), expected in published.items():
            facts = [f for f in self.splits if f["config"] == config and split in (None, f["split"])]
            if config in not_compared:
                for f in facts:
                    f["published"], f["compared"] = (expected if split is not None else None), False
                continue
            if not facts:
                self.findings.append(finding("count", config, split, [], expected,
                                              f"no split {preview(split)} in `{config}`, which publishes {expected:,}"))
                continue
            measure = "queries" if config in RELATION_CONFIGS else "rows"
            actual = sum(f.get(measure, 0) for f in facts)  # a split of the wrong column types has no `queries`
            for f in facts:
                f["published"] = expected if split is not None else None
            if actual != expected:
                self.findings.append(finding(
                    "count", config, split, [], abs(actual - expected),
                    f"{actual:,} {measure}, but the benchmark publishes {expected:,}",
                ))


def integrity(path: str, *, data_dir: str | None = None, cache_dir: str | None = None) -> Report:
    """Check a benchmark path; returns a JSON-able report:

        {
          "path": "beir/arguana",
          "ok": bool,                        # no errors: the exit status of `validate` is 0
          "errors": [finding, ...],          # structural: not declared as a known upstream defect
          "warnings": [finding, ...],        # each a declared known upstream defect, with its "note"
          "unobserved_defects": [defect, ...],  # declared defects that did not occur (stale declaration?)
          "shared_ids": int | None,          # query ids that are also corpus ids (None: no such pair of configs)
          "splits": [                        # one entry per (config, split) checked
            {"config", "split", "rows",
             "published": int | None,        # the published count for this split, if any
             "compared": False,              # only when that count is shown but not compared (another release)
             # corpus / queries:   "duplicate_ids", "empty_texts", "empty_text_ids" (first 20)
             # qrels / search_results: "queries", "docs" (distinct ids), "missing_queries", "missing_docs",
             #                     "duplicate_pairs", "score_histogram" {"<score>": rows} (qrels only)
             # configs with declared keys (Benchmark.keys): "duplicate_keys" (distinct key values repeated)
            }, ...],
          "source": {...},                   # provenance.source_report: files read, release, what is compared
        }
        finding = {"check": one of CHECKS, "config", "split" (None: all splits), "count",
                   "ids": first 20 offending ids (pairs as "query -> doc"), "message", ["note"]}
    (typed as validate_report.Report, SplitFacts, Finding)

    Raises ValueError (UsageError) for a path that is not a benchmark path, and what `load` raises for its source
    files (SourceError naming the file and line, MissingSourceError, DownloadError).

    Example:
        >>> report = integrity("beir/nfcorpus", data_dir="tests/data/beir")  # doctest: +SKIP
        >>> report["ok"], [s["rows"] for s in report["splits"] if s["config"] == "corpus"]  # doctest: +SKIP
        (True, [3633])
    """
    if path not in registry():
        builder(path, "")  # raises the unknown-path error (with its suggestion)
    benchmark = benchmark_of(path)
    builders, loaded = {}, {}
    for config in configs_of(path):
        builders[config] = builder(path, config, data_dir=data_dir, cache_dir=cache_dir)
        builders[config].download_and_prepare()
        loaded[config] = builders[config].as_dataset()
    return integrity_of(benchmark, path, loaded, source=source_of(benchmark, path, builders, sha256=False))


def source_of(benchmark: Benchmark, path: str, builders: dict[str, Any], *, sha256: bool) -> dict:
    """The `provenance.source_report` of prepared builders ({config: builder}) of `path` (of `benchmark`): the
    files they read, the release those are, and which configs' counts are compared with the published ones."""
    read, release = files_read(builders)
    return source_report(benchmark, path, read, release, dict(benchmark.published_counts(path)), sha256=sha256)


def integrity_of(benchmark: Benchmark, path: str, loaded: Loaded, source: dict | None = None) -> Report:
    """The report of `integrity` on configs of `path` (of `benchmark`) already prepared: {config: DatasetDict}, or
    {config: {split: CachedSplit}}. `source` (`source_of`) says which published counts apply; without it, the
    path's published counts are compared as they are. The rows are read from the Arrow cache files with plain
    reads, only the columns checked (see cached_split)."""
    return inspect(plan_for_path(benchmark, path, loaded, source), loaded)


def integrity_of_repository(repository: str, *, cache_dir: str | None = None, as_path: str | None = None) -> Report:
    """The same report for any repository in BEIR / mteb layout, ours or not, from its Parquet alone: a folder
    with a README.md (or data files) as `datasets.load_dataset` reads it, or a hub repo id (network).

    Configs are found with `datasets.get_dataset_config_names` (`plan_for_repository` gives their roles). No counts
    are published and no defects declared for a repository: every finding is an error, unless the card says
    ragloaders built it from a benchmark path (`built_from`): then that path's declared upstream defects are
    warnings and its declared keys are checked, as for the path. `as_path` (`--as`, a normalised benchmark path)
    names that path for any repository, whatever its card says. A checked column of the wrong type, or a config
    whose files cannot be cast to the types its card declares (then not checked further), is a `column_type`
    finding naming the file (and the column, for a local folder). Raises ValueError when the repository has no
    config at all, SourceError when its card's YAML is over budget or of a shape datasets misreads (`core/card_yaml`).

    Example:
        >>> report = integrity_of_repository("build/beir-nfcorpus")  # the set-up command's folder  # doctest: +SKIP
        >>> report["ok"], report["recorded_files"]["verified"]  # doctest: +SKIP
        (True, 6)"""
    card = card_text(repository)
    checked = checked_repository_card(repository)  # before `datasets` parses it: an alias bomb would exhaust memory
    if as_path is not None and as_path not in registry():
        raise UsageError(f"--as {preview(as_path)}: not a benchmark path (a group names each member; `ragloaders list` "
                         "shows them)")
    recorded = check_recorded_files(repository) if os.path.isdir(repository) else None
    changed = recorded.altered + recorded.missing if recorded is not None else []
    try:
        loaded, unloadable, files = _load_repository(repository, checked, cache_dir)
    except Exception as e:  # a file the record lists is gone or no longer a file: say so before what it broke
        if not changed:
            raise
        raise SourceError(repository, f"{_changed(recorded)}: {previews(changed, SAMPLE_IDS)}; and it does not load "
                                      f"({_cause(e)})") from e
    plan = plan_for_repository(repository, loaded, built_from_card(card), files, as_path=as_path)
    report = inspect(plan, loaded)
    for folder, names in _by_folder(changed).items():
        unloadable.append(finding("altered_files", folder, None, names[:SAMPLE_IDS], len(names),
                                  _changed(recorded, names)))
    if unloadable:
        report["errors"] = unloadable + report["errors"]
        report["ok"] = False
    if recorded is not None:
        report["recorded_files"] = {"record": recorded.record, "verified": recorded.verified,
                                    "altered": len(recorded.altered), "missing": len(recorded.missing)}
    elif os.path.isdir(repository) and plan.built_from is not None:  # ragloaders' card, and no record of its own
        report["recorded_files"] = {"record": None, "verified": 0, "altered": 0, "missing": 0}
        # (a hub-cache snapshot's record is the repository's: one ragloaders did not write there is no build's)
        if os.path.lexists(os.path.join(repository, MANIFEST)) and not is_hub_snapshot(repository):
            report["errors"].insert(0, finding("altered_files", "(root)", None, [MANIFEST], 1, (
                f"{MANIFEST}, the record of the files ragloaders built, is not one it could have written (changed "
                "since the build): the files cannot be checked against it")))
            report["ok"] = False
    return report


def _load_repository(repository: str, checked: tuple[dict[str, Any], str], cache_dir: str | None
                     ) -> tuple[dict[str, Any], list[Finding], dict[tuple[str, str], str]]:
    """(every config that loads, a `column_type` finding for each that does not load as its card declares, the
    card's data files) of a repository (`checked`: its card's fields and name, `checked_repository_card`'s), its data
    files checked to be its own first. A split whose local Parquet file lacks a column the card declares (loaded as
    nulls) is such a finding too, and left out of what is checked."""
    try:
        configs = datasets.get_dataset_config_names(repository)
    except DataFilesNotFoundError:  # (naming neither card nor config: the first config's files match nothing)
        raise no_data_files_error(repository, None) from None
    if not configs:
        raise UsageError(f"{repository}: no configs (not a dataset folder or repository)")
    builders = {config: config_builder(repository, config, cache_dir=cache_dir, card=checked) for config in configs}
    for config, config_files in builders.items():
        require_own_data_files(repository, config, config_files)
    files = declared_files(repository, checked[0])
    loaded, unloadable = {}, []
    for config in configs:
        prepared = PreparedCache(builders[config]) if os.path.isdir(repository) else None
        mode = prepared.download_mode() if prepared is not None else None
        try:
            loaded[config] = datasets.load_dataset(repository, config, cache_dir=cache_dir, download_mode=mode)
            if prepared is not None:
                prepared.remember(mode)
        except DatasetGenerationError as e:  # a column the card declares that its file cannot be cast to
            where = ", ".join(f for (c, _), f in files.items() if c == config) or f"{repository} ({config})"
            unloadable.append(finding("column_type", config, None, [], 1, f"{where}: does not load as the card "
                                      f"declares its columns ({_cause(e)}){_undeclared_types(repository, config)}"))
        except SplitsVerificationError as e:  # rows unlike what the card (or a legacy dataset_infos.json) declares
            unlike = rows_unlike_card(builders[config],
                                      Repository(repository, folder=repository), config)
            unloadable.append(finding("count", config, None, [], 1, str(unlike) if unlike else
                                      f"{repository} ({config}): its splits are not the sizes declared ({_cause(e)})"))
        except RecursionError:  # datasets reads a Parquet file's schema metadata (JSON) recursively
            raise too_deep_error(builders[config], Repository(repository, folder=repository), config) from None
        else:
            for split, absent in _columns_absent_from_files(repository, builders[config]).items():
                # datasets loads a declared column a file lacks as nulls: the split is not what the card declares
                unloadable.append(finding("column_type", config, split, list(dict.fromkeys(c for _, c in absent)),
                                          len(absent), "; ".join(f"{file}: no column `{column}`, which the card "
                                                                 "declares" for file, column in absent)))
                loaded[config] = datasets.DatasetDict({name: rows for name, rows in loaded[config].items()
                                                       if name != split})
            if not loaded[config]:
                del loaded[config]
    return loaded, unloadable, files


def _columns_absent_from_files(repository: str, dataset_builder: Any) -> dict[str, list[tuple[str, str]]]:
    """split -> (file, column) for each column the card declares (the builder's features) that a local Parquet data
    file of the split does not hold, read from the file's own schema: `datasets` fills such a column with nulls
    when it loads the file, so the split would be checked as if the file held them. A file that is not local (a hub
    repository's) or not Parquet is not looked at here."""
    declared = dataset_builder.info.features
    absent: dict[str, list[tuple[str, str]]] = {}
    for split, paths in (dataset_builder.config.data_files or {}).items() if declared else ():
        for path in paths:
            if not os.path.isfile(path):
                continue
            try:
                held = set(pq.read_schema(path).names)
            except (pa.ArrowException, OSError):  # not Parquet: its builder reads it (and names what is wrong)
                continue
            shown = os.path.join(repository, os.path.relpath(path, os.path.abspath(repository)))
            absent.setdefault(split, []).extend((shown, column) for column in declared if column not in held)
    return {split: pairs for split, pairs in absent.items() if pairs}


def _by_folder(names: list[str]) -> dict[str, list[str]]:
    """File paths grouped by the config folder they lie in ("(root)" for the card and other top-level files)."""
    folders: dict[str, list[str]] = {}
    for name in names:
        folders.setdefault(name.split("/", 1)[0] if "/" in name else "(root)", []).append(name)
    return folders


def _changed(recorded: RecordedFiles, names: list[str] | None = None) -> str:
    """What is said of the files (`names`, default all) that are no longer what ragloaders recorded."""
    names = recorded.altered + recorded.missing if names is None else names
    altered = [name for name in names if name in recorded.altered]
    missing = [name for name in names if name not in recorded.altered]
    by = "built" if recorded.record == "build" else "published"
    parts = []
    if altered:
        them = "them" if len(altered) > 1 else "it"
        parts.append(f"{counted(len(altered), 'file')} changed since ragloaders {by} {them} (sha256 or size not what "
                     f"{MANIFEST} records: the rows read from {them} may not be the ones {by})")
    if missing:
        parts.append(f"{counted(len(missing), 'file')} that ragloaders {by} {'are' if len(missing) > 1 else 'is'} "
                     "gone")
    return "; ".join(parts)


def _undeclared_types(repository: str, config: str) -> str:
    """'; <file>: column `c` is <type>, the card declares <type>' for each column of a local Parquet file of the
    config whose type is not the one the card declares ('' when there is nothing local to compare)."""
    try:
        builder = datasets.load_dataset_builder(repository, config)
        declared = builder.info.features.arrow_schema if builder.info.features else None
        patterns = [p for split_files in (builder.config.data_files or {}).values() for p in split_files]
    except Exception:  # the card itself is what is wrong: the cause already says so
        return ""
    problems = []
    for path in sorted({p for p in patterns if os.path.isfile(p)}):
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as e:
            problems.append(f"{path}: not a readable Parquet file ({one_line(e, 300)})")
            continue
        for column in schema if declared is not None else []:
            if column.name in declared.names and declared.field(column.name).type != column.type:
                problems.append(f"{path}: column `{column.name}` is {column.type}, the card declares "
                                f"{declared.field(column.name).type}")
    return "".join(f"; {problem}" for problem in problems)


def _cause(error: BaseException) -> str:
    """The first line of the innermost cause of `error` (pyarrow's, naming the column and value), with its type."""
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__
    return f"{type(error).__name__}: " + one_line((str(error).splitlines() or [""])[0], 300)


@dataclass
class Plan:
    """What to check in the configs of a benchmark path, a built folder or a hub repository, and what applies:
    `plan_for_path` and `plan_for_repository` make one, `inspect` carries it out. Facts are reported in this
    order: entities, relations, counted configs, keyed configs."""

    name: str
    """The path or repository, as the report names it."""
    entities: list[tuple[str, str]] = field(default_factory=list)
    """(config, role): corpus / queries configs (mteb's `query` plays `queries`)."""
    relations: list[str] = field(default_factory=list)
    """Configs of (query-id, corpus-id) pairs: qrels, CRAG's search_results, mteb's `default`."""
    counted: list[str] = field(default_factory=list)
    """Configs only counted (their rows per split)."""
    keyed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Configs with declared key columns, whose repeated values are findings."""
    published: PublishedCounts = field(default_factory=dict)
    not_compared: dict[str, str] = field(default_factory=dict)
    defects: list[KnownDefect] = field(default_factory=list)
    source: dict[str, Any] | None = None
    files: dict[tuple[str, str], str] = field(default_factory=dict)
    """(config, split) -> the data files a finding names (a repository's card declares them)."""
    repository: bool = False
    built_from: str | None = None
    """For a repository: the benchmark path its ragloaders card names."""
    validated_as: str | None = None
    """For a repository: the benchmark path given with `--as`, whose keys and declared defects apply instead."""


def plan_for_path(benchmark: Benchmark, path: str, loaded: Loaded, source: dict | None) -> Plan:
    """A benchmark path (of `benchmark`): BEIR's roles by config name, published counts (as `source` says which
    apply), the benchmark's keys and declared defects."""
    published = published_of(source) if source is not None else dict(benchmark.published_counts(path))
    plan = Plan(path, published=published, not_compared=source["not_compared"] if source is not None else {},
                defects=list(benchmark.known_defects(path)), source=source)
    plan.entities = [(config, config) for config in ("corpus", "queries") if config in loaded]
    plan.relations = [config for config in RELATION_CONFIGS if config in loaded]
    planned = {config for config, _ in plan.entities} | set(plan.relations)
    plan.keyed = {config: key for config, key in benchmark.keys(path).items()
                  if config in loaded and config not in planned}
    plan.counted = [config for config in loaded if config not in planned and config not in plan.keyed]
    return plan


def plan_for_repository(repository: str, loaded: Loaded, built_from_path: str | None,
                        files: dict[tuple[str, str], str], as_path: str | None = None) -> Plan:
    """A repository, ours or not: roles by config name (`corpus`, `queries` or mteb's `query`), relations by their
    columns, every other config counted; no published counts. `as_path` (`--as`), else a card naming the path it
    was built from, brings that path's keys and declared defects."""
    declaring = as_path or built_from_path
    benchmark = benchmark_of(declaring) if declaring else None
    plan = Plan(repository, defects=list(benchmark.known_defects(declaring)) if benchmark and declaring else [],
                files=files, repository=True, built_from=built_from_path, validated_as=as_path)
    plan.entities = [(config, role) for config, role in (("corpus", "corpus"), ("queries", "queries"),
                                                          ("query", "queries"))
                     if config in loaded and not (config == "query" and "queries" in loaded)]
    planned = {"corpus", "queries", "query"} & set(loaded)
    plan.relations = [config for config in loaded if config not in planned
                      and set(RELATION_COLUMNS) <= set(loaded[config].column_names[next(iter(loaded[config]))])]
    planned |= set(plan.relations)
    keys = dict(benchmark.keys(declaring)) if benchmark and declaring else {}
    plan.keyed = {config: key for config, key in keys.items() if config in loaded and config not in planned}
    plan.counted = [config for config in loaded if config not in planned and config not in plan.keyed]
    return plan


def inspect(plan: Plan, loaded: Loaded) -> Report:
    """Carry out `plan` on the prepared configs: the report (see `integrity`)."""
    inspection = _Inspection(plan.name, plan.files)
    for config, role in plan.entities:
        inspection.entities(config, _splits(loaded, config), role)
    for config in plan.relations:
        inspection.relations(config, _splits(loaded, config))
    for config in plan.counted:
        inspection.rows(config, _splits(loaded, config))
    for config, key in plan.keyed.items():
        inspection.keyed(config, _splits(loaded, config), key)
    shared = inspection.shared_ids()
    inspection.counts(plan.published, plan.not_compared)
    errors: list[Finding] = []
    warnings: list[Finding] = []
    observed = set()
    for found in inspection.findings:
        declared = next((d for d in plan.defects if d.covers(found)), None)
        if declared is None:
            errors.append(found)
        else:
            observed.add(declared)
            warnings.append({**found, "note": declared.note})
    report: Report = {
        "path": plan.name,
        "ok": not errors,
        "errors": errors,
        "warnings": warnings,
        "unobserved_defects": [asdict(d) for d in plan.defects if d not in observed and not d.may_be_absent],
        "shared_ids": shared,
        "splits": inspection.splits,
        "source": plan.source,
    }
    if plan.repository:
        report["form"] = "folder" if os.path.isdir(plan.name) else "repository"
        report["built_from"] = plan.built_from
        report["validated_as"] = plan.validated_as
    return report

