"""`load` and `builder`: what `datasets.load_dataset` gives, for every benchmark path."""

from __future__ import annotations

from typing import Any

import datasets

from .benchmarks import BENCHMARKS
from .core.builder import RagBuilder


def registry() -> dict[str, type[RagBuilder]]:
    """Every path this package serves, with its builder class."""
    return {path: cls for benchmark in BENCHMARKS for path, cls in benchmark.builders.items()}


def configs_of(path: str) -> list[str]:
    """The config names of a path, in their declared order."""
    return [config.name for config in _builder_class(path).BUILDER_CONFIGS]


def _builder_class(path: str) -> type[RagBuilder]:
    paths = registry()
    normalized = path.strip("/")
    if normalized not in paths:
        raise ValueError(f"unknown path {path!r}; `ragloaders list` shows the {len(paths)} known paths")
    return paths[normalized]


def builder(path: str, config: str, **kwargs: Any) -> datasets.DatasetBuilder:
    """The `datasets.DatasetBuilder` behind `load(path, config)`; kwargs go to its constructor
    (`data_dir`, `cache_dir`, and config parameters such as CRAG's `release`)."""
    cls = _builder_class(path)
    names = [c.name for c in cls.BUILDER_CONFIGS]
    if config not in names:
        raise ValueError(f"{path} has no config {config!r}; its configs are {', '.join(names)}")
    return cls(path.strip("/"), config, **kwargs)


def load(
    path: str,
    config: str,
    *,
    split: str | None = None,
    data_dir: str | None = None,
    streaming: bool = False,
    cache_dir: str | None = None,
    num_proc: int | None = None,
    **config_kwargs: Any,
) -> datasets.DatasetDict | datasets.Dataset | datasets.IterableDatasetDict | datasets.IterableDataset:
    """Load a benchmark config as `datasets.load_dataset` would load its published hub repository;
    `config_kwargs` set config parameters (CRAG's `release`) as in `load_dataset`."""
    dataset_builder = builder(path, config, data_dir=data_dir, cache_dir=cache_dir, **config_kwargs)
    if streaming:
        return dataset_builder.as_streaming_dataset(split=split)
    dataset_builder.download_and_prepare(num_proc=num_proc)
    return dataset_builder.as_dataset(split=split)
