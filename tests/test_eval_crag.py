"""CRAG answer scoring: every rule of local_evaluation.py on crafted predictions over CRAG's real example records,
the 75-token trim with a tokenizer.json made here, the prediction readers, the verdicts file, and the judge against a
fake OpenAI-compatible endpoint on 127.0.0.1 (cache and retries included)."""

from __future__ import annotations

import bz2
import csv
import json
import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DATA, assert_names, assert_source_error
from local_http import send_body, served
from ragloaders.cli import main
from ragloaders.core.errors import SourceError
from ragloaders.eval import read_predictions, score_answers
from ragloaders.eval.judge import Judge, JudgeError, parse_verdict, read_prompt

EXAMPLE = DATA / "crag" / "dev_data.jsonl.bz2"
SECRET = "sk-test-DO-NOT-PRINT-4711"


def raw_records() -> list[dict]:
    with bz2.open(EXAMPLE, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> dict:
    """The example file with two real records given what the rules need: alternative answers for record 3 ('en')
    and record 9, and CRAG's false-premise answer 'invalid question' for record 4 (a false_premise question)."""
    records = raw_records()
    records[3]["alternative_answers"] = "['english', 'English language']"
    records[4]["answer"] = "invalid question"
    records[9]["alternative_answers"] = "['universal studios']"
    folder = tmp_path_factory.mktemp("crag")
    with bz2.open(folder / "dev_data.jsonl.bz2", "wt", compresslevel=1, encoding="utf-8") as f:
        f.writelines(json.dumps(record) + "\n" for record in records)
    return {"ids": [r["interaction_id"] for r in records], "data_dir": str(folder),
            "cache_dir": str(tmp_path_factory.mktemp("cache"))}


PREDICTIONS = {
    0: ("YES", "correct", "exact"),  # answer 'yes': case
    1: ("\n Salesforce \t", "correct", "exact"),  # stripped
    2: ("Well, I Don't Know which three.", "missing", "idk"),  # inside a longer answer, any case
    3: ("English", "correct", "exact"),  # an alternative answer
    4: ("That is an invalid question.", "correct", "invalid"),  # false premise: 'invalid' on both sides
    5: ("invalid", "hallucinated", "invalid"),  # 'invalid' on one side only: not judged
    6: ("i-878", "hallucinated", "no-judge"),
    7: ("NaN", "correct", "exact"),  # the answer is the string 'nan'
    8: ("I don\u2019t know", "hallucinated", "no-judge"),  # a curly apostrophe is not CRAG's "i don't know"
    9: ("universal", "hallucinated", "no-judge"),
}


def write_jsonl(path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def crafted_rows(crafted: dict) -> list[dict]:
    return [{"interaction_id": crafted["ids"][i], "prediction": p} for i, (p, _, _) in PREDICTIONS.items()]


def where(crafted: dict) -> dict:
    return {"data_dir": crafted["data_dir"], "cache_dir": crafted["cache_dir"]}


def test_every_rule_without_a_judge(crafted, tmp_path):
    report = score_answers("crag/task_1_and_2", write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted)),
                           **where(crafted))
    got = {crafted["ids"].index(v.interaction_id): (v.outcome, v.reason) for v in report.verdicts}
    assert got == {i: (outcome, reason) for i, (_, outcome, reason) in PREDICTIONS.items()}
    assert report.overall == {"score": pytest.approx(0.1), "accuracy": 0.5, "hallucination": 0.4, "missing": 0.1,
                              "n": 10, "n_correct": 5, "n_hallucinated": 4, "n_missing": 1}
    sports = report.breakdown["domain"]["sports"]  # record 4 alone: correct
    assert (sports["n"], sports["accuracy"], sports["score"]) == (1, 1.0, 1.0)
    assert "popularity" not in report.breakdown  # the example file has no popularity
    assert set(report.breakdown) == {"domain", "question_type", "static_or_dynamic"}
    text = report.text()
    assert "not cut to 75 tokens" in text and "lower bounds" in text and "exact-match only" in text


