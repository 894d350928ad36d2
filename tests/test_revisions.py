"""A hub repository read at a revision (a commit, branch or tag): `load`, `builder`, `validate`, `eval` and `bm25`
read the card and the files of that commit and say which commit they read. Against tests/fake_hub.py, which keeps
every commit's files: two pushes of the nfcorpus build, the second with 100 test qrels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import ragloaders
from conftest import assert_names
from ragloaders import cli

ROOT = Path(__file__).resolve().parent.parent
SECOND_TEST_QRELS = 100

TWO_PUSHES = r"""
import contextlib, io, json, sys
from fake_hub import install
hub = install(sys.argv[1])
from huggingface_hub import HfApi
import ragloaders
from ragloaders import cli

api = HfApi()
api.create_repo("org/nf", repo_type="dataset")
first = api.upload_folder(repo_id="org/nf", repo_type="dataset", folder_path=sys.argv[2]).oid
second = api.upload_folder(repo_id="org/nf", repo_type="dataset", folder_path=sys.argv[3]).oid
api.create_tag("org/nf", repo_type="dataset", tag="v1", revision=first)
api.create_branch("org/nf", repo_type="dataset", branch="first-push", revision=first)

def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()

rows = {str(rev): ragloaders.load("org/nf", "qrels", split="test", revision=rev).num_rows
        for rev in (first, None, "v1", "first-push", "main", second)}
builder = ragloaders.builder("org/nf", "qrels", revision="v1")
builder.download_and_prepare()
code, out, err = run("validate", "org/nf", "--revision", "v1", "--json")
validated = json.loads(out)
code_text, text, _ = run("validate", "org/nf")
code_bm25, bm25_out, bm25_err = run("bm25", "org/nf", "--revision", first, "--out", sys.argv[4] + "/run.trec")
code_eval, eval_out, _ = run("eval", "org/nf", "--revision", "first-push", "--run", sys.argv[4] + "/run.trec",
                             "--json", "--metrics", "ndcg@10")
code_bad, _, bad = run("validate", "org/nf", "--revision", "no-such-tag")
from huggingface_hub import constants
constants.HF_HUB_OFFLINE = True  # the copies the runs above left in the hub cache, read again without the hub
code_offline, out_offline, err_offline = run("validate", "org/nf")
offline_rows = ragloaders.load("org/nf", "qrels", split="test").num_rows
print(json.dumps({"first": first, "second": second, "rows": rows,
                  "builder": builder.as_dataset(split="test").num_rows,
                  "validate": [code, validated.get("commit"), [s["rows"] for s in validated["splits"]
                                                               if s["config"] == "qrels" and s["split"] == "test"]],
                  "validate_text": [code_text, text.splitlines()[0]],
                  "bm25": [code_bm25, bm25_out, bm25_err],
                  "eval": [code_eval, json.loads(eval_out) if eval_out else None],
                  "bad": bad,
                  "offline": [code_offline, out_offline.splitlines()[:1], err_offline[-500:], offline_rows]}))
