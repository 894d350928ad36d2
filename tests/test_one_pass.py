"""CRAG's one pass: only `records` reads the source; every other config is generated from the prepared `records`.

The derived configs are compared row for row (same rows, same order, same Arrow schema) with what the
per-config path gives: the same config generated straight from the source (as streaming still does, and as
every config was built before), on the official example file and on generated v4, v5 and task 3 files.
"""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import datasets
import pyarrow as pa
import pytest
import ragloaders
from conftest import assert_source_error
from ragloaders.benchmarks.crag import builder as crag
from test_crag import EXAMPLE, T12_V4, T12_V5, example_records, release_lines, tar_bytes, task3_members, write_parts

DERIVED = [name for name in crag.SCHEMAS if name != "records"]


def write_bz2(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(bz2.compress(b"".join(line + b"\n" for line in lines), 1))
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, tuple[str, Path]]:
    """name -> (CRAG path, data_dir) for the example file and generated v4, v5 and task 3 v5 files."""
    root = tmp_path_factory.mktemp("one-pass")
    found = {"example": ("crag/task_1_and_2", EXAMPLE.parent)}
    for version, name in (("v4", T12_V4), ("v5", T12_V5)):
        (root / version).mkdir()
        write_bz2(root / version / name, release_lines(version))
        found[version] = ("crag/task_1_and_2", root / version)
    (root / "t3").mkdir()
    write_parts(root / "t3", "crag_task_3_dev_v5.tar.bz2", 0,
                bz2.compress(tar_bytes(task3_members(release_lines("v5"))), 1))
    found["task3"] = ("crag/task_3", root / "t3")
    return found


def per_config(path: str, config: str, data_dir: Path) -> dict[str, pa.Table]:
    """Each split of `config` generated straight from the source, one pass per split (the per-config path)."""
    builder = ragloaders.builder(path, config, data_dir=str(data_dir))
    source = builder.source_in(str(data_dir))
    splits = {"corpus": None} if config == "corpus" else {name: code for code, name in crag.SPLITS.items()}
    schema = crag.SCHEMAS[config]
    tables = {name: [t for _, t in builder._tables_from_source(source, split=code)] for name, code in splits.items()}
    return {name: pa.concat_tables([schema.empty_table(), *found]) for name, found in tables.items()}


def count_passes(monkeypatch) -> list:
    opened = []
    original = crag.open_bz2
    monkeypatch.setattr(crag, "open_bz2", lambda *a, **k: opened.append(a) or original(*a, **k))
    return opened


@pytest.mark.parametrize("name", ["example", "v4", "v5", "task3"])
@pytest.mark.slow
def test_derived_configs_equal_the_per_config_path(name, sources, tmp_path, crag_build):
    path, data_dir = sources[name]
    cache = crag_build.cache_dir if name == "example" else str(tmp_path)  # the example: the session's build of it
    for config in DERIVED:
        built = ragloaders.load(path, config, data_dir=str(data_dir), cache_dir=cache)
        expected = per_config(path, config, data_dir)
        assert list(built) == list(expected)
        for split, table in expected.items():
            ours = built[split].data.table
            assert ours.schema == table.schema
            assert ours.to_pylist() == table.to_pylist(), (config, split)
    if name in ("v4", "v5"):  # both splits used, interleaved in the file: corpus follows file order across them
        assert {r["split"] for r in (json.loads(line) for line in release_lines(name))} == {0, 1}


def test_full_build_decompresses_once(sources, tmp_path, monkeypatch):
    from ragloaders.cli import main

    opened = count_passes(monkeypatch)
    path, data_dir = sources["v5"]
    out = tmp_path / "hub"
    cache = tmp_path / "c"
    assert main(["build", path, "--data-dir", str(data_dir), "--out", str(out), "--cache-dir", str(cache)]) == 0
    assert len(opened) == 1
    for config in crag.SCHEMAS:
        hub = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hub-cache"))
        assert sum(d.num_rows for d in hub.values()) > 0


def test_task3_build_decompresses_once(sources, tmp_path, monkeypatch):
    from ragloaders.cli import main

    opened = count_passes(monkeypatch)
    path, data_dir = sources["task3"]
    assert main(["build", path, "--data-dir", str(data_dir), "--out", str(tmp_path / "hub"),
                 "--cache-dir", str(tmp_path / "c")]) == 0
    assert len(opened) == 1


def test_one_derived_config_alone_costs_one_pass_and_records_is_reused(sources, tmp_path, monkeypatch):
    opened = count_passes(monkeypatch)
    path, data_dir = sources["v5"]
    corpus = ragloaders.load(path, "corpus", data_dir=str(data_dir), cache_dir=str(tmp_path))
    assert len(opened) == 1 and corpus["corpus"].num_rows > 0
    for config in ("records", "queries", "search_results", "top_ranked"):
        ragloaders.load(path, config, data_dir=str(data_dir), cache_dir=str(tmp_path))
    assert len(opened) == 1


@pytest.mark.slow
def test_records_in_several_shards_and_num_proc(sources, tmp_path, monkeypatch):
    """`records` cut into many Arrow shards; derived configs read them in order, also split over processes."""
    monkeypatch.setattr(datasets.config, "MAX_SHARD_SIZE", "100KB")
    monkeypatch.setattr(crag, "BATCH_ROWS", 2)  # a 1-row table is buffered by datasets, not written
    path, data_dir = sources["v5"]
    records = ragloaders.builder(path, "records", data_dir=str(data_dir), cache_dir=str(tmp_path))
    records.download_and_prepare()
    assert all(len(records.info.splits[s].shard_lengths or ()) > 1 for s in ("validation", "test"))
    for config in DERIVED:
        built = ragloaders.load(path, config, data_dir=str(data_dir), cache_dir=str(tmp_path), num_proc=2)
        for split, table in per_config(path, config, data_dir).items():
            assert built[split].data.table.to_pylist() == table.to_pylist(), (config, split)


def test_derived_cache_follows_the_source(tmp_path):
    """A derived config's cache identity is the records cache's: a new source gives new rows, not stale ones."""
    folder = tmp_path / "data"
    folder.mkdir()
    lines = release_lines("v5")
    write_bz2(folder / T12_V5, lines[:4])
    first = ragloaders.load("crag/task_1_and_2", "top_ranked", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    write_bz2(folder / T12_V5, lines)
    second = ragloaders.load("crag/task_1_and_2", "top_ranked", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert sum(d.num_rows for d in first.values()) == 4
    assert sum(d.num_rows for d in second.values()) == len(example_records())
    builder = ragloaders.builder("crag/task_1_and_2", "top_ranked", data_dir=str(folder))
    records = ragloaders.builder("crag/task_1_and_2", "records", data_dir=str(folder))
    assert records.hash in json.dumps(builder.source_identity(str(folder), builder.config))


def test_damaged_record_splits_file_is_an_error_not_a_reordering(sources, tmp_path):
    path, data_dir = sources["v5"]
    records = ragloaders.builder(path, "records", data_dir=str(data_dir), cache_dir=str(tmp_path))
    records.download_and_prepare()
    order = Path(records.prepared_dir) / crag.RECORD_SPLITS_FILE
    assert order.read_bytes() == bytes(json.loads(line)["split"] for line in release_lines("v5"))
    order.write_bytes(order.read_bytes()[:-1] + bytes([1 - order.read_bytes()[-1]]))
    with pytest.raises(Exception) as caught:
        ragloaders.load(path, "corpus", data_dir=str(data_dir), cache_dir=str(tmp_path))
    assert_source_error(caught.value, str(order), "`records`", "delete the cache")
