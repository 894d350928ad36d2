"""mmRAG: real query samples and complete query files, generated corpora, bad input, hub download, build."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import orjson
import pytest
import ragloaders
from conftest import LOADERS, assert_names, assert_source_error
from local_http import served
from mmrag_generated import demo_corpus_text, dump_array, generated_corpus, judged_chunk_ids, write_large_array
from ragloaders.benchmarks.mmrag.builder import parse_answers
from ragloaders.benchmarks.mmrag.catalogue import HUB_REPO_ID
from ragloaders.benchmarks.mmrag.facts import published_counts
from ragloaders.core.errors import SourceError

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = DATA / "mmrag"
FULL = DATA / "mmrag-full"
SPLITS = ("train", "dev", "test")


def records(folder: Path, split: str) -> list[dict]:
    return json.loads((folder / f"mmrag_{split}.json").read_text(encoding="utf-8"))


def load(config: str, data_dir: Path, tmp_path: Path, **kwargs):
    return ragloaders.load("mmrag", config, data_dir=str(data_dir), cache_dir=str(tmp_path / "cache"), **kwargs)


def folder_with(tmp_path: Path, query_folder: Path, corpus_text: str | None = None) -> Path:
    """A data_dir holding the query files of `query_folder` and the given processed_documents.json."""
    folder = tmp_path / "mmrag"
    folder.mkdir(exist_ok=True)
    for split in SPLITS:
        shutil.copy(query_folder / f"mmrag_{split}.json", folder / f"mmrag_{split}.json")
    if corpus_text is not None:
        (folder / "processed_documents.json").write_text(corpus_text, encoding="utf-8")
    return folder


# --- answers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "answers", "fell_back"),
    [
        ("['a', \"b's\"]", ["a", "b's"], False),
        ("['Jamaican English', 'Jamaican Creole English Language']", ["Jamaican English",
                                                                      "Jamaican Creole English Language"], False),
        ("Upa River", ["Upa River"], False),
        ("", [], False),
        ("[]", [], False),
        ("11", ["11"], False),
        ("__import__('os').getcwd()", ["__import__('os').getcwd()"], False),
        ("[citation needed", ["[citation needed"], False),
        ("[not a literal]", ["[not a literal]"], True),
        ("[1, 2]", ["[1, 2]"], True),
        ("[__import__('os').getcwd()]", ["[__import__('os').getcwd()]"], True),
    ],
)
def test_parse_answers(answer, answers, fell_back):
    assert parse_answers(answer) == (answers, fell_back)


LITERAL_PIECES = ["'", '"', "\\", ",", " ", "\n", "\r", "\t", "\f", "\v", "a", "é", "😀", "\x00", "\ud800", "#", "[",
                  "]", "b", "r", "u", "\\x4", "\\u00e9", "\\N{DASH}", "\\\n", "\\'", '\\"', "\\\\"]


def test_a_list_literal_is_read_as_ast_literal_eval_reads_it():
    """literal_string_list's linear path against ast.literal_eval on 30,000 seeded random texts: bracketed runs of
    quotes, escapes, separators, line ends, NULs and surrogates, and lists of quoted pieces."""
    import ast
    import random
    import warnings

    from ragloaders.core.readers.values import literal_string_list

    def python_reads(text: str) -> list[str] | None:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        return value if isinstance(value, list) and all(isinstance(item, str) for item in value) else None

    draw = random.Random(7)

    def piece(most: int) -> str:
        return "".join(draw.choice(LITERAL_PIECES) for _ in range(draw.randint(0, most)))

    parsed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ('\d': an invalid escape Python still reads)
        for _ in range(30_000):
            if draw.random() < 0.5:
                text = draw.choice(["[", "['"]) + piece(12) + draw.choice(["]", "']"])
            else:
                quoted = [draw.choice([repr, lambda s: f"'{s}'", lambda s: f'"{s}"'])(piece(5))
                          for _ in range(draw.randint(0, 4))]
                text = (draw.choice(["[", "[ ", "[\n"]) + draw.choice([", ", ",", " , ", "\n,"]).join(quoted)
                        + draw.choice(["", ",", " ,", "\n", ",,"]) + draw.choice(["]", "] ", "]]"]))
            expected = python_reads(text)
            assert literal_string_list(text) == expected, text
            parsed += expected is not None
    assert parsed > 5_000


@pytest.mark.slow  # (a child parses 10 MB of answer: seconds; CI runs it)
def test_a_list_literal_is_read_in_memory_and_time_linear_in_its_length(tmp_path):
    """ast.literal_eval's syntax tree cost ~260 bytes per byte of a list of short strings (3 MB of answer: 1 GB),
    and the answer was parsed twice. In a child allowed 512 MB of address space past its imports, an answer of 10 MB
    parses as Python reads it; one that only the general path reads is kept whole past 64 KiB."""
    records = json.loads((DATA / "mmrag" / "mmrag_test.json").read_text())
    records[0]["answer"] = "[" + "'a', " * 2_000_000 + "'b\\n']"
    records[1]["answer"] = "[" + "'a' 'b', " * 10_000 + "]"  # implicit concatenation: the general path's only
    for name in ("mmrag_train.json", "mmrag_dev.json", "processed_documents.json"):
        shutil.copy(DATA / "mmrag" / name, tmp_path / name)
    (tmp_path / "mmrag_test.json").write_text(json.dumps(records))
    script = textwrap.dedent("""
        import json, resource, sys
        import datasets, ragloaders
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20),) * 2)
        rows = ragloaders.load("mmrag", "records", split="test", data_dir=sys.argv[1], cache_dir=sys.argv[2])
        first, second = rows[0]["answers"], rows[1]["answers"]
        print(json.dumps([len(first), first[0], first[-1], second]))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(tmp_path / "cache")], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT / "loaders")})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [2_000_001, "a", "b\n", [records[1]["answer"]]]
    assert "1 answer looks like a list but is not a list literal; kept whole" in done.stderr