"""


@pytest.fixture(scope="module")
def two_pushes(nfcorpus_build, tmp_path_factory):
    root = tmp_path_factory.mktemp("revisions")
    second = root / "second"
    shutil.copytree(nfcorpus_build.out, second)
    qrels = second / "qrels" / "test-00000-of-00001.parquet"
    pq.write_table(pq.read_table(qrels).slice(0, SECOND_TEST_QRELS), qrels)
    card = second / "README.md"
    text = card.read_text(encoding="utf-8")
    assert text.count("num_examples: 12334") == 1
    card.write_text(text.replace("num_examples: 12334", f"num_examples: {SECOND_TEST_QRELS}"), encoding="utf-8")
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_ENDPOINT="http://hub.test", HF_HUB_DISABLE_XET="1", HF_HOME=str(root / "hf-home"),
                       HF_HUB_DISABLE_TELEMETRY="1", HF_TOKEN="hf_fakeTokenForTheFakeHub",
                       PYTHONPATH=f"{ROOT / 'loaders'}{os.pathsep}{ROOT / 'tests'}")
    done = subprocess.run([sys.executable, "-c", TWO_PUSHES, str(root / "hub"), str(nfcorpus_build.out), str(second),
                           str(root)], env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_load_reads_the_rows_of_the_revision_asked_for(two_pushes):
    first, second = two_pushes["first"], two_pushes["second"]
    assert first != second
    assert two_pushes["rows"] == {first: 12334, "None": SECOND_TEST_QRELS, "v1": 12334, "first-push": 12334,
                                  "main": SECOND_TEST_QRELS, second: SECOND_TEST_QRELS}
    assert two_pushes["builder"] == 12334


@pytest.mark.slow
def test_validate_bm25_and_eval_read_the_revision_and_name_its_commit(two_pushes):
    first, second = two_pushes["first"], two_pushes["second"]
    assert two_pushes["validate"] == [0, first, [12334]]  # the tag's commit, its card's count and its rows
    assert two_pushes["validate_text"] == [0, f"org/nf at commit {second}"]
    code, out, err = two_pushes["bm25"]
    assert code == 0, err
    assert f"read org/nf at commit {first}" in out and "for 323 test queries" in out  # the first push's 323
    code, report = two_pushes["eval"]
    assert code == 0 and report["judged_queries"] == 323
    source = report["identity"]["source"]
    assert source == {"form": "hub repository", "repo_id": "org/nf", "commit": first, "revision": "first-push",
                      "qrels": {"pairs": source["qrels"]["pairs"], "sha256": source["qrels"]["sha256"]}}
    assert source["qrels"]["pairs"] > 0 and len(source["qrels"]["sha256"]) == 64
    assert "no revision 'no-such-tag'" in two_pushes["bad"] and two_pushes["bad"].count("\n") == 1


@pytest.mark.slow
def test_what_an_online_read_left_in_the_hub_cache_is_read_offline(two_pushes):
    """ragloaders reads a repository at the commit it resolved the branch to; huggingface_hub notes a branch's
    commit in the cache (`refs/main`) only when it downloads by the branch's name, so HF_HUB_OFFLINE=1 afterwards
    said the cache held no copy (the README's remedy for a hub out of reach)."""
    second = two_pushes["second"]
    code, first_line, err, rows = two_pushes["offline"]
    assert code == 0 and first_line == [f"org/nf at commit {second}"], err
    assert rows == SECOND_TEST_QRELS


def test_a_revision_for_a_folder_or_a_benchmark_path_is_an_error_in_one_line(nfcorpus_build, capsys):
    for call in (ragloaders.load, ragloaders.builder):
        for name in (str(nfcorpus_build.out), "beir/nfcorpus"):
            with pytest.raises(ValueError) as caught:
                call(name, "qrels", revision="main")
            assert_names(caught.value, name, "revision=", "--revision", "hub repository")
    for command in (["validate", str(nfcorpus_build.out)], ["validate", "beir/nfcorpus"],
                    ["bm25", str(nfcorpus_build.out), "--out", "never.trec"],
                    ["eval", "beir/nfcorpus", "--run", "never.trec"]):
        assert cli.main([*command, "--revision", "v1"]) == 2
        err = capsys.readouterr().err
        assert "is for a hub repository" in err and err.count("\n") == 1, err
    assert not os.path.exists("never.trec")


def test_the_mock_api_refuses_a_revision_for_a_folder_or_a_cragkg_folder(tmp_path):
    from ragloaders import CragMockAPI

    with pytest.raises(ValueError) as caught:
        CragMockAPI(str(tmp_path), revision="v1")
    assert_names(caught.value, tmp_path, "revision=", "--revision", "hub repository")
    with pytest.raises(ValueError) as caught:
        CragMockAPI(data_dir=str(tmp_path), revision="v1")
    assert_names(caught.value, tmp_path, "revision=", "--revision", "hub repository")
