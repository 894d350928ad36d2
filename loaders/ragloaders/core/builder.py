"""What every benchmark builder shares: cache identity, where the files come from, precise errors."""

from __future__ import annotations

import dataclasses
import errno
import functools
import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

import datasets
from datasets.exceptions import DatasetGenerationError
from datasets.table import InMemoryTable

from .errors import SourceError
from .memory import release_freed_memory

VERSION = datasets.Version("1.0.0")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of this package's source, so that a code change never serves rows built by old code."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder, subfolders, names in os.walk(package):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    digest.update(os.path.relpath(path, package).encode() + b"\0" + f.read())
    return digest.hexdigest()


def identity_hash(*parts: Any) -> str:
    text = json.dumps([code_version(), *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def is_no_space(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in NO_SPACE


def precise_cause(error: BaseException) -> BaseException | None:
    """The SourceError (or missing file, or full disk) that a datasets wrapper was raised from, if any."""
    seen = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (SourceError, FileNotFoundError)) or is_no_space(current):
            return current
        current = current.__cause__ or current.__context__
    return None


class RagBuilder(datasets.ArrowBasedBuilder):
    """Base of the benchmark builders.

    Subclasses set BUILDER_CONFIGS and implement `_info`, `_split_generators`, `_generate_tables`
    and `source_identity`. The cache folder is `<dataset_name>/<config>/<version>/<hash>`, where
    the hash covers this package's code and the identity of the source files.
    """

    VERSION = VERSION
    DEFAULT_WRITER_BATCH_SIZE = 100_000
    """Rows per record batch of the Arrow cache: tables already in Arrow go to disk in a few large writes (datasets'
    default of 1,000 rows made ~13,000 small writes through Python file objects for a 370 MB BEIR corpus)."""

    BUILDER_CONFIG_CLASS = datasets.BuilderConfig
    BUILDER_PARAMETERS: tuple[str, ...] = ()
    """Fields of BUILDER_CONFIG_CLASS that callers may set (`load(path, config, release="v4")`)."""

    def __init__(self, path: str, config_name: str, *, data_dir: str | None = None, **kwargs: Any):
        self.path = path
        data_dir = os.path.abspath(os.path.expanduser(data_dir)) if data_dir else None
        parameters = {name: kwargs.pop(name) for name in self.BUILDER_PARAMETERS if kwargs.get(name) is not None}
        config = self.config_named(config_name, parameters)
        kwargs.setdefault("hash", identity_hash(path, config_name, parameters, self.source_identity(data_dir, config)))
        kwargs.setdefault("dataset_name", path.replace("/", "__"))
        super().__init__(config_name=config_name, data_dir=data_dir, **parameters, **kwargs)

    @classmethod
    def config_named(cls, name: str, parameters: dict[str, Any]) -> datasets.BuilderConfig:
        """The declared config `name` with `parameters` set, as datasets will build it."""
        declared = next((config for config in cls.BUILDER_CONFIGS if config.name == name), None)
        if declared is None:
            raise ValueError(f"no config {name!r}; the configs are {', '.join(c.name for c in cls.BUILDER_CONFIGS)}")
        return dataclasses.replace(declared, **parameters) if parameters else declared

    def source_identity(self, data_dir: str | None, config: datasets.BuilderConfig) -> Any:
        """What identifies the source files this config reads (paths, sizes, times, or URL and checksum)."""
        raise NotImplementedError

    def split_names(self) -> list[str] | None:
        """The splits this config has, known before any build (None: they depend on the files)."""
        return None

    def source_files_read(self) -> list[str]:
        """The local source files this config reads, in reading order: each file of a folder, or the archive itself
        (a zip, the parts of a split archive). Without `data_dir`, the downloaded copies (downloaded now if they are
        not in the cache). Dataset cards and `ragloaders validate` hash and identify them."""
        raise NotImplementedError

    def source_release(self) -> str | None:
        """The published release the files read are, for a benchmark with several (CRAG's `v5`, `example`); else
        None."""
        return None

    def download_manager(self, dl_manager: Any) -> datasets.DownloadManager:
        """A download manager that writes real local files, also when the builder is streaming."""
        if isinstance(dl_manager, datasets.DownloadManager):
            return dl_manager
        return datasets.DownloadManager(
            dataset_name=self.dataset_name,
            download_config=datasets.DownloadConfig(cache_dir=self._cache_downloaded_dir),
        )

    def download_and_prepare(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().download_and_prepare(*args, **kwargs)
        except Exception as e:
            cause = precise_cause(e)
            if cause is None or not is_no_space(cause):
                raise
            raise OSError(
                cause.errno, f"No space left on device while building {self.path} {self.config.name} "
                "(free space there, or pass another cache_dir)", self._cache_dir_root,
            ) from cause
        # What the preparation freed (parsed rows, decompression buffers) would otherwise stay in the allocators,
        # under whatever the caller does next: the next config, Parquet, as_dataset.
        release_freed_memory()

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
