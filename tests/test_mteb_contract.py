"""Every built folder meets mteb's retrieval contract (config names, columns and types, split choice); where mteb is
importable, mteb's own loader reads the built BEIR and mmRAG folders.

The contract is written out in tests/mteb_layout.py from mteb 2.x `mteb/abstasks/retrieval_dataset_loaders.py`. It
checks whatever configs a folder has, so a config added later (CRAG's `top_ranked`) is held to it as soon as it is
built.
"""

from __future__ import annotations

import importlib.util

import datasets
import pyarrow as pa
import pytest
from conftest import assert_names, declared_samples
from mteb_layout import beir_tables, check_contract, roles, write_repository
from ragloaders.api import configs_of

SAMPLES = sorted(declared_samples())
"""Every sample a benchmark declares (Benchmark.samples), each built once in the session."""
WITH_QRELS = [path for path in SAMPLES if "qrels" in configs_of(path)]


@pytest.fixture(scope="module")
def built(sample_builds, tmp_path_factory):
    """The session's build of every declared sample, and a datasets cache of this module's own."""
    return {path: str(sample_builds[path].out) for path in SAMPLES}, str(tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize("path", SAMPLES)
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_no_built_folder_has_a_config_named_default(built, path):
    folders, _ = built
    configs = datasets.get_dataset_config_names(folders[path])
    assert "default" not in configs
    assert set(configs) <= set(configs_of(path))


@pytest.mark.parametrize("path", WITH_QRELS)
def test_folders_with_qrels_meet_the_contract_for_every_qrels_split(built, path):
    folders, cache = built
    loaded = check_contract(folders[path], cache)
    qrels_splits = datasets.get_dataset_split_names(folders[path], config_name="qrels")
    assert sorted(loaded) == sorted(qrels_splits)
    for requested, splits in loaded.items():
        assert splits["qrels"] == requested
        assert splits["corpus"] == "corpus"  # the only split of corpus
    if path == "mmrag":
        assert loaded["test"]["queries"] == "test"  # mmRAG's queries have the requested split itself
    else:
        assert loaded["test"]["queries"] == "queries"  # BEIR's layout: one split of queries


def test_crag_retrieval_configs_meet_the_contract(built):
    """CRAG has no relevance labels (no qrels), so mteb cannot score it; its corpus, queries and any `top_ranked`
    still follow the contract, split by split."""
    folders, cache = built
    configs = datasets.get_dataset_config_names(folders["crag/task_1_and_2"])
    assert "qrels" not in configs
    loaded = check_contract(folders["crag/task_1_and_2"], cache)
    assert list(loaded) == ["test"]  # the example file has only test records
    assert loaded["test"]["queries"] == "test" and loaded["test"]["corpus"] == "corpus"
    if "top_ranked" in configs:
        assert loaded["test"]["top_ranked"] == "test"


def test_the_contract_rejects_a_default_config_that_is_not_qrels(tmp_path):
    """What mteb does with a full-record config named `default`: it reads it as qrels."""
    tables = beir_tables([("d1", "one")], [("q1", "first")], {"test": [("q1", "d1", 1)]})
    tables["default"] = {"test": pa.table({"id": ["q1"], "query": ["first"]})}
    folder = write_repository(str(tmp_path / "repo"), tables, default="default")
    assert roles(datasets.get_dataset_config_names(folder))["qrels"] == "default"
    with pytest.raises(AssertionError) as caught:
        check_contract(folder, str(tmp_path / "cache"))
    assert_names(caught.value, f"{folder} default/test", "`query-id`", "['id', 'query']")


def test_the_contract_rejects_ambiguous_splits_and_bad_types(tmp_path):
    tables = beir_tables([("d1", "one")], [("q1", "first")], {"test": [("q1", "d1", 1)]})
    tables["corpus"] = {"a": tables["corpus"]["corpus"], "b": tables["corpus"]["corpus"]}
    folder = write_repository(str(tmp_path / "two"), tables)
    with pytest.raises(AssertionError) as caught:
        check_contract(folder, str(tmp_path / "cache"))
    assert_names(caught.value, f"{folder} corpus", "'test'", "['a', 'b']")
    tables = beir_tables([("d1", "one")], [("q1", "first")], {"test": [("q1", "d1", 1)]})
    tables["top_ranked"] = {"test": pa.table({"query-id": ["q1"], "corpus-ids": pa.array([[1]], pa.list_(pa.int64()))})}
    folder = write_repository(str(tmp_path / "ints"), tables)
    with pytest.raises(AssertionError) as caught:
        check_contract(folder, str(tmp_path / "cache"))
    assert_names(caught.value, f"{folder} top_ranked/test", "`corpus-ids`", "list<item: int64>")


def test_a_hand_made_top_ranked_config_passes(tmp_path):
    tables = beir_tables([("d1", "one"), ("d2", "two")], [("q1", "first")], {"test": [("q1", "d1", 1)]})
    tables["top_ranked"] = {"test": pa.table({"query-id": ["q1"], "corpus-ids": [["d2", "d1", "d2"]]})}
    folder = write_repository(str(tmp_path / "repo"), tables)
    assert check_contract(folder, str(tmp_path / "cache"))["test"]["top_ranked"] == "test"


HAS_MTEB = importlib.util.find_spec("mteb") is not None


@pytest.mark.skipif(not HAS_MTEB, reason="mteb is not installed (it pulls torch; see README: evaluating with mteb)")
@pytest.mark.parametrize("path, split", [("beir/nfcorpus", "test"), ("mmrag", "dev")])
def test_mteb_own_loader_reads_the_built_folder(built, path, split):
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalDatasetLoader

    folders, cache = built
    folder = folders[path]
    data = RetrievalDatasetLoader(hf_repo=folder, revision=None, split=split).load()
    corpus = datasets.load_dataset(folder, "corpus", split="corpus", cache_dir=cache)
    qrels = datasets.load_dataset(folder, "qrels", split=split, cache_dir=cache)
    assert len(data["corpus"]) == corpus.num_rows
    assert set(data["relevant_docs"]) == set(qrels["query-id"])
    assert sum(len(docs) for docs in data["relevant_docs"].values()) == qrels.num_rows
    assert set(data["queries"]["id"]) == set(qrels["query-id"])
