"""eval.runs: the Arrow reader of TREC runs against the line-by-line reader it stands in for (same run, or the same
error on the same line), on generated files full of what the byte-level rules are about; and missing_doc_ids'
Arrow lookup against a set difference."""

from __future__ import annotations

import pyarrow as pa
import pytest
from conftest import assert_source_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragloaders.core.errors import SourceError
from ragloaders.eval import data, runs

IDS = st.sampled_from(["q1", "q2", "d1", "d2", "00123", "<dbpedia:Émile>", "a\xa0b", "x\x1cy", '"quoted"', "é", "日本",
                       "\U0001f600", "Q0"]).map(str.encode) | st.sampled_from(
    [b"\xff", b"\xed\xa0\x80", b"\xc0\x80", b"\xef\xbb\xbfq", b"a\x00b", b"a\x0bb", b"a\x0cb", b"a\rb", b""])
RANKS = st.sampled_from([b"1", b"2", b"+3", b"-1", b"0010", b"1.0", b"x", b"\xd9\xa1", b"1_0"])
SCORES = st.sampled_from([b"1", b"1.5", b"-2.25", b"+3", b"5.", b".5", b"1e5", b"1E-3", b"-0",
                          b"12345678901234567890.5", b"0.1000000000000000055511151231257827", b"1e999", b"nan",
                          b"inf", b"0x1p3", b"1_000", b"\xd9\xa1", b"", b"e5", b"1e"])
SEPARATORS = st.sampled_from([b" "] * 6 + [b"  ", b"\t", b" \t"])
LINE_ENDS = st.sampled_from([b"\n"] * 6 + [b"\r\n", b"\r\r\n", b"\r"])


@st.composite
def trec_files(draw) -> bytes:
    lines = []
    plain = draw(st.booleans())  # half the files in the Arrow reader's form, so that it is exercised at length
    for _ in range(draw(st.integers(0, 12))):
        if plain:
            fields = [draw(st.sampled_from([b"q1", b"q2", b"q3"])), b"Q0", draw(st.sampled_from([b"d1", b"d2", b"d3",
                      "é".encode()])), draw(RANKS), draw(SCORES), b"run"]
            lines.append(b" ".join(fields) + b"\n")
            continue
        fields = [draw(IDS), b"Q0", draw(IDS), draw(RANKS), draw(SCORES), draw(IDS)][:draw(st.sampled_from([6] * 8 +
                                                                                                      [5, 7]))]
        joined = draw(st.sampled_from([b"", b" "])) + b"".join(f + draw(SEPARATORS) for f in fields[:-1]) + fields[-1]
        lines.append(joined + draw(LINE_ENDS))
    text = b"".join(lines)
    if draw(st.booleans()) and text.endswith(b"\n"):
        text = text[:-1]
    return draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf"])) + text


def outcome(read, path):
    try:
        return ("run", read(path))
    except SourceError as e:
        return ("error", str(e), e.line)


def check_against_the_line_reader(tmp_path, text: bytes) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(text)
    expected = outcome(runs._read_trec_lines, str(path))
    assert outcome(runs.read_run, str(path)) == expected
    fast = runs._read_plain_trec(str(path))
    if fast is not None:  # the Arrow reader, where it answers, answers exactly (insertion order included)
        assert expected[0] == "run" and list(fast.items()) == list(expected[1].items())
        assert all(list(fast[q]) == list(expected[1][q]) for q in fast)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trec_files())
def test_read_run_gives_what_the_line_by_line_reader_gives(tmp_path, text):
    check_against_the_line_reader(tmp_path, text)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trec_files())
def test_read_run_gives_what_the_line_by_line_reader_gives_at_length(tmp_path, text):
    check_against_the_line_reader(tmp_path, text)


def test_a_plain_run_is_read_by_arrow_and_equals_the_line_reader(tmp_path):
    """Queries out of order, a query continued later, UTF-8 ids, and scores that need correct rounding."""
    path = tmp_path / "run.trec"
    path.write_bytes(b"q2 Q0 d1 1 0.1000000000000000055511151231257827 t\r\nq1 Q0 \xc3\xa9 1 5. t\n"
                     b"q2 Q0 d2 2 -.5e-3 t\nq1 Q0 00123 2 +12345678901234567890.5 t")
    fast = runs._read_plain_trec(str(path))
    assert fast is not None
    assert fast == runs._read_trec_lines(str(path)) == {
        "q2": {"d1": 0.1, "d2": -0.0005}, "q1": {"é": 5.0, "00123": 12345678901234567890.5}}
    assert list(fast) == ["q2", "q1"]


