"""publish.cached_split: prepared splits read back from their Arrow cache files with plain reads (Parquet writing,
the integrity report), on CRAG's official example file. Each path is compared with the same work done on the
rows held in memory (no cache files), which is how both were done before: same rows, same Parquet bytes, same
report."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ragloaders
from datasets.table import InMemoryTable
from ragloaders.benchmarks import benchmark_of
from ragloaders.core.datasets_compat import cache_files
from ragloaders.core.readers.arrow_batches import iter_ipc_batches
from ragloaders.publish import build, parquet
from ragloaders.publish.cached_split import CachedSplit
from ragloaders.publish.validate import integrity_of
from test_crag import EXAMPLE

PATH = "crag/task_1_and_2"
BENCHMARK = benchmark_of(PATH)
CONFIGS = ("records", "queries", "corpus", "search_results", "top_ranked")


def prepared(config: str, cache: Path) -> datasets.DatasetDict:
    return ragloaders.load(PATH, config, data_dir=str(EXAMPLE.parent), cache_dir=str(cache))


def in_memory(dataset: datasets.Dataset) -> datasets.Dataset:
    """The same rows and features with no cache file behind them."""
    return datasets.Dataset(InMemoryTable(dataset.data.table), info=dataset.info.copy(), split=dataset.split)


def mapped(folder: Path) -> list[str]:
    """Files under `folder` that this process has memory-mapped."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split(None, 5)[-1].strip() for line in maps if str(folder) in line})


@pytest.fixture(scope="module")
def cache(crag_build, tmp_path_factory) -> Path:
    """A copy of the cache of the session's shared build of the example file (every config prepared): the tests
    here count the memory maps of its files, which other modules' datasets of the shared cache would hold."""
    assert crag_build.data_dir == str(EXAMPLE.parent)
    folder = tmp_path_factory.mktemp("cached-split") / "cache"
    shutil.copytree(crag_build.cache_dir, folder)
    return folder


def test_cache_files_are_exactly_the_rows_of_a_prepared_split(cache):
    for config in CONFIGS:
        for split, dataset in prepared(config, cache).items():
            files = cache_files(dataset)
            if dataset.num_rows == 0:  # the example's validation split: given in memory, with no file
                assert files is None
                continue
            assert files and all(Path(f).is_file() and Path(f).is_relative_to(cache) for f in files), (config, split)
            read = pa.Table.from_batches(list(iter_ipc_batches(files)), schema=dataset.data.table.schema)
            assert read.equals(dataset.data.table), (config, split)


def test_anything_but_the_files_rows_has_no_cache_files(cache):
    corpus = prepared("corpus", cache)["corpus"]
    assert cache_files(corpus.select([2, 0, 1])) is None  # an indices mapping: other rows, other order
    assert cache_files(corpus.select(range(1, 5))) is None  # a slice of the file's table
    schema = corpus.data.schema.set(1, pa.field("title", pa.large_string()))
    assert cache_files(datasets.Dataset(corpus.data.cast(schema))) is None  # the file's values cast on reading
    assert cache_files(in_memory(corpus)) is None
    assert cache_files(datasets.concatenate_datasets([corpus, in_memory(corpus)])) is None  # rows not in the files
    # New files written by datasets are the rows of what it returns.
    cast = corpus.cast_column("title", datasets.Value("large_string"))
    assert cache_files(cast) == [f["filename"] for f in cast.cache_files] != cache_files(corpus)
    flat = corpus.select([2, 0, 1]).flatten_indices(cache_file_name=str(cache / "flat.arrow"))
    assert cache_files(flat) == [str(cache / "flat.arrow")]