@pytest.mark.parametrize(("config", "file"), [("corpus", "processed_documents.json"), ("queries", "mmrag_dev.json"),
                                             ("qrels", "mmrag_dev.json"), ("routing", "mmrag_dev.json")])
def test_an_empty_array_is_refused_naming_the_file(config, file, tmp_path):
    """`[]` loaded as a split of 0 rows that looked complete; an empty JSONL file was already refused."""
    folder = folder_with(tmp_path, DATA / "mmrag", (DATA / "mmrag" / "processed_documents.json").read_text())
    (folder / file).write_text(" [\n] ")
    with pytest.raises(SourceError) as caught:
        load(config, folder, tmp_path, **({"num_proc": 2} if config == "corpus" else {}))
    assert_source_error(caught.value, file, "no records: the array is empty")


# --- real query records -------------------------------------------------------------------------------


def test_sample_default_rows_are_the_records(tmp_path):
    loaded = load("records", SAMPLE, tmp_path)
    assert set(loaded) == set(SPLITS)
    for split in SPLITS:
        source = records(SAMPLE, split)
        rows = loaded[split].to_list()
        assert len(rows) == len(source)
        for row, record in zip(rows, source):
            assert row["id"] == record["id"]
            assert row["query"] == record["query"]
            assert row["answer"] == record["answer"]
            assert row["relevant_chunks"] == [{"chunk_id": c, "score": g} for c, g in record["relevant_chunks"].items()]
            assert row["ori_context"] == record["ori_context"]
            assert row["dataset_score"] == record["dataset_score"]
    features = loaded["train"].features
    assert features["relevant_chunks"] == datasets.List({"chunk_id": datasets.Value("string"),
                                                         "score": datasets.Value("int32")})
    assert list(features["dataset_score"]) == ["tat", "triviaqa", "ott", "kg", "nq"]


def test_sample_answers_including_empty_ones(tmp_path):
    rows = {row["id"]: row for split in SPLITS for row in load("records", SAMPLE, tmp_path)[split].to_list()}
    for empty in ("webqsp_2120", "webqsp_1593", "webqsp_183"):
        assert rows[empty]["answer"] == ""
        assert rows[empty]["answers"] == []
    listed = [row for row in rows.values() if row["answer"].startswith("[")]
    assert listed, "the sample holds list-literal answers"
    for row in listed:
        assert row["answers"] and all(a in row["answer"] for a in row["answers"])
    plain = [row for row in rows.values() if row["answer"] and not row["answer"].startswith("[")]
    assert plain and all(row["answers"] == [row["answer"]] for row in plain)


@pytest.mark.slow  # (seconds; CI runs it)
def test_full_query_files(tmp_path):
    default = load("records", FULL, tmp_path)
    queries = load("queries", FULL, tmp_path)
    qrels = load("qrels", FULL, tmp_path)
    assert {split: default[split].num_rows for split in SPLITS} == {"train": 3072, "dev": 766, "test": 1286}
    published = published_counts("mmrag")
    for config, loaded in (("records", default), ("queries", queries)):
        assert {split: loaded[split].num_rows for split in SPLITS} == {s: published[(config, s)] for s in SPLITS}
    for split in SPLITS:
        source = records(FULL, split)
        assert queries[split]["_id"] == [r["id"] for r in source]
        assert queries[split]["text"] == [r["query"] for r in source]
        assert all(not parse_answers(r["answer"])[1] for r in source), "every real answer parses"
        assert default[split]["answers"] == [parse_answers(r["answer"])[0] for r in source]
        expected = [(r["id"], c, g) for r in source for c, g in r["relevant_chunks"].items()]
        table = qrels[split].data
        got = list(zip(table.column("query-id").to_pylist(), table.column("corpus-id").to_pylist(),
                       table.column("score").to_pylist()))
        assert got == expected
        assert 0 in table.column("score").to_pylist(), "grade 0 is kept"
        assert len(set(table.column("query-id").to_pylist())) == published[("qrels", split)]
    assert qrels["train"].features["score"] == datasets.Value("int32")
    assert sum(len(a) == 0 for a in default["train"]["answers"]) == 2