@pytest.mark.parametrize("text, line", [
    (b"q1 Q0 d1 1 1 t\nq2 Q0 d1 1 1 t\nq1 Q0 d1 3 1 t\n", 3),  # a document twice for a query, apart
    (b"q1 Q0 d1 1 1 t\nq1 Q0 d1 2 1 t\n", 2),
    (b"q1 Q0 d1 1 1 t\nq1 Q0 d2 1 1e999 t\n", 2),
    (b"q1 Q0 d1 1 1 t\n\nq1 Q0 d2 1 1 t\n", 2),
    (b"q1 Q0 d1 1 1 t\nq1 Q0 \xff 1 1 t\n", 2),
    (b"q1 Q0 d1 1 1 t\nq1 Q0 d2 \xd9\xa1 1 t\n", 2),
    (b"q1 Q0 d1 1 1 t\rq2 Q0 d2 1 1 t\n", 1),  # a CR that Arrow's CSV reader would end a line at
    (b"q1 Q0 d1 1 1 t\nq2 Q0 d2 1 1 t\rx\n", 2),
])
def test_errors_name_the_same_line_as_the_line_reader(tmp_path, text, line):
    path = tmp_path / "run.trec"
    path.write_bytes(text)
    with pytest.raises(SourceError) as caught:
        runs.read_run(str(path))
    assert caught.value.line == line
    assert outcome(runs._read_trec_lines, str(path)) == ("error", str(caught.value), line)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["d1", "d2", "00123", "é", "x", "d1 ", ""]), max_size=12),
       st.lists(st.lists(st.sampled_from(["d1", "d2", "123", "é", "y", ""]), max_size=5), max_size=4),
       st.integers(1, 4))
def test_missing_doc_ids_is_the_set_difference_in_order(monkeypatch, doc_ids, corpus, lookup_rows):
    monkeypatch.setattr(data, "MIN_LOOKUP_ROWS", lookup_rows)  # many lookups, as on a large corpus
    tables = [pa.table({"_id": pa.array(ids, pa.string())}) for ids in corpus]
    known = {i for ids in corpus for i in ids}
    assert data.missing_doc_ids(iter(doc_ids), tables) == [d for d in dict.fromkeys(doc_ids) if d not in known]


def test_a_started_lookup_reads_the_corpus_once_and_gives_its_errors_to_the_caller(monkeypatch):
    monkeypatch.setattr(data, "MIN_LOOKUP_ROWS", 1)  # one lookup per table, the later ones in the lookup's thread
    read = []

    def corpus():
        for ids in (["d1"], ["d2"], ["d3"]):
            read.append(ids[0])
            yield pa.table({"_id": ids})

    finish = data.missing_doc_ids_started(["d3", "d9", "d1"], corpus())
    assert read[0] == "d1"  # the first lookup's rows are gathered by the caller (a build never runs in the thread)
    assert finish() == ["d9"]
    assert read == ["d1", "d2", "d3"]

    def broken():
        yield pa.table({"_id": ["d1"]})
        raise SourceError("corpus.jsonl", "not JSON", line=7)

    finish = data.missing_doc_ids_started(["d2"], broken())
    with pytest.raises(SourceError) as caught:
        finish()
    assert_source_error(caught.value, "corpus.jsonl", "not JSON", line=7)


def test_missing_doc_ids_takes_ids_arrow_cannot_hold():
    assert data.missing_doc_ids(["\ud800", "d1"], [pa.table({"_id": ["d1"]})]) == ["\ud800"]


def stream_outcome(path):
    try:
        return ("run", list(runs.iter_run(path)))
    except SourceError as e:
        return ("error", str(e), e.line)


def first_comeback(path: str) -> int | None:
    """The first line whose query already had a block of lines before another query's, read by the line rules, up to
    the first line those rules refuse."""
    from ragloaders.core.readers.lines import UTF8_BOM, iter_lines

    finished, current = set(), None
    with open(path, "rb") as stream:
        for number, line in iter_lines(stream, path):
            try:
                query_id = runs.trec_fields(line.removeprefix(UTF8_BOM) if number == 1 else line)[0]
            except ValueError:
                return None
            if query_id != current:
                if current is not None:
                    finished.add(current)
                if query_id in finished:
                    return number
                current = query_id
    return None


def check_stream_against_read_run(tmp_path, text: bytes) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(text)
    expected = outcome(runs.read_run, str(path))
    got = stream_outcome(str(path))
    back = first_comeback(str(path))
    if back is not None and (expected[0] == "run" or back <= expected[2]):
        assert got[0] == "error" and got[2] == back and "comes back after other queries" in got[1], got
    elif expected[0] == "run":
        assert got == ("run", list(expected[1].items()))
        assert all(list(docs) == list(expected[1][query_id]) for query_id, docs in got[1])
    else:
        assert got == expected


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trec_files())
def test_iter_run_gives_read_runs_queries_in_order_or_its_error(tmp_path, text):
    check_stream_against_read_run(tmp_path, text)


