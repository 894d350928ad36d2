"""The internals of `datasets` that ragloaders relies on, all here and nowhere else, each checked against the
releases setup.cfg allows: datasets 3.6 (the oldest that reads a built folder, `.ci/run`), 4.0 (the oldest ragloaders
installs with) through 5.2 (installed here). A new datasets release is checked against this module first.

- `_output_dir`, `_cache_downloaded_dir`, `_cache_dir_root` of a builder (set in `DatasetBuilder.__init__` and
  `download_and_prepare` in 3.6, 4.0-4.4 and 5.0-5.2): `CompatBuilder.prepared_dir`, `.downloads_dir`, `.cache_root`.
- `_as_dataset` and `_prepare_split_single`, overridden by `CompatBuilder` (same signatures in 3.6 through 5.2).
- `Dataset._indices` (None unless an indices mapping selects rows: 3.6 through 5.2): `has_indices_mapping`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import datasets
from datasets.exceptions import DatasetGenerationError
from datasets.table import InMemoryTable

from .errors import precise_cause


class CompatBuilder(datasets.ArrowBasedBuilder):
    """datasets' ArrowBasedBuilder with the internals ragloaders uses given public names, a split with no rows read
    back empty, and a source error raised as itself."""

    @property
    def prepared_dir(self) -> str:
        """The folder holding this config's prepared Arrow files."""
        return self._output_dir

    @property
    def downloads_dir(self) -> str:
        """The folder downloads of this builder go to."""
        return self._cache_downloaded_dir

    @property
    def cache_root(self) -> str:
        """The datasets cache folder this builder prepares in."""
        return self._cache_dir_root

    def _as_dataset(self, split: Any = datasets.Split.TRAIN, in_memory: bool = False) -> datasets.Dataset:
        # datasets cannot read back a split with no rows ("corresponds to no data"): give it empty, with its columns.
        # (A published folder leaves such a split out: publish.build writes only splits with rows.)
        split_info = self.info.splits.get(str(split)) if self.info.splits else None
        if split_info is not None and split_info.num_examples == 0:
            table = InMemoryTable(self.info.features.arrow_schema.empty_table())
            return datasets.Dataset(table, info=self.info.copy(), split=split_info.name)
        return super()._as_dataset(split, in_memory)

    def _prepare_split_single(self, *args: Any, **kwargs: Any) -> Iterator:
        # datasets wraps any error in a generic DatasetGenerationError, and its cause does not survive
        # the trip back from a num_proc worker: raise the precise error itself instead.
        try:
            yield from super()._prepare_split_single(*args, **kwargs)
        except DatasetGenerationError as e:
            cause = precise_cause(e)
            if cause is None:
                raise
            raise cause from None


def has_indices_mapping(dataset: datasets.Dataset) -> bool:
    """Whether an indices mapping selects `dataset`'s rows from its table (after `select`, `shuffle`, `sort`...)."""
    return dataset._indices is not None
