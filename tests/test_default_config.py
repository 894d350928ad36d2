"""`config` may be left out of `load` / `builder` where the benchmark has a default (`records` for CRAG and mmRAG, as
`ragloaders list` and the card's `default: true` say), as in `datasets.load_dataset`; elsewhere one error lists the
configs, before anything is read or written."""

from __future__ import annotations

import os

import pytest
import ragloaders
from conftest import DATA, assert_names
from ragloaders.api import builder, configs_of, default_config, registry
from ragloaders.cli import main
from ragloaders.core.card_yaml import load_yaml


def files_under(folder) -> set[str]:
    return {os.path.relpath(os.path.join(root, name), folder) for root, _, names in os.walk(folder) for name in names}


@pytest.mark.parametrize("shared", ["crag_build", "mmrag_build"])
def test_load_without_a_config_gives_records(request, shared):
    build = request.getfixturevalue(shared)
    plain = ragloaders.load(build.path, data_dir=build.data_dir, cache_dir=build.cache_dir)
    records = build.load("records")
    assert plain.keys() == records.keys()
    assert sum(split.num_rows for split in records.values()) > 0
    for split in records:
        assert plain[split].column_names == records[split].column_names
        assert plain[split].num_rows == records[split].num_rows
        assert plain[split][:3] == records[split][:3]
    assert builder(build.path, data_dir=build.data_dir, cache_dir=build.cache_dir).config.name == "records"


def test_load_without_a_config_of_a_split(crag_build):
    test = ragloaders.load(crag_build.path, split="test", data_dir=crag_build.data_dir, cache_dir=crag_build.cache_dir)
    assert test.num_rows == 10 and "search_results" in test.column_names


@pytest.mark.parametrize("path", ["beir/nfcorpus", "crag/mock_kg", "beir-format"])
def test_a_path_without_a_default_names_its_configs_and_writes_nothing(tmp_path, path):
    with pytest.raises(ValueError) as error:
        ragloaders.load(path, data_dir=str(DATA / "beir"), cache_dir=str(tmp_path / "cache"))
    assert_names(error.value, path, "default config", ", ".join(configs_of(path)))
    with pytest.raises(ValueError) as error:
        builder(path)
    assert_names(error.value, path, "default config", ", ".join(configs_of(path)))
    assert files_under(tmp_path) == set()


def test_a_built_folder_loads_its_default_config(crag_build, nfcorpus_build):
    plain = ragloaders.load(str(crag_build.out))
    assert plain["test"][:2] == crag_build.load("records", split="test")[:2]
    with pytest.raises(ValueError) as error:
        ragloaders.load(str(nfcorpus_build.out))
    assert_names(error.value, nfcorpus_build.out.name, "default config", "corpus, qrels, queries")


def test_the_default_is_the_one_list_and_the_card_mark(crag_build, capsys):
    assert {path: default_config(path) for path in registry() if default_config(path)} == {
        "crag/task_1_and_2": "records", "crag/task_3": "records", "mmrag": "records"}
    assert main(["list"]) == 0
    for line in capsys.readouterr().out.splitlines():
        path, *rest = line.split("\t")
        if path in registry():
            words = rest[0].split(" ")
            marked = [word for word, after in zip(words, [*words[1:], ""]) if after == "(default)"]
            assert marked == ([default_config(path)] if default_config(path) else []), path
    card = (crag_build.out / "README.md").read_text(encoding="utf-8")
    header = load_yaml(card.split("---\n")[1], "README.md")
    assert [c["config_name"] for c in header["configs"] if c.get("default")] == ["records"]
