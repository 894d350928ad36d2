"""`build --out` without a cache dir: the configs are prepared in a private folder of the build, each config's Arrow
cache goes once nothing later reads it, and nothing is left in datasets' cache or beside the output."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from conftest import assert_names
from ragloaders.core.output_target import OutputFolderError
from ragloaders.publish import build as publish_build
from ragloaders.publish.build import build_folder
from ragloaders.publish.build_cache import BuildCache, build_cache


@pytest.fixture
def own_default_cache(tmp_path, monkeypatch) -> Path:
    """datasets' default cache (and downloads folder) moved into tmp_path, to see what a build leaves there."""
    cache = tmp_path / "hf-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", cache / "downloads")
    return cache


def arrow_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.arrow"))


def configs_cached(root: Path, configs: list[str]) -> set[str]:
    """The configs that have an Arrow file anywhere under root (datasets' layout: .../<config>[-<data_dir's
    hash>]/<version>/<hash>/)."""
    return {config for path in arrow_files(root) for config in configs
            if any(part == config or part.startswith(config + "-") for part in path.parts)}


def test_a_crag_build_deletes_each_arrow_cache_once_written_and_leaves_none(
        crag_build, own_default_cache, tmp_path, monkeypatch):
    configs = [output.name for output in crag_build.outputs]
    cached_after: dict[str, set[str]] = {}
    release = publish_build.release_prepared

    def watched(builders, order, done, written, cache):
        release(builders, order, done, written, cache)
        cached_after[order[done - 1]] = configs_cached(tmp_path, configs)

    monkeypatch.setattr(publish_build, "release_prepared", watched)
    out = tmp_path / "out"
    build_folder(crag_build.path, str(out), data_dir=crag_build.data_dir)

    assert configs == ["records", "queries", "corpus", "search_results", "top_ranked"]
    # every config's Arrow files go as soon as its Parquet is written and handed over; only configs after it may
    # still have theirs (prepared while an earlier one was written: write_behind.py)
    assert list(cached_after) == configs
    for at, config in enumerate(configs):
        assert cached_after[config] <= set(configs[at + 1:]), config
    assert cached_after["top_ranked"] == set()
    assert arrow_files(tmp_path) == []
    assert not [p for p in own_default_cache.rglob("*") if p.is_file()]
    assert not [p for p in tmp_path.rglob("*") if "ragloaders-work" in p.name or "ragloaders-prepare" in p.name]
    # the same Parquet as the shared build, whose derived configs read records' Arrow cache (the card names its
    # folder, so it is not compared)
    written = sorted(p.relative_to(out) for p in out.rglob("*.parquet"))
    assert written == sorted(p.relative_to(crag_build.out) for p in crag_build.out.rglob("*.parquet"))
    for name in written:
        assert (out / name).read_bytes() == (crag_build.out / name).read_bytes(), name


def test_a_failed_build_leaves_no_prepared_cache(nfcorpus_build, own_default_cache, tmp_path, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(publish_build, "write_parquet", full_disk)
    out = tmp_path / "out"
    with pytest.raises(OutputFolderError) as caught:
        build_folder(nfcorpus_build.path, str(out), data_dir=nfcorpus_build.data_dir)
    assert_names(caught.value, f"--out {out}", "No space left on device")
    assert arrow_files(tmp_path) == []
    assert not out.exists()
    assert not [p for p in tmp_path.rglob("*") if "ragloaders-work" in p.name or "ragloaders-prepare" in p.name]


def test_a_given_cache_dir_keeps_what_it_held(nfcorpus_build, tmp_path):
    held = {p: p.stat().st_mtime_ns for p in arrow_files(Path(nfcorpus_build.cache_dir))
            if "nfcorpus" in str(p)}
    assert held
    build_folder(nfcorpus_build.path, str(tmp_path / "out"), data_dir=nfcorpus_build.data_dir,
                 cache_dir=nfcorpus_build.cache_dir)
    assert {p: p.stat().st_mtime_ns for p in held} == held


def test_a_private_cache_keeps_downloads_in_datasets_downloads_folder(own_default_cache, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    with build_cache(str(work), None) as cache:
        assert cache.private and Path(cache.cache_dir).parent == work
        downloaded = Path(cache.cache_dir) / "downloads" / "source.zip"
        downloaded.write_bytes(b"kept")
    assert list(work.iterdir()) == []
    assert (own_default_cache / "downloads" / "source.zip").read_bytes() == b"kept"
    with build_cache(str(work), str(tmp_path / "mine")) as cache:
        assert cache == BuildCache(str(tmp_path / "mine"), private=False)
    assert list(work.iterdir()) == []
