"""`ragloaders validate`: counts, dangling / duplicate / shared ids, histograms; exit status."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import random
import shutil

import pyarrow as pa
import pytest
from beir_files import write_beir
from conftest import assert_source_error
from ragloaders import cli
from ragloaders.benchmarks.beir import catalogue as beir
from ragloaders.benchmarks.beir import facts as beir_facts
from ragloaders.core.facts import KnownDefect
from ragloaders.publish import validate
from ragloaders.publish.validate import integrity

DATA = os.path.join(os.path.dirname(__file__), "data", "beir")


def by_check(findings):
    return {f["check"]: f for f in findings}


def declare(monkeypatch, **declarations) -> None:
    """`validate` sees each benchmark with `declarations` (its `published_counts`, `known_defects`...) in place of
    what it declares."""
    real = validate.benchmark_of
    monkeypatch.setattr(validate, "benchmark_of", lambda path: dataclasses.replace(real(path), **declarations))


def split_facts(report, config, split):
    return next(f for f in report["splits"] if f["config"] == config and f["split"] == split)


def test_real_nfcorpus_is_complete_and_consistent(tmp_path):
    report = integrity("beir/nfcorpus", data_dir=DATA, cache_dir=str(tmp_path))
    assert report["ok"], report["errors"]
    assert report["errors"] == [] and report["warnings"] == []
    assert split_facts(report, "corpus", "corpus") | {"empty_text_ids": []} == {
        "config": "corpus", "split": "corpus", "rows": 3_633, "duplicate_ids": 0, "empty_texts": 0,
        "empty_text_ids": [], "published": 3_633,
    }
    test = split_facts(report, "qrels", "test")
    assert (test["rows"], test["queries"], test["published"]) == (12_334, 323, 323)
    assert test["score_histogram"] == {"1": 11_758, "2": 576}
    assert (test["missing_queries"], test["missing_docs"], test["duplicate_pairs"]) == (0, 0, 0)
    assert split_facts(report, "qrels", "train")["rows"] == 110_575
    assert split_facts(report, "queries", "queries")["rows"] == 3_237
    assert report["shared_ids"] == 0
    json.dumps(report)


def test_cli_validate_exit_zero_and_json(tmp_path, capsys):
    status = cli.main(["validate", "beir/nfcorpus", "--data-dir", DATA, "--cache-dir", str(tmp_path), "--json"])
    assert status == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


@pytest.fixture
def broken_scifact(tmp_path, monkeypatch):
    """scifact files with undeclared defects of every kind."""
    folder = str(write_beir(
        tmp_path / "scifact",
        corpus=[("d1", "one"), ("d2", "  "), ("d1", "again"), ("007", "seven")],
        queries=[("q1", "first"), ("q2", ""), ("007", "also a doc")],
        qrels={
            "train": [("q1", "d1", 1)],
            "test": [("q1", "d1", 1), ("q1", "d1", 2), ("q9", "d2", 0), ("q2", "d404", -1)],
        },
    ))
    declare(monkeypatch, published_counts=lambda path: {("qrels", "test"): 5, ("corpus", "corpus"): 4})
    return folder


def test_undeclared_defects_are_structural_errors(broken_scifact, tmp_path):
    report = integrity("beir/scifact", data_dir=broken_scifact, cache_dir=str(tmp_path / "cache"))
    assert not report["ok"]
    errors = by_check(report["errors"])
    assert set(errors) == {"duplicate_ids", "missing_queries", "missing_docs", "duplicate_pairs", "shared_ids", "count"}
    assert errors["duplicate_ids"]["ids"] == ["d1"] and errors["duplicate_ids"]["config"] == "corpus"
    assert errors["missing_queries"]["ids"] == ["q9"] and errors["missing_queries"]["split"] == "test"
    assert errors["missing_docs"]["ids"] == ["d404"]
    assert errors["duplicate_pairs"]["ids"] == ["q1 -> d1"]
    assert errors["shared_ids"]["ids"] == ["007"]
    assert errors["count"]["message"] == "3 queries, but the benchmark publishes 5"
    corpus = split_facts(report, "corpus", "corpus")
    assert (corpus["empty_texts"], corpus["empty_text_ids"]) == (1, ["d2"])
    assert split_facts(report, "queries", "queries")["empty_text_ids"] == ["q2"]
    assert split_facts(report, "qrels", "test")["score_histogram"] == {"-1": 1, "0": 1, "1": 1, "2": 1}


def test_cli_exit_one_on_structural_errors(broken_scifact, tmp_path, capsys):
    status = cli.main(["validate", "beir/scifact", "--data-dir", broken_scifact, "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert status == 1
    assert "ERROR missing_docs in qrels/test: 1 corpus id is not in `corpus`: 'd404'" in out
    assert out.rstrip().endswith("FAILED: 6 structural error(s)")


def arguana_like(tmp_path, monkeypatch, missing_docs):
    folder = str(write_beir(
        tmp_path / "arguana",
        corpus=[("a1", "pro"), ("a2", "con"), ("a3", "other")],
        queries=[("a1", "pro"), ("a2", "con")],
        qrels={"test": [("a1", "a2", 1), ("a2", "a1", 1)] + [("a1", f"gone{i}", 1) for i in range(missing_docs)]},
    ))
    declare(monkeypatch, published_counts=lambda path: {("qrels", "test"): 2, ("corpus", "corpus"): 3})
    return folder


def test_known_upstream_defects_are_warnings_with_exit_zero(tmp_path, monkeypatch, capsys):
    folder = arguana_like(tmp_path, monkeypatch, missing_docs=1)
    report = integrity("beir/arguana", data_dir=folder, cache_dir=str(tmp_path / "cache"))
    assert report["ok"] and report["errors"] == []
    warnings = by_check(report["warnings"])
    assert set(warnings) == {"missing_docs", "shared_ids"}
    assert warnings["missing_docs"]["ids"] == ["gone0"] and "beir-cellar/beir#101" in warnings["missing_docs"]["note"]
    assert warnings["shared_ids"]["count"] == 2
    assert cli.main(["validate", "beir/arguana", "--data-dir", folder, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "WARNING missing_docs in qrels/test" in capsys.readouterr().out


def test_a_defect_worse_than_declared_is_an_error(tmp_path, monkeypatch):
    folder = arguana_like(tmp_path, monkeypatch, missing_docs=3)
    declared = (KnownDefect("missing_docs", "qrels", "at most two", split="test", max_count=2),)
    declare(monkeypatch, known_defects=lambda path: declared + beir_facts.KNOWN_DEFECTS[path][1:])
    report = integrity("beir/arguana", data_dir=folder, cache_dir=str(tmp_path / "cache"))
    assert [e["check"] for e in report["errors"]] == ["missing_docs"]
    assert report["errors"][0]["count"] == 3


def test_declared_defect_that_does_not_occur_is_reported(tmp_path, monkeypatch):
    folder = arguana_like(tmp_path, monkeypatch, missing_docs=0)
    report = integrity("beir/arguana", data_dir=folder, cache_dir=str(tmp_path / "cache"))
    assert report["ok"]
    assert [d["check"] for d in report["unobserved_defects"]] == ["missing_docs"]


def test_beir_published_counts_protocol():
    assert beir_facts.published_counts("beir/nfcorpus") == {("qrels", "test"): 323, ("corpus", "corpus"): 3_633}
    assert beir_facts.published_counts("beir/msmarco")[("qrels", "dev")] == 6_980
    forums = beir.CQADUPSTACK_FORUMS
    assert sum(beir_facts.published_counts(f"beir/cqadupstack/{f}")[("qrels", "test")] for f in forums) == 13_145
    assert beir_facts.known_defects("beir/scifact") == ()


@pytest.mark.slow  # a generated corpus of 70,000 chunks built and validated: tens of seconds; CI runs it
def test_mmrag_complete_query_files_match_published_counts(tmp_path):
    """The complete mmRAG query files (real) with a generated corpus of every judged chunk."""
    from mmrag_generated import dump_array, generated_corpus, judged_chunk_ids

    full = os.path.join(os.path.dirname(__file__), "data", "mmrag-full")
    folder = tmp_path / "mmrag"
    shutil.copytree(full, folder, ignore=shutil.ignore_patterns("README.md"))
    (folder / "processed_documents.json").write_text(
        dump_array(generated_corpus(judged_chunk_ids(folder)), indent=None), encoding="utf-8"
    )
    report = integrity("mmrag", data_dir=str(folder), cache_dir=str(tmp_path / "cache"))
    assert report["ok"], report["errors"]
    for split, count in {"train": 3_072, "dev": 766, "test": 1_286}.items():
        queries = split_facts(report, "queries", split)
        assert queries["published"] == count == queries["rows"]
        qrels = split_facts(report, "qrels", split)
        assert (qrels["queries"], qrels["missing_docs"], qrels["missing_queries"]) == (count, 0, 0)
        assert set(qrels["score_histogram"]) <= {"0", "1", "2"}
        assert split_facts(report, "records", split)["rows"] == count


# --- published counts belong to a release; repositories ----------------------------------------------------------

CRAG_DATA = os.path.join(os.path.dirname(__file__), "data", "crag")
MMRAG_SAMPLE = os.path.join(os.path.dirname(__file__), "data", "mmrag")


def test_crag_example_file_is_checked_against_its_own_release(tmp_path, capsys):
    report = integrity("crag/task_1_and_2", data_dir=CRAG_DATA, cache_dir=str(tmp_path))
    assert report["ok"], report["errors"]
    source = report["source"]
    assert source["release"] == "example" and source["not_compared"] == {}
    assert source["published"] == {"records|": 10, "queries|": 10}
    [read] = source["files"]
    assert (read["name"], read["bytes"], read["status"]) == ("dev_data.jsonl.bz2", 2_032_693, "official")
    assert read["md5"] == "3f6f5794005d7991786690d81f5cdac2" and "sha256" not in read  # only what the check needs
    assert [f["published"] for f in report["splits"] if f["config"] == "queries"] == [None, None]  # summed: all
    assert cli.main(["validate", "crag/task_1_and_2", "--data-dir", CRAG_DATA, "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "release: example" in out and "the official file of release `example` (size and md5 match)" in out


@pytest.mark.slow
def test_a_cut_of_the_example_file_is_reported_not_failed(tmp_path):
    """The example file minus its last record has the official name but not its size: counts shown, not compared
    (a count mismatch is an error only for files that are, or cannot be told from, the published ones)."""
    import bz2

    folder = tmp_path / "crag"
    folder.mkdir()
    lines = bz2.decompress(open(os.path.join(CRAG_DATA, "dev_data.jsonl.bz2"), "rb").read()).splitlines(True)
    (folder / "dev_data.jsonl.bz2").write_bytes(bz2.compress(b"".join(lines[:-1])))
    report = integrity("crag/task_1_and_2", data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    assert report["source"]["files"][0]["status"] == "differs"  # another size: not the example file
    assert report["ok"] and set(report["source"]["not_compared"]) >= {"records", "queries"}


def test_mmrag_sample_is_reported_as_a_sample_not_failed(tmp_path, capsys):
    report = integrity("mmrag", data_dir=MMRAG_SAMPLE, cache_dir=str(tmp_path))
    assert report["ok"], report["errors"]
    assert set(report["source"]["not_compared"]) == {"records", "queries", "qrels", "routing"}
    train = split_facts(report, "queries", "train")
    assert (train["rows"], train["published"], train["compared"]) == (14, 3_072, False)
    statuses = {f["name"]: f["status"] for f in report["source"]["files"]}
    assert statuses == {"mmrag_train.json": "differs", "mmrag_dev.json": "differs", "mmrag_test.json": "differs",
                        "processed_documents.json": "unverified"}
    assert cli.main(["validate", "mmrag", "--data-dir", MMRAG_SAMPLE, "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "14 rows (published 3,072, not compared)" in out
    assert "note: qrels, queries, records, routing: counts not compared with the published ones (mmrag_train.json: " \
           "not the " \
           "published file (25,831 bytes; the official mmrag_train.json is 3,138,030 bytes)" in out


def test_identify_by_size_then_checksum():
    from ragloaders.core.facts import Release
    from ragloaders.publish.provenance import _identify

    release = Release("r1", ({"name": "a.zip", "bytes": 10, "md5": "0" * 32},))
    entries = [(release, release.files[0])]
    assert _identify("a.zip", 10, entries, {"md5": "0" * 32})["status"] == "official"
    changed = _identify("a.zip", 10, entries, {"md5": "f" * 32})
    assert changed["status"] == "differs" and f"md5 {'f' * 32}; the official a.zip has {'0' * 32}" in changed["note"]
    smaller = _identify("a.zip", 11, entries, {"md5": "0" * 32})
    assert smaller["difference"] == "11 bytes; the official a.zip is 10 bytes"
    assert _identify("b.zip", 10, [], {})["status"] == "unlisted"
    bare = Release("r2", ({"name": "a.zip"},))
    assert _identify("a.zip", 10, [(bare, bare.files[0])], {})["status"] == "unverified"


def test_a_built_folder_gets_the_same_report_without_its_sources(mmrag_build, tmp_path, capsys):
    from ragloaders.publish.validate import integrity_of_repository

    out = mmrag_build.out
    assert mmrag_build.data_dir == MMRAG_SAMPLE
    from_sources = integrity("mmrag", data_dir=MMRAG_SAMPLE, cache_dir=mmrag_build.cache_dir)
    from_folder = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c2"))
    assert from_folder["ok"] and from_folder["source"] is None
    def strip(facts):
        return {k: v for k, v in facts.items() if k not in ("published", "compared")}
    assert sorted(map(str, map(strip, from_folder["splits"]))) == sorted(map(str, map(strip, from_sources["splits"])))
    assert from_folder["built_from"] == "mmrag"  # the card's last line
    assert cli.main(["validate", str(out), "--cache-dir", str(tmp_path / "c3")]) == 0
    assert "source: a folder built by ragloaders from mmrag (its declared upstream defects apply); no source " \
           "files read: published counts not compared" in capsys.readouterr().out


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_built_crag_folder_keeps_its_known_defects_as_warnings_and_so_does_one_validated_as_it(tmp_path,
                                                                                             crag_build, capsys):
    from ragloaders.publish.validate import integrity_of_repository

    assert crag_build.data_dir == CRAG_DATA
    out = tmp_path / "built"  # a copy of the session's build: its card is changed below
    shutil.copytree(crag_build.out, out)
    report = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c2"))
    assert report["ok"] and report["built_from"] == "crag/task_1_and_2"
    assert [(w["check"], w["config"], w["count"]) for w in report["warnings"]] == [
        ("duplicate_pairs", "search_results", 11)]
    readme = out / "README.md"  # the same folder without our card's marker: a foreign repository, no declared defects
    readme.write_text(readme.read_text().replace("<!-- built by ragloaders from crag/task_1_and_2 -->", ""))
    (out / ".ragloaders-manifest.json").unlink()  # (nor ragloaders' record of its files: the card was changed)
    foreign = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c3"))
    assert foreign["built_from"] is None and [e["check"] for e in foreign["errors"]] == ["duplicate_pairs"]
    # --as names the path for a folder whose card does not: its declared defects are warnings again
    named = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c3"), as_path="crag/task_1_and_2")
    assert named["ok"] and (named["built_from"], named["validated_as"]) == (None, "crag/task_1_and_2")
    assert [(w["check"], w["config"], w["count"]) for w in named["warnings"]] == [
        ("duplicate_pairs", "search_results", 11)]
    assert integrity_of_repository(str(out), cache_dir=str(tmp_path / "c3"), as_path="beir/nfcorpus")["errors"]
    where = ["--cache-dir", str(tmp_path / "c4")]
    assert cli.main(["validate", str(out), *where]) == 1
    assert "ERROR duplicate_pairs in search_results" in capsys.readouterr().out
    assert cli.main(["validate", str(out), "--as", "/crag/task_1_and_2/", *where]) == 0  # normalised like a path
    text = capsys.readouterr().out
    assert "validated as crag/task_1_and_2 (--as: its declared upstream defects apply)" in text
    assert "WARNING duplicate_pairs in search_results" in text and "ERROR" not in text
    assert cli.main(["validate", str(out), "--as", "beir/cqadupstack", *where]) == 2
    assert "--as 'beir/cqadupstack': not a benchmark path" in capsys.readouterr().err
    assert cli.main(["validate", "crag/task_1_and_2", "--data-dir", CRAG_DATA, "--as", "crag/task_1_and_2"]) == 2
    assert "--as is for a built folder" in capsys.readouterr().err


def test_a_hand_made_mteb_repository_with_a_dangling_qrel(tmp_path, capsys):
    """Not ours: qrels in mteb's `default` config, a qrel pointing at no document, a corpus id twice."""
    from mteb_layout import beir_tables, write_repository
    from ragloaders.publish.validate import integrity_of_repository

    tables = beir_tables([("d1", "one"), ("d2", "two"), ("d1", "again")], [("q1", "first"), ("q2", "")],
                         {"test": [("q1", "d1", 1), ("q2", "d404", 2)]})
    tables["default"] = tables.pop("qrels")
    folder = write_repository(str(tmp_path / "repo"), tables, default="default")
    report = integrity_of_repository(folder, cache_dir=str(tmp_path / "c"))
    errors = by_check(report["errors"])
    assert set(errors) == {"missing_docs", "duplicate_ids"}
    assert (errors["missing_docs"]["config"], errors["missing_docs"]["ids"]) == ("default", ["d404"])
    assert errors["duplicate_ids"]["ids"] == ["d1"]
    assert split_facts(report, "queries", "queries")["empty_text_ids"] == ["q2"]
    assert split_facts(report, "default", "test")["score_histogram"] == {"1": 1, "2": 1}
    assert report["built_from"] is None
    assert cli.main(["validate", folder, "--cache-dir", str(tmp_path / "c2")]) == 1
    assert "ERROR missing_docs in default/test: 1 corpus id is not in `corpus`: 'd404'" in capsys.readouterr().out
    assert cli.main(["validate", folder, "--data-dir", folder]) == 2  # --data-dir is for benchmark paths