def test_missing_and_extra_ids_are_errors_unless_counted_missing(crafted, tmp_path, capsys):
    rows = crafted_rows(crafted)[1:] + [{"interaction_id": "not-a-record", "prediction": "yes"}]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    with pytest.raises(ValueError) as caught:
        score_answers("crag/task_1_and_2", path, **where(crafted))
    assert_names(caught.value, "crag/task_1_and_2", "'not-a-record'", repr(crafted["ids"][0]), "--missing-as-idk")
    args = ["eval", "crag/task_1_and_2", "--predictions", path, "--data-dir", crafted["data_dir"],
            "--cache-dir", crafted["cache_dir"]]
    assert main(args) == 2
    assert "--missing-as-idk" in capsys.readouterr().err
    report = score_answers("crag/task_1_and_2", path, missing_as_idk=True, **where(crafted))
    assert report.unknown_predictions == ["not-a-record"]
    assert report.absent_predictions == [crafted["ids"][0]]
    first = report.verdicts[0]
    assert (first.outcome, first.reason, first.prediction) == ("missing", "no-prediction", None)
    assert report.overall["n"] == 10 and report.overall["n_missing"] == 2
    assert main([*args, "--missing-as-idk", "--json"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert data["unknown_predictions"] == {"count": 1, "examples": ["not-a-record"]}
    assert data["authors_metrics"]["metrics"]["n_missing"] == 2
    assert "1 prediction is for an id not in crag/task_1_and_2" in out.err


def test_split_restricts_the_records_and_names_unknown_splits(crafted, tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    assert score_answers("crag/task_1_and_2", path, split="test", **where(crafted)).overall["n"] == 10
    with pytest.raises(ValueError) as caught:
        score_answers("crag/task_1_and_2", path, split="dev", **where(crafted))
    assert_names(caught.value, "crag/task_1_and_2", "'dev'", "validation, test")
    report = score_answers("crag/task_1_and_2", path, split="validation", missing_as_idk=True, **where(crafted))
    assert report.overall["n"] == 0 and report.other_split_predictions == 10


def test_jsonl_csv_and_parquet_predictions_give_the_same_verdicts(crafted, tmp_path):
    rows = crafted_rows(crafted)
    jsonl = write_jsonl(tmp_path / "p.jsonl", [{**row, "query": "kept aside"} for row in rows])
    with open(tmp_path / "p.csv", "w", encoding="utf-8-sig", newline="") as f:  # with a BOM, as spreadsheets write
        writer = csv.DictWriter(f, ["interaction_id", "prediction"])
        writer.writeheader()
        writer.writerows(rows)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "p.parquet")
    expected = {row["interaction_id"]: row["prediction"] for row in rows}
    for path in (jsonl, tmp_path / "p.csv", tmp_path / "p.parquet"):
        assert read_predictions(path) == expected, path


def test_invalid_utf8_deep_in_a_csv_is_named_by_its_byte_and_line_in_the_file(tmp_path):
    # csv reads text a buffer at a time: its UnicodeDecodeError counts from the last buffer, not from the file
    rows = "".join(f"id-{n},prédiction {n}\n" for n in range(5000))
    data = ("interaction_id,prediction\n" + rows).encode() + b"bad,\xff here\n"
    path = tmp_path / "p.csv"
    path.write_bytes(data)
    with pytest.raises(SourceError) as caught:
        read_predictions(path)
    offset = data.index(b"\xff")
    assert_source_error(caught.value, "p.csv", f"invalid UTF-8 at byte {offset}", repr(b"\xff he"), line=5002)


@pytest.mark.parametrize("name, text, line, facts", [
    ("p.jsonl", '{"interaction_id": "a", "prediction": "x"}\n{"interaction_id": "a", "prediction": "y"}\n', 2,
     ["interaction_id 'a'", "second prediction"]),
    ("p.jsonl", '{"interaction_id": "a", "prediction": 42}\n', 1, ["`prediction`", "string", "got 42"]),
    ("p.jsonl", '{"interaction_id": 1, "prediction": "x"}\n', 1, ["`interaction_id`", "string", "got 1"]),
    ("p.jsonl", '{"prediction": "x"}\n', 1, ["`interaction_id`", "string", "missing"]),
    ("p.csv", "interaction_id,answer\na,x\n", 1, ["header", "column prediction"]),
    ("p.csv", "interaction_id,prediction\na,x,extra\n", 2, ["more fields", "header"]),
])
def test_bad_predictions_name_the_file_and_line(tmp_path, name, text, line, facts):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        read_predictions(path)
    assert_source_error(caught.value, name, *facts, line=line)


def test_prediction_file_suffix_and_absence(tmp_path):
    with pytest.raises(ValueError) as caught:
        (tmp_path / "p.txt").write_text("x")
        read_predictions(tmp_path / "p.txt")
    assert_names(caught.value, tmp_path / "p.txt", ".jsonl", ".csv", ".parquet")
    with pytest.raises(FileNotFoundError) as caught:
        read_predictions(tmp_path / "nope.jsonl")
    assert_names(caught.value, tmp_path / "nope.jsonl")


def test_verdicts_file_is_new_and_never_replaced(crafted, tmp_path, capsys):
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    target = tmp_path / "verdicts.jsonl"
    args = ["eval", "crag/task_1_and_2", "--predictions", path, "--verdicts", str(target), "--data-dir",
            crafted["data_dir"], "--cache-dir", crafted["cache_dir"]]
    assert main(args) == 0
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [(line["outcome"], line["reason"]) for line in lines] == [(o, r) for _, o, r in PREDICTIONS.values()]
    assert lines[1]["prediction"] == "Salesforce"  # as scored: stripped
    target.write_text("mine")
    capsys.readouterr()
    assert main(args) == 2
    assert "exists; ragloaders writes only a new file there" in capsys.readouterr().err and target.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl", "verdicts.jsonl"]


def test_verdicts_are_written_where_the_filesystem_has_no_hard_links(crafted, tmp_path, monkeypatch, capsys):
    """The finished file takes its name by a rename there (after a last check), as a run file does."""
    import errno

    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    target = tmp_path / "verdicts.jsonl"

    def no_link(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    assert main(["eval", "crag/task_1_and_2", "--predictions", path, "--verdicts", str(target), "--data-dir",
                 crafted["data_dir"], "--cache-dir", crafted["cache_dir"]]) == 0, capsys.readouterr().err
    assert len(target.read_text(encoding="utf-8").splitlines()) == len(PREDICTIONS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl", "verdicts.jsonl"]  # no partial file left


def tiny_tokenizer(path) -> str:
    """A word-level tokenizer.json: whitespace-separated words, each a token."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "yes", "i", "don't", "know", *(f"w{n}" for n in range(100))]
    tokenizer = Tokenizer(models.WordLevel({word: n for n, word in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(path))
    return str(path)


def test_predictions_are_cut_to_75_tokens_with_a_tokenizer(crafted, tmp_path, capsys):
    long_idk = " ".join(f"w{n}" for n in range(80)) + " i don't know"
    rows = crafted_rows(crafted)
    rows[0]["prediction"] = long_idk  # 'i don't know' after token 75: not missing once cut
    rows[7]["prediction"] = "yes " * 74 + "w5"  # exactly 75 tokens
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    uncut = score_answers("crag/task_1_and_2", path, **where(crafted))
    assert (uncut.verdicts[0].outcome, uncut.verdicts[0].reason) == ("missing", "idk")
    tokenizer = tiny_tokenizer(tmp_path / "tokenizer.json")
    cut = score_answers("crag/task_1_and_2", path, tokenizer=tokenizer, **where(crafted))
    assert cut.verdicts[0].prediction == " ".join(f"w{n}" for n in range(75))
    assert (cut.verdicts[0].outcome, cut.verdicts[0].reason) == ("hallucinated", "no-judge")
    assert cut.verdicts[7].prediction == "yes " * 74 + "w5"  # kept whole
    assert cut.verdicts[3].prediction == "[UNK]"  # what CRAG's round trip through the tokenizer gives
    assert f"cut to 75 tokens of {tokenizer}" in cut.text()
    (tmp_path / "broken.json").write_text("{}")
    with pytest.raises(SourceError) as caught:
        score_answers("crag/task_1_and_2", path, tokenizer=str(tmp_path / "broken.json"), **where(crafted))
    assert_source_error(caught.value, "broken.json", "tokenizer.json")


# --- the judge -----------------------------------------------------------------------------------------------------


class FakeChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/chat/completions: score 1 for the prediction 'universal' against 'universal
    studios', a reply with no score for 'i-878', HTTP 503 once for the curly 'I don’t know', else score 0."""

    requests: list[dict] = []
    failed_once: set[str] = set()
    always_fail = False

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        user = body["messages"][1]["content"]
        if type(self).always_fail or ("I don\u2019t know" in user and user not in type(self).failed_once):
            type(self).failed_once.add(user)
            self.send_response(500 if type(self).always_fail else 503)
            self.end_headers()
            return
        if "Prediction: universal\n" in user and "Ground truth: universal studios\n" in user:
            content = '{"score": 1, "explanation": "same studio"}'
        elif "Prediction: i-878" in user:
            content = "I would say it is probably fine."
        else:
            content = '{"score": 0, "explanation": "no"}'
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        send_body(self, reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server():
    FakeChat.requests, FakeChat.failed_once, FakeChat.always_fail = [], set(), False
    with served(FakeChat) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_judge_decides_what_rules_leave_and_its_cache_makes_a_rerun_free(crafted, tmp_path, chat_server,
                                                                           monkeypatch, capsys):
    monkeypatch.setenv("RAGLOADERS_JUDGE_API_KEY", SECRET)
    monkeypatch.setattr("ragloaders.eval.judge.time.sleep", lambda seconds: None)
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    cache = tmp_path / "judge-cache"
    args = ["eval", "crag/task_1_and_2", "--predictions", path, "--judge-url", chat_server, "--judge-model",
            "grader-1", "--judge-cache", str(cache), "--data-dir", crafted["data_dir"], "--cache-dir",
            crafted["cache_dir"], "--json"]
    assert main(args) == 0
    first = capsys.readouterr()
    data = json.loads(first.out)
    # judged: 6 (no score), 8 (503 once, then 0), 9 twice (its answer: 0; its alternative answer: 1)
    users = [r["body"]["messages"][1]["content"] for r in FakeChat.requests]
    assert len(users) == 5 and sum("universal" in u for u in users) == 2
    assert all(r["path"] == "/v1/chat/completions" and r["auth"] == f"Bearer {SECRET}" for r in FakeChat.requests)
    body = FakeChat.requests[0]["body"]
    assert body["model"] == "grader-1" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert users[0].startswith("Question: ") and "\n Ground truth: " in users[0] and "\n Prediction: " in users[0]
    metrics = data["authors_metrics"]["metrics"]
    assert (metrics["n_correct"], metrics["n_missing"], metrics["n_hallucinated"]) == (6, 1, 3)
    assert data["judge"] == {"requests": 5, "cached": 0, "unparseable": 1}
    assert data["reasons"]["judge"] == 3 and data["reasons"]["no-judge"] == 0
    assert "1 judge reply held no score of 0 or 1" in first.err
    FakeChat.requests.clear()
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert FakeChat.requests == [] and again["judge"] == {"requests": 0, "cached": 4, "unparseable": 1}
    assert again["authors_metrics"] == data["authors_metrics"]
    assert SECRET not in first.out + first.err
    assert all(SECRET not in p.read_text() for p in cache.iterdir())


def test_a_judge_that_keeps_failing_stops_with_a_bounded_number_of_requests(crafted, tmp_path, chat_server,
                                                                            monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("RAGLOADERS_JUDGE_API_KEY", raising=False)
    FakeChat.always_fail = True
    judge = Judge(chat_server, "grader-1", str(tmp_path / "cache"), retries=2, retry_wait=0)
    with pytest.raises(JudgeError) as caught:
        judge.verdict("q", "a", "b")
    assert_names(caught.value, chat_server, "HTTP 500", "3 request")
    assert len(FakeChat.requests) == 3 and FakeChat.requests[0]["auth"] == f"Bearer {SECRET}"
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    monkeypatch.setattr("ragloaders.eval.judge.time.sleep", lambda seconds: None)
    assert main(["eval", "crag/task_1_and_2", "--predictions", path, "--judge-url", chat_server, "--judge-model",
                 "m", "--judge-cache", str(tmp_path / "c2"), "--data-dir", crafted["data_dir"], "--cache-dir",
                 crafted["cache_dir"]]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("ragloaders: error: judge m at ") and "HTTP 500" in last and chat_server in last
    assert "records were scored before it" in last and SECRET not in err
    assert len(FakeChat.requests) == 3 + 4  # the CLI's judge: 1 request + RETRIES


def test_templates_py_is_read_as_data_never_run(tmp_path):
    templates = tmp_path / "templates.py"
    marker = tmp_path / "ran"
    templates.write_text(f'import pathlib\npathlib.Path({str(marker)!r}).write_text("x")\n'
                         'INSTRUCTIONS = """Grade it."""\nIN_CONTEXT_EXAMPLES = "Examples: none"\n')
    assert read_prompt(str(templates)) == "Grade it.\nExamples: none"
    assert not marker.exists()
    templates.write_text('INSTRUCTIONS = "a" + "b"\nIN_CONTEXT_EXAMPLES = ""\n')
    with pytest.raises(SourceError) as caught:
        read_prompt(str(templates))
    assert_source_error(caught.value, "templates.py", "INSTRUCTIONS", "string literal", line=1)
    templates.write_text('INSTRUCTIONS = "a"\n')
    with pytest.raises(SourceError) as caught:
        read_prompt(str(templates))
    assert_source_error(caught.value, "templates.py", "IN_CONTEXT_EXAMPLES")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Reply with JSON.")
    assert read_prompt(str(prompt)) == "Reply with JSON."
    prompt.write_bytes(b"Reply\r\nwith JSON.\r")
    assert read_prompt(str(prompt)) == "Reply\nwith JSON.\n"
    prompt.write_bytes(b"Reply \xe9 with JSON.")  # Latin-1, not UTF-8
    with pytest.raises(SourceError) as caught:
        read_prompt(str(prompt))
    assert_source_error(caught.value, "prompt.txt", "UTF-8", "byte 6", repr(b"\xe9 wi"))


@pytest.mark.parametrize("reply, verdict", [
    ('{"score": 1, "explanation": "ok"}', (True, "ok")),
    ('{"score": 0}', (False, "")),
    ('Wait.\n{"explanation": "x"}\nNo: {"score": 1, "explanation": "y"}', (True, '{"score": 1, "explanation": "y"}')),
    ('{"score": 2}', (None, '{"score": 2}')),
    ('{"score": true}', (None, '{"score": true}')),
    ("I think it is right", (None, "I think it is right")),
])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply) == verdict


def test_judge_prompt_from_templates_py_is_the_system_message(crafted, tmp_path, chat_server, capsys):
    templates = tmp_path / "templates.py"
    templates.write_text('INSTRUCTIONS = "Judge strictly."\nIN_CONTEXT_EXAMPLES = """Example: none."""\n')
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted)[9:] + crafted_rows(crafted)[:9])
    args = ["eval", "crag/task_1_and_2", "--predictions", path, "--judge-url", chat_server + "/chat/completions",
            "--judge-model", "m", "--judge-cache", str(tmp_path / "c"), "--data-dir", crafted["data_dir"],
            "--cache-dir", crafted["cache_dir"]]
    assert main([*args, "--judge-prompt", str(templates)]) == 0
    systems = {r["body"]["messages"][0]["content"] for r in FakeChat.requests}
    assert systems == {"Judge strictly.\nExample: none."}
    assert all(r["path"] == "/v1/chat/completions" for r in FakeChat.requests)
    capsys.readouterr()
    assert main(args[:6] + args[8:]) == 2  # --judge-url without --judge-model
    assert "--judge-url and --judge-model go together" in capsys.readouterr().err


def test_judge_timeout_and_retries_are_options_of_eval(crafted, tmp_path, chat_server, monkeypatch, capsys):
    from ragloaders.eval.commands import judge_limits

    assert judge_limits(None, None) == {"timeout": 120, "retries": 3}  # the defaults stay
    assert judge_limits("2.5", "0") == {"timeout": 2.5, "retries": 0}
    monkeypatch.setattr("ragloaders.eval.judge.time.sleep", lambda seconds: None)
    FakeChat.always_fail = True
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    base = ["eval", "crag/task_1_and_2", "--predictions", path, "--judge-url", chat_server, "--judge-model", "m",
            "--judge-cache", str(tmp_path / "c"), "--data-dir", crafted["data_dir"], "--cache-dir",
            crafted["cache_dir"]]
    assert main([*base, "--judge-retries", "1", "--judge-timeout", "5"]) == 2
    assert "HTTP 500" in capsys.readouterr().err and len(FakeChat.requests) == 2  # 1 request + 1 retry
    bad = [("--judge-timeout", v) for v in ("0", "-1", "nan", "inf", "1e400", "soon", "")] + [
        ("--judge-retries", v) for v in ("-1", "2.5", "many", "")]
    for option, value in bad:
        assert main([*base, option, value]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"ragloaders: error: {option} must be "), (option, value, err)
        assert err.endswith(f"got {value!r}\n"), (option, value, err)  # what was typed, not what it parsed to
    assert len(FakeChat.requests) == 2  # no bad value reached the judge
    assert main(base[:4] + base[8:] + ["--judge-timeout", "5"]) == 2  # without --judge-url
    assert "--judge-timeout need(s) --judge-url and --judge-model" in capsys.readouterr().err


def test_an_answers_report_ends_with_what_was_scored(crafted, tmp_path, capsys):
    """The README says every report ends with what was scored; an answers report had no identity block. It names
    the example file by its sha256, the splits, the predictions file by its own, and the judge (none here); one
    byte more in the predictions gives another identity."""
    import hashlib

    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    args = ["eval", "crag/task_1_and_2", "--predictions", path, "--data-dir", crafted["data_dir"], "--cache-dir",
            crafted["cache_dir"]]
    assert main([*args, "--json"]) == 0
    identity = json.loads(capsys.readouterr().out)["identity"]
    source = Path(crafted["data_dir"]) / "dev_data.jsonl.bz2"
    assert identity["source"]["files"] == [{"name": "dev_data.jsonl.bz2", "bytes": source.stat().st_size,
                                            "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}]
    assert identity["splits"] == ["validation", "test"] and identity["judge"] is None and not identity["tokenizer"]
    assert identity["predictions"] == {"file": "p.jsonl", "bytes": os.path.getsize(path),
                                       "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}
    assert main(args) == 0
    last = capsys.readouterr().out.splitlines()[-2:]
    assert last[0].startswith("scored: ragloaders ") and identity["source"]["files"][0]["sha256"] in last[0]
    assert last[1].startswith("scored: splits validation+test; predictions p.jsonl") and "no judge" in last[1]
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n")
    assert score_answers("crag/task_1_and_2", path, **where(crafted)).identity["predictions"] != identity[
        "predictions"]


@pytest.mark.slow  # (seconds; CI runs it)
@pytest.mark.parametrize("other_split", [False, True], ids=["same split", "other split"])
def test_an_interaction_id_naming_two_records_is_refused(tmp_path, capsys, other_split):
    """A prediction is keyed by interaction_id: with record 6 given record 3's id, one prediction was scored against
    both records (different answers), exit 0 with nothing said."""
    records = raw_records()
    records[6]["interaction_id"] = records[3]["interaction_id"]
    if other_split:
        records[6]["split"] = 0
    folder = tmp_path / "crag"
    folder.mkdir()
    with bz2.open(folder / "dev_data.jsonl.bz2", "wt", compresslevel=1, encoding="utf-8") as f:
        f.writelines(json.dumps(record) + "\n" for record in records)
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"interaction_id": r["interaction_id"], "prediction": "x"}
                                                    for r in records[:6] + records[7:]])
    with pytest.raises(SourceError) as caught:
        score_answers("crag/task_1_and_2", predictions, split="test", data_dir=str(folder),
                      cache_dir=str(tmp_path / "c"))
    assert_names(caught.value, f"interaction_id '{records[3]['interaction_id']}' names two records")
    assert main(["eval", "crag/task_1_and_2", "--predictions", predictions, "--data-dir", str(folder),
                 "--cache-dir", str(tmp_path / "c")]) == 2
    assert "names two records" in capsys.readouterr().err
