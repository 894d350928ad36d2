"""A built folder's card whose `configs:` or `dataset_info:` is not the shape datasets reads is refused by
`check_card` (core/card_shape) with one line naming the card and the entry, before datasets reads it.

Before, datasets raised a TypeError from deep inside (a mapping as a split name, a string row count, an integer as
a config's entry), or loaded a cut data file as if complete because it verified nothing: `dataset_info: x`, a
config_name that is not a string, a split entry without its counts (a warning only). Each case here is a real
built folder (beir/nfcorpus) whose corpus file was cut to 10 of its 3,633 rows, so a load that does not refuse
the card returns a partial corpus."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import ragloaders
import yaml
from ragloaders.core.card_shape import check_card_shape, split_row_counts
from ragloaders.core.card_yaml import MAX_YAML_DEPTH, check_card, front_matter, load_yaml
from ragloaders.core.errors import SourceError

CORPUS_SPLIT = "  - name: corpus\n    num_bytes: {bytes}\n    num_examples: 3633\n"

EDITS = {  # id: (edit of the card's text, what the message says)
    "dataset_info a string": (lambda card: re.sub(r"dataset_info:\n(?:[- ] .*\n)+", "dataset_info: x\n", card),
                              "dataset_info: str 'x', where datasets reads a mapping or a list"),
    "config_name an integer": (lambda card: card.replace("- config_name: corpus\n  features", "- config_name: 5\n  "
                                                         "features"), "dataset_info entry 1: config_name 5"),
    "splits a mapping without names": (
        lambda card: re.sub(r"  - name: corpus\n    num_bytes: (\d+)\n    num_examples: 3633\n",
                            r"    corpus: {num_bytes: \1, num_examples: 3633}\n", card), "split entry 1: name missing"),
    "splits empty": (lambda card: re.sub(r"  splits:\n  - name: corpus\n    num_bytes: \d+\n    num_examples: 3633\n",
                                         "  splits: []\n", card, count=1),
                     "its data files hold a split 'corpus' that the card's dataset_info does not declare"),
    "num_examples a string": (lambda card: card.replace("num_examples: 3633", "num_examples: '3633'"),
                              "split 'corpus': num_examples '3633', where datasets reads a count"),
    "num_examples true": (lambda card: card.replace("num_examples: 3633", "num_examples: true"),
                          "num_examples True"),
    "num_examples negative": (lambda card: card.replace("num_examples: 3633", "num_examples: -1"), "num_examples -1"),
    "num_bytes a string": (lambda card: re.sub(r"(  - name: corpus\n    num_bytes: )(\d+)", r"\1'\2'", card),
                           "split 'corpus': num_bytes '"),
    "split name a mapping": (lambda card: card.replace("  - name: corpus\n    num_bytes", "  - name: {a: 1}\n    "
                                                       "num_bytes"), "split entry 1: name {'a': 1}"),
    "config given twice": (lambda card: card.replace("- config_name: qrels\n  features", "- config_name: corpus\n  "
                                                     "features"), "config_name 'corpus' given twice"),
    "features of an unknown type": (lambda card: card.replace("    dtype: string", "    dtype: nosuchtype", 1),
                                    "dataset_info: datasets cannot read it (ValueError: Feature type 'Nosuchtype'"),
    "configs a string": (lambda card: re.sub(r"configs:\n(?:[- ] .*\n)+", "configs: x\n", card),
                         "configs: str 'x', where datasets reads a list"),
    "a config an integer": (lambda card: re.sub(r"configs:\n- config_name: corpus\n(?:  .*\n)+",
                                                "configs:\n- 5\n", card), "configs entry 1: int 5"),
    "data_files an integer": (lambda card: card.replace("  data_files:\n  - split: corpus\n    path: corpus/corpus-*"
                                                        ".parquet\n", "  data_files: 5\n"),
                              "configs entry 'corpus': data_files: int 5"),
    "a data_files split a mapping": (lambda card: card.replace("  - split: corpus\n", "  - split: {a: 1}\n"),
                                     "data_files entry 1: split {'a': 1}"),
    "a front matter that is a list": (lambda card: "---\n- a\n---\n" + card.split("---\n", 2)[2],
                                      "front matter is list ['a'], where a card holds a mapping"),
}


@pytest.fixture(scope="module")
def cut_folder(nfcorpus_build, tmp_path_factory) -> Path:
    """The nfcorpus build, its manifest left out, its corpus cut to 10 rows (its card still declares 3,633)."""
    folder = tmp_path_factory.mktemp("card-shape") / "nf"
    shutil.copytree(nfcorpus_build.out, folder, ignore=shutil.ignore_patterns(".ragloaders*"))
    corpus = folder / "corpus" / "corpus-00000-of-00001.parquet"
    pq.write_table(pq.read_table(corpus).slice(0, 10), corpus)
    return folder


def edited(cut_folder: Path, tmp_path: Path, edit) -> Path:
    folder = tmp_path / "nf"
    shutil.copytree(cut_folder, folder)
    card = (folder / "README.md").read_text()
    (folder / "README.md").write_text(changed := edit(card))
    assert changed != card, "the edit no longer applies to the card ragloaders writes"
    return folder


@pytest.mark.parametrize("edit, said", EDITS.values(), ids=EDITS.keys())
def test_a_card_datasets_would_misread_is_refused_naming_it(edit, said, cut_folder, tmp_path):
    folder = edited(cut_folder, tmp_path, edit)
    with pytest.raises(SourceError) as caught:
        ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert message.startswith(str(folder / "README.md") + ": ") and said in message, message
    assert "\n" not in message and len(message) < 400, message


def test_the_unedited_cut_folder_is_refused_by_its_row_count(cut_folder, tmp_path):
    """The control: the same folder with its card as built is refused because 10 rows are not 3,633."""
    with pytest.raises(SourceError, match="hold 10 rows where the card declares 3,633"):
        ragloaders.load(str(cut_folder), "corpus", cache_dir=str(tmp_path / "cache"))


def test_the_cli_prints_the_refusal_in_one_line(cut_folder, tmp_path, capsys):
    from ragloaders import cli

    folder = edited(cut_folder, tmp_path, EDITS["dataset_info a string"][0])
    for command in (["validate", str(folder)], ["docs", str(folder), "MED-10"]):
        assert cli.main([*command, "--cache-dir", str(tmp_path / "cache")]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1, (command, captured)
        assert f"{folder / 'README.md'}: dataset_info: str 'x'" in captured.err, (command, captured.err)


@pytest.mark.parametrize("depth, refused", [(MAX_YAML_DEPTH, False), (MAX_YAML_DEPTH + 1, True), (5000, True)])
def test_collections_nested_past_the_depth_bound_are_refused_before_they_are_built(depth, refused):
    """5,000 nested lists made PyYAML's composer (and datasets after it) raise RecursionError; at the bound the
    card is read (the extra field is no concern of datasets)."""
    card = f"---\npretty_name: x\nextra: {'[' * (depth - 1)}{']' * (depth - 1)}\n---\n"  # the front matter is 1 deep
    if refused:
        with pytest.raises(SourceError, match=f"nests collections more than {MAX_YAML_DEPTH} deep"):
            check_card(card, "README.md")
    else:
        check_card(card, "README.md")


def test_ragloaders_own_cards_pass_read_as_safe_load_reads_them_and_nest_far_from_the_bound(
        nfcorpus_build, crag_build, mmrag_build):
    """(The mock KG's card, 16 KB, nests 7 deep too: tests/test_mock_kg*.py load it through check_card.)"""
    for build in (nfcorpus_build, crag_build, mmrag_build):
        text = (Path(build.out) / "README.md").read_text()
        check_card(text, "README.md")
        assert load_yaml(front_matter(text), "README.md") == yaml.safe_load(front_matter(text)), build.out
        depth = deepest = 0
        for event in yaml.parse(front_matter(text), Loader=yaml.SafeLoader):
            depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
            deepest = max(deepest, depth)
        assert 5 <= deepest <= 7, (build.out, deepest)


FUZZ = textwrap.dedent("""
    import copy, random, sys
    import yaml
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from ragloaders.core.card_shape import check_card_shape, split_row_counts
    from ragloaders.core.errors import SourceError

    metadata = yaml.safe_load(sys.stdin.read())
    values = [None, True, 0, -1, 3.5, 2 ** 70, "", "corpus", "x" * 300, [], {}, [1, "a"], {"a": 1},
              {"name": "corpus"}, [{"name": "corpus", "num_bytes": 1, "num_examples": 1}], {"split": "s", "path": 1},
              {"split": "s", "path": "p"}, [[[]]], {"dtype": "string"}, {"name": "x", "dtype": "int7"}]

    def places(node, path=()):
        yield path
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            yield from places(child, path + (key,))

    rng = random.Random(int(sys.argv[1]))
    refused = passed = 0
    for _ in range(int(sys.argv[2])):
        mutated = copy.deepcopy(metadata)
        for _ in range(rng.randint(1, 3)):
            fields = [field for field in ("configs", "dataset_info") if field in mutated]
            if not fields:
                break
            field = rng.choice(fields)
            path = () if rng.random() < 0.1 else rng.choice(list(places(mutated[field])))  # the field too
            parent, key = (mutated, field) if not path else (None, None)
            node = mutated[field]
            for step in path:
                parent, key, node = node, step, node[step]
            action = rng.random()
            if action < 0.7:
                parent[key] = copy.deepcopy(rng.choice(values))
            elif action < 0.85 and isinstance(parent, dict):
                del parent[key]
            elif isinstance(node, list) and node:
                node.append(copy.deepcopy(node[0]))
        try:
            check_card_shape(mutated, "README.md")
        except SourceError as e:
            assert "\\n" not in str(e) and len(str(e)) < 600, str(e)
            refused += 1
            continue
        passed += 1
        configs = MetadataConfigs.from_dataset_card_data(mutated)
        assert len(configs) == len(mutated.get("configs") or []) and all(isinstance(c, str) for c in configs)
        infos = DatasetInfosDict.from_dataset_card_data(mutated)
        declared = mutated.get("dataset_info")
        entries = [] if declared is None else declared if isinstance(declared, list) else [declared]
        assert len(infos) == len(entries) and all(isinstance(c, str) for c in infos), list(infos)
        for config, info in infos.items():
            read = {name: split.num_examples for name, split in (info.splits or {}).items()}
            assert all(type(count) is int and count >= 0 for count in read.values()), read
            assert read == (split_row_counts(mutated, config) or {}), (config, read)
    print(refused, passed)
""")


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_fuzzed_card_is_refused_or_read_by_datasets_as_check_card_reads_it(nfcorpus_build):
    """600 cards, each ragloaders' own with 1-3 parts of `configs` or `dataset_info` replaced, deleted or repeated,
    in a child process (a crash is a failure): check_card_shape refuses with a SourceError of one bounded line, or
    datasets reads both fields without an error, one config for each entry, named by a string, and the row counts
    `split_row_counts` gives, integers (so its verification is on and compares counts)."""
    metadata = front_matter((Path(nfcorpus_build.out) / "README.md").read_text())
    result = subprocess.run([sys.executable, "-c", FUZZ, "7", "600"], input=metadata, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    refused, passed = map(int, result.stdout.split())
    assert refused > 100 and passed > 50, (refused, passed)


def test_split_row_counts_is_what_the_card_declares():
    metadata = {"dataset_info": [{"config_name": "a", "splits": [{"name": "s", "num_bytes": 1, "num_examples": 4}]},
                                 {"splits": [{"name": "t", "num_bytes": 0, "num_examples": 0}]}]}
    check_card_shape(metadata, "README.md")
    assert split_row_counts(metadata, "a") == {"s": 4}
    assert split_row_counts(metadata, "default") == {"t": 0}
    assert split_row_counts(metadata, "b") is None
    no_splits = {"dataset_info": {"config_name": "a", "features": [{"name": "x", "dtype": "string"}]}}
    check_card_shape(no_splits, "README.md")
    assert split_row_counts(no_splits, "a") is None
    as_mapping = {"dataset_info": {"splits": {"t": {"name": "t", "num_bytes": 1, "num_examples": 3}}}}
    check_card_shape(as_mapping, "README.md")  # datasets reads a mapping of splits too (its values)
    assert split_row_counts(as_mapping, "default") == {"t": 3}


YAML_DOCUMENTS = [
    "a: &x {k: [1, 2]}\nb: *x\nc: {<<: *x, d: 2}\n", "t: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\n",
    "s: !!set {a, b}\no: !!omap [a: 1, b: 2]\np: !!pairs [a: 1, a: 2]\nb: !!binary aGVsbG8=\n",
    "f: [.inf, -.Inf, .nan, 1e3, 0x1f, 0o17, 017, +12, 1_000, ~, null, yes, No, on]\n",
    "k: !!str 5\nm: |\n  two\n  lines\nn: >-\n  folded\n  text\n", "? [a, b]\n: 1\n", "t: 2001-02-30\n",
    "a: *nowhere\n", "--- 1\n--- 2\n", "", "x\n", "[1, {a: [2, {b: 3}]}]\n", "a: !!python/object:os.system x\n",
    "a: 1\na: 2\n", '"\\u00e9\\U0001F600": "\\x41"\n',
]


@pytest.mark.parametrize("text", YAML_DOCUMENTS)
def test_load_yaml_gives_what_safe_load_gives_or_a_source_error(text):
    """load_yaml builds from the events its budget check parsed (one parse, not two): the same value as
    yaml.safe_load, or where safe_load raises, a SourceError (safe_load's own exceptions are not all YAMLError)."""
    try:
        expected = yaml.safe_load(text)
    except Exception:
        with pytest.raises(SourceError, match="invalid YAML front matter"):
            load_yaml(text, "README.md")
        return
    got = load_yaml(text, "README.md")
    assert repr(got) == repr(expected)



FENCES = ["---\na: 1\n---\nbody", "---\na: 1\n--- \nbody", "---\na: 1\n---\t\t\nbody", "---\r\na: 1\r\n---\r\n",
          "\n\n---\na: 1\n---", "---\ra: 1\r---\r", "---\na: 1\n----\nb: 2\n---\n", "---\n---\n", "no card",
          "---\na: 1", " ---\na: 1\n---\n", "---x\na: 1\n---\n", "---\na: 1\n---x\n---\n", "---\n\na: 1\n\n---  \r\n"]


@pytest.mark.parametrize("card", FENCES)
def test_the_front_matter_is_the_block_huggingface_hub_reads(card):
    """A space after the closing `---` made front_matter() find no YAML, so no check ran, while huggingface_hub
    (and datasets through it) read the block: an alias bomb passed. The block is now found as the hub finds it."""
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    match = REGEX_YAML_BLOCK.search(card)
    assert front_matter(card) == (match.group(2) if match else "")


def test_a_bomb_behind_a_closing_fence_with_a_trailing_space_is_refused():
    bomb = "l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 7))
    with pytest.raises(SourceError, match="more than 200,000 nodes"):
        check_card("---\n" + bomb + "--- \n# body\n", "README.md")


def test_nesting_made_by_chained_aliases_counts_toward_the_depth_bound():
    """Thirty anchors, each 45 lists deep around an alias of the one before: each under the bound, 1,300 deep once
    expanded, which datasets' deepcopy and features parsing met as a RecursionError."""
    lines = ["f0: &f0 [x]"] + [f"f{i}: &f{i} {'[' * 45}*f{i - 1}{']' * 45}" for i in range(1, 30)]
    with pytest.raises(SourceError, match="more than 100 deep .aliases expanded."):
        check_card("---\n" + "\n".join(lines) + "\n---\n", "README.md")
    fits = "a: &a " + "[" * 49 + "]" * 49 + "\nb: " + "[" * 50 + "*a" + "]" * 50  # the card, 50 lists, 49: 100
    check_card("---\n" + fits + "\n---\n", "README.md")
    deeper = "a: &a " + "[" * 49 + "]" * 49 + "\nb: " + "[" * 51 + "*a" + "]" * 51
    with pytest.raises(SourceError, match="more than 100 deep"):
        check_card("---\n" + deeper + "\n---\n", "README.md")


@pytest.mark.parametrize("key", ["2024-01-01", "true", "1", "null", "[a, b]"])
def test_a_front_matter_field_not_named_by_a_string_is_refused(key):
    """huggingface_hub passes the fields as keywords: `TypeError: keywords must be strings` from inside datasets."""
    card = f"---\npretty_name: x\n{key if not key.startswith('[') else '? ' + key + chr(10)}: launched\n---\n"
    with pytest.raises(SourceError, match="where a card's fields are named by strings|invalid YAML"):
        check_card(card, "README.md")


def test_a_long_base_60_number_is_refused_before_it_is_built():
    """PyYAML builds `1:59:59:...` with big integers, in time quadratic in its length: 29 s for a 1 MB card."""
    with pytest.raises(SourceError, match="a number of 300,003 characters"):
        check_card("---\nx: 1:" + "59:" * 100_000 + "1\n---\n", "README.md")
    check_card("---\nx: '" + "1:" * 3000 + "'\ny: 1:59\n---\n", "README.md")  # quoted, or short: read


@pytest.mark.parametrize("standalone, said", [
    ("dataset_info: none\n", "/.huggingface.yaml: dataset_info: str 'none'"),
    ("l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 7)), ".huggingface.yaml: YAML front "
     "matter expands to more than 200,000 nodes"),
    ("- a list\n", ".huggingface.yaml: a list, where datasets reads a mapping"),
])
def test_a_huggingface_yaml_beside_the_card_is_checked_as_datasets_merges_it(standalone, said, cut_folder, tmp_path):
    """datasets merges a folder's `.huggingface.yaml` over the card (read whole with yaml.safe_load): `dataset_info:
    none` there turned the split counts' verification off (the cut corpus loaded as 10 rows), and an alias bomb
    there went unchecked."""
    folder = tmp_path / "nf"
    shutil.copytree(cut_folder, folder)
    (folder / ".huggingface.yaml").write_text(standalone)
    with pytest.raises(SourceError) as caught:
        ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))
    assert said in str(caught.value), str(caught.value)


