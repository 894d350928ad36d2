"""eval.prepared_record: a second eval of a benchmark path reads the prepared splits the first one recorded, with
pyarrow alone, and only while everything recorded still holds: an edited, replaced or added source file, a rebuilt
cache, a damaged or hostile record, an unwritable cache folder and two evals at once all give what a fresh eval
gives. On the official nfcorpus files (extracted from tests/data/beir/nfcorpus.zip)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
from conftest import DATA, LOADERS
from ragloaders.eval import evaluate
from ragloaders.eval.prepared_record import RECORD_LIMIT, _record_path, recorded_sources, recorded_splits

PATH = "beir/nfcorpus"


@pytest.fixture
def nfcorpus(tmp_path, monkeypatch) -> dict:
    """The official nfcorpus files extracted into a folder of the test's own, a cache and a ragloaders cache folder
    of its own, and a run: per test query its judged documents and a few others, plus an id no corpus has."""
    with zipfile.ZipFile(DATA / "beir" / "nfcorpus.zip") as archive:
        archive.extractall(tmp_path / "src")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "src" / "nfcorpus"
    corpus = [json.loads(line)["_id"] for line in (folder / "corpus.jsonl").read_text().splitlines()]
    run: dict[str, dict[str, float]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, _ = line.split("\t")
        run.setdefault(query_id, {corpus[len(run) % 50]: 0.5, "NOT-IN-THE-CORPUS": 0.1})[doc_id] = 1.0
    run_file = tmp_path / "run.trec"
    run_file.write_text("".join(f"{q} Q0 {d} {rank} {s} t\n" for q, docs in run.items()
                                for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda i: -i[1]), 1)))
    return {"data_dir": str(folder), "cache_dir": str(tmp_path / "cache"), "run": str(run_file), "tmp": tmp_path}


def scored(where: dict, cache_dir: str | None = None) -> tuple:
    """What a report says: the means, the judged queries, the unknown documents, the identity's source files."""
    report = evaluate(PATH, where["run"], data_dir=where["data_dir"], cache_dir=cache_dir or where["cache_dir"])
    return report.metrics, report.judged_queries, report.unknown_documents, report.identity["source"]["files"]


def recorded(where: dict, config: str) -> dict | None:
    return recorded_splits(PATH, config, data_dir=where["data_dir"], cache_dir=where["cache_dir"])


SCORE_IN_A_PROCESS = textwrap.dedent("""
    import json, sys
    from ragloaders.eval import evaluate
    report = evaluate(sys.argv[1], sys.argv[2], data_dir=sys.argv[3], cache_dir=sys.argv[4])
    print(json.dumps({"metrics": report.metrics, "unknown": report.unknown_documents,
                      "judged": report.judged_queries, "source": report.identity["source"],
                      "datasets imported": "datasets" in sys.modules}))
""")


