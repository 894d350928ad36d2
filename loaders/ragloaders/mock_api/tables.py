"""A `crag/mock_kg` build (a folder, or a hub repository holding one) opened as memory-mapped Arrow tables.

Each config the mock API reads is converted once, on its first use, from its Parquet files into an uncompressed
Arrow IPC file in the cache (`<cache_dir>/mock_api/<fingerprint of the Parquet files>/<config>.arrow`, written row
group by row group) and then memory-mapped: a lookup touches only the pages of the rows it reads, so resident
memory follows what is asked for, not the size of the knowledge graph. A converted file is written durably, fully
validated by Arrow (`validate(full=True)`) on its first map, then its size and checksum are recorded; a later map
first checks those (py), and a file that fails (truncated by a crash or a full disk, edited) is converted
again, with a one-line warning naming it. A folder that is not a `crag/mock_kg`
build, or lacks a config or a column the API reads, is a SourceError naming the folder, the config and what was
expected, raised on opening (from the Parquet footers); a row group that cannot be read, on the config's first use.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import threading
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.deep_folders import make_folders
from ..core.errors import SourceError
from ..core.hub_repository import looks_like_repo_id, require_own_file, snapshot_folder
from ..core.preview import one_line, preview
from ..core.user_cache import user_cache_dir
from ..publish.repository_card import built_from
from .cache_files import (
    CHECK_SUFFIX,
    building,
    file_problem,
    record_file,
    replace_durably,
    require_file_names_free,
    warn_rebuilt,
)
from .indexes import Store

logger = logging.getLogger(__name__)
PATH = "crag/mock_kg"
SPLIT = "train"
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "finance_company": ("Name", "Symbol"),
    "finance_price": ("ticker", "prices"),
    "finance_detailed_price": ("ticker", "prices"),
    "finance_dividend": ("ticker", "dividends", "record_json"),
    "finance_marketcap": ("ticker", "market_cap", "record_json"),
    "finance_info": ("ticker", "info"),
    "movie_movies": ("key", "id", "record_json"),
    "movie_persons": ("key", "id", "record_json"),
    "movie_years": ("year", "record_json"),
    "music_artists": ("artist", "country", "birth_date", "end_date", "members"),
    "music_songs": ("song", "author", "country", "date"),
    "music_artist_works": ("artist", "works"),
    "music_billboard_ranks": ("rank", "entries"),
    "music_billboard_songs": ("song", "charts"),
    "music_grammy": ("year", "category", "nominee", "artist", "workers", "none_cells"),
    "open_entities": ("entity", "summary_text", "summary_structured", "raw_mediawiki", "other"),
    "sports_soccer_team_matches": ("league", "season", "team", "game", "date"),
    "sports_nba_game": ("game_date", "team_name_home", "team_name_away"),
    "sports_nba_play_by_play": ("game_id",),
}
"""The configs the mock API answers from, with the columns it reads by name."""
TEXT, LISTS, INTEGERS = "text", "lists", "integers"
COLUMN_KINDS: dict[str, dict[str, str]] = {
    "finance_company": {"Name": TEXT, "Symbol": TEXT},
    "finance_info": {"ticker": TEXT},
    "finance_price": {"ticker": TEXT, "prices": LISTS},
    "finance_detailed_price": {"ticker": TEXT, "prices": LISTS},
    "finance_dividend": {"ticker": TEXT, "dividends": LISTS, "record_json": TEXT},
    "finance_marketcap": {"ticker": TEXT, "record_json": TEXT},
    "movie_movies": {"key": TEXT, "id": INTEGERS, "record_json": TEXT},
    "movie_persons": {"key": TEXT, "id": INTEGERS, "record_json": TEXT},
    "movie_years": {"year": TEXT, "record_json": TEXT},
    "music_artists": {"artist": TEXT, "members": LISTS},
    "music_songs": {"song": TEXT},
    "music_artist_works": {"artist": TEXT, "works": LISTS},
    "music_billboard_ranks": {"rank": TEXT, "entries": LISTS},
    "music_billboard_songs": {"song": TEXT, "charts": LISTS},
    "open_entities": {"entity": TEXT},
    "sports_nba_play_by_play": {"game_id": TEXT},
}
"""The kind of value the mock API's code takes a column for, where the build declares its type (lookup keys, lists,
ids): a column of another kind answered wrong without a word (a ticker of integers found nothing, members as JSON
text came back one character at a time). Columns typed from the source's own data are not listed."""
_KIND_TEST = {TEXT: lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
              LISTS: lambda t: pa.types.is_list(t) or pa.types.is_large_list(t),
              INTEGERS: pa.types.is_integer}
