"""`beir-format`: a folder the test makes in BEIR's layout (odd ids, CRLF qrels, a split of its own, a zip form)
goes through load, build, validate, bm25, eval and push --dry-run; a folder not in the layout is a one-line error."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import datasets
import pytest
import ragloaders
import yaml
from conftest import assert_names, assert_source_error
from ragloaders.cli import main as cli_main
from ragloaders.core.errors import MissingSourceError, SourceError

PATH = "beir-format"
CORPUS = [
    {"_id": "00123", "title": "", "text": "alpha beta gamma", "metadata": {"url": "https://x.org/1"}},
    {"_id": "d 2", "text": "gamma delta", "metadata": {"tags": ["a", "b"], "year": 2001}},
    {"_id": "<dbpedia:Émile_Gilbert>", "title": "Émile", "text": "alpha epsilon"},
    {"_id": "🦀", "title": "crab", "text": "zeta eta", "metadata": {}},
]
QUERIES = [{"_id": "q\u00a01", "text": "alpha"}, {"_id": "007", "text": "gamma delta", "metadata": {"n": 1}}]
QRELS = {  # bytes as written: CRLF line ends in one file, LF in the other
    "test": b"query-id\tcorpus-id\tscore\r\nq\xc2\xa01\t00123\t2\r\n007\td 2\t1\r\n"
            b"007\t<dbpedia:\xc3\x89mile_Gilbert>\t0\r\n",
    "held_out": b"query-id\tcorpus-id\tscore\nq\xc2\xa01\t\xf0\x9f\xa6\x80\t-1\n",
}


def write_folder(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_bytes(b"".join(json.dumps(d, ensure_ascii=False).encode() + b"\n" for d in CORPUS))
    (folder / "queries.jsonl").write_bytes(b"".join(json.dumps(q).encode() + b"\r\n" for q in QUERIES))
    for split, data in QRELS.items():
        (folder / "qrels" / f"{split}.tsv").write_bytes(data)
    return folder


def expected_rows(lines: list[dict], columns: tuple[str, ...]) -> list[dict]:
    """Rows as the layout promises them: the columns as in the line (null when absent), `metadata` as JSON text."""
    rows = []
    for line in lines:
        row = {name: line.get(name) for name in columns}
        metadata = line.get("metadata")
        row["metadata"] = None if metadata is None else json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))
        rows.append(row)
    return rows


def expected_qrels(data: bytes) -> list[dict]:
    lines = data.decode().replace("\r\n", "\n").splitlines()[1:]
    return [{"query-id": q, "corpus-id": d, "score": int(s)} for q, d, s in (line.split("\t") for line in lines)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_folder(tmp_path_factory.mktemp("user") / "my corpus")


@pytest.fixture(scope="module")
def zipped(folder, tmp_path_factory) -> Path:
    """The same folder as a zip holding it under its top folder, as BEIR's own zips do."""
    path = tmp_path_factory.mktemp("zipped") / "my_corpus.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                archive.write(file, f"my corpus/{file.relative_to(folder).as_posix()}")
    return path


def load_all(data_dir: Path, cache: Path) -> dict[str, datasets.DatasetDict]:
    return {config: ragloaders.load(PATH, config, data_dir=str(data_dir), cache_dir=str(cache))
            for config in ("corpus", "queries", "qrels")}


def test_every_row_as_in_the_files_from_the_folder_and_from_its_zip(folder, zipped, tmp_path):
    for source in (folder, zipped):
        loaded = load_all(source, tmp_path / "cache")
        assert [dict(r) for r in loaded["corpus"]["corpus"]] == expected_rows(CORPUS, ("_id", "title", "text"))
        assert [dict(r) for r in loaded["queries"]["queries"]] == expected_rows(QUERIES, ("_id", "text"))
        assert list(loaded["qrels"]) == ["test", "held_out"]  # the known split names first, then the others
        for split, data in QRELS.items():
            assert [dict(r) for r in loaded["qrels"][split]] == expected_qrels(data)


def test_a_zip_with_the_files_at_its_top_reads_the_same(folder, tmp_path):
    path = tmp_path / "flat.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                archive.write(file, file.relative_to(folder).as_posix())
    qrels = ragloaders.load(PATH, "qrels", data_dir=str(path), cache_dir=str(tmp_path / "c"))
    assert [dict(r) for r in qrels["test"]] == expected_qrels(QRELS["test"])