def test_a_path_with_stray_slashes_is_normalised_once_by_the_command_line(tmp_path, capsys):
    where = ["--data-dir", DATA, "--cache-dir", str(tmp_path)]
    assert cli.main(["validate", "/beir/nfcorpus/", *where]) == 0
    text = capsys.readouterr().out
    assert text.startswith("beir/nfcorpus\n") and "source: nfcorpus.zip" in text and "published 3,633" in text
    assert cli.main(["validate", "beir/nfcorpus//", "--json", *where]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == "beir/nfcorpus"
    assert cli.main(["validate", "/beir/nfcorpuss/", *where]) == 2  # misspelt: the suggestion names the real path
    assert "did you mean 'beir/nfcorpus'" in capsys.readouterr().err


def test_a_hub_repo_id_is_loaded_by_its_id(tmp_path, monkeypatch):
    """No network in tests: the hub's answer and its download are redirected from the repo id to a local folder,
    which shows the id reaches them unchanged (tests/test_sources.py covers the hub cache and an unreachable hub)."""
    from mteb_layout import beir_tables, write_repository
    from ragloaders.core import hub_repository

    folder = write_repository(str(tmp_path / "repo"), beir_tables([("d1", "x")], [("q1", "y")],
                                                                   {"test": [("q1", "d1", 1)]}))
    seen = []
    monkeypatch.setattr(hub_repository, "hub_offline", lambda: False)
    monkeypatch.setattr(hub_repository, "probe_hub", lambda repo, **kwargs: seen.append(repo) or 200)
    monkeypatch.setattr(hub_repository, "resolve_commit", lambda repo, revision: seen.append(repo) or "c" * 40)
    monkeypatch.setattr(hub_repository, "cached_snapshot", lambda repo, **kwargs: seen.append(repo) or folder)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate", "some-org/beir-copy", "--json", "--cache-dir", str(tmp_path / "c")]) == 0
    assert seen == ["some-org/beir-copy"] * 3


def hostile_repository(tmp_path, config, split, table):
    from mteb_layout import beir_tables, write_repository

    tables = beir_tables([("d1", "one")], [("q1", "first")], {"test": [("q1", "d1", 1)]})
    tables[config][split] = table
    return write_repository(str(tmp_path / "repo"), tables)


@pytest.mark.parametrize("config, split, table, columns, message", [
    ("corpus", "corpus", pa.table({"_id": pa.array([1], pa.int64()), "title": [""], "text": ["one"]}), ["_id"],
     "column `_id` is int64, expected strings"),
    ("qrels", "test", pa.table({"query-id": [["q1"]], "corpus-id": ["d1"], "score": pa.array([1], pa.int32())}),
     ["query-id"], "column `query-id` is list<item: string>, expected strings"),
    ("queries", "queries", pa.table({"_id": pa.nulls(2), "text": pa.nulls(2)}), ["_id", "text"],
     "column `_id` holds only nulls (no type), expected strings; column `text` holds only nulls"),
    ("qrels", "test", pa.table({"query-id": ["q1"], "corpus-id": ["d1"], "score": pa.nulls(1)}), ["score"],
     "column `score` holds only nulls (no type), expected numbers"),
])
def test_a_hostile_repository_gets_a_structural_finding_naming_file_and_column(tmp_path, capsys, config, split, table,
                                                                              columns, message):
    folder = hostile_repository(tmp_path, config, split, table)
    assert cli.main(["validate", folder, "--json", "--cache-dir", str(tmp_path / "c")]) == 1
    report = json.loads(capsys.readouterr().out)
    [finding] = [f for f in report["errors"] if f["check"] == "column_type"]
    assert (finding["config"], finding["split"], finding["ids"]) == (config, split, columns)
    parquet = os.path.join(folder, config, f"{split}-00000-of-00001.parquet")
    assert finding["message"].startswith(f"{parquet}: {message}")
    assert {"config": config, "split": split, "rows": table.num_rows} in report["splits"]


def laughs(levels: int) -> str:
    """A billion laughs: each level a list of ten aliases of the level before (10**levels nodes expanded)."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


BOMB_SCRIPT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from ragloaders import cli
sys.exit(cli.main(["validate", sys.argv[1], "--cache-dir", sys.argv[2]]))
"""


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_readme_yaml_alias_bomb_is_refused_before_it_is_parsed(tmp_path):
    """In a subprocess with 3 GB of address space: `datasets` expanding the bomb's data_files needs far more (a
    MemoryError after half a minute, or a kill, fails the test); refusing it needs none."""
    import subprocess
    import sys

    folder = hostile_repository(tmp_path, "corpus", "corpus", pa.table({"_id": ["d1"], "title": [""], "text": ["x"]}))
    readme = tmp_path / "repo" / "README.md"
    card = readme.read_text().replace("path: corpus/corpus-00000-of-00001.parquet", "path: *l8", 1)
    readme.write_text(card.replace("---\n", "---\n" + laughs(8), 1))  # datasets expands the paths: MemoryError
    done = subprocess.run([sys.executable, "-c", BOMB_SCRIPT, folder, str(tmp_path / "c")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{readme}: YAML front matter expands to more than 200,000 nodes" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("yaml_text, refused", [
    (laughs(4), None), (laughs(6), ["200,000", "MAX_YAML_NODES"]),
    ("x: " + "y" * (1 << 20) + "\n", ["1,048,576", "MAX_YAML_BYTES"]),
    ("a: &a {k: [1, 2, 3]}\nb: [*a, *a]\n", None), ("a: &a [*a]\n", ["alias a", "contains itself"]),
])
def test_the_yaml_budget(yaml_text, refused):
    """`refused`: what the error names (the limit passed), or None: the card is read."""
    from ragloaders.core.card_yaml import check_card
    from ragloaders.core.errors import SourceError

    card = "---\r\n" + yaml_text.replace("\n", "\r\n") + "---\r\nbody\n"
    if refused:
        with pytest.raises(SourceError) as caught:
            check_card(card, "README.md")
        assert_source_error(caught.value, "README.md", "YAML", *refused)
    else:
        check_card(card, "README.md")


def counted_resolutions(monkeypatch) -> list[str]:
    """The paths `benchmark_of` is asked for from now on, by any module of the package but `api` (each module's own
    binding of it is replaced): `api.builder(path, config)` finds the builder class of the path it is given, as it
    does for every caller; what is counted is the layers above deciding what to build, check and write."""
    import sys

    from ragloaders import benchmarks

    real, asked = benchmarks.benchmark_of, []

    def counted(path: str):
        asked.append(path)
        return real(path)

    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "ragloaders" and name != "ragloaders.api" and vars(module).get("benchmark_of") is real:
            monkeypatch.setattr(module, "benchmark_of", counted)
    return asked


def test_one_build_and_one_validate_resolve_the_benchmark_once(tmp_path, monkeypatch, capsys):
    import ragloaders.cli  # noqa: F401 (the modules the commands import bind benchmark_of too)
    from ragloaders.publish import build, cards, provenance  # noqa: F401

    mmrag = os.path.join(os.path.dirname(DATA), "mmrag")
    asked = counted_resolutions(monkeypatch)
    assert cli.main(["build", "mmrag", "--data-dir", mmrag, "--out", str(tmp_path / "out"),
                     "--cache-dir", str(tmp_path / "cache")]) == 0
    assert asked == ["mmrag"]
    for args in (["mmrag", "--data-dir", mmrag, "--cache-dir", str(tmp_path / "cache")],
                 [str(tmp_path / "out")]):  # a built folder: its card names the path whose declarations apply
        asked.clear()
        capsys.readouterr()
        assert cli.main(["validate", *args, "--json"]) in (0, 1)  # (the cut sample misses published counts)
        assert json.loads(capsys.readouterr().out)["splits"]
        assert asked == ["mmrag"]


def test_repeated_groups_come_in_the_order_of_their_first_row_on_every_run():
    """On a table of several large chunks a threaded grouping gave the groups in an order that changed from run to
    run (and with it a report's examples and a card's bytes)."""
    rng = random.Random(1)
    pairs = [(f"q{rng.randrange(3000)}", f"d{rng.randrange(40)}") for _ in range(100_000)]
    table = pa.table({"query-id": [q for q, _ in pairs], "corpus-id": [d for _, d in pairs], "score": [1] * len(pairs)})
    table = pa.concat_tables([table.slice(start, 20_000) for start in range(0, len(pairs), 20_000)])
    counts = collections.Counter(pairs)  # in first-occurrence order (dicts keep it)
    expected = [pair for pair, count in counts.items() if count > 1]
    for _ in range(20):
        repeated = validate.repeated_groups(table, ["query-id", "corpus-id"])
        assert list(zip(repeated.column("query-id").to_pylist(), repeated.column("corpus-id").to_pylist())) == expected
    assert repeated.column("count_all").to_pylist() == [counts[pair] for pair in expected]


@pytest.mark.slow
def test_the_examples_of_repeated_pairs_are_the_first_in_row_order(tmp_path, monkeypatch):
    queries = [(f"q{n}", f"query {n}") for n in range(400)]
    corpus = [(f"d{n}", f"doc {n}") for n in range(40)]
    repeated = [(f"q{(7 * n) % 400}", f"d{(3 * n) % 40}") for n in range(300)]  # distinct pairs, spread out
    rows = [(q, d, 1) for q, d in repeated] + [(f"q{n % 400}", f"d{n % 40}", 0) for n in range(5_000)] + \
        [(q, d, 2) for q, d in reversed(repeated)]
    folder = str(write_beir(tmp_path / "scifact", corpus=corpus, queries=queries,
                            qrels={"train": [("q1", "d1", 1)], "test": rows}))
    declare(monkeypatch, published_counts=lambda path: {})
    counts = collections.Counter(f"{q} -> {d}" for q, d, _ in rows)
    report = integrity("beir/scifact", data_dir=folder, cache_dir=str(tmp_path / "cache"))
    found = by_check(report["errors"])["duplicate_pairs"]
    assert found["ids"] == [pair for pair, count in counts.items() if count > 1][:validate.SAMPLE_IDS]


def damage_the_middle(path) -> None:
    """100 bytes overwritten in the middle of a file: in a zstd page of Parquet they can decode to other values with
    no error at all (seen on nfcorpus' qrels/dev: 23 duplicate pairs, loaded silently)."""
    data = path.read_bytes()
    middle = len(data) // 2
    path.write_bytes(data[:middle] + bytes(255 - b for b in data[middle:middle + 100]) + data[middle + 100:])


def test_a_built_folder_is_checked_against_its_manifest_file_by_file(nfcorpus_build, tmp_path, capsys):
    from ragloaders.publish.validate import integrity_of_repository

    out = tmp_path / "nfcorpus"
    shutil.copytree(nfcorpus_build.out, out)
    listed = json.loads((out / ".ragloaders-manifest.json").read_text())["files"]
    intact = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c1"))
    assert intact["ok"] and intact["recorded_files"] == {"record": "build", "verified": len(listed), "altered": 0,
                                                         "missing": 0}
    damage_the_middle(out / "qrels" / "dev-00000-of-00001.parquet")
    (out / "README.md").write_text((out / "README.md").read_text() + "\n", encoding="utf-8")  # changed, still loads
    report = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c2"))
    assert not report["ok"]
    assert report["recorded_files"] == {"record": "build", "verified": len(listed) - 2, "altered": 2, "missing": 0}
    altered = {f["config"]: f for f in report["errors"] if f["check"] == "altered_files"}
    assert set(altered) == {"qrels", "(root)"}
    assert altered["qrels"]["ids"] == ["qrels/dev-00000-of-00001.parquet"] and altered["(root)"]["ids"] == ["README.md"]
    assert "1 file changed since ragloaders built it" in altered["qrels"]["message"]
    assert cli.main(["validate", str(out), "--cache-dir", str(tmp_path / "c3")]) == 1
    text = capsys.readouterr().out
    assert f"files: {len(listed) - 2} files verified against the build's record, 2 not (below)" in text
    assert "ERROR altered_files in qrels: 1 file changed" in text


@pytest.mark.slow
def test_a_hub_snapshot_is_checked_against_the_repository_record_through_its_links(nfcorpus_build, tmp_path):
    """A hub snapshot holds links into the cache's blobs and, at its root, the record a push wrote (another format
    than a built folder's manifest)."""
    import hashlib

    from fake_hub import git_sha1
    from ragloaders.publish.hub_manifest import HUB_MANIFEST, Published, hub_manifest_bytes
    from ragloaders.publish.validate import integrity_of_repository

    snapshot, blobs = tmp_path / "snapshots" / "c0ffee", tmp_path / "blobs"
    blobs.mkdir(parents=True)
    published = {}
    for path in sorted(nfcorpus_build.out.rglob("*")):
        name = path.relative_to(nfcorpus_build.out).as_posix()
        if not path.is_file() or name == ".ragloaders-manifest.json":
            continue
        data = path.read_bytes()
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).symlink_to(os.path.relpath(blob, (snapshot / name).parent))
        published[name] = Published(hashlib.sha256(data).hexdigest(), git_sha1(data), len(data))
    (snapshot / HUB_MANIFEST).write_bytes(hub_manifest_bytes(published))
    intact = integrity_of_repository(str(snapshot), cache_dir=str(tmp_path / "c1"))
    assert intact["ok"] and intact["recorded_files"]["verified"] == len(published)
    qrels = published["qrels/test-00000-of-00001.parquet"]
    damage_the_middle(blobs / qrels.sha256)
    report = integrity_of_repository(str(snapshot), cache_dir=str(tmp_path / "c2"))
    [altered] = [f for f in report["errors"] if f["check"] == "altered_files"]
    assert altered["ids"] == ["qrels/test-00000-of-00001.parquet"] and "since ragloaders published it" in \
        altered["message"]


