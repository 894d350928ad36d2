"""What every benchmark builder shares: cache identity, where the files come from, precise errors."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any

import datasets

from .code_version import code_version
from .datasets_compat import CompatBuilder
from .deep_folders import make_folders
from .errors import UsageError, is_no_space, precise_cause
from .memory import release_freed_memory
from .preview import preview

VERSION = datasets.Version("1.0.0")


def identity_hash(*parts: Any) -> str:
    text = json.dumps([code_version(), *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class RagBuilder(CompatBuilder):
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
        if kwargs.get("cache_dir") and "://" not in str(kwargs["cache_dir"]):  # (datasets' os.makedirs recurses)
            make_folders(os.path.expanduser(str(kwargs["cache_dir"])))
        super().__init__(config_name=config_name, data_dir=data_dir, **parameters, **kwargs)
        self.written_rows: dict[str, dict[str, list[str]]] = {}
        """{config: {split: Parquet files}}: configs of `prepared_inputs` a build has already written (each split
        with rows, its rows in order), which this config's preparation reads in place of their Arrow cache."""

    @classmethod
    def config_named(cls, name: str, parameters: dict[str, Any]) -> datasets.BuilderConfig:
        """The declared config `name` with `parameters` set, as datasets will build it."""
        declared = next((config for config in cls.BUILDER_CONFIGS if config.name == name), None)
        if declared is None:
            raise UsageError(f"no config {preview(name)}; the configs are "
                             f"{', '.join(c.name for c in cls.BUILDER_CONFIGS)}")
        return dataclasses.replace(declared, **parameters) if parameters else declared

    def source_identity(self, data_dir: str | None, config: datasets.BuilderConfig) -> Any:
        """What identifies the source files this config reads (paths, sizes, times, or URL and checksum)."""
        raise NotImplementedError

    def split_names(self) -> list[str] | None:
        """The splits this config has, known before any build (None: they depend on the files)."""
        return None

    def prepared_inputs(self) -> list[str]:
        """The configs of this path whose prepared cache (same cache_dir) this config's preparation reads (default:
        none; it reads the source). A build that has written one as Parquet says so in `written_rows`; the rows
        are then read from there, and only the rest of that config's prepared folder must stay."""
        return []

    def write_ahead(self, later: dict[str, datasets.DatasetBuilder]) -> None:
        """Told, in a build into batch spools (`spool_into`), the builders of the configs prepared after this one: a
        config whose pass over the source can make their rows too writes them into their spools as it goes
        (`spool_ahead`), and their preparation takes them as they are. Default: it makes none."""

    def rows_written_ahead(self) -> bool:
        """Whether an earlier config's pass wrote every split of this config into its batch spool already
        (`write_ahead`, `spool_ahead`): its preparation then reads nothing, not even its `prepared_inputs`."""
        names = self.split_names()
        return bool(names) and set(names) <= self.spooled_ahead_splits()

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
            download_config=datasets.DownloadConfig(cache_dir=self.downloads_dir),
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
                "(free space there, or pass another cache_dir)", self.cache_root,
            ) from cause
        # What the preparation freed (parsed rows, decompression buffers) would otherwise stay in the allocators,
        # under whatever the caller does next: the next config, Parquet, as_dataset.
        release_freed_memory()