@pytest.mark.parametrize("text, line", [
    (b"q1 Q0 d1 1 1 t\nq1 Q0 d1 2 1 t\n", 2),
    (b"q1 Q0 d1 1 1 t\nq1 Q0 d2 1 1e999 t\n", 2),
    (b"q1 Q0 d1 1 1 t\n\nq1 Q0 d2 1 1 t\n", 2),
    (b"q1 Q0 d1 1 1 t\nq1 Q0 d2 \xd9\xa1 1 t\n", 2),
    (b"q1 Q0 d1 1 1 t\rq2 Q0 d2 1 1 t\n", 1),
])
def test_iter_run_names_the_line_read_run_names(tmp_path, text, line):
    path = tmp_path / "run.trec"
    path.write_bytes(text)
    assert stream_outcome(str(path)) == outcome(runs.read_run, str(path))
    assert stream_outcome(str(path))[2] == line


def test_iter_run_switches_to_the_line_reader_mid_file(tmp_path, monkeypatch):
    """Batches of the Arrow reader, then a line Arrow does not take (two spaces): the rest is read line by line,
    no line read twice or left out; then a bad score many batches in is named by its line."""
    monkeypatch.setattr(runs, "STREAM_BLOCK", 4096)
    lines = [f"q{n // 50} Q0 d{n} {n % 50 + 1} {1000 - n % 50}.5 t\n" for n in range(3000)]
    lines[2000] = lines[2000].replace(" Q0 ", "  Q0 ")
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    assert list(runs.iter_run(str(path))) == list(runs.read_run(str(path)).items())
    lines[2500] = lines[2500].replace(".5 t", ".5x t")
    path.write_text("".join(lines))
    with pytest.raises(SourceError) as caught:
        list(runs.iter_run(str(path)))
    assert caught.value.line == 2501 and "field 5 (score)" in str(caught.value)


@pytest.mark.parametrize("suffix, unit", [(".parquet", "record"), (".jsonl", "line")])
def test_iter_run_of_tables(tmp_path, suffix, unit):
    path = tmp_path / f"run{suffix}"
    runs.write_run(str(path), [("q2", ["d1", "00123"], [1.0, 2.0]), ("q1", ["é"], [0.5])])
    assert list(runs.iter_run(str(path))) == list(runs.read_run(str(path)).items()) == [
        ("q2", {"d1": 1.0, "00123": 2.0}), ("q1", {"é": 0.5})]
    back = tmp_path / f"back{suffix}"
    runs.write_run(str(back), [("q2", ["d1"], [1.0]), ("q1", ["é"], [0.5]), ("q2", ["d2"], [0.25])])
    with pytest.raises(SourceError) as caught:
        list(runs.iter_run(str(back)))
    assert str(caught.value).startswith(f"{back}, {unit} 3: query 'q2' comes back after other queries (its earlier "
                                        f"{unit}s end at {unit} 1)")


@pytest.mark.parametrize("line, said", [(b"q1 Q0 d1 1 1 \xff\n", "field 6 (tag): invalid UTF-8"),
                                        (b"q1 \xff d1 1 1 t\n", "field 2 (Q0): invalid UTF-8"),
                                        (b"q1 Q0 d1 1 1 \n", "expected 6 fields")])
def test_a_plain_run_with_a_bad_q0_or_tag_or_a_space_too_many_is_refused_as_the_line_reader_refuses_it(
        tmp_path, line, said):
    """The Arrow reader of plain runs converted only the fields it keeps and took an empty field, so bytes that are
    not UTF-8 in Q0 or the tag, or a space after the last field (an empty tag), passed there while the line reader
    refuses them; whole or streamed, such a run is refused naming the line."""
    from ragloaders.eval.runs import iter_run

    run = tmp_path / "run.trec"
    run.write_bytes(b"q0 Q0 d0 1 2 t\n" + line)
    for read in (runs.read_run, lambda path: list(iter_run(path))):
        with pytest.raises(SourceError) as caught:
            read(str(run))
        assert str(caught.value).startswith(f"{run}, line 2: {said}"), str(caught.value)


def test_an_id_holding_a_nul_is_not_sent_to_another_format_that_eval_refuses_too(tmp_path):
    """write_run advised .parquet or .jsonl for an id holding a NUL, which eval refuses in every format."""
    from ragloaders.core.errors import UsageError
    from ragloaders.eval.runs import write_run

    for name in ("run.trec", "run.jsonl", "run.parquet"):
        with pytest.raises(UsageError) as caught:
            write_run(str(tmp_path / name), [("q1", ["d\0x"], [1.0])])
        assert "holds a NUL byte, which no run format carries" in str(caught.value)
        assert ".parquet or .jsonl instead" not in str(caught.value)
    with pytest.raises(UsageError, match="write the run as .parquet or .jsonl instead"):
        write_run(str(tmp_path / "spaced.trec"), [("q1", ["d x"], [1.0])])
