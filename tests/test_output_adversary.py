"""What ragloaders writes, against hostile folders and input: a user's read-only folders in a build, ids trec_eval
cannot hold, grades that exhaust memory, eval outputs under the target rules (never into the data or cache dir).

Builds that need the kernel's permission checks run in a child without root's override (setpriv) when the tests
run as root; whatever could crash the process (pytrec_eval) runs in a child too, so a crash fails the test."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, assert_names
from ragloaders.publish.build import build_folder
from ragloaders.publish.manifest import verify

ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT = {**os.environ, "PYTHONPATH": str(ROOT / "loaders")}
NEW, OLD = "beir/nfcorpus", "crag/task_1_and_2"
SOURCES = {NEW: str(DATA / "beir"), OLD: str(DATA / "crag")}


def as_plain_user() -> list[str]:
    """A command prefix under which permission bits apply (root drops the capabilities that bypass them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to apply")
    caps = "-dac_override,-dac_read_search,-fowner"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def holds(out: Path) -> str:
    verdict = verify(str(out))
    assert verdict.manifest and verdict.manifest.complete and not (verdict.altered or verdict.missing), verdict
    return verdict.manifest.identity["path"]


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_rebuild_of_a_folder_the_user_made_read_only_inside_stands_and_leaves_no_hidden_leftover(tmp_path,
                                                                                                     cache_dir):
    """`chmod -R a-w out; chmod u+w out` (protecting a build) then a rebuild. Before: the new build was swapped in,
    then clear_old's unlink in the read-only `corpus/` raised EACCES: the command failed with a bare
    '[Errno 13] Permission denied', the old build stayed as a hidden `.out.ragloaders-work-*`, and every later
    build of `out` failed the same way in its recovery. Now the old files it cannot remove are kept in a visible
    folder, named in one line, and the build stands."""
    out = tmp_path / "out"
    build_folder(OLD, str(out), data_dir=SOURCES[OLD], cache_dir=cache_dir)
    for folder, _, files in os.walk(out):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        if folder != str(out):
            os.chmod(folder, 0o555)
    command = [*as_plain_user(), sys.executable, "-m", "ragloaders", "build", NEW, "--data-dir", SOURCES[NEW],
               "--cache-dir", cache_dir, "--out", str(out)]
    try:
        done = subprocess.run(command, env=ENVIRONMENT, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        assert holds(out) == NEW
        hidden = [n for n in os.listdir(tmp_path) if n.startswith(".out.ragloaders-")]
        assert hidden == [], hidden
        [kept] = sorted(tmp_path.glob("out.ragloaders-kept-*"))
        assert f"kept in {kept}" in done.stderr and "could not remove" in done.stderr, done.stderr[-2000:]
        old = sorted(str(p.relative_to(kept)) for p in kept.rglob("*.parquet"))
        assert old and all(stat.S_IMODE(p.stat().st_mode) == 0o444 for p in kept.rglob("*.parquet")), old
    finally:
        for folder, _, _ in os.walk(tmp_path):
            os.chmod(folder, 0o755)


# --- what pytrec_eval cannot be given --------------------------------------------------------------------------------

SCORE_IN_A_CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a grade that exhausts memory fails, not the machine
from ragloaders.eval.metrics import parse_metrics, score
for qrels, run in json.loads(sys.argv[1]):
    try:
        print(json.dumps(score(qrels, run, parse_metrics("NDCG@10,P@1")).mean), flush=True)
    except ValueError as e:
        print("refused:", e, flush=True)
"""

UNHOLDABLE = [
    # two query ids equal up to a NUL: pytrec_eval's C++ asserts they differ and aborts (SIGABRT, exit 134)
    ({"q\0a": {"d1": 1}, "q\0b": {"d2": 1}}, {"q\0a": {"d1": 1.0}, "q\0b": {"d1": 1.0}}, "NUL byte"),
    # 'd\0y' was read as 'd', the judged document: P@1 1.0 for a document the qrels never judged
    ({"q": {"d\0x": 1}}, {"q": {"d\0y": 1.0}}, "NUL byte"),
    # a run given in Python whose query id is a lone surrogate (no file format can hold one): segfault (exit 139)
    ({"q\ud800": {"d": 1}}, {"q\ud800": {"d": 1.0}}, "lone surrogate"),
    # trec_eval sizes an array by the largest grade: 10^9 took the memory limit (a hang without one)
    ({"q": {"d1": 10**9, "d2": 1}}, {"q": {"d1": 1.0, "d2": 0.5}}, "grade 1000000000 is above"),
    # 2^63 - 1 wrapped: nDCG@10 0.0 for a run that ranks the best document first
    ({"q": {"d1": 2**63 - 1, "d2": 1}}, {"q": {"d1": 1.0, "d2": 0.5}}, "grade 9223372036854775807 is above"),
]


def test_ids_and_grades_trec_eval_cannot_hold_are_refused_not_crashed_on():
    """Each case in one child (a crash there fails the test): the score is refused in words, never computed."""
    import json

    cases = [[qrels, run] for qrels, run, _ in UNHOLDABLE]
    done = subprocess.run([sys.executable, "-c", SCORE_IN_A_CHILD, json.dumps(cases)], env=ENVIRONMENT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert len(lines) == len(UNHOLDABLE), done.stdout
    for line, (_, _, refused) in zip(lines, UNHOLDABLE):
        assert line.startswith("refused:") and refused in line, line


def test_a_trec_run_with_a_nul_in_an_id_is_one_line_naming_file_and_line(tmp_path):
    from ragloaders.core.errors import SourceError
    from ragloaders.eval.runs import read_run

    for suffix, text in ((".trec", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d\x002 2 1.0 t\n"),
                         (".jsonl", b'{"query-id": "q1", "corpus-id": "d1", "score": 2}\n'
                                    b'{"query-id": "q\\u0000", "corpus-id": "d2", "score": 1}\n')):
        path = tmp_path / f"run{suffix}"
        path.write_bytes(text)
        with pytest.raises(SourceError) as caught:
            read_run(str(path))
        message = str(caught.value)
        assert str(path) in message and "line 2" in message and "NUL" in message and "\n" not in message


def test_grades_up_to_the_bound_still_score_as_pytrec_eval_does():
    import pytrec_eval
    from ragloaders.eval.metrics import MAX_GRADE, parse_metrics, score

    qrels, run = {"q": {"d1": MAX_GRADE, "d2": 1}}, {"q": {"d1": 0.5, "d2": 1.0}}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)["q"]["ndcg_cut_10"]
    assert score(qrels, run, parse_metrics("NDCG@10")).mean["NDCG@10"] == pytest.approx(expected)
    assert 0 < expected < 1


# --- eval --verdicts follows the target rules ----------------------------------------------------------------------


@pytest.mark.parametrize("option, where", [("--verdicts", "in the data dir"),
                                           ("--verdicts", "through a symlink into the data dir"),
                                           ("--verdicts", "in the cache dir"), ("--judge-cache", "in the data dir")])
def test_eval_verdicts_may_not_write_into_the_data_or_cache_dir(option, where, tmp_path, capsys, cache_dir):
    """Before: `--verdicts DATA_DIR/verdicts.jsonl` (a new name) was written into the data dir; only an existing
    file was refused. `--judge-cache DATA_DIR` (where each judge reply is stored) was taken too. Now the rules of
    every writer apply, before anything is scored."""
    from ragloaders.cli import main

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(DATA / "crag" / "dev_data.jsonl.bz2", data)
    (tmp_path / "link").symlink_to(data)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text('{"interaction_id": "3dbed55e-66a3-4dcd-907d-096f49387e41", "prediction": "a guess"}\n')
    target = {"in the data dir": data / "verdicts.jsonl", "in the cache dir": Path(cache_dir) / "verdicts.jsonl",
              "through a symlink into the data dir": tmp_path / "link" / "verdicts.jsonl"}[where]
    target = data if option == "--judge-cache" else target
    before = {folder: sorted(os.listdir(folder)) for folder in (data, cache_dir)}
    judge = ["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m"] if option == "--judge-cache" else []
    code = main(["eval", OLD, "--predictions", str(predictions), option, str(target), *judge, "--missing-as-idk",
                 "--data-dir", str(data), "--cache-dir", cache_dir])
    err = capsys.readouterr().err
    assert code == 2 and option in err and "lies inside the" in err, err[-2000:]
    assert len([line for line in err.splitlines() if line.startswith("ragloaders: error:")]) == 1
    assert {folder: sorted(os.listdir(folder)) for folder in (data, cache_dir)} == before


# --- a hostile card in a folder given to load() -----------------------------------------------------------------------

LOAD_IN_A_CHILD = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
import ragloaders
from ragloaders.core.errors import SourceError
try:
    ragloaders.load(sys.argv[1], "corpus", cache_dir=sys.argv[2])
    print("loaded")
except SourceError as e:
    print("refused:", e)
"""


def test_load_of_a_folder_whose_card_configs_are_an_alias_bomb_is_refused_before_datasets_expands_it(
        tmp_path, cache_dir):
    """A folder's README.md whose `configs:` path is an alias of 9^8 glob strings (1 KB of YAML). Before:
    `load(folder, "corpus")` handed the card to datasets, which expanded it: MemoryError at a 3 GiB limit after
    20 s (the whole memory without one). Only `validate` checked the card's budget."""
    folder = tmp_path / "folder"
    folder.mkdir()
    aliases = ['x0: &a0 [' + ",".join(['"corpus/*.parquet"'] * 9) + ']']
    aliases += [f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 8)]
    (folder / "README.md").write_text("---\n" + "\n".join(aliases) + "\nconfigs:\n- config_name: corpus\n"
                                      "  data_files:\n  - split: corpus\n    path: *a7\n---\n\n# a folder\n")
    done = subprocess.run([sys.executable, "-c", LOAD_IN_A_CHILD, str(folder), cache_dir], env=ENVIRONMENT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused:") and str(folder / "README.md") in done.stdout, done.stdout
    assert "alias" in done.stdout


@pytest.mark.parametrize("level", [2**31, 2**63])
def test_a_relevance_level_pytrec_eval_cannot_take_is_refused_in_words(level):
    """Before: `--relevance-level 2147483648` ended in pytrec_eval's 'TypeError: Expected object_relevance_per_qid
    dictionary and measures set.', which names neither the option nor the value."""
    from ragloaders.eval.metrics import MAX_GRADE, parse_metrics, score

    with pytest.raises(ValueError) as caught:
        score({"q": {"a": 1}}, {"q": {"a": 1.0}}, parse_metrics("P@1"), relevance_level=level)
    assert_names(caught.value, "relevance level", f"{MAX_GRADE} (MAX_GRADE)", level)


# --- validate: a file that does not load as its card declares ---------------------------------------------------------

DECLARED = {"corpus": [("_id", "string"), ("title", "string"), ("text", "string")],
            "qrels": [("query-id", "string"), ("corpus-id", "string"), ("score", "int32")]}


@pytest.mark.parametrize("config, column, values, found", [
    ("corpus", "text", "struct", "column `text` is struct<a: int64>, the card declares string"),
    ("qrels", "score", "int64 2^62", "column `score` is int64, the card declares int32"),
])
def test_validate_of_a_folder_whose_file_does_not_load_as_its_card_declares_is_a_finding(
        config, column, values, found, tmp_path, capsys):
    """A card that declares the columns' types (as every card ragloaders writes does: `dataset_info.features`) and a
    Parquet file whose column cannot be cast to them. Before: `validate` exited 2 with 'DatasetGenerationError: An
    error occurred while generating the dataset', naming neither file nor column."""
    import json

    import pyarrow as pa
    import yaml
    from mteb_layout import beir_tables, write_repository
    from ragloaders.cli import main

    tables = beir_tables([("d1", "one")], [("q1", "first")], {"test": [("q1", "d1", 1)]})
    split = "corpus" if config == "corpus" else "test"
    table = tables[config][split]
    bad = pa.array([{"a": 1}]) if values == "struct" else pa.array([2**62], pa.int64())
    tables[config][split] = table.set_column(table.schema.get_field_index(column), column, bad)
    folder = write_repository(str(tmp_path / "repo"), tables)
    card = (Path(folder) / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    front["dataset_info"] = [{"config_name": name, "features": [{"name": n, "dtype": t} for n, t in columns]}
                             for name, columns in DECLARED.items()]
    (Path(folder) / "README.md").write_text("---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n\nA card.\n")
    code = main(["validate", folder, "--json", "--cache-dir", str(tmp_path / "c")])
    captured = capsys.readouterr()
    assert code == 1, captured.err[-2000:]
    [finding] = [f for f in json.loads(captured.out)["errors"] if f["check"] == "column_type"]
    parquet = os.path.join(folder, config, f"{split}-00000-of-00001.parquet")
    assert finding["config"] == config and f"{parquet}: {found}" in finding["message"], finding


# --- push: the repository's own manifest is hostile ------------------------------------------------------------------


def test_a_hostile_repository_manifest_makes_no_file_ragloaders_own(monkeypatch):
    """What a push may delete or overwrite is what the repository's manifest records AND the repository still holds
    byte for byte (sha256 or blob id): a false claim, a path outside the repository, invalid JSON or a huge
    manifest records nothing (the last three make the manifest foreign: the push stops unless told)."""
    import hashlib
    import json
    from types import SimpleNamespace

    from fake_hub import git_sha1
    from ragloaders.publish import hub_manifest, push

    theirs = b"PAR1 the repository's own data"
    remote = {"data/train.parquet": SimpleNamespace(lfs=SimpleNamespace(sha256=hashlib.sha256(theirs).hexdigest()),
                                                    blob_id="0" * 40, size=len(theirs)),
              "notes.txt": SimpleNamespace(lfs=None, blob_id=git_sha1(b"mine"), size=4),
              push.HUB_MANIFEST: SimpleNamespace(lfs=None, blob_id="1" * 40, size=100)}

    def manifest(files: dict) -> bytes:
        return json.dumps({"format": hub_manifest.HUB_FORMAT, "version": hub_manifest.HUB_VERSION,
                           "files": files}).encode()

    claim = {"sha256": "a" * 64, "git_sha1": "b" * 40, "size": 1}  # the claimed content is not what is there
    cases = {
        "false claims": (manifest({"data/train.parquet": claim, "notes.txt": claim}), False),
        "path outside": (manifest({"../x": claim, "notes.txt": claim}), True),
        "invalid JSON": (b'{"format": "ragloaders-hub-manifest", ', True),
        "nested past what json reads": (b"[" * 200_000, True),
    }
    for name, (data, foreign) in cases.items():
        monkeypatch.setattr(push, "read_hub_manifest", lambda *args, data=data: hub_manifest.parse_hub_manifest(data))
        view = push.view_repository("org/name", None, remote)
        assert view.recorded == {} and view.foreign_manifest is foreign, name
        staged = push.StagedFile("data/train.parquet", "/nonexistent", 3, verified_sha256="c" * 64)
        assert "data/train.parquet" in view.overlaps([staged]), name  # overwriting it needs --overwrite-foreign
    huge = dict(remote, **{push.HUB_MANIFEST: SimpleNamespace(lfs=None, blob_id="1" * 40,
                                                              size=push.MAX_HUB_MANIFEST_BYTES + 1)})
    assert push.read_hub_manifest("org/name", None, huge) is None  # refused before any byte is fetched


@pytest.mark.parametrize("content", [b"[" * 200_000, b'{"format": ' + b"[" * 100_000, b" " * (16 << 20) + b"{}",
                                     b'{"format": "ragloaders-manifest", "version": 1, "target": "x", "files": '
                                     b'{"\\ud800.parquet": {"sha256": "' + b"0" * 64 + b'", "size": 1}}}'],
                         ids=["nested", "nested after a key", "over 16 MB", "a lone surrogate as a file name"])
def test_a_hostile_folder_manifest_is_no_manifest_not_a_crash(tmp_path, content, capsys):
    """A build into a folder whose manifest nests past what `json` reads (RecursionError), is over the size any
    manifest ragloaders writes, or names a file no path can name (UnicodeEncodeError): the folder is not
    ragloaders', refused in the one line that says so, left as it was."""
    from ragloaders.cli import main
    from ragloaders.publish.manifest import MANIFEST, read_manifest

    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_bytes(content)
    assert read_manifest(str(out)) is None
    assert main(["build", "beir/nfcorpus", "--data-dir", str(DATA / "beir"), "--out", str(out),
                 "--configs", "qrels"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()[-1:]
    assert "was not written by ragloaders (no valid .ragloaders-manifest.json)" in line
    assert [p.name for p in out.iterdir()] == [MANIFEST] and (out / MANIFEST).read_bytes() == content