# --- corpus ---------------------------------------------------------------------------------------------


def corpus_of(chunk_ids: list[str]) -> list[dict]:
    return generated_corpus(chunk_ids, seed=7)


@pytest.mark.parametrize("indent", [None, pytest.param(4, marks=pytest.mark.slow)])
def test_corpus_from_real_chunk_ids(tmp_path, indent):
    chunk_ids = judged_chunk_ids(FULL)
    assert "m.0_hp_2l_205" in chunk_ids and len(chunk_ids) > 70_000
    source = corpus_of(chunk_ids)
    folder = folder_with(tmp_path, SAMPLE, dump_array(source, indent))
    corpus = load("corpus", folder, tmp_path)
    assert list(corpus) == ["corpus"]
    table = corpus["corpus"].data
    assert table.num_rows == len(source)
    assert table.column("_id").to_pylist() == [r["id"] for r in source]
    assert table.column("text").to_pylist() == [r["text"] for r in source]
    assert set(table.column("title").to_pylist()) == {""}
    assert table.column("doc_id").to_pylist() == [r["id"].rsplit("_", 1)[0] for r in source]
    sources = dict(zip(table.column("_id").to_pylist(), table.column("source").to_pylist()))
    assert sources["m.0_hp_2l_205"] == "kg"
    doc_ids = dict(zip(table.column("_id").to_pylist(), table.column("doc_id").to_pylist()))
    assert doc_ids["m.0_hp_2l_205"] == "m.0_hp_2l"
    expected_source = {"nq": "nq", "triviaqa": "triviaqa", "ott": "ott", "tat": "tat"}
    for chunk_id, got in sources.items():
        assert got == expected_source.get(chunk_id.split("_", 1)[0], "kg")
    assert set(sources.values()) == {"nq", "triviaqa", "ott", "tat", "kg"}


def test_corpus_streaming_equals_prepared(tmp_path):
    folder = folder_with(tmp_path, SAMPLE, dump_array(corpus_of(judged_chunk_ids(SAMPLE)), 4))
    prepared = load("corpus", folder, tmp_path)["corpus"].to_list()
    streamed = list(load("corpus", folder, tmp_path, streaming=True)["corpus"])
    assert streamed == prepared
    assert len(prepared) == len(judged_chunk_ids(SAMPLE))


def test_demo_corpus_is_the_generated_one():
    assert (SAMPLE / "processed_documents.json").read_text(encoding="utf-8") == demo_corpus_text(SAMPLE)


def test_dangling_qrels_are_counted_by_validate_and_kept(tmp_path):
    from ragloaders.publish.validate import integrity

    chunk_ids = judged_chunk_ids(SAMPLE)
    left_out = {chunk_ids[0], chunk_ids[5], "m.0_hp_2l_205"}
    folder = folder_with(tmp_path, SAMPLE, dump_array(corpus_of([c for c in chunk_ids if c not in left_out]), 4))
    report = integrity("mmrag", data_dir=str(folder), cache_dir=str(tmp_path / "cache"))
    qrels = {f["split"]: f for f in report["splits"] if f["config"] == "qrels"}
    qrels_loaded = load("qrels", folder, tmp_path)
    for split in SPLITS:
        judged = [c for r in records(SAMPLE, split) for c in r["relevant_chunks"]]
        assert qrels[split]["missing_docs"] == len(left_out & set(judged))
        assert qrels[split]["rows"] == qrels_loaded[split].num_rows == len(judged), "dangling qrels are kept"
    missing = [f for f in report["errors"] if f["check"] == "missing_docs"]
    assert {i for f in missing for i in f["ids"]} == left_out
    assert not report["ok"]


# --- memory on large arrays -------------------------------------------------------------------------------


MEASURE = """
import json, sys
import ragloaders
data_dir, cache_dir, streaming = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
loaded = ragloaders.load("mmrag", "corpus", data_dir=data_dir, cache_dir=cache_dir, streaming=streaming)
rows = sum(1 for _ in loaded["corpus"]) if streaming else loaded["corpus"].num_rows
# VmHWM, not ru_maxrss: after fork + exec, ru_maxrss still counts the parent's pages at fork time.
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rows": rows, "peak_mb": peak_kb / 1024}))
"""