@pytest.mark.parametrize("record", ["nested", "huge", "fifo"])
def test_a_record_that_is_not_ragloaders_is_no_record_and_no_hang(nfcorpus_build, tmp_path, record):
    from ragloaders.publish.hub_manifest import MAX_HUB_MANIFEST_BYTES
    from ragloaders.publish.recorded_files import check_recorded_files

    out = tmp_path / "nfcorpus"
    shutil.copytree(nfcorpus_build.out, out)
    manifest = out / ".ragloaders-manifest.json"
    manifest.unlink()
    if record == "fifo":
        os.mkfifo(manifest)  # opened without waiting for a writer, and refused
    else:
        manifest.write_bytes(b"[" * 200_000 if record == "nested" else b" " * MAX_HUB_MANIFEST_BYTES + b"{}")
    assert check_recorded_files(str(out)) is None


def test_a_repository_record_reads_no_file_through_a_link_that_leads_out(nfcorpus_build, tmp_path):
    """A folder holding a repository record whose card links out of the folder, to a file with the recorded bytes:
    not read, an altered file (the rule of data files, README's "A card reads only its own files")."""
    import hashlib

    from fake_hub import git_sha1
    from ragloaders.publish.hub_manifest import HUB_MANIFEST, Published, hub_manifest_bytes
    from ragloaders.publish.recorded_files import check_recorded_files

    out = tmp_path / "repository"
    shutil.copytree(nfcorpus_build.out, out)
    (out / ".ragloaders-manifest.json").unlink()
    outside = tmp_path / "outside.md"
    outside.write_bytes((out / "README.md").read_bytes())
    (out / "README.md").unlink()
    (out / "README.md").symlink_to(outside)
    data = outside.read_bytes()
    (out / HUB_MANIFEST).write_bytes(hub_manifest_bytes(
        {"README.md": Published(hashlib.sha256(data).hexdigest(), git_sha1(data), len(data))}))
    checked = check_recorded_files(str(out))
    assert (checked.record, checked.verified, checked.altered, checked.missing) == ("repository", 0, ["README.md"], [])


