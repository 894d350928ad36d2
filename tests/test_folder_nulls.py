"""A built folder whose Parquet files were edited to hold nulls where an id or a grade belongs, or to lack a column
its card declares (which `datasets` loads as a column of nulls): `validate` reports each as a structural error,
`eval` refuses the qrels in one line; neither ends in a TypeError."""

from __future__ import annotations

import os
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragloaders import cli
from ragloaders.core.errors import UsageError
from ragloaders.core.preview import preview
from ragloaders.eval.metrics import parse_metrics, score
from ragloaders.publish.validate import SAMPLE_IDS, integrity_of_repository

CORPUS = "corpus/corpus-00000-of-00001.parquet"
QUERIES = "queries/queries-00000-of-00001.parquet"
QRELS_TEST = "qrels/test-00000-of-00001.parquet"


def damaged_copy(build, tmp_path, name: str = "damaged"):
    """A copy of the built folder without its record of the files (so that only what the rows hold is reported,
    not also that a file changed)."""
    out = tmp_path / name
    shutil.copytree(build.out, out)
    (out / ".ragloaders-manifest.json").unlink()
    return out


def null_at(folder, file: str, column: str, rows: list[int]) -> list[dict]:
    """Make `column` null at `rows` of a Parquet data file of `folder` (keeping its schema and metadata); the rows
    as they were."""
    path = os.path.join(folder, file)
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    before = [table.slice(row, 1).to_pylist()[0] for row in rows]
    for row in rows:
        values[row] = None
    index = table.column_names.index(column)
    pq.write_table(table.set_column(index, table.field(column), pa.array(values, table.field(column).type)), path)
    return before


def without_column(folder, file: str, column: str) -> None:
    """Drop `column` from a Parquet data file of `folder`, as a user's edit would (no `datasets` metadata left)."""
    path = os.path.join(folder, file)
    pq.write_table(pq.read_table(path).drop_columns([column]).replace_schema_metadata(None), path)


def errors_of(report) -> dict[str, list]:
    found: dict[str, list] = {}
    for error in report["errors"]:
        found.setdefault(error["check"], []).append(error)
    return found


@pytest.mark.parametrize("file, column, config, split", [
    (CORPUS, "text", "corpus", "corpus"),
    (QRELS_TEST, "score", "qrels", "test"),
])
def test_a_data_file_without_a_declared_column_is_a_column_type_error(nfcorpus_build, tmp_path, capsys, file, column,
                                                                     config, split):
    """It loaded as a column of nulls, and validate said OK (3,633 empty texts, or scores {'None': 12334})."""
    out = damaged_copy(nfcorpus_build, tmp_path)
    without_column(out, file, column)
    report = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c1"))
    assert not report["ok"]
    [found] = report["errors"]
    assert (found["check"], found["config"], found["split"], found["ids"], found["count"]) == (
        "column_type", config, split, [column], 1)
    assert found["message"] == f"{out / file}: no column `{column}`, which the card declares"
    checked = {(facts["config"], facts["split"]) for facts in report["splits"]}
    assert (config, split) not in checked  # its rows are not what the card declares: not checked as if they were
    assert ("queries", "queries") in checked and ("qrels", "train") in checked
    assert cli.main(["validate", str(out), "--cache-dir", str(tmp_path / "c2")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "FAILED: 1 structural error(s)"
    assert f"ERROR column_type in {config}/{split}: {out / file}: no column `{column}`" in "\n".join(lines)


@pytest.mark.parametrize("file, column, config, split", [
    (QRELS_TEST, "score", "qrels", "test"),
    (QRELS_TEST, "query-id", "qrels", "test"),
    (QRELS_TEST, "corpus-id", "qrels", "test"),
    (CORPUS, "_id", "corpus", "corpus"),
    (QUERIES, "_id", "queries", "queries"),
])
def test_a_null_id_or_grade_is_a_null_values_error_naming_its_rows(nfcorpus_build, tmp_path, capsys, file, column,
                                                                    config, split):
    """A null score crashed the score histogram (TypeError: '<' not supported between 'int' and 'NoneType'); a null
    `_id` had no finding of its own, only its knock-on dangling ids."""
    out = damaged_copy(nfcorpus_build, tmp_path)
    before = null_at(out, file, column, [7, 9])
    report = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c1"))
    assert not report["ok"]
    [found] = errors_of(report)["null_values"]
    assert (found["config"], found["split"], found["count"]) == (config, split, 2)
    assert found["message"] == f"`{column}` is null in 2 rows"
    shown = ("query-id", "corpus-id", "score") if config == "qrels" else ("_id", "text")
    assert found["ids"] == [f"row {row}: " + ", ".join(f"{name} {preview(None if name == column else was[name], 30)}"
                                                       for name in shown)
                            for row, was in zip((7, 9), before)]  # the row's other values, so it can be found
    facts = next(f for f in report["splits"] if (f["config"], f["split"]) == (config, split))
    if column == "score":
        assert list(facts["score_histogram"])[-1] == "null" and facts["score_histogram"]["null"] == 2
    if config == "qrels":
        # the pairs with a null id are not also dangling ids or a repeated pair of nulls
        assert {"missing_queries", "missing_docs", "duplicate_pairs"}.isdisjoint(errors_of(report))
    assert cli.main(["validate", str(out), "--cache-dir", str(tmp_path / "c2")]) == 1
    assert f"ERROR null_values in {config}/{split}: `{column}` is null in 2 rows: \"row 7: " \
        in capsys.readouterr().out


def test_many_null_rows_are_counted_in_full_and_shown_bounded(nfcorpus_build, tmp_path):
    """Every `_id` null, each row's text a megabyte: the count is complete, the rows shown are SAMPLE_IDS, each a
    short line; the nulls are no duplicate id."""
    out = damaged_copy(nfcorpus_build, tmp_path)
    path = out / CORPUS
    table = pq.read_table(path)
    rows = table.num_rows
    big = "x" * (1 << 20)
    table = table.set_column(0, table.field("_id"), pa.nulls(rows, pa.string()))
    table = table.set_column(table.column_names.index("text"), table.field("text"),
                             pa.array([big] * 50 + table.column("text").to_pylist()[50:]))
    pq.write_table(table, path, row_group_size=1000)
    report = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c"))
    [found] = errors_of(report)["null_values"]
    assert found["count"] == rows and len(found["ids"]) == SAMPLE_IDS
    assert max(map(len, found["ids"])) < 100
    assert "duplicate_ids" not in errors_of(report)


def trec_run(tmp_path, folder) -> str:
    """A run ranking, for each of the first 50 judged pairs of qrels/test, its document."""
    qrels = pq.read_table(os.path.join(folder, QRELS_TEST)).slice(0, 50).to_pylist()
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{row['query-id']} Q0 {row['corpus-id']} 1 1.0 t\n" for row in qrels
                            if row["query-id"] is not None and row["corpus-id"] is not None))
    return str(path)