def test_a_new_qrels_file_is_a_new_split_not_a_stale_cache(tmp_path):
    source = write_folder(tmp_path / "grows")
    cache = tmp_path / "cache"
    assert list(ragloaders.load(PATH, "qrels", data_dir=str(source), cache_dir=str(cache))) == ["test", "held_out"]
    (source / "qrels" / "dev.tsv").write_bytes(b"query-id\tcorpus-id\tscore\n007\t00123\t1\n")
    (source / "qrels" / "notes.txt").write_text("not a qrels file")
    again = ragloaders.load(PATH, "qrels", data_dir=str(source), cache_dir=str(cache))
    assert list(again) == ["dev", "test", "held_out"] and again["dev"]["corpus-id"] == ["00123"]


@pytest.mark.parametrize("remove, named", [
    ("corpus.jsonl", "corpus.jsonl is missing"),
    ("queries.jsonl", "queries.jsonl is missing"),
    ("qrels", "no qrels/<split>.tsv file"),
])
def test_a_folder_not_in_the_layout_is_one_line_naming_the_missing_file(tmp_path, capsys, remove, named):
    source = write_folder(tmp_path / "partial")
    target = source / remove
    if target.is_dir():
        for file in target.iterdir():
            file.unlink()
    else:
        target.unlink()
    with pytest.raises(MissingSourceError) as caught:
        ragloaders.load(PATH, "corpus", data_dir=str(source), cache_dir=str(tmp_path / "c"))
    assert_names(caught.value, source, named)  # each file is in the expected layout too: `named` says which is not
    assert cli_main(["validate", PATH, "--data-dir", str(source), "--cache-dir", str(tmp_path / "c")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and named in error and str(source) in error


def test_data_dir_is_required_and_a_split_file_name_must_be_a_split_name(tmp_path, capsys):
    with pytest.raises(MissingSourceError) as caught:
        ragloaders.load(PATH, "corpus")
    assert_names(caught.value, PATH, "data_dir", "--data-dir")
    assert cli_main(["build", PATH, "--out", str(tmp_path / "out")]) == 2
    assert "pass data_dir" in capsys.readouterr().err and not (tmp_path / "out").exists()
    for bad in ("two words", "all", "a-b"):
        source = write_folder(tmp_path / bad / "data")
        (source / "qrels" / f"{bad}.tsv").write_bytes(QRELS["test"])
        with pytest.raises(SourceError) as caught:
            ragloaders.load(PATH, "qrels", data_dir=str(source), cache_dir=str(tmp_path / "c"))
        assert_source_error(caught.value, f"qrels/{bad}.tsv", "split", "`_`", "`all`")


def front_matter(readme: Path) -> dict:
    return yaml.safe_load(readme.read_text(encoding="utf-8").split("---\n")[1])


def test_build_card_names_the_folder_with_no_published_figures_and_the_files_hashed(folder, tmp_path):
    out = tmp_path / "built"
    assert cli_main(["build", PATH, "--data-dir", str(folder), "--out", str(out), "--cache-dir",
                     str(tmp_path / "c")]) == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    meta = front_matter(out / "README.md")
    assert meta["license"] == "unknown" and meta["pretty_name"] == "my corpus"
    assert "holds `my corpus`" in card and "the builder's own" in card and str(folder.parent) not in card
    assert "Published figures" not in card and "published counts" not in card
    for relpath in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/held_out.tsv"):
        data = (folder / relpath).read_bytes()
        assert f"| `{Path(relpath).name}` | {len(data):,} | `{hashlib.sha256(data).hexdigest()}` |" in card
    for config in ("corpus", "queries", "qrels"):  # the folder loads with plain datasets, rows as from the source
        published = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hf"))
        direct = ragloaders.load(PATH, config, data_dir=str(folder), cache_dir=str(tmp_path / "c"))
        assert {split: [dict(r) for r in published[split]] for split in published} == {
            split: [dict(r) for r in direct[split]] for split in direct}
    assert cli_main(["validate", str(out)]) == 0
    # A path is normalised at the boundary: a shell's completion may add slashes.
    assert cli_main(["validate", "/beir-format/", "--data-dir", str(folder), "--cache-dir", str(tmp_path / "c")]) == 0
    assert ragloaders.load("beir-format/", "qrels", split="held_out", data_dir=str(folder),
                           cache_dir=str(tmp_path / "c")).num_rows == 1


def test_validate_names_every_file_read_as_the_users_own_with_no_release(folder, tmp_path, capsys):
    where = ["--data-dir", str(folder), "--cache-dir", str(tmp_path / "c")]
    assert cli_main(["validate", PATH, *where]) == 0
    text = capsys.readouterr().out
    sources = [line for line in text.splitlines() if line.startswith("source: ")]
    assert sorted(line.split(" ", 2)[1] for line in sources) == ["corpus.jsonl", "held_out.tsv", "queries.jsonl",
                                                                  "test.tsv"]
    assert all(line.endswith("): a file of your own data (no publisher, so no release)") for line in sources)
    assert "release is unknown" not in text and "official" not in text and "release:" not in text
    assert cli_main(["validate", PATH, "--json", *where]) == 0
    source = json.loads(capsys.readouterr().out)["source"]
    assert {(f["status"], f["release"]) for f in source["files"]} == {("own", None)}
    assert (source["published"], source["compared"], source["not_compared"]) == ({}, [], {})


def test_license_and_pretty_name_are_stated_on_build_and_push_and_only_for_own_data(folder, tmp_path, monkeypatch,
                                                                                    capsys):
    out = tmp_path / "built"
    assert cli_main(["build", PATH, "--data-dir", str(folder), "--out", str(out), "--cache-dir", str(tmp_path / "c"),
                     "--license", "cc-by-4.0", "--pretty-name", "Crab facts"]) == 0
    meta = front_matter(out / "README.md")
    assert (meta["license"], meta["pretty_name"]) == ("cc-by-4.0", "Crab facts")
    monkeypatch.setenv("RAGLOADERS_STAGING", str(tmp_path / "staging"))
    assert cli_main(["push", PATH, "--repo-id", "me/crabs", "--data-dir", str(folder), "--cache-dir",
                     str(tmp_path / "c"), "--dry-run", "--license", "mit"]) == 0
    assert "dry run: would upload to me/crabs" in capsys.readouterr().out
    staged = tmp_path / "staging" / "me--crabs" / PATH
    assert front_matter(staged / "README.md")["license"] == "mit"
    assert cli_main(["push", PATH, "--repo-id", "me/crabs", "--data-dir", str(folder), "--cache-dir",
                     str(tmp_path / "c"), "--dry-run", "--license", "apache-2.0"]) == 0
    assert front_matter(staged / "README.md")["license"] == "apache-2.0"  # a stated licence is part of the identity
    capsys.readouterr()
    assert cli_main(["build", "beir/nfcorpus", "--data-dir", "tests/data/beir", "--out", str(tmp_path / "nf"),
                     "--license", "mit"]) == 2
    assert "your own data (beir-format)" in capsys.readouterr().err and not (tmp_path / "nf").exists()
    for command in (["build", "beir/nfcorpuz", "--out", str(tmp_path / "nf")],
                    ["push", "beir/nfcorpuz", "--repo-id", "me/nf", "--dry-run"]):
        assert cli_main([*command, "--license", "mit"]) == 2
        assert "unknown path 'beir/nfcorpuz' (did you mean 'beir/nfcorpus'?)" in capsys.readouterr().err, command
    for bad in ("other", "CC BY 4.0"):
        assert cli_main(["build", PATH, "--data-dir", str(folder), "--out", str(tmp_path / "o2"), "--license",
                         bad]) == 2
        assert "--license" in capsys.readouterr().err


def test_bm25_then_eval_score_the_folder(folder, tmp_path, capsys):
    pytest.importorskip("pytrec_eval")
    pytest.importorskip("Stemmer")
    run = tmp_path / "run.jsonl"  # TREC cannot hold the id "d 2"
    where = ["--data-dir", str(folder), "--cache-dir", str(tmp_path / "c")]
    assert cli_main(["bm25", PATH, "--out", str(run), *where]) == 0
    ranked = {}
    for line in run.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        ranked.setdefault(row["query-id"], []).append(row["corpus-id"])
    assert ranked["q\u00a01"][0] in {"00123", "<dbpedia:Émile_Gilbert>"} and ranked["007"][0] == "d 2"
    capsys.readouterr()
    assert cli_main(["eval", PATH, "--run", str(run), "--json", *where]) == 0
    report = json.loads(capsys.readouterr().out)
    # Each query's relevant document shares a term with it, so BM25 finds it: every judged query (ids matched byte
    # for byte between run and qrels, the no-break space included) recalls all it should.
    assert report["judged_queries"] == 2 and report["metrics"]["Recall@100"] == 1.0
