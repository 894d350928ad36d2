"""The typed facts every layer shares: what a benchmark declares about itself, as data."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

PublishedCounts = dict[tuple[str, "str | None"], int]
"""(config, split or None for all splits summed) -> the count the benchmark publishes. For a relations config
(`qrels`, `search_results`) it counts distinct `query-id`s; for any other config, rows."""


@dataclass(frozen=True)
class KnownDefect:
    """An upstream defect, declared as data: a finding of `check` in `config` / `split` is a warning, not an error."""

    check: str
    config: str
    note: str
    split: str | None = None
    """None: any split."""
    max_count: int | None = None
    """If set, a finding with a larger count is still an error (the defect got worse)."""
    may_be_absent: bool = False
    """A property the files may have (a key that repeats, which the consumer resolves) rather than a defect known to
    be there: `validate` does not note its absence."""

    def covers(self, finding: dict) -> bool:
        return (
            self.check == finding["check"]
            and self.config == finding["config"]
            and self.split in (None, finding["split"])
            and (self.max_count is None or finding["count"] <= self.max_count)
        )


class OfficialFile(TypedDict, total=False):
    """One official source file as a benchmark declares it; a key left out is unknown (a card shows "—")."""

    name: str
    """The file name."""
    url: str
    bytes: int
    md5: str
    sha256: str


@dataclass(frozen=True)
class Release:
    """One published form of a path's source files, with the figures published for exactly those files."""

    name: str
    files: tuple[OfficialFile, ...]
    """The official files."""
    counts: PublishedCounts = field(default_factory=dict)


@dataclass
class CardFacts:
    """What a benchmark tells the dataset card about one path."""

    family: str
    """Template name: `dataset_cards/<family>.md`."""
    pretty_name: str
    summary: str
    license: str
    """A hub licence id (`cc-by-sa-3.0`, `apache-2.0`, ...), `other` (then give license_name and license_link)
    or `unknown`."""
    license_text: str
    """The licence in words, as the source states it."""
    license_name: str | None = None
    license_link: str | None = None
    citations: list[str] = field(default_factory=list)
    """BibTeX entries: the benchmark's, then the source dataset's."""
    source_files: list[OfficialFile] = field(default_factory=list)
    """The official files."""
    obtain: str = ""
    """How to get the files when they may not be redistributed."""
    known_defects: list[str] = field(default_factory=list)
    """Upstream facts no validation check finds (those are the benchmark's KnownDefects)."""
    field_notes: dict[str, str] = field(default_factory=dict)
    """Column name -> what it holds (looked up as `config.column`, then `column`)."""
    source_datasets: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    task_ids: list[str] = field(default_factory=list)
    homepage: str = ""
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    """Published baseline figures shown as a table: row (a path) -> {column: value}."""
    baselines_note: str = ""
    """Where the baseline figures come from and the commands that reproduce them."""
    config_table: Callable[[list[str]], str] | None = None
    """Text about the configs a build wrote (given their names), put after the summary: the mock KG's table of what
    each written table holds, which leaves out the tables a build did not write."""
    own_data: bool = False
    """The files are the builder's own, not a publisher's: the card names the folder read, and `--license` and
    `--pretty-name` state what no catalogue can."""