@pytest.mark.parametrize("command", ["eval", "pairs"])
@pytest.mark.parametrize("column", ["score", "query-id", "corpus-id"])
def test_eval_and_pairs_refuse_qrels_with_a_null_in_one_line(nfcorpus_build, tmp_path, capsys, column, command):
    """eval: a null score was `TypeError: '>=' not supported between instances of 'NoneType' and 'int'`, a null
    query-id `TypeError: argument of type 'NoneType' is not iterable` (in eval/metrics.py); pairs labelled a pair
    with a null grade as not judged, and lost the grade of a pair with a null id."""
    out = damaged_copy(nfcorpus_build, tmp_path)
    [row] = null_at(out, QRELS_TEST, column, [7])
    assert (row["query-id"], row["corpus-id"]) == ("PLAIN-2", "MED-2428")
    run = trec_run(tmp_path, nfcorpus_build.out)
    options = ["--out", str(tmp_path / "pairs.parquet")] if command == "pairs" else []
    assert cli.main([command, str(out), "--run", run, "--cache-dir", str(tmp_path / "c"), *options]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (f"ragloaders: error: {out} qrels test: `{column}` is null in 1 row (the first is row 7); every "
                    "judgement needs a query, an item and a grade")
    assert not (tmp_path / "pairs.parquet").exists()


def test_eval_refuses_qrels_whose_file_lacks_the_score_column(nfcorpus_build, tmp_path, capsys):
    out = damaged_copy(nfcorpus_build, tmp_path)
    without_column(out, QRELS_TEST, "score")
    run = trec_run(tmp_path, nfcorpus_build.out)
    assert cli.main(["eval", str(out), "--run", run, "--cache-dir", str(tmp_path / "c")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"ragloaders: error: {out} qrels test: `score` is null in ") \
        and line.endswith("(the first is row 0); every judgement needs a query, an item and a grade")


@pytest.mark.parametrize("qrels, words", [
    ({None: {"d1": 1}}, "a query-id is null (with document 'd1')"),
    ({"q1": {"d1": 1, None: 2}}, "a corpus-id of query 'q1' is null"),
    ({"q1": {"d1": 1, "d2": None}}, "the score of query 'q1', document 'd2' is null"),
])
def test_score_refuses_a_null_in_the_qrels_it_is_given(qrels, words):
    with pytest.raises(UsageError, match="^" + re.escape(f"mine: {words}")):
        score(qrels, {"q1": {"d1": 1.0}}, parse_metrics("ndcg@10"), qrels_name="mine")