def measure(folder: Path, cache: Path, streaming: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(LOADERS)}
    out = subprocess.run([sys.executable, "-c", MEASURE, str(folder), str(cache), "1" if streaming else "0"],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # writes and parses 240 MB
def test_peak_memory_stays_flat_on_large_pretty_printed_arrays(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    chunk_ids = judged_chunk_ids(SAMPLE)
    small_rows = write_large_array(small / "processed_documents.json", 40 << 20, 4, chunk_ids)
    large_rows = write_large_array(large / "processed_documents.json", 200 << 20, 4, chunk_ids)
    small_run = measure(small, tmp_path / "cache-small", streaming=False)
    large_run = measure(large, tmp_path / "cache-large", streaming=False)
    streamed = measure(large, tmp_path / "cache-stream", streaming=True)
    assert (small_run["rows"], large_run["rows"], streamed["rows"]) == (small_rows, large_rows, large_rows)
    assert large_run["peak_mb"] < 500 and streamed["peak_mb"] < 500, (large_run, streamed)
    assert large_run["peak_mb"] - small_run["peak_mb"] < 40, (small_run, large_run)


# --- bad input ------------------------------------------------------------------------------------------


def write_queries(folder: Path, split: str, text: str) -> Path:
    path = folder / f"mmrag_{split}.json"
    path.write_text(text, encoding="utf-8")
    return path


def edited_sample(tmp_path: Path, split: str, index: int, edit) -> Path:
    folder = folder_with(tmp_path, SAMPLE)
    source = records(SAMPLE, split)
    edit(source[index])
    write_queries(folder, split, json.dumps(source, indent=4))
    return folder


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("query"), "missing field `query`"),
        (lambda r: r["relevant_chunks"].update({"nq_1_2": 3}), "must be a grade in [0, 1, 2], got 3"),
        (lambda r: r["relevant_chunks"].update({"nq_1_2": -1}), "got -1"),
        (lambda r: r["relevant_chunks"].update({"nq_1_2": "1"}), 'got "1"'),
        (lambda r: r["relevant_chunks"].update({"nq_1_2": True}), "got true"),
        (lambda r: r.update(answer=["a"]), "`answer` must be a str"),
        (lambda r: r["dataset_score"].pop("kg"), "`dataset_score` must have the keys"),
        (lambda r: r.update(extra=1), "unexpected field 'extra'"),
        (lambda r: r["ori_context"].append(5), "must be a string, got 5"),
    ],
)
@pytest.mark.parametrize("config", ["records", "qrels"])
def test_bad_query_record_names_file_and_record(tmp_path, edit, message, config):
    folder = edited_sample(tmp_path, "dev", 4, edit)
    with pytest.raises(SourceError) as raised:
        load(config, folder, tmp_path)
    error = raised.value
    assert error.path.endswith("mmrag_dev.json") and error.record == 4
    assert message in str(error) and "mmrag_dev.json, record 4" in str(error)


def test_truncated_query_file(tmp_path):
    folder = folder_with(tmp_path, SAMPLE)
    text = (SAMPLE / "mmrag_train.json").read_text(encoding="utf-8")
    source = records(SAMPLE, "train")
    cut = text.index(f'"id": "{source[7]["id"]}"') + 40
    write_queries(folder, "train", text[:cut])
    with pytest.raises(SourceError) as raised:
        load("queries", folder, tmp_path)
    assert_source_error(raised.value, "mmrag_train.json", "truncated", record=7)
    assert raised.value.record == 7


@pytest.mark.parametrize("indent", [None, 4])
def test_truncated_corpus(tmp_path, indent):
    chunk_ids = judged_chunk_ids(SAMPLE)
    text = dump_array(corpus_of(chunk_ids), indent)
    cut = text.index(chunk_ids[300]) + 5
    folder = folder_with(tmp_path, SAMPLE, text[:cut])
    with pytest.raises(SourceError) as raised:
        load("corpus", folder, tmp_path)
    assert_source_error(raised.value, "processed_documents.json", "truncated", record=300)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"id": "nq_1_2"}, "missing field `text`"),
        ({"text": "x"}, "missing field `id`"),
        ({"id": "nq_1_2", "text": "x", "title": "t"}, "unexpected field 'title'"),
        ({"id": "nq_1_2", "text": None}, "`text` must be a string, got null"),
        ({"id": 12, "text": "x"}, "`id` must be a string, got 12"),
        (["nq_1_2", "x"], "expected a JSON object"),
        ({"id": "wiki_1_2", "text": "x"}, "chunk id 'wiki_1_2' fits no source"),
        ({"id": "nq_12", "text": "x"}, "chunk id 'nq_12' fits no source"),
        ({"id": "m.0_hp_2l", "text": "x"}, "chunk id 'm.0_hp_2l' fits no source"),
        ({"id": "m.0abc", "text": "x"}, "chunk id 'm.0abc' fits no source"),
    ],
)
def test_bad_corpus_record(tmp_path, record, message):
    source = corpus_of(judged_chunk_ids(SAMPLE))
    source.insert(123, record)
    folder = folder_with(tmp_path, SAMPLE, dump_array(source, 4))
    with pytest.raises(SourceError) as raised:
        load("corpus", folder, tmp_path)
    assert raised.value.record == 123 and message in str(raised.value)
    assert "processed_documents.json, record 123" in str(raised.value)


