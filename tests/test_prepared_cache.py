"""core.prepared_cache: `datasets` names the prepared cache of a local folder's config by the folder's name, the
config and its card, not by its data files, so a Parquet file edited or cut after a load (or a copy of the folder
edited) was read from the old cache: `load`, `docs`, `pairs` and `eval` served the old rows with no error. On the
official nfcorpus build."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ragloaders
from conftest import assert_names
from ragloaders.cli import main
from ragloaders.core.hub_repository import Repository


@pytest.fixture
def folder(nfcorpus_build, tmp_path, monkeypatch) -> Path:
    """A copy of the nfcorpus build of the test's own, with a ragloaders cache folder of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    copy = tmp_path / "a" / "nfcorpus"
    shutil.copytree(nfcorpus_build.out, copy)
    return copy


def corpus_file(folder: Path) -> Path:
    [file] = (folder / "corpus").glob("*.parquet")
    return file


def rewrite(folder: Path, title: str, rows: int | None = None) -> None:
    """The corpus's Parquet written again with every title `title`, cut to `rows` rows if given."""
    table = pq.read_table(corpus_file(folder))
    table = table.set_column(table.schema.get_field_index("title"), "title", pa.array([title] * table.num_rows))
    pq.write_table(table if rows is None else table.slice(0, rows), corpus_file(folder))


def titles(folder: Path, cache: Path) -> set[str]:
    return set(ragloaders.load(str(folder), "corpus", split="corpus", cache_dir=str(cache))["title"])


def test_an_edit_after_a_load_is_read_and_a_cut_file_is_refused(folder, tmp_path, capsys):
    cache = tmp_path / "cache"
    assert len(titles(folder, cache)) > 1000
    rewrite(folder, "EDITED")
    assert titles(folder, cache) == {"EDITED"}
    assert main(["docs", str(folder), "MED-10", "--cache-dir", str(cache)]) == 0
    assert '"title":"EDITED"' in capsys.readouterr().out
    rewrite(folder, "CUT", rows=100)
    with pytest.raises(ValueError) as cut:
        ragloaders.load(str(folder), "corpus", split="corpus", cache_dir=str(cache))
    assert_names(cut.value, "hold 100 rows where the card declares 3,633")
    assert main(["docs", str(folder), "MED-10", "--cache-dir", str(cache)]) == 2
    assert "hold 100 rows where the card declares 3,633" in capsys.readouterr().err
    assert main(["validate", str(folder), "--cache-dir", str(cache)]) == 1


def test_a_copy_of_the_same_name_and_card_edited_is_read_as_itself(folder, tmp_path):
    cache = tmp_path / "cache"
    copy = tmp_path / "b" / "nfcorpus"
    shutil.copytree(folder, copy)
    original = titles(folder, cache)
    rewrite(copy, "COPY")
    assert titles(copy, cache) == {"COPY"}
    assert titles(folder, cache) == original


def test_an_unchanged_folder_reuses_its_prepared_cache(folder, tmp_path):
    cache = tmp_path / "cache"
    titles(folder, cache)
    prepared = {path: path.stat().st_ino for path in cache.rglob("*.arrow")}
    assert prepared
    titles(folder, cache)
    assert {path: path.stat().st_ino for path in cache.rglob("*.arrow")} == prepared


def test_a_cache_prepared_without_a_record_is_prepared_again_once(folder, tmp_path, monkeypatch):
    """A cache `datasets` prepared by itself (or an older ragloaders) says nothing of the files it was made from."""
    cache = tmp_path / "cache"
    import datasets

    rewrite(folder, "BEFORE")
    datasets.load_dataset(str(folder), "corpus", cache_dir=str(cache))
    rewrite(folder, "AFTER")
    assert set(datasets.load_dataset(str(folder), "corpus", split="corpus", cache_dir=str(cache))["title"]) == \
        {"BEFORE"}  # (datasets' own reuse, which this module works around)
    assert titles(folder, cache) == {"AFTER"}
    prepared = {path: path.stat().st_ino for path in cache.rglob("*.arrow")}
    assert titles(folder, cache) == {"AFTER"}
    assert {path: path.stat().st_ino for path in cache.rglob("*.arrow")} == prepared


def test_a_load_that_did_not_prepare_the_cache_records_nothing(folder, tmp_path):
    """With no record, even with no cache yet, a load prepares the cache itself: another load may be preparing it
    from other files, which it would then reuse and record as made from its own. A load given its own download_mode
    (here: reuse whatever is there) records nothing, so an edit it did not read is read by the next load."""
    from ragloaders.core.prepared_cache import PreparedCache

    cache = tmp_path / "cache"
    repository = Repository(str(folder), folder=str(folder))
    assert PreparedCache(repository.builder("corpus", cache_dir=str(cache))).download_mode() == "force_redownload"
    titles(folder, cache)
    assert PreparedCache(repository.builder("corpus", cache_dir=str(cache))).download_mode() is None
    rewrite(folder, "EDITED")
    reused = ragloaders.load(str(folder), "corpus", split="corpus", cache_dir=str(cache),
                             download_mode="reuse_dataset_if_exists")
    assert "EDITED" not in set(reused["title"])  # (as asked: the old cache)
    assert titles(folder, cache) == {"EDITED"}
