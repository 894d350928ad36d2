"""What `datasets` reads from a dataset card's front matter, `configs:` and `dataset_info:`, checked to have the shape
it expects before it reads it.

On some wrong shapes datasets raises a TypeError from deep inside (a mapping as a split name, a string row count),
or a ValueError that prints the whole value; on others it verifies nothing and loads what the files hold as if it
were complete (a `dataset_info` that is not a list or mapping, a config name that is not a string), keeps the
last of two entries of one name, or takes a row count the card leaves out for 0 and then blames the data files.
Each of these is a SourceError naming the card, the entry and what was expected.

A card names its own files only: `outside_pattern_problem` says what makes a `configs` entry's data file pattern
or `data_dir` reach elsewhere, for hub_repository to refuse before datasets resolves it (a URL is fetched, `/**`
walks the whole filesystem).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from .errors import SourceError
from .log import warn
from .preview import did_you_mean, one_line, preview


def check_card_shape(metadata: Any, name: str) -> None:
    """SourceError naming the card `name` when its front matter (`metadata`, as YAML loaded it; None for an empty
    one) is not a mapping, or its `configs` or `dataset_info` is not what datasets reads (see the module's
    docstring); then datasets' own parse of both, its errors named the same way."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise SourceError(name, f"front matter is {_kind(metadata)}, where a card holds a mapping of fields")
    for key in metadata:
        if not isinstance(key, str):
            raise SourceError(name, f"front matter field {preview(key)} is named by a {type(key).__name__}, where a "
                                    "card's fields are named by strings (huggingface_hub passes them as keywords)")
    configs = _check_configs(metadata.get("configs"), name)
    infos = _check_dataset_info(metadata.get("dataset_info"), name)
    _parsed_by_datasets(metadata, name)
    unmatched = sorted(infos - configs) if configs else []
    for config in sorted(configs - infos):
        close = did_you_mean(config, unmatched)
        if close:  # (datasets matches names exactly: `Corpus` describes no config `corpus`)
            warn(f"{name}: dataset_info describes no config {preview(config)}{close}: datasets verifies none of "
                 "its rows against the card")


def split_row_counts(metadata: dict, config: str) -> dict[str, int] | None:
    """{split: num_examples} that a card's `dataset_info` declares for `config` (datasets' "default" for an entry
    without a config_name); None where it declares no splits for it (datasets then verifies none). The metadata must
    have passed `check_card_shape`."""
    infos = metadata.get("dataset_info") or []
    for info in infos if isinstance(infos, list) else [infos]:
        if info.get("config_name", "default") == config:
            return info_row_counts(info)
    return None


def info_row_counts(info: dict) -> dict[str, int] | None:
    """{split: num_examples} of one config's info (a card's `dataset_info` entry, or a legacy dataset_infos.json's,
    checked by `check_splits`); None where it declares no splits."""
    splits = info.get("splits")
    if splits is None:
        return None
    return {split["name"]: split["num_examples"] for split in (splits.values() if isinstance(splits, dict) else splits)}


def _check_configs(configs: Any, name: str) -> set[str]:
    if configs is None:
        return set()
    if not isinstance(configs, list):
        raise SourceError(name, f"configs: {_kind(configs)}, where datasets reads a list of configs")
    seen: set[str] = set()
    for number, config in enumerate(configs, 1):
        where = f"configs entry {number}"
        if not isinstance(config, dict):
            raise SourceError(name, f"{where}: {_kind(config)}, where datasets reads a mapping (config_name, "
                                    "data_files, ...)")
        config_name = _text(config.get("config_name"), name, f"{where}: config_name")
        _unique(config_name, seen, name, "configs", "config_name")
        _check_data_files(config.get("data_files"), name, f"configs entry {preview(config_name)}: data_files")
        if config.get("data_dir") is not None:
            _text(config["data_dir"], name, f"configs entry {preview(config_name)}: data_dir")
    return seen


URL_PATTERN = re.compile(r"://|::|^[\x00-\x20]*[A-Za-z][A-Za-z0-9+.-]*:")
"""A scheme (`https://`, `hf://` to another repository or revision, `file:`, a drive `c:`) or a chain of URLs
(`zip://...::https://...`), as datasets tells a URL from a path (`urlparse`, which skips leading blanks)."""
GLOB_MAGIC = re.compile(r"[*?[]")


def outside_pattern_problem(pattern: str, *, walked: bool = False) -> str | None:
    """What makes the data file pattern `pattern` of a card's `configs` (or, `walked`, a config's `data_dir`, a
    folder datasets walks) name something outside the card's folder or repository as datasets resolves it
    (`datasets.data_files.resolve_pattern`); None when it stays inside. Refused: a URL or scheme, an absolute path,
    a `..` part that leads out, and any `..` part in a glob or a walked folder (walked from `x/..`, where `x` is a
    link, the walk leaves the folder before anything can check where it is). A literal path such as
    `corpus/../qrels/x.parquet` passes: datasets only looks it up, and the file it resolves to is checked then
    (`hub_repository.require_own_file`). A leading `~` stays inside: datasets joins the pattern to the folder
    before fsspec could expand it."""
    if URL_PATTERN.search(pattern):
        return "a URL"
    if pattern.startswith(("/", "\\")):
        return "an absolute path"
    parts = re.split(r"[/\\]", pattern)
    if ".." in parts:
        if walked or GLOB_MAGIC.search(pattern):
            return "a `..` part in a glob or a folder datasets walks"
        if posixpath.normpath("/".join(parts)).split("/")[0] == "..":
            return "a `..` part that leads out"
    return None


