"""The bundled generated mock KG (tests/data/crag_mock_kg) and `build --configs`: a newcomer builds crag/mock_kg
offline, asks it the official client's questions, and builds only the configs wanted, for every benchmark."""

from __future__ import annotations

import filecmp
import importlib.util
import os
import shutil
from pathlib import Path

import pytest
from conftest import DATA
from local_http import wait_for_port
from ragloaders.api import configs_of
from ragloaders.benchmarks import benchmark_of
from ragloaders.benchmarks.crag_mock_kg.catalogue import SOURCE_FILES
from ragloaders.cli import main
from ragloaders.core import safe_pickle
from ragloaders.core.facts import Sample

SAMPLE = DATA / "crag_mock_kg"
SET_PICKLES = {"music/artist_dict_simplified.pickle"}
"""Pickles holding a Python set, whose byte order follows the string hash seed: compared as the objects they hold."""


def comparable(value):
    """`value` with each set sorted, NaN as a string (NaN != NaN) and any other object as its repr (safe_pickle's
    arrays and dates show their bytes there), for comparing two loads."""
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(map(comparable, value), key=repr)
    if isinstance(value, (list, tuple)):
        return [comparable(item) for item in value]
    if isinstance(value, float) and value != value:
        return "NaN"
    return value if isinstance(value, (str, int, float, type(None))) else repr(value)  # a numpy array: its bytes


