"""`load` and `builder` take the keywords they document and refuse every other one in one line, before anything is
read or written."""

from __future__ import annotations

import os

import pytest
import ragloaders
from conftest import DATA, assert_names
from ragloaders.api import builder

NFCORPUS = str(DATA / "beir")


def files_under(folder) -> set[str]:
    return {os.path.relpath(os.path.join(root, name), folder) for root, _, names in os.walk(folder) for name in names}


@pytest.mark.parametrize("keyword, value", [
    ("hash", "../../escaped"), ("name", "corpus"), ("data_files", "elsewhere.jsonl"),
    ("config_name", "corpus"), ("dataset_name", "x"), ("features", None), ("base_path", "/"), ("token", "t"),
])
def test_load_refuses_an_undocumented_keyword_naming_it_and_writes_nothing(tmp_path, keyword, value):
    cache = tmp_path / "deep" / "cache"
    with pytest.raises(ValueError) as error:
        ragloaders.load("beir/nfcorpus", "queries", data_dir=NFCORPUS, cache_dir=str(cache), **{keyword: value})
    assert_names(error.value, "load()", f"'{keyword}'",
                 "split, data_dir, streaming, cache_dir, num_proc, download_mode")
    assert "\n" not in str(error.value)
    assert files_under(tmp_path) == set()


@pytest.mark.parametrize("keyword", ["hash", "name", "data_files", "writer_batch_size", "release"])
def test_builder_refuses_an_undocumented_keyword(tmp_path, keyword):
    with pytest.raises(ValueError) as caught:
        builder("beir/nfcorpus", "qrels", data_dir=NFCORPUS, cache_dir=str(tmp_path), **{keyword: "x"})
    assert_names(caught.value, "builder()", f"'{keyword}'", "data_dir, cache_dir, storage_options")
    assert str(caught.value).endswith("storage_options")  # the whole list: no config parameter is accepted
    assert files_under(tmp_path) == set()


def test_config_parameters_are_accepted_and_listed_per_path(tmp_path):
    with pytest.raises(ValueError) as caught:
        builder("crag/task_1_and_2", "queries", relase="v4")
    assert_names(caught.value, "builder()", "'relase'", "'release'", "data_dir, cache_dir, storage_options, release")
    with pytest.raises(ValueError) as caught:
        ragloaders.load("crag/task_1_and_2", "queries", hash="x")
    assert_names(caught.value, "load()", "'hash'", "keep_in_memory, storage_options, release")


def test_the_name_keyword_no_longer_serves_another_config(tmp_path):
    """`name="corpus"` on the queries config returned the corpus; `queries` is what is asked for, or an error."""
    queries = ragloaders.load("beir/nfcorpus", "queries", split="queries", data_dir=NFCORPUS, cache_dir=str(tmp_path))
    assert "title" not in queries.column_names  # the corpus has one
    with pytest.raises(ValueError, match="'name'"):
        ragloaders.load("beir/nfcorpus", "queries", data_dir=NFCORPUS, cache_dir=str(tmp_path), name="corpus")


def test_the_documented_datasets_keywords_work(tmp_path):
    rows = ragloaders.load("beir/nfcorpus", "qrels", split="test", data_dir=NFCORPUS, cache_dir=str(tmp_path),
                           download_mode="force_redownload", verification_mode="no_checks", keep_in_memory=True,
                           storage_options={})
    assert rows.num_rows > 0 and rows.cache_files == []  # kept in memory
    assert files_under(tmp_path) and all(not name.startswith("..") for name in files_under(tmp_path))


def test_an_unknown_split_of_a_built_folder_is_the_users_error_with_the_splits_there_are(nfcorpus_build):
    """datasets' ValueError ('Unknown split "tset"') was reported as a card datasets could not prepare: a SourceError
    blaming README.md for the user's typo."""
    folder, cache = str(nfcorpus_build.out), nfcorpus_build.cache_dir
    for streaming in (False, True):
        with pytest.raises(ragloaders.UsageError) as caught:
            ragloaders.load(folder, "qrels", split="tset", cache_dir=cache, streaming=streaming)
        assert str(caught.value) == (f"{folder} qrels has no split 'tset' (did you mean 'test'?); its splits are "
                                     "'train', 'dev', 'test'")
    assert len(ragloaders.load(folder, "qrels", split="test[:10]", cache_dir=cache)) == 10  # datasets' slicing


@pytest.mark.parametrize("num_proc", [0, -1, True, 1.5])
def test_num_proc_that_is_no_number_of_processes_is_the_users_error(num_proc, tmp_path, capsys):
    """0 or a negative count reached datasets' Pool once a split was being generated: `ValueError: Number of
    processes must be at least 1`, printed as a bug of ragloaders."""
    with pytest.raises(ragloaders.UsageError, match=r"^num_proc \(--num-proc\) .*: give a number of processes, 1 or"):
        ragloaders.load("beir/nfcorpus", "qrels", data_dir=str(DATA / "beir"), num_proc=num_proc,
                        cache_dir=str(tmp_path / "c"))
    if type(num_proc) is int:
        from ragloaders import cli

        assert cli.main(["build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--out", str(tmp_path / "o"),
                         "--num-proc", str(num_proc)]) == 2
        err = capsys.readouterr().err
        assert err == f"ragloaders: error: num_proc (--num-proc) {num_proc}: give a number of processes, 1 or more\n"
        assert not (tmp_path / "o").exists() and not (tmp_path / "c").exists()
