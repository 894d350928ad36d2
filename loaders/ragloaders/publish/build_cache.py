"""Where `build --out` prepares its configs: the user's cache dir when one is given, else a private folder in the
build's work folder that goes when the build is done, so the build leaves no uncompressed Arrow copy behind.

The private folder lies inside the work folder (same filesystem as the output), so whatever ends the build (an
error, Ctrl-C, a kill followed by the next build's clean-up of incomplete work folders: output_folder.py) removes
it with the work folder. Downloads still go to datasets' shared downloads folder (the private folder's
`downloads` is a link to it), so a build without data_dir does not download its source again each time; `load`
keeps its own memory-mapped cache as before.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import datasets

from ..core.deep_folders import make_folders

PRIVATE_TAG = ".ragloaders-prepare-"


@dataclass(frozen=True)
class BuildCache:
    """The datasets cache folder a build prepares in, and whether the build made it (then it deletes what it
    prepared there)."""

    cache_dir: str | None
    private: bool


@contextmanager
def build_cache(work: str, cache_dir: str | None) -> Iterator[BuildCache]:
    """The cache to prepare in for a build into the work folder `work`: `cache_dir` as it is when given (nothing
    in it is deleted), else a new private folder inside `work`, removed whole on leaving (before the work folder
    is sealed)."""
    if cache_dir is not None:
        yield BuildCache(cache_dir, private=False)
        return
    private = tempfile.mkdtemp(prefix=PRIVATE_TAG, dir=work)
    try:
        downloads = os.path.expanduser(str(datasets.config.DOWNLOADED_DATASETS_PATH))
        make_folders(downloads)
        os.symlink(downloads, os.path.join(private, datasets.config.DOWNLOADED_DATASETS_DIR))
        yield BuildCache(private, private=True)
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)  # the work folder goes too
        raise
    shutil.rmtree(private)  # strictly: anything left would be sealed into the folder with the build


def release_prepared(builders: dict[str, datasets.DatasetBuilder], order: list[str], done: int,
                     written: dict[str, dict[str, list[str]]], cache: BuildCache) -> None:
    """In a private cache, after `order[done - 1]` is written (`written`: {config: {split: its Parquet files}} so
    far; `builders` has every config of `order`): hand its Parquet files to the later configs that read it
    (`prepared_inputs`, through `written_rows`), then delete the Arrow files of each config of `order[:done]`: a
    config no later one reads loses its whole prepared folder, one that is read keeps the rest of it (its info and
    side files: the later ones read its rows from the Parquet). A user's cache dir is left as it is, and the
    configs prepared there read each other's Arrow cache as `load` does."""
    if not cache.private:
        return
    config = order[done - 1]
    for later in order[done:]:
        if config in written and config in inputs_of(builders[later]) and hasattr(builders[later], "written_rows"):
            builders[later].written_rows[config] = written[config]
    needed = {name for later in order[done:] for name in inputs_of(builders[later])}
    for config in order[:done]:
        folder = builders[config].prepared_dir
        if config not in needed:
            shutil.rmtree(folder, ignore_errors=True)
        elif config in written and os.path.isdir(folder):
            for name in os.listdir(folder):
                if name.endswith(".arrow"):
                    os.remove(os.path.join(folder, name))


def inputs_of(dataset_builder: datasets.DatasetBuilder) -> list[str]:
    """The configs whose prepared cache `dataset_builder` reads (RagBuilder.prepared_inputs; none for others)."""
    inputs = getattr(dataset_builder, "prepared_inputs", None)
    return inputs() if inputs is not None else []
