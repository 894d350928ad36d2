"""`eval`'s inputs as a careless user or an attacker gives them: a cutoff past what trec_eval holds, a metric name
wider than the report's column, a damaged Parquet run, a folder or a FIFO given as the run."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragloaders import cli
from ragloaders.core.errors import SourceError, UsageError
from ragloaders.eval.metrics import MAX_CUTOFF, parse_metrics
from ragloaders.eval.runs import iter_run, read_run


@pytest.mark.parametrize("name", ["ndcg@9223372036854775808", "recall@2147483648", "map@" + "9" * 40])
def test_a_cutoff_past_a_c_long_is_refused_in_words(name):
    """pytrec_eval named `ndcg_cut_9223372036854775808` a measure and then had no such key: a KeyError."""
    with pytest.raises(UsageError, match=f"cutoff k from 1 to {MAX_CUTOFF:,}"):
        parse_metrics(name)
    assert parse_metrics(f"ndcg@{MAX_CUTOFF}")[0].cutoff == MAX_CUTOFF


def test_a_metric_name_wider_than_its_column_stays_apart_from_its_value(nfcorpus_build, tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_text("PLAIN-2 Q0 MED-10 1 2.0 t\n")
    assert cli.main(["eval", str(nfcorpus_build.out), "--run", str(run), "--metrics", "recall@100000,p@1",
                     "--cache-dir", nfcorpus_build.cache_dir]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  Recall@100000")]
    assert len(lines) == 1 and lines[0].split()[0] == "Recall@100000", lines
    float(lines[0].split()[1])  # the value, apart


def test_a_damaged_parquet_run_names_the_file_and_the_rows_it_could_not_read(tmp_path):
    """4,000 bytes overwritten in the middle of a run of 300,000 rows: pyarrow says only 'Unexpected end of stream'
    (or another bare reason), which the command line printed alone."""
    path = tmp_path / "run.parquet"
    rows = 300_000
    pq.write_table(pa.table({"query-id": [f"q{i // 100}" for i in range(rows)],
                             "corpus-id": [f"doc-{i * 7919 % rows}" for i in range(rows)],
                             "score": [float(rows - i) for i in range(rows)]}), path, row_group_size=50_000,
                   compression="zstd")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle: middle + 4000] = os.urandom(4000)
    path.write_bytes(bytes(data))
    for read in (read_run, lambda p: list(iter_run(p))):
        with pytest.raises(SourceError) as caught:
            read(str(path))
        message = str(caught.value)
        assert message.startswith(f"{path}: ") and "a damaged Parquet file: its rows from row " in message, message
        assert "\n" not in message and len(message) < 400, message


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_run_that_is_a_folder_or_a_fifo_is_named_so_not_missing(kind, tmp_path, capsys):
    path = tmp_path / "run.trec"
    path.mkdir() if kind == "folder" else os.mkfifo(path)  # a FIFO without a writer: opening it would wait
    with pytest.raises(UsageError, match="a run is a file, and this is " + ("a folder" if kind == "folder" else
                                                                             "not a regular file")):
        read_run(str(path))
    assert cli.main(["eval", "beir/nfcorpus", "--run", str(path), "--data-dir", "tests/data/beir"]) == 2
    assert "no such run file" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["bm25", "verdicts", "pairs"])
def test_an_output_in_a_folder_that_does_not_exist_is_refused_before_any_work(command, nfcorpus_build, crag_build,
                                                                               tmp_path, capsys):
    """`bm25 --out nosuch/x.trec` failed when the file was written, naming its temporary name
    ('x.trec.wqyild77.incomplete'), and `--verdicts nosuch/v.jsonl` only after every answer was judged."""
    missing = tmp_path / "nosuch" / "deeper"
    run = tmp_path / "run.trec"
    run.write_text("PLAIN-2 Q0 MED-10 1 2.0 t\n")
    args = {"bm25": ["bm25", str(nfcorpus_build.out), "--out", str(missing / "x.trec")],
            "pairs": ["pairs", str(nfcorpus_build.out), "--run", str(run), "--out", str(missing / "p.parquet")],
            "verdicts": ["eval", "crag/task_1_and_2", "--predictions", str(run), "--verdicts",
                         str(missing / "v.jsonl"), "--data-dir", crag_build.data_dir]}[command]
    assert cli.main([*args, "--cache-dir", nfcorpus_build.cache_dir]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the folder {missing} does not exist; create it first" in err, err
    assert ".incomplete" not in err and not (tmp_path / "nosuch").exists()


def test_an_empty_verdicts_path_is_refused_not_ignored(crag_build, tmp_path, capsys):
    """`--verdicts ""` wrote nothing and said nothing (the option was tested for truth, not for presence)."""
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("")
    assert cli.main(["eval", "crag/task_1_and_2", "--predictions", str(predictions), "--verdicts", "",
                     "--data-dir", crag_build.data_dir, "--cache-dir", crag_build.cache_dir]) == 2
    assert "--verdicts is empty" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz", "zip"])
def test_a_compressed_run_is_named_compressed(kind, tmp_path):
    """A gzip'd TREC run was refused as 'line 1: field 1 (query-id) holds a vertical tab'."""
    import bz2
    import gzip
    import lzma
    import zipfile

    text = b"q1 Q0 d1 1 2.0 t\n"
    path = tmp_path / "run.trec"
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("run.trec", text)
    else:
        path.write_bytes({"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind](text))
    for read in (read_run, lambda p: list(iter_run(p))):
        with pytest.raises(UsageError, match=f"a {kind}-compressed file; a run is read as plain text"):
            read(str(path))
    path.write_bytes(b"BZh9 Q0 d1 1 2.0 t\n")  # a query id that begins as bzip2 does is a query id
    assert read_run(str(path)) == {"BZh9": {"d1": 2.0}}


def test_an_integer_score_is_refused_only_where_a_double_cannot_hold_it(tmp_path):
    """A JSONL run's integer score above 2**53 was refused as 'cannot be held exactly in double' even where it is
    (2**63, 10**20); only one a double rounds (2**53 + 1) is refused, naming the line."""
    path = tmp_path / "run.jsonl"
    cases = ((2**63, True), (10**20, True), (-(2**1023), True), (2**53 + 1, False), (3 * 2**1000 + 1, False))
    for score, held in cases:
        path.write_text(f'{{"query-id": "q", "corpus-id": "d", "score": {score}}}\n')
        if held:
            assert read_run(str(path)) == {"q": {"d": float(score)}}
        else:
            with pytest.raises(SourceError, match="line 1.*cannot be held exactly in double"):
                read_run(str(path))


def _parquet_run(path):
    pq.write_table(pa.table({"query-id": pa.array([], pa.string()), "corpus-id": pa.array([], pa.string()),
                             "score": pa.array([], pa.float64())}), path)


@pytest.mark.parametrize("name, write", [("run.trec", lambda p: p.write_bytes(b"")),
                                         ("run.jsonl", lambda p: p.write_bytes(b"")),
                                         ("run.parquet", _parquet_run)])
def test_an_empty_run_file_is_refused_not_scored_zero(name, write, nfcorpus_build, tmp_path, capsys):
    """A retrieval job that failed and wrote nothing: the report was every measure 0.00000 and exit 0 (BEIR's
    EvaluateRetrieval divides by zero on it)."""
    run = tmp_path / name
    write(run)
    assert cli.main(["eval", str(nfcorpus_build.out), "--run", str(run), "--cache-dir", nfcorpus_build.cache_dir]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"ragloaders: error: {run}: the run holds no result: nothing to score\n"


def test_a_run_that_ranks_nothing_or_no_judged_query_is_refused_naming_why(nfcorpus_build):
    from ragloaders.eval.report import evaluate

    where = {"metrics": "ndcg@10", "cache_dir": nfcorpus_build.cache_dir}
    with pytest.raises(UsageError, match=r"^the run holds no result"):
        evaluate(str(nfcorpus_build.out), {}, **where)
    with pytest.raises(UsageError, match=r"^the run ranks no document for any of its 2 queries"):
        evaluate(str(nfcorpus_build.out), {"PLAIN-2": {}, "PLAIN-12": {}}, **where)
    # PLAIN-1 is judged in dev only; 'nope' is no query of nfcorpus
    with pytest.raises(UsageError) as caught:
        evaluate(str(nfcorpus_build.out), {"PLAIN-1": {"MED-10": 1.0}, "nope": {"MED-10": 1.0}}, **where)
    assert str(caught.value) == (
        f"no query of the run (2 queries, e.g. 'PLAIN-1'; 1 is not in {nfcorpus_build.out}, 1 is judged in another "
        "split only) is judged in " f"{nfcorpus_build.out}'s test split: a run of another benchmark or split? "
        "(--split chooses the split)")
    scored = evaluate(str(nfcorpus_build.out), {"PLAIN-1": {"MED-10": 1.0}}, split="dev", **where)
    assert scored.judged_queries > 1 and len(scored.unranked_queries) == scored.judged_queries - 1
    # one judged query ranked is enough: the others are each scored 0, with the warning
    partial = evaluate(str(nfcorpus_build.out), {"PLAIN-2": {"MED-10": 1.0}, "nope": {"MED-10": 1.0}}, **where)
    assert partial.unknown_queries == ["nope"] and len(partial.unranked_queries) == partial.judged_queries - 1
    # a judged query whose only document is itself: dropped as BEIR drops it, which the refusal says
    with pytest.raises(UsageError, match=r"^every document the run ranks for its judged queries is the query itself"):
        evaluate(str(nfcorpus_build.out), {"PLAIN-2": {"PLAIN-2": 5.0}}, **where)
    kept = evaluate(str(nfcorpus_build.out), {"PLAIN-2": {"PLAIN-2": 5.0}}, keep_identical_ids=True, **where)
    assert len(kept.unranked_queries) == kept.judged_queries - 1


def test_an_empty_routing_run_is_refused_too(tmp_path):
    from conftest import DATA
    from ragloaders.eval.report import evaluate_routing

    with pytest.raises(UsageError, match=r"^the routing run holds no result: nothing to score"):
        evaluate_routing("mmrag", {}, data_dir=str(DATA / "mmrag"), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(UsageError, match=r"^no query of the routing run \(1 query, e.g. 'nope'; 1 is not in mmrag\)"):
        evaluate_routing("mmrag", {"nope": {"tat": 1.0}}, data_dir=str(DATA / "mmrag"),
                         cache_dir=str(tmp_path / "cache"))
