"""`load` and `builder`: what `datasets.load_dataset` gives, for every benchmark path."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .benchmarks import BENCHMARKS, benchmark_of
from .core.errors import MissingSourceError, UsageError
from .core.hub_repository import open_repository, refuse_revision
from .core.preview import did_you_mean, preview

if TYPE_CHECKING:  # both import `datasets`, which only `load` and `builder` need
    import datasets

    from .core.builder import RagBuilder


def registry() -> dict[str, type[RagBuilder]]:
    """Every path this package serves, with its builder class (importing the builders, and `datasets` with them;
    `paths()` names the paths without)."""
    return {path: cls for benchmark in BENCHMARKS for path, cls in benchmark.builders.items()}


def paths() -> list[str]:
    """Every path this package serves, in the registry's order, without importing a builder."""
    return [path for benchmark in BENCHMARKS for path in benchmark.builders]


def normalized(path: str) -> str:
    """A path as the registry names it (`beir/scifact/` and `/beir/scifact` are `beir/scifact`). The public entry
    points (`load`, `builder`, `configs_of`, the CLI, `ragloaders.eval`) normalise; every layer below them takes the
    normalised path."""
    return path.strip("/")


def catalogue_path(target: str) -> str:
    """`target` normalised when it names a benchmark path (a registered, group or misspelt one: `is_benchmark_path`);
    anything else (a built folder, a hub repository id) as it was given."""
    return normalized(target) if is_benchmark_path(target) else target


def configs_of(path: str) -> list[str]:
    """The config names of a path, in their declared order."""
    return [config.name for config in _builder_class(normalized(path)).BUILDER_CONFIGS]


def default_config(path: str) -> str | None:
    """The config a path gives when none is named (its builder's `DEFAULT_CONFIG_NAME`: `records` for CRAG and
    mmRAG, as `ragloaders list` marks it and the card's `default: true`), or None when it has none."""
    return _builder_class(normalized(path)).DEFAULT_CONFIG_NAME


def chosen_config(path: str, config: str | None) -> str:
    """`config`, or the path's default when it is None; a ValueError listing the configs when there is none."""
    if config is not None:
        return config
    if (default := default_config(path)) is None:
        raise UsageError(f"{normalized(path)} has no default config: name one of {', '.join(configs_of(path))}")
    return default


def check_num_proc(num_proc: object) -> None:
    """UsageError unless `num_proc` is None or a number of processes, 1 or more (datasets' Pool raised a ValueError
    for 0 once a split was being generated)."""
    if num_proc is not None and (type(num_proc) is not int or num_proc < 1):
        raise UsageError(f"num_proc (--num-proc) {preview(num_proc)}: give a number of processes, 1 or more")


def group_members(path: str) -> tuple[str, ...]:
    """The member paths of a group path (`beir/cqadupstack` -> its 12 forums); () for any other name.

    One rule for a group path, in every command: it stands for its members. `list` shows it with them; `validate`,
    `bm25` and `eval` run on each member (`eval` averages their means, as BEIR does); `load`, `build` and `push`,
    which make one dataset, refuse it and name the members (their ids repeat across members)."""
    path = normalized(path)
    return next((b.eval_conventions(path).mean_over for b in BENCHMARKS
                 if path.split("/")[0] == b.name and path not in b.builders), ())


def is_benchmark_path(path: str) -> bool:
    """Whether `path` names a benchmark path, a group path, or, when no folder of that name exists, a misspelt one of
    a benchmark family (`beir/scifcat`): anything else is a built folder or a hub repository
    (`ragloaders.core.hub_repository`)."""
    name = normalized(path)
    if name in paths() or group_members(name):
        return True
    if os.path.isdir(os.path.expanduser(path)):  # a folder built as `beir/scifact-v2`: the folder, not a misspelling
        return False
    if name.split("/")[0] in {b.name for b in BENCHMARKS}:
        return True
    # a misspelt one-word path (`mmrg`) that is no folder here: "did you mean", not a hub lookup
    return "/" not in name and not os.path.exists(path) and bool(did_you_mean(name, paths()))


def _builder_class(path: str) -> type[RagBuilder]:
    known = paths()
    if members := group_members(path):
        raise UsageError(f"{path} is a group of {len(members)} paths whose ids repeat across them; load, build "
                         f"or push one of them: {', '.join(members)} (validate, bm25 and eval take the group)")
    if path not in known:
        raise UsageError(f"unknown path {preview(path)}{did_you_mean(path, known)}; `ragloaders list` shows the "
                         f"{len(known)} known paths")
    return benchmark_of(path).builders[path]


