"""Which data files the `datasets` cache of a local folder's config was prepared from.

`datasets` names the prepared cache of a local folder's config by the folder's name, the config and a hash of its
card, not by its data files' contents or identity (huggingface/datasets#2956): a Parquet file edited, cut or replaced
after a load, or another folder of the same name and card, was read from the old cache, rows and all, with no error.
So a load of a local folder that prepares the cache itself records the identity (`file_identity`: size, times,
device, inode) of the data files it prepared it from, and of the `dataset_info.json` that preparation wrote (a new
file each time the cache is prepared), in `user_cache_dir("prepared")`, in a file named by a digest of the cache's
folder. A load whose files or cache are not the recorded ones (no record included: a cache being prepared by another
load, a cache that load then reuses) prepares the cache again (`datasets`' `force_redownload`), so that a damaged file
is found and an edit is read; a load that reuses a cache as its record describes it records nothing new.

A record is trusted as far as the cache it describes: whoever can write the user's cache folders can change either.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from .deep_folders import make_folders
from .output_target import remove_abandoned, replace_with_text
from .source_files import file_identity
from .user_cache import read_small_json, user_cache_dir

RECORD_LIMIT = 4 << 20
"""Bytes of a record read back, at most (a config of thousands of data files)."""
TEMPORARY_PREFIX = ".prepared-"
PREPARED_MARK = "dataset_info.json"
"""The file `datasets` writes in a cache it has prepared (a new one each preparation): which preparation a record is
of."""
ABANDONED_AFTER = 3600.0
"""Seconds after which a temporary record file is one a killed load left (a write takes milliseconds)."""


class PreparedCache:
    """The prepared `datasets` cache of a local folder's config, which `builder` (its `datasets.DatasetBuilder`, made
    with the `cache_dir` the load is given) prepares, and the identities of the data files it is prepared from now,
    taken when this is made."""

    def __init__(self, builder: Any):
        self.folder = os.path.abspath(builder.cache_dir)
        self.files = sorted({str(file) for files in (builder.config.data_files or {}).values() for file in files})
        self.identities = [file_identity(file) for file in self.files]
        digest = hashlib.sha256(self.folder.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        self.record_path = user_cache_dir("prepared", f"{digest}.json")

    def _body(self) -> dict[str, Any]:
        return {"cache": self.folder, "files": self.identities,
                "prepared": file_identity(os.path.join(self.folder, PREPARED_MARK))}

    def download_mode(self) -> str | None:
        """None when the prepared cache is recorded as made from these data files as they are now (and is the very
        preparation recorded); else `force_redownload`, also when there is no cache yet: another load may be
        preparing it from other files, which this load would otherwise reuse."""
        try:
            recorded = read_small_json(self.record_path, RECORD_LIMIT)
        except OSError:
            recorded = None
        return None if recorded == self._body() else "force_redownload"

    def remember(self, download_mode: Any) -> None:
        """After a load given `download_mode`: record that the cache is prepared from the data files as they were
        when this was made, if that load prepared it (`force_redownload`) and no file has changed since (else the
        next load prepares it again). Best effort: a cache folder that cannot be written only leaves the next load
        to prepare the cache again."""
        if (getattr(download_mode, "value", download_mode) != "force_redownload"
                or [file_identity(file) for file in self.files] != self.identities):
            return
        text = json.dumps(self._body())
        if len(text) > RECORD_LIMIT:
            return
        try:
            folder = os.path.dirname(self.record_path)
            make_folders(folder)
            remove_abandoned(folder, lambda name: name.startswith(TEMPORARY_PREFIX), ABANDONED_AFTER)
            replace_with_text(self.record_path, text, prefix=TEMPORARY_PREFIX)
        except OSError:
            pass
