"""A built folder is plain Parquet: DuckDB, polars and (where Java and pyspark are there) Spark read every config and
split of every built sample with the same rows as `datasets`; a split cut into several files spreads evenly over
2, 4 and 8 workers (`datasets.distributed.split_dataset_by_node`)."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import datasets
import duckdb
import polars
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import DATA, declared_samples
from datasets.distributed import split_dataset_by_node
from hypothesis import example, given
from hypothesis import strategies as st
from ragloaders.cli import main as cli_main
from ragloaders.publish import parquet


@pytest.fixture(scope="module")
def built(sample_builds, mock_kg_build) -> dict[str, Path]:
    """The session's build of every declared sample (Benchmark.samples) and of the generated mock KG."""
    return {**{path: sample_builds[path].out for path in sample_builds}, mock_kg_build.path: mock_kg_build.out}


def card_configs(folder: Path) -> dict[str, dict[str, list[str]]]:
    """{config: {split: its Parquet files}} as the card's `configs:` YAML declares them (globs expanded)."""
    front = (folder / "README.md").read_text(encoding="utf-8").split("---\n")[1]
    return {c["config_name"]: {f["split"]: sorted(map(str, folder.glob(f["path"]))) for f in c["data_files"]}
            for c in yaml.safe_load(front)["configs"]}


def splits_of(built: dict[str, Path]):
    for path, folder in built.items():
        for config, splits in card_configs(folder).items():
            for split, files in splits.items():
                yield path, folder, config, split, files


@functools.cache  # every split of a config prepared by one load
def splits_of_datasets(folder: Path, config: str) -> datasets.DatasetDict:
    return datasets.load_dataset(str(folder), config)


@functools.cache  # read once for the DuckDB and the polars test
def rows_of_datasets(folder: Path, config: str, split: str) -> list[dict]:
    return splits_of_datasets(folder, config)[split].to_list()


def test_the_release_option_reached_the_builder(built, tmp_path, capsys):
    card = (built["crag/task_1_and_2"] / "README.md").read_text(encoding="utf-8")
    assert "release `example`" in card  # the card says which release was read
    out = tmp_path / "out"
    assert cli_main(["build", "crag/task_1_and_2", "--data-dir", str(DATA / "crag"), "--release", "v4", "--out",
                     str(out), "--cache-dir", str(tmp_path / "c")]) == 2
    assert "crag_task_1_and_2_dev_v4.jsonl.bz2" in capsys.readouterr().err and not out.exists()


def test_every_sample_split_is_one_file_so_its_bytes_did_not_change(built):
    """The cutting rule only changes splits larger than MAX_SHARD_BYTES: a sample's splits stay one file each."""
    for path, _, config, split, files in splits_of(built):
        assert len(files) == 1 and files[0].endswith(f"{split}-00000-of-00001.parquet"), (path, config, split)


def arrow_table(relation) -> pa.Table:
    """A DuckDB relation's rows as an Arrow table: `to_arrow_table()` where duckdb has it (fetch_arrow_table() is
    deprecated there, and `arrow()` became a batch reader), `fetch_arrow_table()` in the older releases setup.cfg
    still allows."""
    return relation.to_arrow_table() if hasattr(relation, "to_arrow_table") else relation.fetch_arrow_table()


@pytest.mark.slow
def test_duckdb_reads_every_config_and_split_as_datasets_does(built):
    for path, folder, config, split, files in splits_of(built):
        expected = rows_of_datasets(folder, config, split)
        read = arrow_table(duckdb.sql(f"SELECT * FROM read_parquet({files!r})")).to_pylist()
        assert read == expected, (path, config, split)
        assert duckdb.sql(f"SELECT count(*) FROM '{folder}/{config}/{split}-*.parquet'").fetchall()[0][0] == len(
            expected)  # the glob the README shows


@pytest.mark.slow  # (seconds; CI runs it)
def test_polars_reads_every_config_and_split_as_datasets_does(built):
    for path, folder, config, split, files in splits_of(built):
        expected = rows_of_datasets(folder, config, split)
        frame = polars.read_parquet(files)
        assert frame.columns == list(expected[0]), (path, config, split)
        assert frame.to_dicts() == expected, (path, config, split)
        assert polars.scan_parquet(f"{folder}/{config}/{split}-*.parquet").select(polars.len()).collect().item() == \
            len(expected)