def score_in_a_process(where: dict) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(LOADERS), "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    return subprocess.Popen([sys.executable, "-c", SCORE_IN_A_PROCESS, PATH, where["run"], where["data_dir"],
                             where["cache_dir"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finished(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out)


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_second_eval_reads_the_record_without_importing_datasets(nfcorpus):
    first = finished(score_in_a_process(nfcorpus))
    assert first.pop("datasets imported")
    for config in ("qrels", "queries", "corpus"):
        assert recorded(nfcorpus, config) is not None
    second = finished(score_in_a_process(nfcorpus))
    assert not second.pop("datasets imported")
    assert second == first
    assert first["unknown"] == ["NOT-IN-THE-CORPUS"]
    qrels = (Path(nfcorpus["data_dir"]) / "qrels" / "test.tsv").read_text().splitlines()[1:]
    assert first["judged"] == len({line.split("\t")[0] for line in qrels})  # the source's count of queries
    splits = recorded(nfcorpus, "qrels")
    assert {name: table.num_rows for name, table in splits.items()} == {
        name: len((Path(nfcorpus["data_dir"]) / "qrels" / f"{name}.tsv").read_text().splitlines()) - 1
        for name in ("train", "dev", "test")}


def test_an_edit_that_keeps_size_and_time_is_read_again(nfcorpus):
    before = scored(nfcorpus)
    assert recorded(nfcorpus, "qrels") is not None
    qrels = Path(nfcorpus["data_dir"]) / "qrels" / "test.tsv"
    stat = qrels.stat()
    original = qrels.read_bytes()
    edited = original.replace(b"\t2\r\n", b"\t0\r\n")  # every grade 2 made 0: same size (the file ends lines in CRLF)
    assert edited != original
    qrels.write_bytes(edited)
    os.utime(qrels, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the time set back: only ctime says it changed
    assert qrels.stat().st_size == stat.st_size
    assert recorded(nfcorpus, "qrels") is None
    after = scored(nfcorpus)
    assert after == scored(nfcorpus, cache_dir=str(nfcorpus["tmp"] / "fresh-cache"))
    assert after[0] != before[0]
    assert recorded(nfcorpus, "qrels") is not None  # recorded anew


def test_a_file_added_beside_a_source_file_or_a_rebuilt_cache_is_not_read_from_the_record(nfcorpus):
    scored(nfcorpus)
    (Path(nfcorpus["data_dir"]) / "qrels" / "extra.tsv").write_text("query-id\tcorpus-id\tscore\n")
    assert recorded(nfcorpus, "qrels") is None
    assert recorded(nfcorpus, "corpus") is not None  # a folder the corpus file is not in
    scored(nfcorpus)
    shutil.rmtree(nfcorpus["cache_dir"])
    assert recorded(nfcorpus, "corpus") is None
    assert recorded_sources(PATH, data_dir=nfcorpus["data_dir"], cache_dir=nfcorpus["cache_dir"]) is not None
    assert scored(nfcorpus) == scored(nfcorpus, cache_dir=str(nfcorpus["tmp"] / "fresh-cache"))



def test_a_source_edited_while_it_is_loaded_leaves_no_record(nfcorpus, monkeypatch):
    """The qrels file replaced right after `load` read it (as a file rewritten mid-run): the record took the
    identities at write time, after the load, so it paired the new file with the old file's rows, and every later
    eval scored the old rows while its identity named the new file. The identities are now taken before the load,
    and a record whose sources changed since is not written."""
    import ragloaders.eval.data as data

    qrels = Path(nfcorpus["data_dir"]) / "qrels" / "test.tsv"
    real_load = data.load

    def load_then_edit(path, config, **where):
        loaded = real_load(path, config, **where)
        if config == "qrels" and b"\t2\r\n" in qrels.read_bytes():
            qrels.write_bytes(qrels.read_bytes().replace(b"\t2\r\n", b"\t0\r\n"))
        return loaded

    monkeypatch.setattr(data, "load", load_then_edit)
    before_the_edit = scored(nfcorpus)
    assert recorded(nfcorpus, "qrels") is None
    monkeypatch.setattr(data, "load", real_load)
    after = scored(nfcorpus)
    assert after == scored(nfcorpus, cache_dir=str(nfcorpus["tmp"] / "fresh-cache")) and after[0] != before_the_edit[0]
    assert recorded(nfcorpus, "qrels") is not None  # now recorded, from the file as it is


def test_a_record_copied_over_another_configs_or_folders_record_is_not_used(nfcorpus):
    """Each record's body names what it is for (code, path, config, folders): a record copied over the file of
    another is not read, where its digest alone matched and its rows were scored (another folder's qrels)."""
    other = dict(nfcorpus, data_dir=str(nfcorpus["tmp"] / "other" / "nfcorpus"))
    shutil.copytree(nfcorpus["data_dir"], other["data_dir"])
    qrels = Path(other["data_dir"]) / "qrels" / "test.tsv"
    qrels.write_bytes(qrels.read_bytes().replace(b"\t2\r\n", b"\t0\r\n"))
    truth, theirs = scored(nfcorpus), scored(other)
    assert truth[0] != theirs[0]
    ours = Path(_record_path(PATH, "qrels", nfcorpus["data_dir"], nfcorpus["cache_dir"]))
    for source in (_record_path(PATH, "qrels", other["data_dir"], other["cache_dir"]),
                   _record_path(PATH, "queries", nfcorpus["data_dir"], nfcorpus["cache_dir"])):
        shutil.copyfile(source, ours)
        assert recorded(nfcorpus, "qrels") is None
        assert scored(nfcorpus) == truth

def damaged_records(text: str) -> list[tuple[str, bytes]]:
    """(what, bytes) of records that are not what _write wrote."""
    record = json.loads(text)
    renamed = {**record, "splits": {("tast" if k == "test" else k): v for k, v in record["splits"].items()}}
    fewer_rows = json.loads(text)
    fewer_rows["splits"]["test"]["rows"] -= 1
    return [
        ("empty", b""),
        ("truncated", text[: len(text) // 2].encode()),
        ("not an object", b"[1, 2, 3]"),
        ("deeply nested", b"[" * 100_000 + b"]" * 100_000),
        ("over the limit", text.encode() + b" " * (RECORD_LIMIT + 1)),
        ("a split renamed", json.dumps(renamed).encode()),
        ("a row count changed", json.dumps(fewer_rows).encode()),
        ("no digest", json.dumps({k: v for k, v in record.items() if k != "digest"}).encode()),
        ("invalid UTF-8", b"\xff\xfe" + text.encode()),
    ]


def test_a_damaged_record_is_not_used(nfcorpus):
    truth = scored(nfcorpus)
    target = Path(_record_path(PATH, "qrels", nfcorpus["data_dir"], nfcorpus["cache_dir"]))
    good = target.read_text()
    for what, content in damaged_records(good):
        target.write_bytes(content)
        assert recorded(nfcorpus, "qrels") is None, what
        assert scored(nfcorpus) == truth, what
        assert recorded(nfcorpus, "qrels") is not None, what  # the slow path recorded it again


FUZZ = textwrap.dedent("""
    import random, sys
    from ragloaders.eval.prepared_record import recorded_splits
    path, data_dir, cache_dir, target, expected = sys.argv[1:6]
    good = open(target, "rb").read()
    rng = random.Random(5)
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        open(target, "wb").write(bytes(data))
        found = recorded_splits(path, "qrels", data_dir=data_dir, cache_dir=cache_dir)
        assert found is None or {n: t.num_rows for n, t in found.items()} == eval(expected), bytes(data)[:200]
    print("ok")
""")


@pytest.mark.slow  # (seconds; CI runs it)
def test_random_byte_damage_to_a_record_never_crashes_or_misleads(nfcorpus):
    scored(nfcorpus)
    target = _record_path(PATH, "qrels", nfcorpus["data_dir"], nfcorpus["cache_dir"])
    expected = {name: table.num_rows for name, table in recorded(nfcorpus, "qrels").items()}
    done = subprocess.run([sys.executable, "-c", FUZZ, PATH, nfcorpus["data_dir"], nfcorpus["cache_dir"], target,
                           repr(expected)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(LOADERS)})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_an_unwritable_cache_folder_only_leaves_eval_unrecorded(nfcorpus, monkeypatch):
    blocker = nfcorpus["tmp"] / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    truth = scored(nfcorpus)
    assert recorded(nfcorpus, "qrels") is None
    assert scored(nfcorpus) == truth
    assert blocker.read_text() == "a file where the cache folder would be"


@pytest.mark.slow  # (seconds; CI runs it)
def test_two_evals_at_once_agree_and_leave_a_record_that_holds(nfcorpus):
    first, second = score_in_a_process(nfcorpus), score_in_a_process(nfcorpus)
    assert finished(first) == finished(second)
    for config in ("qrels", "queries", "corpus"):
        assert recorded(nfcorpus, config) is not None
    folder = Path(_record_path(PATH, "qrels", nfcorpus["data_dir"], nfcorpus["cache_dir"])).parent
    assert not [name for name in os.listdir(folder) if name.startswith(".record-")]  # no temporary file left


READ_A_RECORD = textwrap.dedent("""
    import sys
    from ragloaders.eval.prepared_record import recorded_splits
    print(recorded_splits(sys.argv[1], "qrels", data_dir=sys.argv[2], cache_dir=sys.argv[3]))
""")


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero", "folder"])
@pytest.mark.slow  # (seconds of variants; CI runs it)
def test_what_is_not_a_regular_file_at_a_records_name_is_refused_at_once(nfcorpus, kind):
    truth = scored(nfcorpus)
    target = Path(_record_path(PATH, "qrels", nfcorpus["data_dir"], nfcorpus["cache_dir"]))
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)  # no writer: an open that waits for one would hang
    elif kind == "folder":
        target.mkdir()
    else:
        target.symlink_to("/dev/zero")  # endless bytes
    done = subprocess.run([sys.executable, "-c", READ_A_RECORD, PATH, nfcorpus["data_dir"], nfcorpus["cache_dir"]],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(LOADERS)})
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr[-3000:]
    assert scored(nfcorpus) == truth


@pytest.mark.slow
def test_a_temporary_record_a_killed_eval_left_goes_at_the_next_write_and_nothing_else(nfcorpus):
    folder = Path(_record_path(PATH, "qrels", nfcorpus["data_dir"], nfcorpus["cache_dir"])).parent
    folder.mkdir(parents=True)
    abandoned, fresh = folder / ".record-abandoned1", folder / ".record-being-written"
    look_alike, users = folder / ".record-old-folder", folder / "notes.txt"
    for path in (abandoned, fresh, users):
        path.write_text("{")
    look_alike.mkdir()
    hours_ago = time.time() - 2 * 3600
    for path in (abandoned, look_alike, users):
        os.utime(path, (hours_ago, hours_ago))
    scored(nfcorpus)  # records qrels, queries and corpus
    assert recorded(nfcorpus, "qrels") is not None
    assert not abandoned.exists()
    assert fresh.read_text() == "{" and users.read_text() == "{" and look_alike.is_dir()