@dataclass(frozen=True)
class AuthorsMeasures:
    """Measures a benchmark's authors report beside (or instead of) BEIR's trec_eval set, computed with ranx's
    definitions and tie order (`ragloaders.eval.ranx_metrics`)."""

    title: str
    short: str
    """How the report's conventions name this set."""
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class EvalConventions:
    """How a benchmark's authors score a run against one path's qrels (`ragloaders eval` follows them)."""

    unlabelled: str = ""
    """Why runs cannot be scored (the benchmark has no relevance labels); empty when they can."""
    ignore_identical_ids: bool = False
    """Drop a retrieved document whose id equals the query id before scoring (BEIR's EvaluateRetrieval does by
    default, `ignore_identical_ids=True`, and Pyserini's BEIR runs with `--remove-query`); `eval
    --keep-identical-ids` keeps them."""
    extra_metrics: tuple[str, ...] = ()
    """Measures reported besides `eval.metrics.DEFAULT_METRICS` when none are asked for (BEIR: R_cap@k)."""
    relevance_level: int = 1
    """Binary measures (Recall, MAP, MRR, P) count a grade >= this as relevant; nDCG uses the grades as gains."""
    mean_over: tuple[str, ...] = ()
    """For a path that groups others (beir/cqadupstack): the member paths whose scores are averaged, from one run
    whose ids are `<member path relative to the group>/<id>`."""
    notes: tuple[str, ...] = ()
    """What an evaluation report of this path says about these conventions."""
    authors_retrieval: AuthorsMeasures | None = None
    """The retrieval measures the authors report, printed first (mmRAG's paper: ranx's NDCG/MAP/Hits@k)."""
    authors_routing: AuthorsMeasures | None = None
    """The measures of a routing task (`eval --routing`) scored against the `routing` config; None: no such task."""


BEIR_CAPPED_RECALL = ("R_cap@1", "R_cap@3", "R_cap@5", "R_cap@10", "R_cap@100")
"""BEIR's capped recall (`evaluate_custom(..., metric="r_cap")`) at its usual k up to 100: BEIR's and beir-format's
reports carry it."""


def _standard_conventions(path: str) -> EvalConventions:
    return EvalConventions()


def _no_counts(path: str) -> PublishedCounts:
    return {}


def _no_keys(path: str) -> dict[str, tuple[str, ...]]:
    return {}


def _no_defects(path: str) -> tuple[KnownDefect, ...]:
    return ()


def _no_releases(path: str) -> tuple[Release, ...]:
    return ()


@dataclass(frozen=True)
class Sample:
    """Files bundled with the repository that one path of a benchmark builds from: `.ci/run` builds every declared
    sample with `ragloaders build` and loads the folder back under the oldest `datasets` the hub form supports."""

    path: str
    data_dir: str
    """The folder (or file) under tests/data passed as `--data-dir`."""


class LazyBuilders(Mapping[str, type]):
    """path -> the builder class that serves it, the class imported on first use: the builder modules import
    `datasets` (about a second), which the command line's set-up, `import ragloaders` and what reads only a
    benchmark's facts do without. Its paths are known without importing anything."""

    def __init__(self, paths: Iterable[str], builder_class: Callable[[], type]):
        """`builder_class()` imports and returns the class serving every one of `paths`."""
        self._paths = tuple(paths)
        self._builder_class = builder_class
        self._loaded: type | None = None

    def __getitem__(self, path: str) -> type:
        if path not in self._paths:
            raise KeyError(path)
        if self._loaded is None:
            self._loaded = self._builder_class()
        return self._loaded

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._paths


@dataclass(frozen=True)
class Benchmark:
    """One benchmark family as the other layers see it: its paths and what it declares about each."""

    name: str
    builders: Mapping[str, type]
    """path -> the `datasets` builder class that serves it (a LazyBuilders: imported when first looked up)."""
    card_facts: Callable[[str], CardFacts]
    builder_parameters: tuple[str, ...] = ()
    """The config parameters its builders take (their BUILDER_PARAMETERS, e.g. CRAG's `release`), known without
    importing them: the command line's options."""
    published_counts: Callable[[str], PublishedCounts] = _no_counts
    known_defects: Callable[[str], tuple[KnownDefect, ...]] = _no_defects
    keys: Callable[[str], Mapping[str, tuple[str, ...]]] = _no_keys
    """path -> {config: the column(s) whose values should identify a row ((): none)}: `validate` reports each such
    config's rows and the key values that repeat."""
    eval_conventions: Callable[[str], EvalConventions] = _standard_conventions
    """path (or group path such as beir/cqadupstack) -> how runs on it are scored."""
    releases: Callable[[str], tuple[Release, ...]] = _no_releases
    """path -> its published releases, when it has several with different figures (CRAG: v5, v4, example). None
    declared: one release made of `card_facts(path).source_files` and `published_counts(path)`."""
    samples: tuple[Sample, ...] = ()
    """The bundled samples CI builds and checks (see Sample)."""