def with_field(field: str):
    return lambda card: card.replace("pretty_name: BEIR nfcorpus\n", f"pretty_name: BEIR nfcorpus\n{field}\n", 1)


SECOND_PASS = {  # id: (edit of the card's text, or of its bytes, what the message says)
    "a BOM before a card datasets misreads": (lambda card: "\ufeff" + card.replace("configs:\n", "configs: 5\nx:\n", 1),
                                              "configs: int 5, where datasets reads a list"),
    "a lone CR after the closing fence": (lambda card: card.replace("\n---\n", "\n---\rconfigs: 5\n---\n", 1),
                                          "invalid YAML front matter (but found another document"),
    "a byte that is not UTF-8": (lambda card: card.replace("BEIR nfcorpus", "BEIR \udcffnfcorpus", 1),
                                 "not UTF-8 text at byte"),
    "a field named get": (with_field("get: 1"), "configs: datasets cannot read it (TypeError"),
    "a field named self": (with_field("self: 1"), "front matter: datasets cannot read it (TypeError"),
    "a field named ignore_metadata_errors": (with_field("ignore_metadata_errors: true"), "front matter: datasets"),
    "a long number tagged !!int": (with_field('x: !!int "' + "1:" * 3000 + '1"'), "a number of 6,001 characters"),
    "a data file named 1,000 times": (lambda card: card.replace(
        "    path: corpus/corpus-*.parquet\n", "    path:\n    - &p corpus/corpus-*.parquet\n" + "    - *p\n" * 1000,
        1), "more than once (datasets would read"),
    "columns: 5 in a config": (lambda card: card.replace("- config_name: corpus\n  data_files:",
                                                         "- config_name: corpus\n  columns: 5\n  data_files:", 1),
                               "datasets could not prepare it from the card and its files (TypeError"),
    "filters: 5 in a config": (lambda card: card.replace("- config_name: corpus\n  data_files:",
                                                         "- config_name: corpus\n  filters: 5\n  data_files:", 1),
                               "datasets could not prepare it from the card and its files"),
    "a missing file named by 40 KB of path": (lambda card: card.replace("path: corpus/corpus-*.parquet",
                                                                        "path: corpus/" + "a/" * 20_000 + "x.parquet"),
                                              "no file '"),
}