def write_module():
    spec = importlib.util.spec_from_file_location("crag_mock_kg_write", SAMPLE / "write.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sample_holds_every_file_of_every_domain_and_is_declared():
    assert Sample("crag/mock_kg", "crag_mock_kg") in benchmark_of("crag/mock_kg").samples
    held = {os.path.relpath(os.path.join(root, name), SAMPLE / "cragkg")
            for root, _, names in os.walk(SAMPLE / "cragkg") for name in names}
    assert held == set(SOURCE_FILES)
    size = sum(os.path.getsize(SAMPLE / "cragkg" / name) for name in held)
    assert size < 400_000, size
    assert "generated" in (SAMPLE / "README.md").read_text(encoding="utf-8").lower()


def test_the_sample_is_what_its_script_writes(tmp_path):
    write_module().write(tmp_path / "cragkg")
    for relpath in SOURCE_FILES:
        ours, bundled = tmp_path / "cragkg" / relpath, SAMPLE / "cragkg" / relpath
        if relpath in SET_PICKLES:
            assert (comparable(safe_pickle.loads(ours.read_bytes(), name=str(ours)))
                    == comparable(safe_pickle.loads(bundled.read_bytes(), name=str(bundled)))), relpath
        else:
            assert filecmp.cmp(ours, bundled, shallow=False), relpath


def finance_only(tmp_path: Path) -> Path:
    """A cragkg folder holding only the finance files of the sample."""
    folder = tmp_path / "finance-only"
    shutil.copytree(SAMPLE / "cragkg" / "finance", folder / "cragkg" / "finance")
    return folder


def test_a_partial_mock_kg_build_needs_only_its_files(tmp_path, capsys):
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert main(["build", "crag/mock_kg", "--configs", "finance_price,finance_company", "--data-dir",
                 str(finance_only(tmp_path)), "--out", str(out), "--cache-dir", str(cache)]) == 0
    printed = capsys.readouterr().out
    assert "finance_company\ttrain\t100 rows" in printed and "finance_price\ttrain\t15 rows" in printed
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["finance_company", "finance_price"]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "A partial build: only `finance_company`, `finance_price` were asked for (`--configs`); not built: " \
           "`finance_detailed_price`, " in card
    import datasets
    assert datasets.get_dataset_config_names(str(out)) == ["finance_company", "finance_price"]
    assert datasets.load_dataset(str(out), "finance_price", split="train").num_rows == 15
    # the whole path still needs the other files, and says which
    assert main(["build", "crag/mock_kg", "--data-dir", str(finance_only(tmp_path / "b")), "--out",
                 str(tmp_path / "all"), "--cache-dir", str(cache)]) == 2
    assert "needs movie/movie_db.json" in capsys.readouterr().err


@pytest.mark.parametrize("configs", ["finance_pric", "finance_price,nope", ",", "corpus"])
def test_an_unknown_config_is_one_line_naming_the_valid_ones(tmp_path, capsys, configs):
    out = tmp_path / "out"
    assert main(["build", "crag/mock_kg", "--configs", configs, "--data-dir", str(SAMPLE), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("ragloaders: error: --configs: ")
    assert error.rstrip().endswith(f"the configs of crag/mock_kg are {', '.join(configs_of('crag/mock_kg'))}")
    assert not out.exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("shared, configs", [
    ("nfcorpus_build", "queries"), ("crag_build", "top_ranked,queries"), ("mmrag_build", "routing")])
def test_build_configs_for_every_benchmark(request, tmp_path, capsys, caplog, shared, configs):
    sample = request.getfixturevalue(shared)  # its cache: the configs are prepared there once per session
    path, out = sample.path, tmp_path / "out"
    assert main(["build", path, "--configs", configs, "--data-dir", sample.data_dir, "--out", str(out),
                 "--cache-dir", sample.cache_dir]) == 0
    wanted = [c for c in configs_of(path) if c in configs.split(",")]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(wanted)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"A partial build: only {', '.join(f'`{c}`' for c in wanted)} " in card
    printed = {line.split("\t")[0] for line in capsys.readouterr().out.splitlines() if "\t" in line}
    assert printed == set(wanted)
    # the published counts of the configs not built are not compared: no "no split" error in the card or the log
    assert "No structural errors." in card and "no split" not in card
    assert not [r for r in caplog.records if "structural error" in r.getMessage()]
    assert main(["validate", str(out)]) == 0


def test_the_tables_keep_what_the_mock_api_answers_exactly(tmp_path):
    """Which missing value a Grammy cell held (None or NaN: `str()` gives "None" or "nan"), and a market cap stored
    as an integer (12345, not 12345.0), on the bundled sample."""
    import ragloaders

    grammy = ragloaders.load("crag/mock_kg", "music_grammy", split="train", data_dir=str(SAMPLE),
                             cache_dir=str(tmp_path))
    assert grammy["artist"] == ["Billie Eilish", None, None, "Celine Dion", "Adele"]
    assert grammy["none_cells"] == [[], [], ["artist", "workers"], [], []]
    caps = ragloaders.load("crag/mock_kg", "finance_marketcap", split="train", data_dir=str(SAMPLE),
                           cache_dir=str(tmp_path)).to_pandas().set_index("ticker")
    assert caps.loc["INTCAP", "record_json"] == "12345" and caps.loc["INTCAP", "market_cap"] == 12345.0
    assert caps.loc["NOCAP", "record_json"] == "null"
    assert caps.loc["META", "record_json"] == repr(float(caps.loc["META", "market_cap"]))


def readme_blocks(section: str) -> list[tuple[str, str]]:
    """(language, text) of each fenced block of the README section titled `section`."""
    import re

    text = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    body = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"```(\w+)\n(.*?)```", body, re.S)


def commands_of(block: str) -> list[list[str]]:
    """The command lines of a bash block, continuations joined, comments dropped."""
    import shlex

    joined = block.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()
            and not line.startswith("#")]


@pytest.mark.slow
def test_the_readme_mock_kg_commands_run_offline_as_shown(tmp_path, monkeypatch):
    """The README's mock API section, run from a fresh folder holding the repository's tests/: the builds, every
    `api.` line against the answer its comment shows, and the official client against `ragloaders serve`."""
    import ast
    import json
    import socket
    import subprocess
    import sys

    from ragloaders import CragMockAPI

    (tmp_path / "tests").symlink_to(Path(__file__).parent)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (build, python, serve) = readme_blocks("CRAG's mock API without its server")[:3]
    assert [build[0], python[0], serve[0]] == ["bash", "python", "bash"]
    for command in commands_of(build[1]):
        assert command[0] == "ragloaders"
        assert main(command[1:]) == 0, command
    assert sorted(p.name for p in (tmp_path / "build" / "crag_kg_finance").iterdir() if p.is_dir()) == [
        "finance_company", "finance_price"]
    lines = [line for line in python[1].splitlines() if line.startswith("api.")]
    assert len(lines) >= 4
    api = CragMockAPI("build/crag_kg")
    for line in lines:
        call, shown = line.split("#", 1)
        answer = eval(call, {"api": api})  # noqa: S307 (the README's own line)
        assert json.dumps(answer) == json.dumps(ast.literal_eval(shown.strip())), line  # 12345 is not 12345.0

    serve_line, client_line = commands_of(serve[1])[:2]
    client = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "crag_mock_api" / "apiwrapper"
    if not (client / "pycragapi.py").is_file():
        pytest.skip(f"the official client is not at {client}")
    pytest.importorskip("requests")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert serve_line[:2] == ["ragloaders", "serve"] and "--port" in serve_line and serve_line[-1] == "&"
    serve_line = serve_line[:-1]
    serve_line[serve_line.index("--port") + 1] = str(port)
    process = subprocess.Popen([sys.executable, "-m", "ragloaders", *serve_line[1:]], stderr=subprocess.PIPE,
                               text=True)
    try:
        wait_for_port(port, process)
        assert client_line[0] == "cd" and client_line[-3:-1] == ["python", "-c"]
        assert "CRAG_SERVER=http://127.0.0.1:8000" in client_line
        environment = dict(os.environ, CRAG_SERVER=f"http://127.0.0.1:{port}")
        printed = subprocess.run([sys.executable, "-c", client_line[-1]], cwd=client, env=environment,
                                 capture_output=True, text=True, check=True).stdout
        shown = serve[1].split("\n# ", 1)[1].splitlines()[0]
        assert ast.literal_eval(printed.strip()) == ast.literal_eval(shown)
    finally:
        process.terminate()
        process.communicate(timeout=20)


def with_a_repeated_company(tmp_path: Path, domains: tuple[str, ...] = ("finance",)) -> Path:
    """A copy of the sample's `domains` whose company_name.dict names one company twice (another ticker)."""
    folder = tmp_path / "repeated"
    for domain in domains:
        shutil.copytree(SAMPLE / "cragkg" / domain, folder / "cragkg" / domain)
    with open(folder / "cragkg" / "finance" / "company_name.dict", "a", encoding="utf-8") as f:
        f.write("100,Armada Acquisition Corp. I Common Stock,AACX\n")
    return folder


REPEATED = "duplicate_keys in finance_company/train: 1 value of (Name) occurs more than once: " \
           "'Armada Acquisition Corp. I Common Stock'"


def test_a_repeated_key_is_a_warning_of_build_and_of_validate_of_the_folder(tmp_path, capsys, caplog):
    out = tmp_path / "out"
    assert main(["build", "crag/mock_kg", "--configs", "finance_company,finance_price", "--data-dir",
                 str(with_a_repeated_company(tmp_path)), "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    assert [r.getMessage().split(" [")[0] for r in caplog.records if "duplicate_keys" in r.getMessage()] == [
        f"crag/mock_kg {REPEATED}"]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "Known upstream defects found:" in card and "No structural errors." in card
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"WARNING {REPEATED} [known upstream defect: The mock API keeps the last of two equal keys" in printed
    assert "ERROR" not in printed and "declared defect not observed" not in printed
    assert printed.rstrip().endswith("OK")


def test_a_clean_kg_notes_no_absent_repeated_key(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["build", "crag/mock_kg", "--configs", "finance_company", "--data-dir", str(SAMPLE), "--out",
                 str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    assert main(["validate", str(out), "--json"]) == 0
    import json
    report = json.loads(capsys.readouterr().out)
    assert report["warnings"] == [] and report["errors"] == [] and report["unobserved_defects"] == []


@pytest.mark.slow
def test_a_repeated_key_is_a_warning_of_validate_of_the_files(tmp_path, capsys):
    folder = with_a_repeated_company(tmp_path, ("finance", "movie", "music", "open", "sports"))
    assert main(["validate", "crag/mock_kg", "--data-dir", str(folder), "--cache-dir", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    assert f"WARNING {REPEATED} [known upstream defect:" in printed and "ERROR" not in printed