CONVERTED_BATCH_ROWS = 8192
"""Rows of a Parquet row group read at a time (memory: a few of them, not a row group)."""
CONVERTED_BATCH_BYTES = 64 << 20
"""Bytes of such batches written to the converted file as one record batch."""
MAX_EXPANSION = 1_000
EXPANSION_SLACK = 256 << 20
"""A config's rows may hold MAX_EXPANSION times the bytes of its Parquet files, and EXPANSION_SLACK more: far past
what compressed text expands to, while a Parquet file of a few KB (one long value, dictionary-encoded in a row
group of 262,144 rows) held gigabytes (memory and cache disk bounded by the input's size)."""
CONVERTED_FORMAT = 3
"""Bumped when the cached IPC files change form."""


def default_cache_dir() -> str:
    return user_cache_dir()


def is_repo_id(source: str) -> bool:
    """A hub repository id (`org/name` or `name`, core.hub_repository's rule) that is not an existing path."""
    return not os.path.exists(source) and looks_like_repo_id(source)


def download_repository(repo_id: str, cache_dir: str | None, revision: str | None = None) -> str:
    """The local snapshot of hub dataset `repo_id` at `revision` (a commit, branch or tag; default the main branch):
    its README and the Parquet of the configs the API reads, in a folder named by the commit read (logged)."""
    from huggingface_hub import snapshot_download

    patterns = ["README.md", *(f"{config}/*.parquet" for config in REQUIRED_COLUMNS)]
    hub_cache = os.path.join(cache_dir, "hub") if cache_dir else None
    try:
        folder = snapshot_download(repo_id, repo_type="dataset", allow_patterns=patterns, revision=revision,
                                   cache_dir=hub_cache)
    except Exception as e:  # hub, network and auth errors alike: the user passed a folder that is not there, or this
        reason = one_line(e, 300)
        at = f" at revision {preview(revision)}" if revision else ""
        raise SourceError(repo_id, f"no such folder, and the hub dataset repository {repo_id}{at} could not be "
                          f"downloaded ({type(e).__name__}: {reason})") from e
    snapshot_folder(repo_id, folder, revision, hub_cache)
    logger.info("ragloaders: reading %s at commit %s", repo_id, snapshot_commit(folder))
    return folder


def snapshot_commit(folder: str) -> str:
    """The commit id of a hub cache snapshot folder (`snapshots/<commit>`)."""
    return os.path.basename(os.path.normpath(folder))


def parquet_files(folder: str, config: str) -> list[str]:
    """The Parquet files of `config` in the build `folder`; a SourceError naming one that resolves (symlinks
    followed) outside the folder (or, for a hub-cache snapshot, outside its repository's cache)."""
    files = sorted(glob.glob(os.path.join(glob.escape(folder), config, f"{SPLIT}-*.parquet")))
    for file in files:
        require_own_file(file, folder, f"config {config}: ")
    return files


def check_build(folder: str) -> None:
    """SourceError unless `folder` is a `crag/mock_kg` build holding every config the API reads."""
    if not os.path.isdir(folder):
        raise SourceError(folder, "no such folder (expected a folder built by `ragloaders build crag/mock_kg`)")
    made_by = built_from(folder)
    if made_by != PATH:
        what = f"a build of {made_by}" if made_by else "no ragloaders dataset card (README.md) naming crag/mock_kg"
        raise SourceError(folder, f"not a crag/mock_kg build: {what}; build one with "
                          "`ragloaders build crag/mock_kg --data-dir CRAGKG --out FOLDER`")
    missing = [config for config in REQUIRED_COLUMNS if not parquet_files(folder, config)]
    if missing:
        raise SourceError(folder, f"the crag/mock_kg build lacks the config(s) {', '.join(missing)} "
                          f"(no {missing[0]}/{SPLIT}-*.parquet); the mock API needs all of {len(REQUIRED_COLUMNS)}")