def test_a_large_split_is_cut_into_a_multiple_of_8_files_that_spread_evenly_over_workers(built, tmp_path,
                                                                                       monkeypatch):
    corpus = datasets.load_dataset(str(built["beir/nfcorpus"]), "corpus", split="corpus")
    monkeypatch.setattr(parquet, "MAX_SHARD_BYTES", corpus.data.nbytes // 9)  # needs 10 files: cut into 16
    files = parquet.write_parquet(corpus, str(tmp_path), "corpus")
    assert len(files) == 16 and [os.path.basename(f) for f in files][-1] == "corpus-00015-of-00016.parquet"
    sizes = [pq.ParquetFile(f).metadata.num_rows for f in files]
    assert sum(sizes) == corpus.num_rows and max(sizes) - min(sizes) <= 1
    streamed = datasets.load_dataset("parquet", data_files=files, split="train", streaming=True)
    assert streamed.num_shards == 16
    every_id = corpus["_id"]
    for world_size in (2, 4, 8):
        parts = [[row["_id"] for row in split_dataset_by_node(streamed, rank=rank, world_size=world_size)]
                 for rank in range(world_size)]
        assert sorted(i for part in parts for i in part) == sorted(every_id), world_size
        assert max(map(len, parts)) - min(map(len, parts)) <= 16 // world_size, world_size  # whole files each


@pytest.mark.parametrize("num_rows, nbytes, expected", [
    (0, 0, [0]),
    (10, parquet.MAX_SHARD_BYTES, [10]),
    (10, parquet.MAX_SHARD_BYTES + 1, [2, 2, 1, 1, 1, 1, 1, 1]),  # two files' worth: 8 files, rows spread
    (100, 9 * parquet.MAX_SHARD_BYTES, [7] * 4 + [6] * 12),
    (5, 3 * parquet.MAX_SHARD_BYTES, [1] * 5),  # fewer rows than files: one row each
])
def test_shard_rows(num_rows, nbytes, expected):
    assert parquet.shard_rows(num_rows, nbytes) == expected


def test_split_dataset_by_node_on_a_built_corpus(built):
    """The README's example: each node reads its share of a built corpus, together every row once."""
    folder = built["beir/nfcorpus"]
    streamed = datasets.load_dataset(str(folder), "corpus", split="corpus", streaming=True)
    ids = [row["_id"] for row in streamed]
    parts = [[row["_id"] for row in split_dataset_by_node(streamed, rank=rank, world_size=2)] for rank in range(2)]
    assert sorted(parts[0] + parts[1]) == sorted(ids) and not set(parts[0]) & set(parts[1])


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: Spark cannot start")
    pyspark_sql = pytest.importorskip("pyspark.sql", reason="pyspark is not installed (the `spark` extra, not in "
                                                            "`test`: a 400 MB wheel; .ci/run installs it)")
    session = (pyspark_sql.SparkSession.builder.master("local[1]").appName("ragloaders-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def spark_value(value):
    """A Spark Row's value as Python data (structs as dicts)."""
    if hasattr(value, "asDict"):
        return {k: spark_value(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [spark_value(v) for v in value]
    return value


@pytest.mark.slow  # a JVM and a Spark job per split: about a minute; CI runs it
def test_spark_reads_every_config_and_split_as_datasets_does(built, spark):
    """Every declared sample (Spark runs a job per split, seconds each: the mock KG's 32 tables are left to DuckDB
    and polars)."""
    for path, folder, config, split, _ in splits_of({path: built[path] for path in declared_samples()}):
        expected = rows_of_datasets(folder, config, split)
        frame = spark.read.parquet(f"{folder}/{config}/{split}-*.parquet")  # the README's line
        rows = [{k: spark_value(v) for k, v in row.asDict().items()} for row in frame.collect()]
        assert rows == expected, (path, config, split)


@given(num_rows=st.integers(1, 10**7), nbytes=st.integers(0, 100 * parquet.MAX_SHARD_BYTES))
@example(num_rows=12, nbytes=12 * (400 << 20))  # 12 rows of 400 MB: 10 files' worth, fewer rows than 16 files
def test_shard_rows_always_cover_every_row_in_files_of_equal_counts(num_rows, nbytes):
    """The cut is the one the card states (CUTTING_RULE, every clause checked here)."""
    rows = parquet.shard_rows(num_rows, nbytes)
    rule = parquet.CUTTING_RULE
    assert sum(rows) == num_rows and min(rows) >= 1 and max(rows) - min(rows) <= 1
    assert "files whose row counts differ by one at most" in rule and "of equal row counts" not in rule
    assert (len(rows) > 1) == (nbytes > parquet.MAX_SHARD_BYTES and num_rows > 1)
    if len(rows) > 1 and len(rows) % parquet.SHARD_COUNT_MULTIPLE:
        assert rows == [1] * num_rows and "a split with fewer rows than that multiple is one file per row" in rule


def test_the_registry_drives_the_sample_tests(monkeypatch, tmp_path):
    """The sample tests read Benchmark.samples (as .ci/run does): a sample a benchmark declares is in the session's
    shared builds, read here by every engine and held to mteb's contract, without a test naming it."""
    import dataclasses

    import ragloaders.benchmarks
    import test_mteb_contract
    from conftest import SampleBuilds
    from ragloaders.core.facts import Sample

    declared = {sample.path: DATA / sample.data_dir for b in ragloaders.benchmarks.BENCHMARKS for sample in b.samples}
    assert declared_samples() == declared and set(SampleBuilds(tmp_path, tmp_path)) == set(declared)
    assert test_mteb_contract.SAMPLES == sorted(declared)
    first, *others = ragloaders.benchmarks.BENCHMARKS
    added = dataclasses.replace(first, samples=(*first.samples, Sample("beir/scifact", "beir/scifact")))
    monkeypatch.setattr(ragloaders.benchmarks, "BENCHMARKS", (added, *others))
    assert declared_samples() == {**declared, "beir/scifact": DATA / "beir" / "scifact"}
    assert "beir/scifact" in set(SampleBuilds(tmp_path, tmp_path))