def copied(build, tmp_path, name="copy"):
    out = tmp_path / name
    shutil.copytree(build.out, out)
    return out


def test_only_the_listed_files_are_looked_at(nfcorpus_build, tmp_path):
    """A user's folder nested 1,200 deep beside the build, or one that cannot be read, is not walked (it was: a
    RecursionError, and a PermissionError)."""
    from ragloaders.publish.recorded_files import check_recorded_files

    out = copied(nfcorpus_build, tmp_path)
    levels = [str(out / "mine")]
    for _ in range(1200):
        levels.append(levels[-1] + "/d")
    for level in levels:  # (os.makedirs and shutil.rmtree recurse: not that deep)
        os.mkdir(level)
    (out / "closed").mkdir(mode=0)
    try:
        checked = check_recorded_files(str(out))
    finally:
        for level in reversed(levels):
            os.rmdir(level)
    assert (checked.altered, checked.missing) == ([], []) and checked.verified > 3


def test_a_listed_file_that_cannot_be_read_is_altered_and_one_file_under_many_names_is_read_once(
        nfcorpus_build, tmp_path, monkeypatch):
    import hashlib

    from fake_hub import git_sha1
    from ragloaders.publish import manifest, recorded_files
    from ragloaders.publish.hub_manifest import HUB_MANIFEST, Published, hub_manifest_bytes

    out = copied(nfcorpus_build, tmp_path)
    unreadable = out / "qrels" / "test-00000-of-00001.parquet"
    real = manifest.sha256_of
    reads = []

    def sha256_of(path):
        reads.append(os.path.realpath(path))
        if os.path.realpath(path) == str(unreadable):  # (as root, a mode cannot deny a read: the error is planted)
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(manifest, "sha256_of", sha256_of)
    checked = recorded_files.check_recorded_files(str(out))
    assert checked.altered == ["qrels/test-00000-of-00001.parquet"] and checked.missing == []
    # the same mechanism decides what a rebuild may replace: an own file it cannot read is altered, not a crash
    verdict = manifest.verify(str(out))
    assert verdict.altered == ["qrels/test-00000-of-00001.parquet"] and "README.md" in verdict.own
    # a repository record listing one file under 200 names (links to one folder): one read
    repository = tmp_path / "repository"
    repository.mkdir()
    data = (out / "README.md").read_bytes()
    (repository / "card.md").write_bytes(data)
    record = Published(hashlib.sha256(data).hexdigest(), git_sha1(data), len(data))
    names = {"card.md": record}
    for n in range(200):
        (repository / f"l{n}").symlink_to(".")
        names[f"l{n}/card.md"] = record
    (repository / HUB_MANIFEST).write_bytes(hub_manifest_bytes(names))
    reads.clear()
    checked = recorded_files.check_recorded_files(str(repository))
    assert (checked.verified, checked.altered, len(reads)) == (201, [], 1)