def test_columns_equal_the_tables_and_keep_nothing_else(cache):
    for config in CONFIGS:
        for split, dataset in prepared(config, cache).items():
            names = dataset.column_names[:1] + dataset.column_names[-1:]
            expected = dataset.data.table.select(names)
            for rows in (CachedSplit(dataset), CachedSplit(in_memory(dataset))):
                assert rows.columns(names).equals(expected), (config, split)
                assert rows.num_rows == dataset.num_rows and rows.column_names == dataset.column_names
                batches = list(rows.batches(names))
                assert pa.Table.from_batches(batches, schema=expected.schema).equals(expected), (config, split)
    # An IPC batch's columns share one buffer: a kept `_id` column must not keep its batch's texts and HTML.
    corpus = prepared("corpus", cache)["corpus"]
    html = corpus.data.table.column("html").nbytes
    gc.collect()
    before = pa.total_allocated_bytes()
    ids = CachedSplit(corpus).columns(["_id"])
    gc.collect()
    assert pa.total_allocated_bytes() - before < html / 20 and ids.num_rows == corpus.num_rows


def test_a_cached_split_keeps_no_memory_map(cache):
    dataset = prepared("corpus", cache)["corpus"]
    assert mapped(cache)
    rows = CachedSplit(dataset)
    del dataset
    gc.collect()
    assert mapped(cache) == [] and rows.columns(["_id"]).num_rows > 0 and mapped(cache) == []


def test_parquet_from_the_cache_files_is_byte_identical_to_parquet_from_the_table(cache, tmp_path, monkeypatch):
    # Small shards and row groups, so that row groups straddle the cache's record batches and its files.
    monkeypatch.setattr(parquet, "ROW_GROUP_BYTES", 300_000)
    monkeypatch.setattr(parquet, "MAX_SHARD_BYTES", 3_000_000)
    for config in ("records", "corpus", "top_ranked"):
        for split, dataset in prepared(config, cache).items():
            if dataset.num_rows == 0:  # not published (write_folder leaves it out)
                continue
            folders = [tmp_path / config / name for name in ("files", "table")]
            for folder in folders:
                folder.mkdir(parents=True)
            files = parquet.write_parquet(dataset, str(folders[0]), split)
            expected = parquet.write_parquet(in_memory(dataset), str(folders[1]), split)
            assert [Path(f).name for f in files] == [Path(f).name for f in expected]
            assert config == "top_ranked" or len(files) > 1 or pq.ParquetFile(files[0]).num_row_groups > 1
            for written, reference in zip(files, expected):
                assert Path(written).read_bytes() == Path(reference).read_bytes(), (config, split, written)


def test_the_report_read_with_plain_reads_equals_the_report_on_tables(cache):
    loaded = {config: prepared(config, cache) for config in CONFIGS}
    on_tables = integrity_of(BENCHMARK, PATH, {c: {s: in_memory(d) for s, d in dd.items()} for c, dd in loaded.items()})
    assert integrity_of(BENCHMARK, PATH, loaded) == on_tables
    cached = {c: {s: CachedSplit(d) for s, d in dd.items()} for c, dd in loaded.items()}
    assert integrity_of(BENCHMARK, PATH, cached) == on_tables
    corpus = next(f for f in on_tables["splits"] if f["config"] == "corpus")
    assert corpus["rows"] == loaded["corpus"]["corpus"].num_rows and "empty_texts" in corpus


@pytest.mark.slow
def test_the_integrity_report_of_a_build_holds_no_memory_map_of_the_cache(tmp_path, monkeypatch):
    """Each config's datasets are let go once its Parquet is written: the report reads the cache files."""
    seen = []
    real = build.integrity_of

    def integrity(*args, **kwargs):
        gc.collect()
        seen.append(mapped(tmp_path / "cache"))
        return real(*args, **kwargs)

    monkeypatch.setattr(build, "integrity_of", integrity)
    build.build_folder(PATH, str(tmp_path / "out"), data_dir=str(EXAMPLE.parent), cache_dir=str(tmp_path / "cache"))
    assert seen == [[]]
    assert {p.parent.name for p in (tmp_path / "out").glob("*/*.parquet")} == set(CONFIGS)