def fingerprint(folder: str) -> str:
    """Identity of the Parquet files the API reads (path, size, mtime, ctime, inode and device, as the `datasets`
    cache takes them), for the converted cache: a file replaced or rewritten in place with the same size and mtime
    changes its ctime or inode."""
    digest = hashlib.sha256(f"{CONVERTED_FORMAT}".encode())
    for config in REQUIRED_COLUMNS:
        for path in parquet_files(folder, config):
            stat = os.stat(path)
            digest.update(f"{os.path.abspath(path)}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}\0"
                          f"{stat.st_ino}\0{stat.st_dev}\0".encode())
    return digest.hexdigest()[:20]


def _schema(path: str) -> pa.Schema:
    try:
        return pq.ParquetFile(path).schema_arrow.remove_metadata()
    except (pa.ArrowInvalid, OSError) as e:
        raise SourceError(path, f"not a readable Parquet file ({one_line(e, 300)})") from None


def check_columns(folder: str, config: str, paths: list[str]) -> None:
    """SourceError unless the Parquet files of `config` are readable, of one schema, holding the columns the API
    reads (from their footers: no row is read)."""
    schema = _schema(paths[0])
    for path in paths[1:]:
        if _schema(path) != schema:
            raise SourceError(path, f"config {config}: its columns differ from those of {paths[0]}")
    columns = REQUIRED_COLUMNS[config]
    absent = [column for column in columns if column not in schema.names]
    if absent:
        raise SourceError(os.path.join(folder, config), f"config {config} has no column {preview(absent[0])} "
                          f"(its columns: {preview(schema.names)}); expected {', '.join(columns)} "
                          "(a build by an older ragloaders? build it again)")
    for column, kind in COLUMN_KINDS.get(config, {}).items():
        found = schema.field(column).type
        if not _KIND_TEST[kind](found):
            raise SourceError(paths[0], f"config {config}: column {column} holds {preview(str(found))}, where the "
                                        f"mock API reads {kind} (not a crag/mock_kg build as ragloaders writes it; "
                                        "build it again)")


def _convert(paths: list[str], target: str, config: str) -> pa.Table:
    """The Parquet files of one config, row group by row group, into one uncompressed IPC file, put in place
    durably, read back and fully validated (`validate(full=True)`, batch by batch, before its first map), then
    recorded (size and checksum, last); returns the table mapped."""
    partial = f"{target}.{os.getpid()}.{threading.get_ident()}.partial"
    writer = None
    try:
        writer = pa.ipc.new_file(partial, _schema(paths[0]))
        allowed = MAX_EXPANSION * sum(os.path.getsize(path) for path in paths) + EXPANSION_SLACK
        written = held = 0
        pending: list[pa.RecordBatch] = []
        for path in paths:
            parquet = pq.ParquetFile(path)
            for group in range(parquet.num_row_groups):
                try:  # (read in small batches: a small file can hold one row group of millions of rows)
                    for batch in parquet.iter_batches(batch_size=CONVERTED_BATCH_ROWS, row_groups=[group],
                                                      use_threads=False):
                        written += batch.nbytes
                        if written > allowed:
                            raise SourceError(os.path.dirname(path), f"config {config}: its rows hold more than "
                                              f"{allowed:,} bytes, {MAX_EXPANSION:,} times its Parquet files' size "
                                              "and more: refused (dictionary or run-length encoded values that "
                                              "expand without bound)")
                        pending.append(batch)
                        held += batch.nbytes
                        if held >= CONVERTED_BATCH_BYTES:
                            _write_combined(writer, pending)
                            held = 0
                except (pa.ArrowException, OSError) as e:
                    raise SourceError(path, f"config {config}: row group {group} is not readable "
                                            f"({one_line(e, 300)})") from None
        _write_combined(writer, pending)
        writer.close()
        writer = None
        replace_durably(partial, target)
    finally:
        if writer is not None:
            writer.close()
        if os.path.exists(partial):
            os.unlink(partial)
    try:  # what was written reads back as valid Arrow data; its check then keeps it so
        with pa.OSFile(target) as f:  # read, not mapped: one batch in memory at a time, no page left mapped
            reader = pa.ipc.open_file(f)
            for batch in range(reader.num_record_batches):
                reader.get_batch(batch).validate(full=True)
    except pa.ArrowInvalid as e:
        os.unlink(target)  # ours, and of no use
        raise SourceError(os.path.dirname(paths[0]), f"config {config}: its rows are not valid Arrow data once "
                          f"converted ({one_line(e, 300)})") from None
    record_file(target)
    return _mapped(target)