def declared_patterns(config: dict) -> list[tuple[str | None, str]]:
    """(split, pattern) of each data file pattern a `configs` entry (checked by `check_card_shape`) declares (split
    None for a plain path or list of paths)."""
    files = config.get("data_files")
    found: list[tuple[str | None, str]] = []
    for entry in [] if files is None else [files] if isinstance(files, str) else files:
        if isinstance(entry, str):
            found.append((None, entry))
        else:
            paths = entry["path"]
            found.extend((entry["split"], path) for path in ([paths] if isinstance(paths, str) else paths))
    return found


def _check_data_files(data_files: Any, name: str, where: str) -> None:
    if data_files is None or isinstance(data_files, str):
        return
    if not isinstance(data_files, list):
        raise SourceError(name, f"{where}: {_kind(data_files)}, where datasets reads a path, a list of paths or a "
                                "list of {split, path}")
    seen: set[str] = set()
    for number, entry in enumerate(data_files, 1):
        if isinstance(entry, str):
            continue
        if not isinstance(entry, dict) or set(entry) != {"split", "path"}:
            raise SourceError(name, f"{where} entry {number}: {preview(entry)}, where datasets reads a path or a "
                                    "mapping of exactly `split` and `path`")
        split = _text(entry["split"], name, f"{where} entry {number}: split")
        _unique(split, seen, name, where, "split")
        paths = entry["path"]
        if not isinstance(paths, str) and not (isinstance(paths, list) and all(isinstance(p, str) for p in paths)):
            raise SourceError(name, f"{where} split {preview(split)}: path {preview(paths)}, where datasets reads a "
                                    "path or a list of paths")


def _check_dataset_info(infos: Any, name: str) -> set[str]:
    if infos is None:
        return set()
    if not isinstance(infos, (dict, list)):
        raise SourceError(name, f"dataset_info: {_kind(infos)}, where datasets reads a mapping or a list of "
                                "mappings (one a config); it would verify nothing")
    seen: set[str] = set()
    for number, info in enumerate(infos if isinstance(infos, list) else [infos], 1):
        where = f"dataset_info entry {number}"
        if not isinstance(info, dict):
            raise SourceError(name, f"{where}: {_kind(info)}, where datasets reads a mapping (config_name, features, "
                                    "splits, ...)")
        config_name = _text(info.get("config_name", "default"), name, f"{where}: config_name")
        _unique(config_name, seen, name, "dataset_info", "config_name")
        check_splits(info.get("splits"), name, f"dataset_info of config {preview(config_name)}")
    return seen


def check_splits(splits: Any, name: str, where: str) -> None:
    """SourceError naming `name` (a card, or the legacy dataset_infos.json) when a config's `splits` (at `where`)
    is not a list or mapping of split infos, each with a name and counts datasets can verify."""
    if splits is None:
        return
    if not isinstance(splits, (list, dict)):
        raise SourceError(name, f"{where}: splits {_kind(splits)}, where datasets reads a list (or a mapping) of "
                                "mappings (name, num_examples, num_bytes); it would verify nothing")
    seen: set[str] = set()
    for number, split in enumerate(splits.values() if isinstance(splits, dict) else splits, 1):
        if not isinstance(split, dict):
            raise SourceError(name, f"{where}: split entry {number} {_kind(split)}, where datasets reads a mapping "
                                    "(name, num_examples, num_bytes)")
        split_name = _text(split.get("name"), name, f"{where}: split entry {number}: name")
        _unique(split_name, seen, name, where, "split")
        for count in ("num_examples", "num_bytes"):
            # datasets takes 0 for either when it is missing: harmless for num_bytes (it is not verified), while a
            # row count of 0 makes it refuse intact data files as not the card's
            value = split.get(count, 0 if count == "num_bytes" else None)
            if type(value) is not int or value < 0:
                shown = preview(value) if count in split else "missing (datasets would take 0 and blame the data files)"
                raise SourceError(name, f"{where} split {preview(split_name)}: {count} {shown}, where datasets reads "
                                        "a count (an integer, 0 or more)")


def _parsed_by_datasets(metadata: dict, name: str) -> None:
    """datasets' own reading of the card: the fields made into huggingface_hub's `DatasetCardData` (a field such as
    `get`, `self` or `to_dict` breaks it), then both fields read from it (the features' types above all), its
    errors named by the card."""
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    reading = "front matter"
    try:
        data = DatasetCardData(ignore_metadata_errors=False, **metadata)  # as huggingface_hub makes it
        data.to_dict()
        reading = "configs"
        MetadataConfigs.from_dataset_card_data(data)
        reading = "dataset_info"
        DatasetInfosDict.from_dataset_card_data(data)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError) as e:
        raise SourceError(name, f"{reading}: datasets cannot read it ({type(e).__name__}: {one_line(e, 200)})"
                          ) from None


def _text(value: Any, name: str, where: str) -> str:
    if not isinstance(value, str):
        raise SourceError(name, f"{where} {preview(value) if value is not None else 'missing'}, where datasets "
                                "reads a string")
    return value


def _unique(value: str, seen: set[str], name: str, where: str, what: str) -> None:
    if value in seen:
        raise SourceError(name, f"{where}: {what} {preview(value)} given twice (datasets would keep the last one "
                                "alone)")
    seen.add(value)


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {preview(value, 40)}"