@pytest.mark.parametrize("text", ['{"id": "x"}', "", "  \n"])
def test_not_an_array(tmp_path, text):
    folder = folder_with(tmp_path, SAMPLE)
    write_queries(folder, "test", text)
    with pytest.raises(SourceError) as raised:
        load("queries", folder, tmp_path)
    assert_source_error(raised.value, "mmrag_test.json", "JSON array", "'{'" if text.strip() else "empty")


def test_missing_file_names_it(tmp_path):
    folder = folder_with(tmp_path, SAMPLE)
    with pytest.raises(FileNotFoundError, match="processed_documents.json"):
        load("corpus", folder, tmp_path)


def test_edited_source_is_not_served_from_cache(tmp_path):
    folder = folder_with(tmp_path, SAMPLE)
    assert load("queries", folder, tmp_path)["test"].num_rows == len(records(SAMPLE, "test"))
    write_queries(folder, "test", json.dumps(records(SAMPLE, "test")[:3], indent=4))
    assert load("queries", folder, tmp_path)["test"].num_rows == 3


# --- hub download ----------------------------------------------------------------------------------------


class HubFiles(http.server.BaseHTTPRequestHandler):
    """Serves `resolve/<revision>/<file>` of one dataset repository the way the hub answers hf_hub_download."""

    folder: Path
    requests: list
    commit = "0123456789abcdef0123456789abcdef01234567"

    def _file(self) -> Path | None:
        prefix = f"/datasets/{HUB_REPO_ID}/resolve/main/"
        if not self.path.startswith(prefix):
            return None
        path = self.folder / self.path[len(prefix):]
        return path if path.is_file() else None

    def _headers(self, path: Path | None) -> None:
        if path is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", self.commit)
        self.send_header("ETag", '"' + hashlib.sha256(path.read_bytes()).hexdigest() + '"')
        self.send_header("Content-Length", str(path.stat().st_size))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()

    def do_HEAD(self):  # noqa: N802 - http.server's naming
        self.requests.append(("HEAD", self.path))
        self._headers(self._file())

    def do_GET(self):  # noqa: N802
        self.requests.append(("GET", self.path))
        path = self._file()
        self._headers(path)
        if path is not None:
            self.wfile.write(path.read_bytes())

    def log_message(self, *args):
        pass


DOWNLOAD = """
import json, sys
import ragloaders
out = {}
for config in sys.argv[2:]:
    loaded = ragloaders.load("mmrag", config, cache_dir=sys.argv[1])
    out[config] = {split: loaded[split].num_rows for split in loaded}
print(json.dumps(out))
"""


def test_download_from_hub_served_locally(tmp_path):
    folder = folder_with(tmp_path, SAMPLE, (SAMPLE / "processed_documents.json").read_text(encoding="utf-8"))
    handler = type("Handler", (HubFiles,), {"folder": folder, "requests": []})
    with served(handler) as server:
        env = {**os.environ, "PYTHONPATH": str(LOADERS), "HF_ENDPOINT": f"http://127.0.0.1:{server.server_port}",
               "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0"}
        run = subprocess.run([sys.executable, "-c", DOWNLOAD, str(tmp_path / "cache"), "queries", "corpus"],
                             env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-3000:]
        counts = json.loads(run.stdout.strip().splitlines()[-1])
    assert counts["queries"] == {split: len(records(SAMPLE, split)) for split in SPLITS}
    assert counts["corpus"] == {"corpus": len(judged_chunk_ids(SAMPLE))}
    fetched = {path.rsplit("/", 1)[-1] for method, path in handler.requests
               if method == "GET" and "/resolve/" in path}  # not the one look at the repository before them
    assert fetched == {"mmrag_train.json", "mmrag_dev.json", "mmrag_test.json", "processed_documents.json"}