def test_a_repository_record_that_links_out_of_the_folder_is_no_record(nfcorpus_build, tmp_path):
    import hashlib

    from fake_hub import git_sha1
    from ragloaders.publish.hub_manifest import HUB_MANIFEST, Published, hub_manifest_bytes
    from ragloaders.publish.recorded_files import check_recorded_files

    out = copied(nfcorpus_build, tmp_path)
    (out / ".ragloaders-manifest.json").unlink()
    data = (out / "README.md").read_bytes()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(hub_manifest_bytes({"README.md": Published(hashlib.sha256(data).hexdigest(), git_sha1(data),
                                                                     len(data))}))
    (out / HUB_MANIFEST).symlink_to(elsewhere)
    assert check_recorded_files(str(out)) is None
    (out / HUB_MANIFEST).unlink()
    (out / HUB_MANIFEST).write_bytes(elsewhere.read_bytes())  # the same record inside: read
    assert check_recorded_files(str(out)).verified == 1


def test_a_listed_data_file_gone_is_named_in_the_one_line_error(nfcorpus_build, tmp_path, capsys):
    out = copied(nfcorpus_build, tmp_path)
    (out / "qrels" / "test-00000-of-00001.parquet").unlink()
    assert cli.main(["validate", str(out), "--cache-dir", str(tmp_path / "c")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"ragloaders: error: {out}: 1 file that ragloaders built is gone: "
                           "'qrels/test-00000-of-00001.parquet'; and it does not load (")


def test_a_built_folder_without_its_manifest_says_its_files_were_not_checked(nfcorpus_build, tmp_path, capsys):
    """The manifest deleted (or left out by a copy of `folder/*`, which skips dot files): the card still says
    ragloaders built the folder, so the report says its files were not checked rather than staying silent; the
    rows are still checked and the folder is still OK. A folder whose card is not ragloaders' says nothing of it."""
    from ragloaders.publish.validate import integrity_of_repository

    out = tmp_path / "nfcorpus"
    shutil.copytree(nfcorpus_build.out, out)
    (out / ".ragloaders-manifest.json").unlink()
    report = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c1"))
    assert report["ok"] and report["recorded_files"] == {"record": None, "verified": 0, "altered": 0, "missing": 0}
    assert cli.main(["validate", str(out), "--cache-dir", str(tmp_path / "c2")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("files:")]
    assert lines == ["files: not checked: the card says ragloaders built this folder, but its record of the files "
                     "(.ragloaders-manifest.json) is not beside them (a copy of `folder/*` leaves it out; build it "
                     "again to check them)"]
    readme = out / "README.md"
    readme.write_text(readme.read_text().replace("<!-- built by ragloaders from beir/nfcorpus -->", ""))
    assert "recorded_files" not in integrity_of_repository(str(out), cache_dir=str(tmp_path / "c3"))


@pytest.mark.parametrize("record", [b"{}", b"not json", b'{"format": "ragloaders-manifest", "files": {"' + b"x" * 5000
                                    + b'": {}}}'])
def test_a_record_of_the_files_that_ragloaders_could_not_have_written_is_an_altered_file(nfcorpus_build, tmp_path,
                                                                                        capsys, record):
    """A folder whose card says ragloaders built it, with a .ragloaders-manifest.json that is not one (edited, or
    another program's): validate said OK, "files: not checked", as if the record were merely absent."""
    from ragloaders.publish.validate import integrity_of_repository

    out = tmp_path / "nfcorpus"
    shutil.copytree(nfcorpus_build.out, out)
    (out / ".ragloaders-manifest.json").write_bytes(record)
    report = integrity_of_repository(str(out), cache_dir=str(tmp_path / "c1"))
    assert not report["ok"] and report["recorded_files"]["record"] is None
    [found] = [f for f in report["errors"] if f["check"] == "altered_files"]
    assert found["config"] == "(root)" and found["ids"] == [".ragloaders-manifest.json"]
    assert cli.main(["validate", str(out), "--cache-dir", str(tmp_path / "c2")]) == 1
    assert "is not one it could have written" in capsys.readouterr().out