def _write_combined(writer: Any, batches: list[pa.RecordBatch]) -> None:
    """`batches` written as one record batch (the mapped table keeps few chunks, as the row groups gave), then
    emptied."""
    if batches:
        for combined in pa.Table.from_batches(batches).combine_chunks().to_batches(max_chunksize=None):
            writer.write_batch(combined)
        batches.clear()


def _mapped(path: str) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(path)).read_all()


class Tables:
    """The configs of one build, each converted to IPC in the cache (if not done yet, or if the cached file fails
    its check) and memory-mapped on its first use, so a start converts only what its first calls read; `folder`
    is where they are read from."""

    def __init__(self, folder: str, converted: str):
        self.folder = folder
        self.converted = converted
        self.store = Store(os.path.join(converted, "indexes"))
        """Where the indexes over these tables are kept (each built on its first use)."""
        self._tables: dict[str, pa.Table] = {}
        self._lock = threading.Lock()

    def where(self, config: str) -> str:
        """The folder of `config`'s Parquet files, which an error about its values names."""
        return os.path.join(self.folder, config)

    def __getitem__(self, config: str) -> pa.Table:
        with self._lock:
            if config not in self._tables:
                target = os.path.join(self.converted, f"{config}.arrow")
                with building(target):
                    require_file_names_free(target)
                    problem = file_problem(target)
                    if problem is None:
                        self._tables[config] = _mapped(target)
                    else:
                        if os.path.exists(target) or os.path.exists(target + CHECK_SUFFIX):
                            warn_rebuilt(target, problem)
                        self._tables[config] = _convert(parquet_files(self.folder, config), target, config)
            return self._tables[config]


def open_tables(folder: str, cache_dir: str | None = None) -> Tables:
    """Check `folder` (see check_build and check_columns); its configs are converted and mapped on first use."""
    check_build(folder)
    for config in REQUIRED_COLUMNS:
        check_columns(folder, config, parquet_files(folder, config))
    converted = os.path.join(cache_dir or default_cache_dir(), "mock_api", fingerprint(folder))
    make_folders(converted)
    return Tables(folder, converted)


def looks_like_json(column: pa.ChunkedArray) -> bool:
    """Whether a string column holds JSON text (mock_kg writes a DataFrame or SQLite column whose values mix
    types as JSON): every value parses as JSON and they are of two kinds or more, or containers. A text column of
    plain words never parses; see the package docstring for the one ambiguity."""
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return False
    present = pc.drop_null(column)
    if len(present) == 0:
        return False
    number = pc.match_substring_regex(present, r"^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$")
    integer = pc.match_substring_regex(present, r"^-?(?:0|[1-9]\d*)$")
    matched = {
        "string": pc.match_substring_regex(present, r'^"(?:[^"\\]|\\.)*"$'),
        "int": integer,
        "float": pc.and_(number, pc.invert(integer)),
        "bool": pc.match_substring_regex(present, r"^(?:true|false)$"),
        "container": pc.match_substring_regex(present, r"^[\[{]"),
    }
    every = matched["string"]
    for hits in list(matched.values())[1:]:
        every = pc.or_(every, hits)
    if not pc.all(every).as_py():
        return False
    seen = {kind for kind, hits in matched.items() if pc.any(hits).as_py()}
    if "container" in seen:
        try:
            for value in present.to_pylist():
                json.loads(value)
        except (ValueError, RecursionError):
            return False
        return True
    return len(seen) >= 2