@pytest.mark.parametrize("edit, said", SECOND_PASS.values(), ids=SECOND_PASS.keys())
def test_cards_a_second_adversarial_pass_made_are_refused_in_one_bounded_line(edit, said, cut_folder, tmp_path):
    """Each passed the checks (a BOM or a lone CR made them read another block than huggingface_hub; a bad byte
    was replaced where the hub refuses it) or passed them and then failed inside datasets or huggingface_hub, or
    read one file a thousand times (47 s and 3.6M rows for a 20 KB card), or echoed a 40 KB path whole."""
    folder = tmp_path / "nf"
    shutil.copytree(cut_folder, folder)
    card = (folder / "README.md").read_text()
    changed = edit(card)
    assert changed != card
    (folder / "README.md").write_bytes(changed.encode("utf-8", "surrogateescape"))
    with pytest.raises(SourceError) as caught:
        ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert said in message and "\n" not in message and len(message) < 600, message[:600]
    assert message.startswith(str(folder)), message[:300]


def test_a_card_with_a_bom_or_crlf_line_ends_still_loads(cut_folder, tmp_path):
    """huggingface_hub drops a BOM and keeps CRLF: such a card is read, and its row counts still checked."""
    for name, encode in (("bom", lambda text: b"\xef\xbb\xbf" + text.encode()),
                         ("crlf", lambda text: text.replace("\n", "\r\n").encode())):
        folder = tmp_path / name
        shutil.copytree(cut_folder, folder)
        (folder / "README.md").write_bytes(encode((folder / "README.md").read_text()))
        with pytest.raises(SourceError, match="hold 10 rows where the card declares 3,633"):
            ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))


