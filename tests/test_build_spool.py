"""`build --out` without a cache dir prepares each config into a compressed batch spool (core/batch_spool.py) in place
of datasets' Arrow cache: the same Parquet and card bytes as a build from the Arrow cache, and disk about the size
of the output while it runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from beir_files import write_beir
from conftest import declared_samples
from ragloaders.core import batch_spool
from ragloaders.core.errors import SourceError
from ragloaders.core.readers import jsonl
from ragloaders.publish import build as publish_build
from ragloaders.publish import parquet
from ragloaders.publish.build import build_folder
from ragloaders.publish.sink import DeferredErrorFile


def built_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".ragloaders-manifest.json"}


def files_under(root: Path) -> dict[Path, int]:
    sizes = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if not path.is_symlink() and path.is_file():
                sizes[path] = path.stat().st_size
    return sizes


@pytest.mark.parametrize("path", [pytest.param("beir/nfcorpus", marks=pytest.mark.slow), "crag/task_1_and_2", "mmrag"])
def test_a_spooled_build_cut_into_many_files_and_row_groups_is_the_cache_build_byte_for_byte(
        path, tmp_path, monkeypatch):
    # Sizes small enough that each sample's larger splits are cut into several files (the shard count then comes
    # from the split's total Arrow bytes, each file's row groups from its own) and several row groups, and spooled
    # into several spool files.
    monkeypatch.setattr(parquet, "MAX_SHARD_BYTES", 64 << 10)
    monkeypatch.setattr(parquet, "ROW_GROUP_BYTES", 16 << 10)
    monkeypatch.setattr(batch_spool, "FILE_BYTES", 32 << 10)
    data_dir = str(declared_samples()[path])
    out = tmp_path / "out"
    build_folder(path, str(out), data_dir=data_dir, cache_dir=str(tmp_path / "cache"))
    from_cache = built_files(out)
    shutil.rmtree(out)
    build_folder(path, str(out), data_dir=data_dir)
    spooled = built_files(out)

    assert any(name.endswith(".parquet") and not name.endswith("-of-00001.parquet") for name in from_cache)
    assert sorted(spooled) == sorted(from_cache)
    for name, content in from_cache.items():  # the card too: its examples of repeated pairs are the first in row order
        assert spooled[name] == content, name


def test_a_crag_build_holds_about_its_output_on_disk_while_it_runs(crag_build, tmp_path, monkeypatch):
    monkeypatch.setattr(batch_spool, "FILE_BYTES", 256 << 10)
    root = tmp_path / "t"
    root.mkdir()
    seen: list[tuple[str, int, list[str]]] = []

    def look(when: str) -> None:
        sizes = files_under(root)
        seen.append((when, sum(sizes.values()), [str(p) for p, size in sizes.items()
                                                  if p.suffix == ".arrow" and size]))

    check, plan, spool = DeferredErrorFile.check, publish_build.plan_spooled, batch_spool.BatchSpool.write_table

    def checked(self):
        look("row group written")
        check(self)

    def planned(*args, **kwargs):
        look("spool complete")
        return plan(*args, **kwargs)

    def spooled(self, *args):
        spool(self, *args)
        look("spooled")

    monkeypatch.setattr(batch_spool.BatchSpool, "write_table", spooled)
    monkeypatch.setattr(DeferredErrorFile, "check", checked)
    monkeypatch.setattr(publish_build, "plan_spooled", planned)
    out = root / "out"
    build_folder(crag_build.path, str(out), data_dir=crag_build.data_dir)

    output = sum(files_under(out).values())
    assert {when for when, _, _ in seen} == {"row group written", "spool complete", "spooled"}
    assert [arrow for _, _, arrow in seen if arrow] == []  # no Arrow cache with rows, at any point
    # the HTML is about half the output in records, half in corpus: a copy of either beside it would be > 1.4x
    peak = max(total for _, total, _ in seen)
    assert peak <= 1.25 * output, (peak, output)
    assert files_under(root).keys() == files_under(out).keys()  # nothing left beside the output


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_spooled_build_over_two_workers_keeps_the_file_order_of_the_cache_build(tmp_path, monkeypatch):
    corpus = [{"_id": f"{i:06d}", "title": "", "text": "word " * (i % 50)} for i in range(3000)]
    queries = [{"_id": f"q{i}", "text": f"query {i}"} for i in range(40)]
    folder = write_beir(tmp_path / "arguana", corpus, queries, {"test": [(f"q{i}", f"{i:06d}", 1) for i in range(40)]})
    monkeypatch.setattr(jsonl, "SHARD_BYTES", 16 << 10)  # the corpus file read in > 4 line-aligned ranges
    monkeypatch.setattr(parquet, "MAX_SHARD_BYTES", 64 << 10)
    out = tmp_path / "out"
    build_folder("beir/arguana", str(out), data_dir=str(folder), cache_dir=str(tmp_path / "cache"), num_proc=2)
    from_cache = built_files(out)
    shutil.rmtree(out)
    jobs, plan = set(), publish_build.plan_spooled

    def planned(spooled, *args):
        jobs.update(Path(path).parent.name for path in spooled.files)
        return plan(spooled, *args)

    monkeypatch.setattr(publish_build, "plan_spooled", planned)
    build_folder("beir/arguana", str(out), data_dir=str(folder), num_proc=2)

    assert {"corpus-00000", "corpus-00001"} <= jobs  # the corpus was spooled by both workers
    assert sorted(built_files(out)) == sorted(from_cache)
    assert built_files(out) == from_cache
    ids = pq.read_table(sorted(out.glob("corpus/corpus-*.parquet")), columns=["_id"]).column("_id").to_pylist()
    assert ids == [row["_id"] for row in corpus]


def test_a_bad_record_while_spooling_is_the_source_error_and_leaves_nothing(tmp_path):
    folder = write_beir(tmp_path / "arguana", [], [], {}, raw={
        "corpus.jsonl": b'{"_id": "a", "title": "", "text": "x"}\n{"_id": "b", "title": "", "text": "y"\n'})
    out = tmp_path / "out"
    with pytest.raises(SourceError) as error:
        build_folder("beir/arguana", str(out), data_dir=str(folder))
    assert error.value.line == 2 and str(folder / "corpus.jsonl") in str(error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arguana"]  # no output, no work folder, no spool


def crag_v5_both_splits(folder: Path, lines: list[bytes] | None = None) -> Path:
    """A v5 task 1&2 file of the example's records, their splits alternating (test_crag.release_lines)."""
    from test_crag import T12_V5, release_lines, write_bz2

    folder.mkdir()
    write_bz2(folder / T12_V5, release_lines("v5") if lines is None else lines)
    return folder


