"""`load` and `builder`: what `datasets.load_dataset` gives, for every benchmark path."""

from __future__ import annotations

import importlib
from typing import Any

import datasets

from .base import RagBuilder

BENCHMARK_MODULES = ("beir", "crag", "mmrag")
"""Each module declares `BUILDERS`: {path: builder class}."""


def registry() -> dict[str, type[RagBuilder]]:
    """Every path this package serves, with its builder class."""
    paths: dict[str, type[RagBuilder]] = {}
    for name in BENCHMARK_MODULES:
        paths.update(importlib.import_module(f"ragloaders.{name}").BUILDERS)
    return paths


def configs_of(path: str) -> list[str]:
    return [config.name for config in _builder_class(path).BUILDER_CONFIGS]


def _builder_class(path: str) -> type[RagBuilder]:
    paths = registry()
    normalized = path.strip("/")
    if normalized not in paths:
        raise ValueError(f"unknown path {path!r}; `ragloaders list` shows the {len(paths)} known paths")
    return paths[normalized]


def builder(path: str, config: str, **kwargs: Any) -> datasets.DatasetBuilder:
    """The `datasets.DatasetBuilder` behind `load(path, config)`; kwargs go to its constructor
    (`data_dir`, `cache_dir`, ...)."""
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
) -> datasets.DatasetDict | datasets.Dataset | datasets.IterableDatasetDict | datasets.IterableDataset:
    """Load a benchmark config as `datasets.load_dataset` would load its published hub repository."""
    dataset_builder = builder(path, config, data_dir=data_dir, cache_dir=cache_dir)
    if streaming:
        return dataset_builder.as_streaming_dataset(split=split)
    dataset_builder.download_and_prepare(num_proc=num_proc)
    return dataset_builder.as_dataset(split=split)
