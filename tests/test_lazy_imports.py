"""What importing the package and setting up the command line import: not `datasets` nor `huggingface_hub` (about
a second, most of a small command's time); the builders, and `datasets` with them, only when a command needs one.
Each check runs in a fresh interpreter (this one has imported everything already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import DATA, assert_names
from ragloaders.benchmarks import BENCHMARKS
from ragloaders.core.facts import LazyBuilders

HEAVY = ("datasets", "huggingface_hub", "pandas")


def imported_after(code: str, env: dict | None = None) -> dict:
    """Runs `code` in a fresh interpreter, then prints which of HEAVY it imported, and the value of `result` if the
    code set one."""
    script = (f"import sys\n{code}\nimport json\n"
              f"print(json.dumps({{'heavy': [m for m in {HEAVY!r} if m in sys.modules], "
              "'result': globals().get('result')}))")
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                               env={**os.environ, **(env or {})})
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import ragloaders.cli",
    "import ragloaders",
    "import ragloaders.cli\nragloaders.cli.parser().parse_args(['eval', 'beir/scifact', '--run', 'r.trec'])",
    "from ragloaders import SourceError, __version__",
    "import ragloaders.api\nresult = ragloaders.api.is_benchmark_path('beir/scifcat')",
])
def test_setting_up_imports_neither_datasets_nor_the_hub(code):
    assert imported_after(code)["heavy"] == []


def test_the_command_line_help_imports_neither(tmp_path):
    code = ("import contextlib, io, ragloaders.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n        ragloaders.cli.main(['build', '--help'])\n"
            "    except SystemExit:\n        pass\n"
            "result = '--release' in out.getvalue()")
    assert imported_after(code) == {"heavy": [], "result": True}


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_name_of_the_package_imports_what_it_needs_on_first_use():
    found = imported_after("import ragloaders\nresult = [ragloaders.load.__module__, ragloaders.pairs.__module__, "
                           "ragloaders.CragMockAPI.__name__, 'load' in dir(ragloaders)]")
    assert found["result"] == ["ragloaders.api", "ragloaders.lookup.pairs", "CragMockAPI", True]
    assert "datasets" in found["heavy"]


def test_an_unknown_name_is_an_attribute_error():
    import ragloaders

    with pytest.raises(AttributeError) as caught:
        ragloaders.lod  # noqa: B018
    assert_names(caught.value, "'ragloaders'", "'lod'")
    with pytest.raises(ImportError):
        exec("from ragloaders.mock_api import CragMockApi", {})


def test_every_benchmark_declares_the_parameters_its_builders_take():
    for benchmark in BENCHMARKS:
        for path in benchmark.builders:
            assert benchmark.builders[path].BUILDER_PARAMETERS == benchmark.builder_parameters, path
    assert {b.name: b.builder_parameters for b in BENCHMARKS if b.builder_parameters} == {"crag": ("release",)}


def test_lazy_builders_import_once_and_know_their_paths_without():
    loads = []

    def builder_class() -> type:
        loads.append(1)
        return dict

    builders = LazyBuilders(["a/x", "a/y"], builder_class)
    assert (list(builders), len(builders), "a/x" in builders, "a/z" in builders, loads) == (
        ["a/x", "a/y"], 2, True, False, [])
    assert builders["a/y"] is dict and builders["a/x"] is dict and loads == [1]
    with pytest.raises(KeyError):
        builders["a/z"]
    assert dict(builders) == {"a/x": dict, "a/y": dict}


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_command_that_imports_datasets_runs_without_its_bars_and_leaves_the_environment_as_it_was(tmp_path):
    """`validate` imports datasets while it runs: its bars are off from their import (the variable set for the
    command), and the variable is gone after it."""
    code = ("import contextlib, io, os, ragloaders.cli\n"
            "assert 'datasets' not in sys.modules\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    status = ragloaders.cli.main(['validate', 'beir/nfcorpus', '--data-dir', {str(DATA / 'beir')!r}, "
            f"'--cache-dir', {str(tmp_path / 'cache')!r}])\n"
            "import datasets.utils.logging as bars\n"
            "result = [status, not bars.is_progress_bar_enabled(), 'HF_DATASETS_DISABLE_PROGRESS_BARS' in os.environ]")
    env = {key: value for key, value in os.environ.items() if key != "HF_DATASETS_DISABLE_PROGRESS_BARS"}
    script = (f"import sys\n{code}\nimport json\nprint(json.dumps(result))")
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == [0, True, False]