@pytest.mark.slow
def test_a_crag_build_with_both_splits_spools_the_test_split_once_and_equals_the_cache_build(tmp_path, monkeypatch):
    # Into a batch spool, the validation pass writes the test split's rows straight into that split's spool
    # (CompatBuilder.spool_ahead): no CRAG spool is written or replayed, the source is read once, and every file
    # is the cache build's.
    from ragloaders.benchmarks.crag import builder as crag
    from ragloaders.benchmarks.crag import spool as crag_spool

    monkeypatch.setattr(batch_spool, "FILE_BYTES", 32 << 10)
    folder = crag_v5_both_splits(tmp_path / "v5")
    out = tmp_path / "out"
    build_folder("crag/task_1_and_2", str(out), data_dir=str(folder), cache_dir=str(tmp_path / "cache"))
    from_cache = built_files(out)
    shutil.rmtree(out)
    passes, lines = [], crag.CragSource.lines
    monkeypatch.setattr(crag.CragSource, "lines", lambda self: passes.append(1) or lines(self))
    monkeypatch.setattr(crag_spool.SpoolWriter, "__init__", lambda *a: pytest.fail("a CRAG spool was written"))
    build_folder("crag/task_1_and_2", str(out), data_dir=str(folder))

    assert len(passes) == 1
    spooled = built_files(out)
    assert sorted(spooled) == sorted(from_cache)
    assert {name.split("/")[0] for name in spooled} >= {"records", "queries", "corpus", "search_results"}
    assert any(name.startswith("records/validation-") for name in spooled)
    for name, content in from_cache.items():
        assert spooled[name] == content, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "out", "v5"]


def test_a_bad_crag_record_after_both_splits_began_leaves_nothing(tmp_path):
    from test_crag import release_lines

    lines = release_lines("v5")
    lines[7] = b'{"interaction_id": "x", "query": "q", "split": 1, "oops": 1}'
    folder = crag_v5_both_splits(tmp_path / "v5", lines)
    with pytest.raises(SourceError) as error:
        build_folder("crag/task_1_and_2", str(tmp_path / "out"), data_dir=str(folder))
    assert error.value.record == 8 and "'oops'" in str(error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v5"]  # no output, no work folder, no spool