@pytest.mark.slow
def test_a_failed_hub_download_is_one_download_error_naming_the_url_and_what_to_do(tmp_path):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: the connection is refused
    env = {**os.environ, "PYTHONPATH": str(LOADERS), "HF_ENDPOINT": f"http://127.0.0.1:{port}",
           "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0",
           "HF_HUB_ETAG_TIMEOUT": "2"}
    script = (  # huggingface_hub backs off 1+2+4+8+8 s between its retries: the test needs their outcome, not the wait
        "import sys, time, ragloaders\n"
        "time.sleep = lambda seconds: None\n"
        "try:\n"
        "    ragloaders.load('mmrag', 'queries', cache_dir=sys.argv[1])\n"
        "except ragloaders.DownloadError as e:\n"
        "    print(e)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    message = run.stdout.strip()
    assert f"http://127.0.0.1:{port}/datasets/{HUB_REPO_ID}/resolve/" in message and "mmrag_" in message
    assert "download failed" in message and "HF_ENDPOINT" in message and "--data-dir" in message
    assert "HF_HUB_OFFLINE=1" in message and "Connection refused" in message and message.count("\n") == 0


# --- registry and the hub folder ---------------------------------------------------------------------------


def test_registered_with_its_configs():
    assert "mmrag" in ragloaders.registry()
    builder = ragloaders.builder("mmrag", "corpus", data_dir=str(SAMPLE))
    assert builder.info.features["doc_id"] == datasets.Value("string")
    with pytest.raises(ValueError) as raised:
        ragloaders.builder("mmrag", "pages")
    assert_names(raised.value, "'pages'", "corpus")


def test_build_round_trips_through_load_dataset(mmrag_build, tmp_path):
    out = mmrag_build.out
    assert mmrag_build.data_dir == str(SAMPLE)
    for config in ("records", "queries", "qrels", "corpus"):
        ours = mmrag_build.load(config)
        theirs = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hub-cache"))
        assert set(theirs) == set(ours)
        for split in ours:
            assert theirs[split].features == ours[split].features
            assert theirs[split].to_list() == ours[split].to_list()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "mmRAG" in card and "apache-2.0" in card and "processed_documents.json" in card


# --- the parallel corpus path: byte ranges parsed with orjson ---------------------------------------------


HOSTILE_TEXTS = ('a", {"id": "nq_1_2", "text": "b', '},{"id":"x"}', "back\\", "back\\\\", '\\"', "x\\\",{\"id\":",
                 "{", "[", "]", ",", "\u2028", "emoji 🙂", "北京")
"""Texts that look like record boundaries or escapes once written as JSON."""


def hostile_corpus(chunk_ids: list[str]) -> list[dict]:
    source = corpus_of(chunk_ids)
    for index, record in enumerate(source):
        record["text"] = HOSTILE_TEXTS[index % len(HOSTILE_TEXTS)] + record["text"]
    return source


@pytest.fixture
def small_ranges(monkeypatch):
    """Ranges and pieces of a few KB, so that a test file is cut in many places."""
    from ragloaders.benchmarks.mmrag import builder as mmrag_builder
    from ragloaders.core import json_array_cuts

    monkeypatch.setattr(mmrag_builder, "CORPUS_RANGE_BYTES", 20_000)
    monkeypatch.setattr(json_array_cuts, "PIECE_BYTES", 3_000)


@pytest.mark.parametrize("layout", ["compact", "indent 4", "spaced", "ascii"])
@pytest.mark.parametrize("num_proc", [None, 3])
def test_parallel_corpus_equals_json_load(tmp_path, small_ranges, monkeypatch, layout, num_proc):
    from ragloaders.benchmarks.mmrag import builder as mmrag_builder

    def no_streaming_path(*args, **kwargs):
        raise AssertionError("a valid file went to the streaming path")

    monkeypatch.setattr(mmrag_builder, "read_corpus_stream", no_streaming_path)
    source = hostile_corpus(judged_chunk_ids(SAMPLE))
    if layout == "spaced":  # whitespace everywhere JSON allows it, a BOM, CRLF line ends
        text = "\ufeff \r\n[ " + " ,\r\n ".join(
            "{ " + " , ".join(f"{json.dumps(k)} :\t{json.dumps(v, ensure_ascii=False)}" for k, v in r.items()) + " }"
            for r in source) + " ]\r\n "
    elif layout == "ascii":  # \uXXXX escapes, surrogate pairs for the emoji
        text = json.dumps(source, ensure_ascii=True)
    else:
        text = dump_array(source, None if layout == "compact" else 4)
    folder = folder_with(tmp_path, SAMPLE, text)
    expected = json.loads(text.removeprefix("\ufeff"))
    assert expected == source
    builder = ragloaders.builder("mmrag", "corpus", data_dir=str(folder), cache_dir=str(tmp_path / "cache"))
    from ragloaders.benchmarks.mmrag.builder import corpus_ranges

    shard = builder.source_shard("processed_documents.json")
    assert len(corpus_ranges(shard)) > 3
    corpus = load("corpus", folder, tmp_path, num_proc=num_proc)["corpus"].data
    assert corpus.column("_id").to_pylist() == [r["id"] for r in expected]
    assert corpus.column("text").to_pylist() == [r["text"] for r in expected]


@pytest.mark.parametrize("max_record_bytes", [None, 8_000])
def test_records_longer_than_a_piece_are_read_exactly(tmp_path, small_ranges, monkeypatch, max_record_bytes):
    """A record of 30 KB spans ten 3 KB pieces: the piece grows to hold it, or, past MAX_RECORD_BYTES, the rest of
    the range is read by the streaming path; rows are json.load's either way."""
    from ragloaders.core import json_array_cuts

    if max_record_bytes:
        monkeypatch.setattr(json_array_cuts, "MAX_RECORD_BYTES", max_record_bytes)
    source = hostile_corpus(judged_chunk_ids(SAMPLE))
    for index in (5, 6, 200):
        source[index]["text"] = "long é " * 5_000
    text = dump_array(source, 4)
    folder = folder_with(tmp_path, SAMPLE, text)
    corpus = load("corpus", folder, tmp_path)["corpus"].data
    expected = json.loads(text)
    assert corpus.column("_id").to_pylist() == [r["id"] for r in expected]
    assert corpus.column("text").to_pylist() == [r["text"] for r in expected]


@pytest.mark.parametrize("text", ["[]", " [ \n ] ", "\ufeff[]"])
def test_empty_corpus_array(tmp_path, text):
    """An empty array parses, and is refused as an empty JSONL file is (it gave a split of 0 rows)."""
    folder = folder_with(tmp_path, SAMPLE, text)
    with pytest.raises(SourceError) as caught:
        load("corpus", folder, tmp_path)
    assert_source_error(caught.value, "processed_documents.json", "no records: the array is empty")


@pytest.mark.parametrize("indent", [None, 4])
@pytest.mark.parametrize(("field", "escape"), [("text", "\\ud800"), ("id", "\\udce9"), ("text", "\\ud83d x"),
                                               ("text", "\\ude42\\ud83d")])
def test_unpaired_surrogate_in_corpus_names_file_and_record(tmp_path, small_ranges, indent, field, escape):
    source = corpus_of(judged_chunk_ids(SAMPLE))
    text = dump_array(source, indent)
    value = json.dumps(source[157][field], ensure_ascii=False)
    text = text.replace(value, value[:-1] + escape + '"', 1)
    folder = folder_with(tmp_path, SAMPLE, text)
    with pytest.raises(SourceError) as raised:
        load("corpus", folder, tmp_path)
    assert_source_error(raised.value, "processed_documents.json", "surrogate", record=157)
    assert raised.value.record == 157 and "processed_documents.json, record 157" in str(raised.value)


def test_surrogate_pairs_are_one_character(tmp_path, small_ranges):
    source = corpus_of(judged_chunk_ids(SAMPLE))
    text = dump_array(source, 4).replace(json.dumps(source[9]["text"], ensure_ascii=False)[:-1],
                                         json.dumps(source[9]["text"], ensure_ascii=False)[:-1] + "\\ud83d\\ude42", 1)
    folder = folder_with(tmp_path, SAMPLE, text)
    corpus = load("corpus", folder, tmp_path)["corpus"]
    assert corpus[9]["text"] == source[9]["text"] + "🙂"


@pytest.mark.parametrize("indent", [None, 4])
def test_duplicate_key_in_corpus_record(tmp_path, small_ranges, indent):
    source = corpus_of(judged_chunk_ids(SAMPLE))
    text = dump_array(source, indent)
    first = json.dumps(source[211]["id"])
    spaced = " " if indent else ""
    text = text.replace(f'"id":{spaced}{first}', f'"id":{spaced}"nq_9_9",{spaced}"id":{spaced}{first}', 1)
    folder = folder_with(tmp_path, SAMPLE, text)
    with pytest.raises(SourceError) as raised:
        load("corpus", folder, tmp_path)
    assert_source_error(raised.value, "processed_documents.json", "'id'", record=211)
    assert raised.value.record == 211


@pytest.mark.parametrize("indent", [None, 4])
@pytest.mark.parametrize("damage", ["no comma", "no comma, spaced", "trailing comma", "comment", "NaN text",
                                    "control character", "invalid UTF-8", "single quotes"])
def test_what_json_refuses_the_parallel_path_refuses(tmp_path, small_ranges, indent, damage):
    """pyarrow parses the pieces (records one per line); nothing it would accept but JSON refuses gets through."""
    source = corpus_of(judged_chunk_ids(SAMPLE))
    text = dump_array(source, indent).encode()
    record = json.dumps(source[211]["id"]).encode()
    start = text.index(record)
    start = text.rindex(b"{", 0, start)
    comma = text.rindex(b",", 0, start)
    end = text.index(b"}", start) + 1
    damaged = {
        "no comma": lambda: text[:comma] + text[comma + 1:],
        "no comma, spaced": lambda: text[:comma] + b" " + text[comma + 1:],
        "trailing comma": lambda: text[:end - 1].rstrip() + b",}" + text[end:],
        "comment": lambda: text[:end] + b" // note" + text[end:],
        "NaN text": lambda: text[:start] + b'{"id": ' + record + b', "text": NaN}' + text[end:],
        "control character": lambda: text[:end - 2] + b"\x01" + text[end - 2:],
        "invalid UTF-8": lambda: text[:end - 2] + b"\xff" + text[end - 2:],
        "single quotes": lambda: text[:start] + b"{'id': " + record + b", 'text': 'x'}" + text[end:],
    }[damage]()
    with pytest.raises(ValueError):
        orjson.loads(damaged)  # RFC 8259 JSON (json.loads would take the NaN)
    folder = folder_with(tmp_path, SAMPLE)
    (folder / "processed_documents.json").write_bytes(damaged)
    with pytest.raises(SourceError) as raised:
        load("corpus", folder, tmp_path)
    assert_source_error(raised.value, "processed_documents.json", record=raised.value.record)
    assert raised.value.record in (211, 212)


@pytest.mark.parametrize("config", ["records", "queries", "qrels"])
def test_unpaired_surrogate_in_query_file(tmp_path, config):
    folder = folder_with(tmp_path, SAMPLE)
    text = (SAMPLE / "mmrag_dev.json").read_text(encoding="utf-8")
    query = json.dumps(records(SAMPLE, "dev")[3]["query"], ensure_ascii=False)
    write_queries(folder, "dev", text.replace(query, query[:-1] + '\\udce9"', 1))
    with pytest.raises(SourceError) as raised:
        load(config, folder, tmp_path)
    assert_source_error(raised.value, "mmrag_dev.json", "surrogate", record=3)
    assert raised.value.record == 3 and "mmrag_dev.json, record 3" in str(raised.value)


def test_duplicate_key_in_relevant_chunks(tmp_path):
    folder = folder_with(tmp_path, SAMPLE)
    source = records(SAMPLE, "test")
    chunk = next(iter(source[2]["relevant_chunks"]))
    text = json.dumps(source, ensure_ascii=False, indent=4)
    text = text.replace(f'"{chunk}": ', f'"{chunk}": 0, "{chunk}": ', 1)
    write_queries(folder, "test", text)
    with pytest.raises(SourceError) as raised:
        load("qrels", folder, tmp_path)
    assert_source_error(raised.value, "mmrag_test.json", f"'{chunk}'", record=2)
    assert raised.value.record == 2


DEEP_QUERY_FILE_CHILD = """
import resource, sys
import ragloaders
from ragloaders.core.errors import SourceError
with open("/proc/self/statm") as f:
    vm = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm + (768 << 20),) * 2)
try:
    ragloaders.load("mmrag", "queries", data_dir=sys.argv[1], cache_dir=sys.argv[2])
    print("loaded")
except SourceError as e:
    print(e.path, e.record, e.message[:300])
except MemoryError:
    print("MemoryError")
"""


def test_a_query_file_nested_past_orjsons_depth_is_refused_in_bounded_memory(tmp_path):
    """orjson refuses nesting past 1,024 levels; the streaming parser, asked for its own message, kept the path of
    every open level (memory the square of the depth: 30,000 levels would take gigabytes) and now refuses the value
    as it opens its 1,025th level."""
    folder = folder_with(tmp_path, SAMPLE)
    text = (SAMPLE / "mmrag_dev.json").read_text(encoding="utf-8")
    query = json.dumps(records(SAMPLE, "dev")[3]["query"], ensure_ascii=False)
    write_queries(folder, "dev", text.replace(query, "[" * 30_000, 1))
    done = subprocess.run([sys.executable, "-c", DEEP_QUERY_FILE_CHILD, str(folder), str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(LOADERS)})
    assert done.returncode == 0, done.stderr[-3000:]
    path, record, message = done.stdout.strip().split(" ", 2)
    assert (Path(path).name, record) == ("mmrag_dev.json", "3") and "depth" in message, done.stdout