BUILDER_KEYWORDS = ("data_dir", "cache_dir", "storage_options")
"""What `builder` passes on to every builder besides its config parameters (`RagBuilder.BUILDER_PARAMETERS`). The
builder sets datasets' `hash`, `name`, `config_name`, `dataset_name` itself (a caller's `hash="../x"` would move
the cache outside `cache_dir`), reads its own files (no `data_files`); `revision` is for a hub repository."""
LOAD_KEYWORDS = ("split", "data_dir", "streaming", "cache_dir", "num_proc", "download_mode", "verification_mode",
                 "keep_in_memory", "storage_options")
"""`datasets.load_dataset`'s arguments that `load` takes."""


def refuse_unknown_keywords(function: str, given: dict[str, Any], accepted: list[str]) -> None:
    """ValueError naming the first keyword of `given` not in `accepted`, and listing those."""
    unknown = [name for name in given if name not in accepted]
    if unknown:
        close = did_you_mean(unknown[0], accepted)
        raise UsageError(f"{function}() got an unknown keyword argument {preview(unknown[0])}{close}; it accepts "
                         f"{', '.join(accepted)}")


def builder(path: str, config: str | None = None, *, revision: str | None = None,
            **kwargs: Any) -> datasets.DatasetBuilder:
    """The `datasets.DatasetBuilder` behind `load(path, config)`, not yet prepared.

    Args:
        path: a benchmark path, e.g. `beir/scifact`, `crag/task_1_and_2`, `mmrag` (`ragloaders list`); or a built
            folder or hub dataset repository id, as in `load` (then only `cache_dir` is passed on).
        config: one of the path's configs (`configs_of(path)`), e.g. `corpus`, `qrels`, `records`, `top_ranked`;
            None: the path's default (`default_config`), a ValueError listing the configs when it has none.
        **kwargs: passed to the builder: `data_dir` (a folder with the files as the benchmark distributes them),
            `cache_dir`, `storage_options`, and the path's config parameters (CRAG's `release`: "v5", "v4",
            "example"). Any other keyword is refused (BUILDER_KEYWORDS says why).
        revision: for a hub repository: the commit, branch or tag to read (default the main branch); a ValueError
            for a benchmark path or a folder.

    Returns:
        A `datasets.DatasetBuilder`: call `download_and_prepare()`, then `as_dataset()`, or `as_streaming_dataset()`.
        Its `source_files_read()` lists the local files the config reads.

    Raises:
        ValueError: unknown path, config or keyword (with the closest names: "did you mean ...?"), or a bad parameter.
        MissingSourceError: `data_dir` lacks the files (raised when the builder is made, or when it prepares).

    Example:
        >>> b = builder("beir/scifact", "qrels", data_dir="~/beir")  # the folder holding scifact.zip
        >>> b.download_and_prepare(); b.as_dataset()["test"].num_rows  # doctest: +SKIP
        339
    """
    if not is_benchmark_path(path):
        refuse_unknown_keywords("builder", kwargs, ["cache_dir"])
        return open_repository(path, revision).builder(config, **kwargs)
    refuse_revision(path, revision, "a benchmark path")
    path = normalized(path)
    cls = _builder_class(path)
    config = chosen_config(path, config)
    names = [c.name for c in cls.BUILDER_CONFIGS]
    if config not in names:
        raise UsageError(f"{path} has no config {preview(config)}{did_you_mean(config, names)}; its configs are "
                         f"{', '.join(names)}")
    refuse_unknown_keywords("builder", kwargs, [*BUILDER_KEYWORDS, *cls.BUILDER_PARAMETERS])
    if kwargs.get("data_dir"):
        require_existing(kwargs["data_dir"])
    return cls(path, config, **kwargs)


def require_existing(data_dir: str) -> None:
    """MissingSourceError when `data_dir` does not exist, with the closest names in its folder ("did you mean")."""
    location = os.path.abspath(os.path.expanduser(data_dir))
    if os.path.exists(location):
        return
    parent, name = os.path.split(location)
    siblings = sorted(os.listdir(parent)) if os.path.isdir(parent) else []
    raise MissingSourceError(f"{data_dir}: no such file or folder{did_you_mean(name, siblings)}; pass the folder (or "
                             "archive) holding the benchmark's files as data_dir")