@pytest.mark.parametrize("legacy", ['{"x": 5}', '{"x": {"splits": 5}}', "[1]", '{"x": ' * 5000 + "1" + "}" * 5000])
def test_a_legacy_dataset_infos_json_datasets_cannot_read_is_refused_naming_it(legacy, cut_folder, tmp_path):
    """datasets still reads an old `dataset_infos.json` beside the card: these raised AttributeError or TypeError
    from inside it (the last, RecursionError)."""
    folder = tmp_path / "nf"
    shutil.copytree(cut_folder, folder)
    (folder / "dataset_infos.json").write_text(legacy)
    with pytest.raises(SourceError) as caught:
        ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert message.startswith(f"{folder / 'dataset_infos.json'}: datasets cannot read it") and len(message) < 500


def validate_folder(folder: Path, cache: Path) -> tuple[int, str]:
    """`ragloaders validate FOLDER` in this process: (exit status, stdout and stderr)."""
    from ragloaders import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(["validate", str(folder), "--cache-dir", str(cache)])
    return code, out.getvalue()


def _without_dataset_info(card: str) -> str:
    """The card with no `dataset_info` in its front matter (as an older push_to_hub left it, the counts in
    dataset_infos.json instead)."""
    end = card.index("\n---", 4)
    front = re.sub(r"\ndataset_info:\n(?:[- ].*\n?)*", "\n", card[:end] + "\n").rstrip("\n")
    assert "dataset_info" not in front
    return front + card[end:]


