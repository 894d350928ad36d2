import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

import pytest

# Keep every cache of datasets / huggingface_hub out of the user's home; set before they are imported.
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="ragloaders-tests-hf-"))
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# ... and ragloaders' own (eval's records of prepared splits, mock API tables) out of the user's cache folder.
os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="ragloaders-tests-cache-"))

DATA = Path(__file__).parent / "data"
LOADERS = Path(__file__).resolve().parent.parent / "loaders"
"""The package's folder: PYTHONPATH of a child interpreter that runs ragloaders."""


def assert_names(error: BaseException, *facts: object) -> None:
    """The message of `error` names each of `facts` (a file, an offending value, what was expected): what a user is
    promised to be told, whatever the sentence around it."""
    message = str(error)
    missing = [str(fact) for fact in facts if str(fact) not in message]
    assert not missing, f"the message does not name {missing}: {message[:2000]}"


def assert_source_error(error: BaseException, file: str, *facts: object, line: int | None = None,
                        record: int | None = None) -> None:
    """`error` is a SourceError for the file whose path ends with `file`, at `line` or `record` (None: not
    given), whose message names each of `facts`."""
    from ragloaders.core.errors import SourceError

    assert isinstance(error, SourceError), f"{type(error).__name__}: {str(error)[:2000]}"
    assert error.path.replace(os.sep, "/").endswith(file), (error.path, file)
    assert (error.line, error.record) == (line, record), str(error)[:2000]
    assert_names(error, *facts)


def run_cli(*args: str) -> tuple[int, str, str]:
    """`ragloaders ARGS...` in this process: (exit status, stdout, stderr)."""
    from ragloaders import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def declared_samples() -> dict[str, Path]:
    """path -> data_dir of every sample a benchmark declares (`Benchmark.samples`, what `.ci/run` builds): the
    sample tests read this registry, so a benchmark's new sample is tested without naming it here."""
    from ragloaders.benchmarks import BENCHMARKS  # imported here: datasets 3.6 runs test_hub_compat without ragloaders

    return {sample.path: DATA / sample.data_dir for benchmark in BENCHMARKS for sample in benchmark.samples}


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

    def __init__(self, path: str, root: Path, cache_dir: Path, data_dir: Path | None = None):
        from ragloaders.publish.build import build_folder  # imported here: datasets 3.6 runs test_hub_compat alone

        data_dir = declared_samples()[path] if data_dir is None else data_dir
        self.path, self.data_dir, self.cache_dir = path, str(data_dir), str(cache_dir)
        self.out = root / path.replace("/", "--")
        self.outputs = build_folder(path, str(self.out), data_dir=self.data_dir, cache_dir=self.cache_dir)

    def load(self, config: str, **kwargs):
        """`ragloaders.load` of the sample from the prepared cache."""
        import ragloaders

        return ragloaders.load(self.path, config, data_dir=self.data_dir, cache_dir=self.cache_dir, **kwargs)


class SampleBuilds:
    """Every declared sample, each built the first time a test asks for it and then kept for the session; all in
    one datasets cache (`cache_dir`)."""

    def __init__(self, root: Path, cache_dir: Path):
        self.root, self.cache_dir, self.built = root, cache_dir, {}

    def __iter__(self):
        return iter(declared_samples())

    def __getitem__(self, path: str) -> SharedBuild:
        if path not in self.built:
            self.built[path] = SharedBuild(path, self.root, self.cache_dir)
        return self.built[path]


@pytest.fixture(autouse=True)
def no_cli_warning_handler_left():
    """`ragloaders.cli.main` run in process adds its one-line warning handler to the `ragloaders` logger, where it
    would stay for the tests after it (a warning then reaches stderr or not by test order): remove it after each
    test, and before (a session fixture may have run the CLI)."""
    def remove() -> None:
        log = sys.modules.get("ragloaders.core.log")  # not imported: no handler (test_hub_compat runs without it)
        if log is not None:
            for handler in [h for h in log.LOGGER.handlers if isinstance(h, log.OneLineWarnings)]:
                log.LOGGER.removeHandler(handler)

    remove()
    yield
    remove()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    """The session's datasets cache: the shared builds prepare their samples there, so a test that builds a sample
    again from this cache does not prepare it again. Tests may build into it, never alter what it holds."""
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def sample_builds(tmp_path_factory, cache_dir) -> SampleBuilds:
    """`sample_builds[path]`: the declared sample of `path` built once; iterating gives every declared path."""
    return SampleBuilds(tmp_path_factory.mktemp("shared"), Path(cache_dir))


@pytest.fixture(scope="session")
def nfcorpus_build(sample_builds) -> SharedBuild:
    """beir/nfcorpus (the official zip) built once."""
    return sample_builds["beir/nfcorpus"]


@pytest.fixture(scope="session")
def crag_build(sample_builds) -> SharedBuild:
    """crag/task_1_and_2 (the official example file) built once."""
    return sample_builds["crag/task_1_and_2"]


@pytest.fixture(scope="session")
def mmrag_build(sample_builds) -> SharedBuild:
    """mmrag (the bundled sample) built once."""
    return sample_builds["mmrag"]


@pytest.fixture(scope="session")
def nfcorpus_with_reranking(tmp_path_factory, cache_dir) -> Path:
    """beir/nfcorpus built once with `ragloaders build --with top_ranked,hard_negatives` (the BM25 configs)."""
    from ragloaders.cli import main

    out = tmp_path_factory.mktemp("shared-nfcorpus-with") / "out"
    assert main(["build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--with", "top_ranked,hard_negatives",
                 "--out", str(out), "--cache-dir", cache_dir]) == 0
    return out


@pytest.fixture(scope="session")
def mock_kg_build(tmp_path_factory, cache_dir) -> SharedBuild:
    """crag/mock_kg built once from generated cragkg files (tests/mock_kg_generated.write_cragkg, 20 entries per
    table); `counts` holds the source entries of each config, `kg` the generated folder. Tests that change the
    files copy them first."""
    from mock_kg_generated import write_cragkg

    root = tmp_path_factory.mktemp("shared-mock-kg")
    counts = write_cragkg(root / "cragkg")
    build = SharedBuild("crag/mock_kg", root, Path(cache_dir), data_dir=root / "cragkg")
    build.kg, build.counts = root / "cragkg", counts
    return build
