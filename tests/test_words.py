"""What ragloaders says is true: the order of CRAG's pages, the mock KG card, validate's terminal report, the
Ctrl-C line, the mode of the files it writes, and the README's word on split_dataset_by_node."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import DATA
from ragloaders.benchmarks.crag.facts import card_facts as crag_card_facts
from ragloaders.cli import main

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def test_task_1_and_2_pages_are_in_the_files_order_not_a_search_rank(crag_build):
    card = (crag_build.out / "README.md").read_text(encoding="utf-8")
    assert "randomly selected from the top-10" in card and "not a search rank" in card
    assert "rank order" not in card
    assert "the search's order" in crag_card_facts("crag/task_3").summary
    assert "not a search rank" not in crag_card_facts("crag/task_3").summary
    assert '"randomly selected from\nthe top-10" of the search' in README and "task 3's 50 are in\nthe search's order" \
        in README
    # the order is the file's: rank i is the i-th page of the record
    records = crag_build.load("records", split="test")
    pages = crag_build.load("search_results", split="test")
    corpus = crag_build.load("corpus", split="corpus")
    url_of = dict(zip(corpus["_id"], corpus["url"]))
    first = records[0]
    listed = [(row["rank"], url_of[row["corpus-id"]]) for row in pages if row["query-id"] == first["interaction_id"]]
    assert listed == [(rank, page["page_url"]) for rank, page in enumerate(first["search_results"], 1)]


SAMPLE_KG = DATA / "crag_mock_kg"


def test_the_mock_kg_card_lists_only_the_tables_written_and_names_the_folder(tmp_path):
    out = tmp_path / "kg"
    assert main(["build", "crag/mock_kg", "--configs", "finance_company,music_grammy", "--data-dir", str(SAMPLE_KG),
                 "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    table = [line for line in card.splitlines() if line.startswith("| `")]
    assert [line.split("`")[1] for line in table if "/" in line or "—" in line] == ["finance_company",
                                                                                   "music_grammy"]
    assert "sports_nba_team_info_common` |" not in card and "ORG/THIS_REPOSITORY" not in card
    assert f'CragMockAPI("{out}")' in card and f"--from {out} --port 8000" in card


def test_validate_of_a_folder_says_folder_and_prints_zero_counts(nfcorpus_build, capsys):
    assert main(["validate", str(nfcorpus_build.out)]) == 0
    printed = capsys.readouterr().out
    assert "source: a folder built by ragloaders from beir/nfcorpus" in printed
    assert "a repository built" not in printed
    assert "corpus/corpus: 3,633 rows, 0 duplicate ids, 0 empty texts" in printed
    test = next(line for line in printed.splitlines() if line.startswith("  qrels/test:"))
    for count in ("0 dangling query ids", "0 dangling corpus ids", "0 duplicate pairs"):
        assert count in test, test


@pytest.mark.parametrize("existed", [False, True])
def test_ctrl_c_of_a_build_says_what_the_folder_holds(tmp_path, capsys, monkeypatch, existed):
    out = tmp_path / "out"
    if existed:
        assert main(["build", "mmrag", "--configs", "routing", "--data-dir", str(DATA / "mmrag"), "--out", str(out),
                     "--cache-dir", str(tmp_path / "c")]) == 0
    capsys.readouterr()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("ragloaders.publish.build.write_folder", interrupted)
    assert main(["build", "mmrag", "--data-dir", str(DATA / "mmrag"), "--out", str(out), "--cache-dir",
                 str(tmp_path / "c")]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    if existed:
        assert f"{out} holds a complete build (its previous one" in err
        assert (out / "routing").is_dir()
    else:
        assert f"interrupted; {out} was not created (a build appears there only once complete)" in err
        assert not out.exists()


def test_a_folder_without_a_manifest_is_refused_in_words_that_hold(tmp_path, capsys):
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["build", "mmrag", "--data-dir", str(DATA / "mmrag"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "was not written by ragloaders" in err and "0.2.0" not in err and "2026" not in err
    assert (out / "notes.txt").read_text() == "mine"


@pytest.fixture
def umask_0022():
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.parametrize("name", ["run.trec", "run.parquet", "run.jsonl"])
def test_a_run_file_follows_the_umask(tmp_path, umask_0022, name):
    from ragloaders.eval.runs import write_run

    target = tmp_path / name
    assert write_run(str(target), [("q1", ["d1", "d2"], [2.0, 1.0])]) == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    os.umask(0o077)
    assert write_run(str(tmp_path / f"private-{name}"), [("q1", ["d1"], [1.0])]) == 1
    assert stat.S_IMODE((tmp_path / f"private-{name}").stat().st_mode) == 0o600


def test_the_verdicts_file_follows_the_umask(tmp_path, umask_0022):
    from ragloaders.eval.crag_answers import AnswerReport, Verdict

    report = AnswerReport(path="crag/task_1_and_2", splits=["test"], overall={}, breakdown={},
                          verdicts=[Verdict("id1", "correct", "exact", "yes")])
    report.write_verdicts(tmp_path / "verdicts.jsonl")
    assert stat.S_IMODE((tmp_path / "verdicts.jsonl").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verdicts.jsonl"]


def test_the_kept_id_index_and_a_cache_record_follow_the_umask(nfcorpus_build, tmp_path, umask_0022, monkeypatch):
    """They were made by mkstemp and kept its 0600: in a cache a group shares, another user could not read them,
    built the index again each time and replaced the file."""
    import ragloaders

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    ragloaders.docs(str(nfcorpus_build.out), cache_dir=str(tmp_path / "cache"))
    [index] = (tmp_path / "cache").rglob("ragloaders-docs-*.index")
    [record] = (tmp_path / "xdg" / "ragloaders" / "prepared").glob("*.json")
    assert [stat.S_IMODE(path.stat().st_mode) for path in (index, record)] == [0o644, 0o644]


def test_split_dataset_by_node_of_one_file_keeps_every_nth_row(nfcorpus_build):
    import datasets
    from datasets.distributed import split_dataset_by_node

    assert "each rank reads all of it and keeps half of the rows" in README
    folder = nfcorpus_build.out
    assert len(list((folder / "corpus").glob("corpus-*.parquet"))) == 1
    corpus = datasets.load_dataset(str(folder), "corpus", split="corpus", streaming=True)
    assert corpus.num_shards == 1
    everything = pq.read_table(next((folder / "corpus").glob("corpus-*.parquet")), columns=["_id"]).column(
        "_id").to_pylist()
    mine = [row["_id"] for row in split_dataset_by_node(corpus, rank=1, world_size=2)]
    assert mine == everything[1::2]


@pytest.mark.parametrize("terminal, quiet, shown", [(False, False, False), (True, False, True), (True, True, False)])
def test_progress_is_one_line_per_build_on_a_terminal_only(tmp_path, capsys, monkeypatch, terminal, quiet, shown):
    import sys

    import datasets.utils.logging as datasets_logging
    import huggingface_hub.utils as hub_utils

    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    before = (datasets_logging.is_progress_bar_enabled(), hub_utils.are_progress_bars_disabled())
    args = ["build", "mmrag", "--configs", "routing,qrels", "--data-dir", str(DATA / "mmrag"), "--out",
            str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c"), *(["--quiet"] if quiet else [])]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "Generating" not in err and "examples/s" not in err  # datasets' bars, one per split: never
    assert ("Building mmrag" in err) == shown
    assert (datasets_logging.is_progress_bar_enabled(), hub_utils.are_progress_bars_disabled()) == before



@pytest.mark.parametrize("count, queries, rows", [(0, "0 queries", "0 rows"), (1, "1 query", "1 row"),
                                                  (2, "2 queries", "2 rows"), (1200, "1,200 queries", "1200 rows")])
def test_a_count_agrees_with_its_noun(count, queries, rows):
    from ragloaders.core.plural import counted

    assert counted(count, "query", "queries", grouped=True) == queries
    assert counted(count, "row") == rows


def test_a_builds_known_defects_are_one_warning_line_each_said_once(crag_build, tmp_path, capsys):
    """The CLI's handler writes `ragloaders: warning: `; the build's findings said `warning: ` again after it."""
    args = ["build", crag_build.path, "--configs", "search_results", "--data-dir", crag_build.data_dir, "--out",
            str(tmp_path / "out"), "--cache-dir", crag_build.cache_dir, "--quiet"]
    assert main(args) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ragloaders: warning: ")]
    assert any("duplicate_pairs" in line and "[known upstream defect:" in line for line in warned), warned
    assert not [line for line in warned if line.startswith("ragloaders: warning: warning:")]
