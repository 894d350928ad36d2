"""A value read from a file stays bounded in the message that names it: a 1 MB id in a run, qrels, answers file,
corpus or mock KG file, or a 1 MB id asked on the command line, is shown as a preview (80 characters), and the one
error line still names the file and the line. Before, the whole id landed in the line (repr of it)."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import pytest
from beir_files import write_beir
from conftest import DATA
from ragloaders.cli import main

BIG = "x" * 1_000_000 + "END"
"""An id of a megabyte; its tail must not reach a message."""
LONGEST = 400
"""The longest error line allowed around a preview of BIG (the rest of the message is the reader's own words)."""


def error_line(capsys, code: int, tmp_path: Path) -> str:
    """The one line the CLI printed on stderr for a refused input (exit status 2), checked to be short (the test's
    own folder, as long as pytest makes it, not counted)."""
    captured = capsys.readouterr()
    assert code == 2, captured.err[:500]
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragloaders: error: "), [line[:300] for line in lines]
    assert len(lines[0].replace(str(tmp_path), "")) < LONGEST and "END" not in lines[0], lines[0][:500]
    assert "'" + "x" * 60 in lines[0] and "…" in lines[0]  # the id is still shown, cut
    return lines[0]


@pytest.fixture
def beir(tmp_path) -> Path:
    """A folder in BEIR's layout: two documents, one query, one judgement."""
    return write_beir(tmp_path / "nf", [("d1", "a document"), ("d2", "another")], [("q1", "a query")],
                      {"test": [("q1", "d1", 1)]})


def where(folder: Path, tmp_path: Path) -> list[str]:
    return ["--data-dir", str(folder), "--cache-dir", str(tmp_path / "cache")]


def test_a_trec_run_listing_a_1mb_document_twice_is_one_short_line(beir, tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_text(f"q1 Q0 d1 1 2.0 t\nq1 Q0 {BIG} 2 1.0 t\nq1 Q0 {BIG} 3 0.5 t\n")
    line = error_line(capsys, main(["eval", "beir-format", "--run", str(run), *where(beir, tmp_path)]), tmp_path)
    assert f"{run}, line 3: document 'x" in line and "is listed twice for query 'q1'" in line


def test_a_jsonl_run_with_a_1mb_unknown_key_is_one_short_line(beir, tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query-id": "q1", "corpus-id": "d1", "score": 1.0, BIG: 1}) + "\n")
    line = error_line(capsys, main(["eval", "beir-format", "--run", str(run), *where(beir, tmp_path)]), tmp_path)
    assert f"{run}, line 1" in line and "unexpected key 'x" in line


def test_an_unknown_1mb_query_of_a_run_is_a_short_warning(beir, tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_text(f"q1 Q0 d1 1 2.0 t\n{BIG} Q0 d1 1 1.0 t\n")
    assert main(["eval", "beir-format", "--run", str(run), *where(beir, tmp_path)]) == 0
    out = capsys.readouterr().out
    [warning] = [line for line in out.splitlines() if "not in beir-format" in line]
    assert len(warning) < LONGEST and "END" not in out and "e.g. 'x" in warning, warning[:500]


def test_a_qrels_grade_too_large_for_a_1mb_document_is_one_short_line(tmp_path, capsys):
    folder = write_beir(tmp_path / "nf", [("d1", "a")], [("q1", "a query")], {"test": [("q1", BIG, 10**9)]})
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    line = error_line(capsys, main(["eval", "beir-format", "--run", str(run), *where(folder, tmp_path)]), tmp_path)
    assert "beir-format qrels test: query 'q1', document 'x" in line and "grade 1000000000 is above" in line


def test_a_duplicate_1mb_id_in_a_beir_corpus_or_qrels_is_a_short_validate_finding(tmp_path, capsys):
    folder = write_beir(tmp_path / "nf", [(BIG, "a"), (BIG, "b")], [("q1", "a query")],
                        {"test": [("q1", BIG, 1), ("q1", BIG, 1)]})
    assert main(["validate", "beir-format", *where(folder, tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "END" not in out
    findings = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert any(line.startswith("ERROR duplicate_ids in corpus/corpus: ") for line in findings), findings
    assert any(line.startswith("ERROR duplicate_pairs in qrels/test: ") for line in findings), findings
    shown = [line[:300] for line in findings]
    assert all(len(line) < LONGEST and ("once: 'x" in line or "once: 'q1 -> x" in line) for line in findings), shown


def test_a_crag_answers_file_with_a_1mb_id_is_one_short_line(tmp_path, capsys):
    with bz2.open(DATA / "crag" / "dev_data.jsonl.bz2", "rt", encoding="utf-8") as f:
        ids = [json.loads(line)["interaction_id"] for line in f]
    folder, cache = str(DATA / "crag"), str(tmp_path / "cache")
    predictions = tmp_path / "answers.jsonl"
    rows = [{"interaction_id": i, "prediction": "i don't know"} for i in ids]
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows + [{"interaction_id": BIG,
                                                                               "prediction": "yes"}]))
    args = ["eval", "crag/task_1_and_2", "--predictions", str(predictions), "--data-dir", folder, "--cache-dir", cache]
    line = error_line(capsys, main(args), tmp_path)
    assert "1 prediction for ids not in" in line and "(e.g. 'x" in line
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows[:1] + [{"interaction_id": BIG,
                                                                                   "prediction": p} for p in "ab"]))
    line = error_line(capsys, main(args), tmp_path)
    assert f"{predictions}, line 3: interaction_id 'x" in line and "has a second prediction" in line


def test_a_mock_kg_key_of_1mb_given_twice_is_one_short_line(tmp_path, capsys):
    movies = tmp_path / "kg" / "cragkg" / "movie"
    movies.mkdir(parents=True)
    members = [("1992", [1]), (BIG, [2]), (BIG, [3])]  # json.dumps of a dict could not give a key twice
    text = ", ".join(f'"{key}": {{"movie_list": {value}}}' for key, value in members)
    (movies / "year_db.json").write_text("{" + text + "}")
    args = ["build", "crag/mock_kg", "--configs", "movie_years", "--data-dir", str(tmp_path / "kg"), "--out",
            str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    line = error_line(capsys, main(args), tmp_path)
    assert f"{movies / 'year_db.json'}, record 3: member 3 (key 'x" in line and "duplicate key 'x" in line


def test_a_1mb_id_asked_of_docs_or_named_by_a_pairs_run_is_one_short_line(beir, tmp_path, capsys):
    line = error_line(capsys, main(["docs", "beir-format", BIG, *where(beir, tmp_path)]), tmp_path)
    assert "beir-format corpus has no row with _id 'x" in line
    run = tmp_path / "run.trec"
    run.write_text(f"q1 Q0 d1 1 2.0 t\nq1 Q0 {BIG} 2 1.0 t\n")
    line = error_line(capsys, main(["pairs", "beir-format", "--run", str(run), "--out", str(tmp_path / "p.parquet"),
                                    *where(beir, tmp_path)]), tmp_path)
    assert f"{run}, line 2: document 'x" in line and "is not in beir-format corpus" in line


def test_a_sqlite_file_of_many_long_table_names_is_named_in_a_short_message(tmp_path):
    """The tables a mock KG SQLite file holds are the file's to choose: 200 of 10,000 characters each made a 2 MB
    message (the sorted list of them) before."""
    import sqlite3

    from ragloaders.benchmarks.crag_mock_kg import catalogue, sqlite
    from ragloaders.core.errors import SourceError

    path = tmp_path / "many.sqlite"
    with sqlite3.connect(path) as connection:
        for i in range(200):
            connection.execute(f'CREATE TABLE "{i:03d}{"t" * 10_000}" (key TEXT PRIMARY KEY, value BLOB)')
    connection.close()
    with pytest.raises(SourceError) as dictionary:
        list(sqlite.iter_sqlitedict(str(path), catalogue.BY_CONFIG["finance_price"]))
    opened = sqlite.open_sqlite(str(path))
    try:
        with pytest.raises(SourceError) as table:
            sqlite.sqlite_table_schema(opened, str(path), "players")
    finally:
        opened.close()
    for caught in (dictionary, table):
        message = str(caught.value).replace(str(path), "")
        assert len(message) < LONGEST and "199" not in message and "…" in message, message[:500]
        assert caught.value.path == str(path) and "'000tttt" in message
