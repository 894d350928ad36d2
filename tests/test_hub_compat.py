"""A built (staged) folder loads with plain `datasets.load_dataset`, under whatever `datasets` is installed.

No ragloaders builder is needed: the expected rows are read with pyarrow from the folder's Parquet files and the
expected features from its README YAML. CI runs this file a second time under datasets 3.6 with
RAGLOADERS_STAGED_DIR pointing at a folder that `ragloaders build` wrote in the main environment (each sample a
benchmark declares). Without that variable it reads the session's build of beir/nfcorpus, which needs ragloaders
(datasets >= 4).
"""

from __future__ import annotations

import glob
import os

import datasets
import pyarrow.parquet as pq
import pytest
import yaml

STAGED_ENV = "RAGLOADERS_STAGED_DIR"


@pytest.fixture(scope="module")
def staged(request) -> str:
    if os.environ.get(STAGED_ENV):
        return os.environ[STAGED_ENV]
    try:
        import ragloaders  # noqa: F401
    except ImportError as e:
        pytest.skip(f"{STAGED_ENV} is not set and ragloaders cannot build a folder here ({e})")
    return str(request.getfixturevalue("nfcorpus_build").out)


def front_matter(folder: str) -> dict:
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def expected_configs(folder: str) -> dict[str, tuple[datasets.Features, dict[str, list[dict]]]]:
    """config -> (features from dataset_info, split -> rows read with pyarrow from the split's data_files)."""
    meta = front_matter(folder)
    features = {info["config_name"]: datasets.Features._from_yaml_list(info["features"])
                for info in meta["dataset_info"]}
    out = {}
    for config in meta["configs"]:
        splits = {}
        for data_files in config["data_files"]:
            paths = sorted(glob.glob(os.path.join(folder, data_files["path"])))
            assert paths, data_files
            splits[data_files["split"]] = [row for p in paths for row in pq.read_table(p).to_pylist()]
        out[config["config_name"]] = (features[config["config_name"]], splits)
    return out


def kinds(feature) -> set[str]:
    found = {type(feature).__name__}
    if isinstance(feature, dict):
        for sub in feature.values():
            found |= kinds(sub)
    elif hasattr(feature, "feature"):
        found |= kinds(feature.feature)
    return found


def test_the_readme_declares_every_config_with_features(staged):
    meta = front_matter(staged)
    assert {c["config_name"] for c in meta["configs"]} == {i["config_name"] for i in meta["dataset_info"]}
    for config, (features, splits) in expected_configs(staged).items():
        assert "Json" not in kinds(features), config
        info = next(i for i in meta["dataset_info"] if i["config_name"] == config)
        assert {s["name"]: s["num_examples"] for s in info["splits"]} == {s: len(r) for s, r in splits.items()}


@pytest.mark.parametrize("streaming", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_load_dataset_gives_the_parquet_rows_and_the_declared_types(staged, streaming, tmp_path):
    for config, (features, splits) in expected_configs(staged).items():
        loaded = datasets.load_dataset(staged, config, streaming=streaming, cache_dir=str(tmp_path))
        assert sorted(loaded) == sorted(splits), config
        for split, rows in splits.items():
            assert loaded[split].features == features, (config, split)
            got = list(loaded[split]) if streaming else loaded[split].to_list()
            assert got == rows, (config, split)


def test_plain_load_gives_the_records_and_no_config_is_named_default(staged, tmp_path):
    """mteb reads a config named `default` as qrels: the full records are `records`, marked `default: true`."""
    meta = front_matter(staged)
    names = {c["config_name"] for c in meta["configs"]}
    assert "default" not in names
    defaults = [c["config_name"] for c in meta["configs"] if c.get("default")]
    if "records" not in names:
        assert defaults == []
        return
    assert defaults == ["records"]
    plain = datasets.load_dataset(staged, cache_dir=str(tmp_path))
    records = datasets.load_dataset(staged, "records", cache_dir=str(tmp_path))
    assert {split: d.num_rows for split, d in plain.items()} == {split: d.num_rows for split, d in records.items()}
    assert plain[next(iter(plain))].features == records[next(iter(records))].features
