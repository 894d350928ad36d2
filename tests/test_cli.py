"""The newcomer's first hour: --version, --help with a working example per command, `list`, "did you mean"."""

from __future__ import annotations

import shlex

import pytest
import ragloaders
from conftest import assert_names
from ragloaders import cli
from ragloaders.api import configs_of, registry
from ragloaders.benchmarks.beir import catalogue as beir
from ragloaders.core.errors import MissingSourceError
from ragloaders.publish.listing import human_bytes

BRING_YOUR_OWN = {"beir/bioasq", "beir/signal1m", "beir/trec-news", "beir/robust04", "beir-format"}


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"ragloaders {ragloaders.__version__}"


def command_help(name: str) -> str:
    return cli.parser()._subparsers._group_actions[0].choices[name].format_help()


def test_every_command_shows_an_example_that_parses():
    commands = cli.parser()._subparsers._group_actions[0].choices
    assert set(cli.EXAMPLES) == set(commands)
    for name in commands:
        text = command_help(name)
        assert "\nexample:\n" in text, name
        examples = [line.strip() for line in text.split("\nexample:\n", 1)[1].strip().splitlines()]
        assert examples == cli.EXAMPLES[name]
        for line in examples:
            argv = shlex.split(line, comments=True)
            assert argv[:2] == ["ragloaders", name]
            args = cli.parser().parse_args(argv[1:])  # a wrong option would exit here
            assert args.command == name
    root = cli.parser().format_help()
    assert all(f"  {lines[0]}" in root for lines in cli.EXAMPLES.values())


def test_data_dir_help_says_folder_or_archive():
    for name in ("build", "validate", "push", "eval", "bm25"):
        text = " ".join(command_help(name).split())
        assert "a folder holding the benchmark's files as it distributes them: the archive" in text, name


def test_list_marks_bring_your_own_and_shows_sizes(capsys):
    assert cli.main(["list"]) == 0
    lines = {line.split("\t")[0]: line.split("\t") for line in capsys.readouterr().out.splitlines()}
    group = lines.pop("beir/cqadupstack")  # the group path, on its own line before its first member
    assert group[1].startswith("a group of 12 paths")
    assert list(lines) == list(registry())
    assert {path for path, cells in lines.items() if cells[-1].startswith("bring your own: ")} == BRING_YOUR_OWN
    for path, cells in lines.items():
        assert cells[1].replace(" (default)", "").split() == configs_of(path)
        assert ("records (default)" in cells[1]) == ("records" in configs_of(path))  # the card's `default: true`
    for path in beir.DATASETS:
        dataset = beir.DATASETS[path]
        size = lines[path][2]
        assert size.startswith(f"{dataset.corpus_docs:,} docs"), path
        if path.startswith("beir/cqadupstack/"):  # one zip for the 12 forums, said once per forum
            assert size.endswith(f"; {human_bytes(dataset.zip_bytes)} download, one cqadupstack.zip shared with 11 "
                                 "other paths"), path
        elif path not in BRING_YOUR_OWN:
            assert size.endswith(f"; {human_bytes(dataset.zip_bytes)} download"), path
    assert lines["crag/task_1_and_2"][2] == "705.1 MB download (v5)"  # 739,310,088 bytes
    assert lines["mmrag"][2].endswith("+ download")  # the corpus file's size is not published
    assert lines["beir-format"][2] == "size not published"  # the user's own folder


def test_human_bytes():
    assert [human_bytes(n) for n in (812, 2_448_432, 739_310_088, 5 << 30)] == ["812 B", "2.3 MB", "705.1 MB",
                                                                               "5.0 GB"]


@pytest.mark.parametrize("argv, suggestion", [
    (["validate", "beir/scifactt"], "did you mean 'beir/scifact'?"),
    (["build", "crag/task1_and_2", "--out", "unused"], "did you mean 'crag/task_1_and_2'?"),
    (["validate", "mmrg"], "did you mean 'mmrag'?"),
])
def test_misspelt_paths_get_did_you_mean(argv, suggestion, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragloaders: error: unknown path") and suggestion in err


def test_misspelt_configs_get_did_you_mean_and_far_names_get_none():
    with pytest.raises(ValueError) as error:
        ragloaders.load("mmrag", "recrods")
    assert_names(error.value, "mmrag", "'recrods'", "'records'")
    with pytest.raises(ValueError) as error:
        ragloaders.builder("beir/nfcorpus", "qrel")
    assert_names(error.value, "beir/nfcorpus", "'qrel'", "'qrels'")
    with pytest.raises(ValueError) as error:
        ragloaders.builder("beir/nfcorpus", "xyz")
    assert "did you mean" not in str(error.value) and "its configs are corpus, queries, qrels" in str(error.value)
    with pytest.raises(ValueError) as error:
        ragloaders.load("nothing/like/this", "corpus")
    assert "did you mean" not in str(error.value)


def test_a_misspelt_data_dir_is_named_with_the_closest_folder_beside_it(capsys, tmp_path, monkeypatch):
    (tmp_path / "beir").mkdir()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["build", "beir/nfcorpus", "--data-dir", str(tmp_path / "bier"), "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bier: no such file or folder (did you mean 'beir'?)" in err
    assert not (tmp_path / "out").exists()
    with pytest.raises(MissingSourceError) as error:
        ragloaders.load("mmrag", "corpus", data_dir=str(tmp_path / "nope"))
    assert_names(error.value, tmp_path / "nope", "no such file", "data_dir")
    assert "did you mean" not in str(error.value)


# --- errors, warnings and --debug --------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["eval", "beir/nfcorpus", "--run", "no-such-run.trec"],
                                  ["bm25", "beir/nfcorpus", "--out", "run.trec", "--data-dir", "no-such-folder"]])
