import os
import tempfile
from pathlib import Path

import pytest

# Keep every cache of datasets / huggingface_hub out of the user's home; set before they are imported.
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="ragloaders-tests-hf-"))
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

DATA = Path(__file__).parent / "data"
SAMPLES = {"beir/nfcorpus": DATA / "beir", "crag/task_1_and_2": DATA / "crag", "mmrag": DATA / "mmrag"}
"""The bundled sample of each benchmark, as the shared builds below read it."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run the tests marked slow (CI runs them)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow") or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow, or with the CI variable set")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


class SharedBuild:
    """One sample built once per test session: the `ragloaders build` folder, the cache it prepared, and what
    `build_folder` returned. Tests read it; one that changes files copies the folder first."""

    def __init__(self, path: str, root: Path):
        from ragloaders.publish.build import build_folder  # imported here: datasets 3.6 runs test_hub_compat alone

        self.path, self.data_dir, self.cache_dir = path, str(SAMPLES[path]), str(root / "cache")
        self.out = root / path.replace("/", "--")
        self.outputs = build_folder(path, str(self.out), data_dir=self.data_dir, cache_dir=self.cache_dir)

    def load(self, config: str, **kwargs):
        """`ragloaders.load` of the sample from the prepared cache."""
        import ragloaders

        return ragloaders.load(self.path, config, data_dir=self.data_dir, cache_dir=self.cache_dir, **kwargs)


@pytest.fixture(scope="session")
def nfcorpus_build(tmp_path_factory) -> SharedBuild:
    """beir/nfcorpus (the official zip) built once."""
    return SharedBuild("beir/nfcorpus", tmp_path_factory.mktemp("shared-nfcorpus"))


@pytest.fixture(scope="session")
def crag_build(tmp_path_factory) -> SharedBuild:
    """crag/task_1_and_2 (the official example file) built once."""
    return SharedBuild("crag/task_1_and_2", tmp_path_factory.mktemp("shared-crag"))


@pytest.fixture(scope="session")
def mmrag_build(tmp_path_factory) -> SharedBuild:
    """mmrag (the bundled sample) built once."""
    return SharedBuild("mmrag", tmp_path_factory.mktemp("shared-mmrag"))