def load(
    path: str,
    config: str | None = None,
    *,
    split: str | None = None,
    data_dir: str | None = None,
    streaming: bool = False,
    cache_dir: str | None = None,
    num_proc: int | None = None,
    download_mode: str | None = None,
    verification_mode: str | None = None,
    keep_in_memory: bool | None = None,
    storage_options: dict | None = None,
    revision: str | None = None,
    **config_kwargs: Any,
) -> datasets.DatasetDict | datasets.Dataset | datasets.IterableDatasetDict | datasets.IterableDataset:
    """Load a benchmark config as `datasets.load_dataset` would load its published hub repository.

    Args:
        path: a benchmark path, e.g. `beir/scifact`, `crag/task_1_and_2`, `crag/mock_kg`, `mmrag` (`ragloaders list`
            shows all); or a folder `ragloaders build` wrote (`./scifact`), or a hub dataset repository id
            (`org/name`, ragloaders' or mteb's layout; with HF_HUB_OFFLINE=1 its copy in the hub cache), which
            `datasets.load_dataset` reads.
        config: one of the path's configs: BEIR `corpus` / `queries` / `qrels`; CRAG `records` (every field of
            every record), `queries`, `corpus`, `search_results`, `top_ranked`; mmRAG `records`, `queries`,
            `qrels`, `corpus`; `crag/mock_kg` one config per table of CRAG's mock knowledge graphs,
            `<domain>_<table>` (e.g. `finance_company`, `sports_nba_game`; `ragloaders list` names them), built
            from the files of CRAG's `mock_api/cragkg/` (`data_dir`, or downloaded). None: the default config
            (`records` for CRAG and mmRAG; a built folder's or repository's `default: true` one, or its only one);
            a path without one is a ValueError listing its configs.
        split: one split (a `Dataset`) instead of all (a `DatasetDict`).
        data_dir: a folder holding the files as the benchmark distributes them (the archive or its extracted files);
            required for datasets that cannot be downloaded (bioasq, signal1m, trec-news, robust04).
        streaming: read the source as it is iterated (an `IterableDataset[Dict]`), without preparing a cache.
        cache_dir: where `datasets` keeps the prepared Arrow files (default: its own cache).
        num_proc: processes for preparing large files.
        download_mode, verification_mode, keep_in_memory, storage_options: as in `datasets.load_dataset`.
        revision: for a hub repository: the commit, branch or tag to read, card and files (default the main
            branch); it is resolved to a commit id once, and the log says which (`ragloaders.core.hub_repository`). A
            benchmark path or a folder given one is a ValueError.
        **config_kwargs: the path's config parameters (CRAG's `release`: "v5", "v4", "example"). Any other keyword
            (`hash`, `name`, `data_files`, ...) is a ValueError naming it and listing the accepted ones:
            the builder sets the cache identity and reads its own files.

    Returns:
        `DatasetDict` (or `Dataset` with `split`); with `streaming`, `IterableDatasetDict` / `IterableDataset`.
        Ids are strings exactly as in the source.

    Raises:
        ValueError: unknown path, config, split or keyword (with "did you mean ...?" for a close name), or a group
            path (`beir/cqadupstack`: load one of its members).
        MissingSourceError: no source files where they are expected (`data_dir`, or not downloadable), or no folder
            of that name.
        ConnectionError (`core.hub_repository.HubError`): a repository id, and the hub cannot be reached (one line:
            the repository, the cause, the remedies) or has no such repository.
        SourceError: a source file is damaged or not as the benchmark specifies; names the file and record.

    Example:
        >>> from ragloaders import load
        >>> qrels = load("beir/scifact", "qrels", split="test")  # doctest: +SKIP
        >>> qrels[0]  # doctest: +SKIP
        {'query-id': '1', 'corpus-id': '31715818', 'score': 1}
    """
    check_num_proc(num_proc)
    if not is_benchmark_path(path):
        if data_dir:
            raise UsageError(f"{path}: data_dir is for a benchmark path, not for a built folder or repository")
        refuse_unknown_keywords("load", config_kwargs, [*(k for k in LOAD_KEYWORDS if k != "data_dir"), "revision"])
        given = {"num_proc": num_proc, "download_mode": download_mode, "verification_mode": verification_mode,
                 "keep_in_memory": keep_in_memory, "storage_options": storage_options}
        return open_repository(path, revision).load(config, split=split, streaming=streaming, cache_dir=cache_dir,
                                          **{name: value for name, value in given.items() if value is not None})
    refuse_revision(path, revision, "a benchmark path (built from its source files)")
    path = normalized(path)
    config = chosen_config(path, config)
    parameters = list(_builder_class(path).BUILDER_PARAMETERS)
    refuse_unknown_keywords("load", config_kwargs, [*LOAD_KEYWORDS, *parameters])
    options = {"storage_options": storage_options} if storage_options is not None else {}
    dataset_builder = builder(path, config, data_dir=data_dir, cache_dir=cache_dir, **options, **config_kwargs)
    names = dataset_builder.split_names() if split is not None else None
    if names is not None and split not in names:
        raise UsageError(f"{path} {config} has no split {preview(split)}{did_you_mean(split, names)}; its splits are "
                         f"{', '.join(names)}")
    if streaming:
        return dataset_builder.as_streaming_dataset(split=split)
    dataset_builder.download_and_prepare(num_proc=num_proc, download_mode=download_mode,
                                         verification_mode=verification_mode)
    return dataset_builder.as_dataset(split=split, in_memory=bool(keep_in_memory))