def test_debug_shows_the_traceback_of_every_command(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragloaders: error: ") and err.count("\n") == 1 and "--debug" not in err  # the user's
    assert cli.main([*argv, "--debug"]) == 2  # the same exit status with the traceback as without it
    traced = capsys.readouterr().err
    assert traced.startswith("Traceback (most recent call last):") and "Error: " in traced
    assert traced.endswith(err)


def test_a_bug_is_told_apart_from_the_users_error(monkeypatch, capsys):
    from ragloaders.core.errors import UsageError

    def failing(error):
        def run(args):
            raise error
        return run

    for error, bug in ((UsageError("--with: unknown config(s) x"), False), (KeyError("oops"), True)):
        monkeypatch.setattr(cli, "cmd_list", failing(error))
        assert cli.main(["list"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ("(--debug shows where)" in err) == bug, err
        assert isinstance(UsageError("x"), ValueError)  # callers catching ValueError see usage errors as before
    assert ragloaders.UsageError is UsageError


def test_a_plain_value_error_is_a_bug_whose_traceback_debug_shows(monkeypatch, capsys):
    def broken_invariant(args):
        raise ValueError("an internal invariant\nbroke")

    monkeypatch.setattr(cli, "cmd_list", broken_invariant)
    assert cli.main(["list"]) == 2
    err = capsys.readouterr().err
    assert err == "ragloaders: error: ValueError: an internal invariant broke (--debug shows where)\n"
    assert cli.main(["list", "--debug"]) == 2
    traced = capsys.readouterr().err
    assert "in broken_invariant" in traced and "ValueError: an internal invariant\nbroke\n" in traced
    assert traced.endswith("ragloaders: error: ValueError: an internal invariant broke\n")  # no hint: it is shown


def test_an_unexpected_errors_message_is_bounded_on_its_one_line(monkeypatch, capsys):
    def huge(args):
        raise RuntimeError("x" * 10_000_000)

    monkeypatch.setattr(cli, "cmd_list", huge)
    assert cli.main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 2 * cli.BUG_MESSAGE_CHARS and err.endswith("… (--debug shows where)\n")


def test_ctrl_c_with_debug_is_its_traceback_then_the_interrupted_line(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_list", interrupted)
    assert cli.main(["list"]) == 130
    plain = capsys.readouterr().err
    assert plain.startswith("ragloaders: interrupted") and "Traceback" not in plain
    assert cli.main(["list", "--debug"]) == 130
    traced = capsys.readouterr().err
    assert "in interrupted" in traced and "KeyboardInterrupt" in traced and traced.endswith(plain)


@pytest.mark.parametrize("argv, words", [
    (["bogus"], "argument command: invalid choice: 'bogus'"),
    ([], "the following arguments are required: command"),
    (["build", "beir/nfcorpus"], "the following arguments are required: --out"),
    (["pairs", "x", "--run", "r.trec", "--top", "abc", "--out", "p.parquet"], "argument --top: invalid int value"),
    (["eval", "beir/nfcorpus", "--run", "r", "--nope"], "unrecognized arguments: --nope"),
])
def test_an_argument_error_is_one_line_too(argv, words, capsys):
    """argparse printed its usage block, then `ragloaders pairs: error: ...`: several lines, another prefix."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and err.startswith("ragloaders: error: "), err
    assert words in err and err.endswith("--help` shows the usage)\n")


INTERNAL_VALUE_ERRORS = {
    ("core/compressed.py", "_JoinedFiles.seek"): "io's contract: a negative seek position is a ValueError",
    ("core/compressed.py", "order_parts"): "no parts: its one caller passes the files it found, never none",
    ("core/compressed.py", "open_joined"): "no files: its one caller passes a source's files, never none",
    ("benchmarks/mmrag/catalogue.py", "<module>"): "the catalogue's own constants disagree (at import)",
    ("publish/push.py", "default_staging_dir"): "a staging folder outside its root after the ids were checked",
}
"""The plain `raise ValueError(...)` left in the package, each an invariant of ragloaders itself: what reaches the
user from one is a bug (the CLI says --debug shows where). A user's mistake raises UsageError, bad source content
SourceError (ContentError where the caller adds the file and line)."""


def plain_value_error_raises() -> dict[tuple[str, str], int]:
    """(module path under the package, enclosing function) -> how many `raise ValueError` it holds."""
    import ast
    from pathlib import Path

    package = Path(ragloaders.__file__).parent
    found: dict[tuple[str, str], int] = {}

    def visit(node: ast.AST, where: str, module: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, child.name if where == "<module>" else f"{where}.{child.name}", module)
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                raised = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(raised, ast.Name) and raised.id == "ValueError":
                    found[module, where] = found.get((module, where), 0) + 1
            visit(child, where, module)

    for path in sorted(package.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), "<module>", path.relative_to(package).as_posix())
    return found


def test_no_plain_value_error_is_raised_but_the_named_internal_invariants():
    found = plain_value_error_raises()
    assert set(found) - set(INTERNAL_VALUE_ERRORS) == set(), "a user's mistake raises UsageError or SourceError"
    assert set(INTERNAL_VALUE_ERRORS) - set(found) == set(), "an allow-listed place no longer raises ValueError"
    assert all(count == 1 for count in found.values()), found


def test_warnings_of_the_ragloaders_loggers_are_one_line_each_on_stderr(tmp_path, capsys):
    import logging

    from ragloaders.core.log import show_warnings_on_stderr, warn

    show_warnings_on_stderr()
    show_warnings_on_stderr()  # once only
    warn("first\nsecond")
    logging.getLogger("ragloaders.benchmarks.crag.builder").warning("a %s one", "module's")
    assert capsys.readouterr().err == "ragloaders: warning: first second\nragloaders: warning: a module's one\n"


def test_every_default_cache_folder_honours_xdg_cache_home(tmp_path, monkeypatch):
    from ragloaders.mock_api.tables import default_cache_dir
    from ragloaders.publish.push import STAGING_ENV, staging_root

    monkeypatch.delenv(STAGING_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "ragloaders")
    assert staging_root() == str(tmp_path / "xdg" / "ragloaders" / "staging")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert staging_root() == str(tmp_path / "home" / ".cache" / "ragloaders" / "staging")


@pytest.mark.slow
def test_ctrl_c_after_a_first_build_was_swapped_in_says_it_is_there(tmp_path, monkeypatch, capsys):
    """Ctrl-C while the rows of a first build are printed (after its folder was swapped in): the line says the new
    build is in place, not that the folder was not created."""
    import builtins

    from conftest import DATA

    def interrupted_at_wrote(*args, **kwargs):
        if args and str(args[0]).startswith("wrote "):
            raise KeyboardInterrupt
        builtins.print(*args, **kwargs)

    monkeypatch.setattr(cli, "print", interrupted_at_wrote, raising=False)
    out = tmp_path / "out"
    assert cli.main(["build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--out", str(out),
                     "--configs", "qrels"]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"ragloaders: interrupted; {out} holds the new build, complete: it was swapped in before the interrupt")
    assert (out / "README.md").is_file()


def test_a_config_parameter_the_path_does_not_take_names_the_option(tmp_path, capsys):
    """`--release v4` on beir-format said `builder() got an unknown keyword argument 'release'`: Python's words."""
    assert cli.main(["build", "beir-format", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"),
                     "--release", "v4"]) == 2
    err = capsys.readouterr().err
    assert err == ("ragloaders: error: --release is a parameter of crag/task_1_and_2, crag/task_3; beir-format takes "
                   "none of that name\n")
    assert not (tmp_path / "o").exists()


def test_a_thread_the_system_will_not_start_is_one_line_saying_why(tmp_path, monkeypatch, capsys):
    # Under a low `ulimit -v`, the derived configs' thread of a CRAG build could not start: datasets wrapped
    # Python's RuntimeError in "An error occurred while generating the dataset", printed as a bug.
    import threading

    from conftest import DATA

    start = threading.Thread.start

    def refused(self):
        if self.name == "ragloaders-feed":
            raise RuntimeError("can't start new thread")
        return start(self)

    monkeypatch.setattr(threading.Thread, "start", refused)
    code = cli.main(["build", "crag/task_1_and_2", "--data-dir", str(DATA / "crag"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1
    assert "a thread could not be started: too little memory for this process" in err
    assert "DatasetGenerationError" not in err and "--debug shows where" not in err
