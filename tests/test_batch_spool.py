"""core/batch_spool.py: record batches kept compressed in numbered files, read back in order, each file deleted once
read, and sized exactly as the same batches in one Arrow table."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from ragloaders.core import batch_spool
from ragloaders.core.batch_spool import BatchSpool, SpooledSplit, job_folder

SCHEMA = pa.schema([("_id", pa.string()), ("text", pa.string()), ("score", pa.int32()),
                    ("pages", pa.list_(pa.struct([("url", pa.string()), ("n", pa.int64())])))])


def table(start: int, rows: int) -> pa.Table:
    return pa.Table.from_pylist([
        {"_id": f"\x00{i:05d}\u2028", "text": "é" * (i % 97) if i % 7 else None, "score": i,
         "pages": [{"url": f"u{i}-{j}", "n": j} for j in range(i % 4)] if i % 5 else None}
        for i in range(start, start + rows)], schema=SCHEMA)


def spooled(tmp_path, tables: list[pa.Table], jobs: int = 1, max_chunksize: int | None = 300) -> SpooledSplit:
    for job in range(jobs):
        spool = BatchSpool(job_folder(str(tmp_path), "train", job), SCHEMA)
        for part in tables[job::jobs]:
            spool.write_table(part, max_chunksize)
        spool.close()
    return SpooledSplit(str(tmp_path), "train", SCHEMA)


@pytest.fixture
def small_files(monkeypatch):
    monkeypatch.setattr(batch_spool, "FILE_BYTES", 4 << 10)


def test_the_rows_come_back_in_order_job_by_job_and_each_file_goes_once_read(tmp_path, small_files):
    tables = [table(0, 1000), table(1000, 0), table(1000, 1), table(1001, 700)]
    split = spooled(tmp_path, tables, jobs=2)
    assert len(split.files) > 4 and [p.split("/")[-2] for p in split.files][0] == "train-00000"
    expected = pa.concat_tables([tables[0], tables[2], tables[1], tables[3]])
    assert pa.Table.from_batches(list(split.batches(SCHEMA.names)), SCHEMA).equals(expected)  # read twice
    last_batch, count = {}, 0  # the index of each file's last batch, in reading order
    for path in split.files:
        with pa.OSFile(path, "rb") as source:
            count += sum(1 for _ in pa.ipc.open_stream(source))
        last_batch[path] = count - 1
    read = []
    for index, batch in enumerate(split.batches(SCHEMA.names, consume=True)):
        read.append(batch)
        # a file goes as its last batch is read: the ones left are those with batches still to come
        assert sorted(split.files) == sorted(path for path, last in last_batch.items() if last > index)
        assert all(os.path.exists(path) == (last > index) for path, last in last_batch.items())
    assert pa.Table.from_batches(read, SCHEMA).equals(expected)
    assert split.files == [] and not list(tmp_path.rglob("*.arrows"))


def test_a_reader_that_stops_at_the_last_row_leaves_no_file(tmp_path, small_files):
    split = spooled(tmp_path, [table(0, 500)], max_chunksize=100)
    batches = split.batches(["_id"], consume=True)
    rows = 0
    while rows < 500:
        rows += next(batches).num_rows
    assert not list(tmp_path.rglob("*.arrows"))  # the generator was not resumed past the last batch


@pytest.mark.parametrize("ranges", [[(0, 1701)], [(0, 300), (300, 1401)], [(0, 1), (1, 999), (1000, 1), (1001, 700)],
                                    [(0, 851), (851, 850)], [(250, 0), (250, 1451)]])
def test_sizes_are_those_of_the_same_batches_as_one_table_and_its_slices(tmp_path, small_files, ranges):
    tables = [table(0, 1000), table(1000, 0), table(1000, 1), table(1001, 700)]
    split = spooled(tmp_path, tables)
    whole = pa.Table.from_batches(list(split.batches(SCHEMA.names)), SCHEMA)
    total, sizes = split.range_nbytes(ranges)
    assert total == whole.nbytes
    assert sizes == [whole.slice(start, rows).nbytes for start, rows in ranges]


def test_the_sizes_match_datasets_arrow_cache_of_the_same_tables(tmp_path):
    import datasets
    from datasets.arrow_writer import ArrowWriter
    from ragloaders.core.datasets_compat import SpoolArrowWriter

    features = datasets.Features.from_arrow_schema(SCHEMA)
    tables = [table(0, 1000), table(1000, 0), table(1000, 1), table(1001, 700)]
    cache = tmp_path / "cache.arrow"
    with ArrowWriter(features=features, path=str(cache), writer_batch_size=300) as writer:
        for part in tables:
            writer.write_table(part)
        cached_counts = writer.finalize()
    spool_writer = SpoolArrowWriter(job_folder(str(tmp_path / "spool"), "train", 0), features=features,
                                    writer_batch_size=300)
    for part in tables:
        spool_writer.write_table(part)
    assert spool_writer.finalize() == cached_counts
    cached = datasets.Dataset.from_file(str(cache)).data.table
    split = SpooledSplit(str(tmp_path / "spool"), "train", features.arrow_schema)
    assert split.range_nbytes([(0, 1701), (10, 1000)]) == (cached.nbytes, [cached.slice(0, 1701).nbytes,
                                                                            cached.slice(10, 1000).nbytes])
    spooled_table = pa.Table.from_batches(list(split.batches(features.arrow_schema.names)))
    assert spooled_table.schema.metadata == cached.schema.metadata  # datasets' features in the schema, as cached
    assert [b.num_rows for b in spooled_table.to_batches()] == [b.num_rows for b in cached.to_batches()]
    assert spooled_table.equals(cached)


def test_the_sizes_recorded_as_the_spool_is_written_are_those_read_back(tmp_path, small_files):
    # The plan of a split's Parquet comes from these, not from a pass over the spool: they must be the read pass's
    # figures exactly, for batches whose memory holds more than their values (validity bitmaps of columns without
    # nulls, slices of larger buffers), in several files and jobs.
    wide = table(0, 3000)
    sliced = [wide.slice(5, 900), table(1000, 0), pa.Table.from_batches([wide.to_batches()[0].slice(7, 301)]),
              wide.slice(2000, 1).combine_chunks()]
    with_bitmap = pa.Table.from_arrays(  # a validity bitmap though no value is null: a slice of a column with one
        [pa.array([1, 2, 3, None], pa.int32()).slice(0, 3) if name == "score"
         else pa.array([None] * 3, SCHEMA.field(name).type) for name in SCHEMA.names], schema=SCHEMA)
    split = spooled(tmp_path, [*sliced, with_bitmap], jobs=2, max_chunksize=64)
    rows = sum(t.num_rows for t in [*sliced, with_bitmap])
    assert batch_spool.recorded_sizes(split.files) == (rows, split.range_nbytes([(0, rows)])[0])
    assert split.rows_read == rows and len(split.files) > 4
    score = with_bitmap.column("score").chunk(0)
    assert score.null_count == 0 and score.buffers()[0] is not None  # the case is what it says


def test_a_plan_without_recorded_sizes_reads_the_spool_and_finds_the_same(tmp_path, small_files):
    from ragloaders.publish.parquet import plan_spooled

    tables = [table(0, 1000), table(1000, 701)]
    split = spooled(tmp_path, tables)
    planned = plan_spooled(split, SCHEMA, 1701)
    for path in split.files[::2]:
        os.remove(path + batch_spool.SIZES_SUFFIX)
    (tmp_path / "train-00000" / "batches-00001.arrows.sizes").write_bytes(b"damaged")
    again = plan_spooled(SpooledSplit(str(tmp_path), "train", SCHEMA), SCHEMA, 1701)
    assert (again.num_rows, again.nbytes, again.shards) == (planned.num_rows, planned.nbytes, planned.shards)


@pytest.mark.parametrize("recorded", [True, False])
def test_a_spool_that_lost_or_gained_rows_is_never_a_shorter_or_longer_file(tmp_path, small_files, recorded):
    from ragloaders.publish.parquet import plan_spooled, write_parquet

    for out in ("out-lost", "o"):
        (tmp_path / out).mkdir()
    split = spooled(tmp_path / "lost", [table(0, 1000), table(1000, 701)])
    if not recorded:
        for path in split.files:
            os.remove(path + batch_spool.SIZES_SUFFIX)
    with pytest.raises(RuntimeError, match="holds 1,701 rows where its preparation wrote 1,702"):
        plan_spooled(split, SCHEMA, 1702)
    plan = plan_spooled(split, SCHEMA, 1701)
    os.remove(split.files.pop())  # lost after planning: the writer finds its rows missing
    with pytest.raises(RuntimeError, match="fewer rows than the 1,701"):
        write_parquet(plan, str(tmp_path / "out-lost"), "train")
    grown = spooled(tmp_path / "grown", [table(0, 1000), table(1000, 701)])
    plan = plan_spooled(grown, SCHEMA, 1701)
    BatchSpool(job_folder(str(tmp_path / "grown"), "train", 1), SCHEMA).write_table(table(5000, 3))
    more = SpooledSplit(str(tmp_path / "grown"), "train", SCHEMA)
    with pytest.raises(RuntimeError, match="more rows than the 1,701"):
        write_parquet(type(plan)(plan.schema, plan.num_rows, plan.nbytes, plan.shards, more), str(tmp_path / "o"),
                      "train")


def test_recorded_sizes_that_are_not_the_spools_are_an_error_not_another_layout(tmp_path, small_files):
    from ragloaders.publish.parquet import plan_spooled, write_parquet

    split = spooled(tmp_path, [table(0, 1000), table(1000, 701)])
    sidecar = split.files[1] + batch_spool.SIZES_SUFFIX
    rows, nbytes = batch_spool.SIZES.unpack(open(sidecar, "rb").read())
    with open(sidecar, "wb") as f:
        f.write(batch_spool.SIZES.pack(rows, nbytes + 12_345))  # the right length, a wrong figure
    plan = plan_spooled(split, SCHEMA, 1701)
    (tmp_path / "out").mkdir()
    with pytest.raises(RuntimeError, match="recorded sizes said"):
        write_parquet(plan, str(tmp_path / "out"), "train")