@pytest.mark.parametrize("count, said", [
    (5, "its 1 Parquet file(s) hold 3,237 rows where dataset_infos.json declares 5"),
    (-1, "config 'queries' split 'queries': num_examples -1, where datasets reads a count"),
    ("5", "config 'queries' split 'queries': num_examples '5', where datasets reads a count"),
])
def test_the_row_counts_a_legacy_dataset_infos_json_declares_are_checked_as_a_cards(count, said, nfcorpus_build,
                                                                                     tmp_path):
    """datasets verifies the counts of dataset_infos.json where the card declares none: a wrong one was its
    NonMatchingSplitsSizesError, printed whole as a bug of ragloaders ('--debug shows where'), by load and by
    validate alike."""
    folder = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, folder, ignore=shutil.ignore_patterns(".ragloaders*"))
    (folder / "README.md").write_text(_without_dataset_info((folder / "README.md").read_text()))
    (folder / "dataset_infos.json").write_text(json.dumps(  # (datasets takes a lone entry for `default`)
        {"queries": {"splits": {"queries": {"name": "queries", "num_examples": count}}}, "corpus": {}}))
    with pytest.raises(SourceError) as caught:
        ragloaders.load(str(folder), "queries", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert message.startswith(f"{folder / 'dataset_infos.json'}: ") and said in message and len(message) < 500
    code, out = validate_folder(folder, tmp_path / "cache")
    if count == 5:  # a count of the right shape: the split's finding, the other configs checked
        assert code == 1 and f"ERROR count in queries: {folder / 'dataset_infos.json'}: " in out and said in out
    else:
        assert code == 2 and said in out


def test_a_dataset_info_named_unlike_its_config_is_warned_of(cut_folder, tmp_path, caplog):
    """datasets matches a dataset_info entry to its config by exact name: `Corpus` describes no config `corpus`, so
    the corpus cut to 10 rows loaded as if whole, without a word."""
    import logging

    def renamed(card: str) -> str:
        info = card.index("\ndataset_info:\n")
        return card[:info] + card[info:].replace("- config_name: corpus\n", "- config_name: Corpus\n", 1)

    folder = edited(cut_folder, tmp_path, renamed)
    caplog.set_level(logging.WARNING)
    loaded = ragloaders.load(str(folder), "corpus", split="corpus", cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == 10  # datasets verified nothing: what the warning says
    said = [r.getMessage() for r in caplog.records if "dataset_info describes no config" in r.getMessage()]
    assert said and said[0] == (f"{folder / 'README.md'}: dataset_info describes no config 'corpus' (did you mean "
                                "'Corpus'?): datasets verifies none of its rows against the card")
