"""CRAG answer scoring at its bounds: the 75-token cut of a huge prediction costs what the kept part costs (and gives
the whole text's tokens), a tokenizer path or predictions path that is no regular file is refused without being
read, duplicate columns, long CSV fields, a null answer and predictions of another split."""

from __future__ import annotations

import bz2
import csv
import gzip
import json
import os
import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import assert_names, assert_source_error
from ragloaders.cli import main
from ragloaders.core.errors import SourceError, UsageError
from ragloaders.eval import read_predictions, score_answers
from test_eval_adversarial import llama_like_tokenizer, whole_text_trim
from test_eval_crag import crafted, crafted_rows, raw_records, tiny_tokenizer, where, write_jsonl  # noqa: F401

pytest.importorskip("tokenizers")


class CountingTokenizer:
    """A tokenizer that records the length of every text it encodes."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.encoded: list[int] = []

    def encode(self, text: str, **kwargs):
        self.encoded.append(len(text))
        return self.tokenizer.encode(text, **kwargs)

    def decode(self, ids, **kwargs):
        return self.tokenizer.decode(ids, **kwargs)


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory) -> dict[str, str]:
    """CRAG-shaped BPE (words never join leftwards), BPE whose words join (a merge of "e" and "▁"), and word-level."""
    folder = tmp_path_factory.mktemp("tokenizers")
    return {"llama": llama_like_tokenizer(folder / "llama.json"),
            "joins": llama_like_tokenizer(folder / "joins.json", join_words=True),
            "words": tiny_tokenizer(folder / "words.json")}


@pytest.mark.parametrize("text", ["x" * 1_000_000, "漢" * 1_000_000, "the\n" * 250_000, "🙂é" * 500_000,
                                  "x" * 999_990 + " the and"])
@pytest.mark.parametrize("kind", ["llama", "joins"])
def test_a_huge_prediction_without_spaces_is_cut_from_a_prefix_it_needs(tokenizers, kind, text):
    from ragloaders.eval.crag_answers import Trimmer

    trim = Trimmer(tokenizers[kind])
    counting = trim.tokenizer = CountingTokenizer(trim.tokenizer)
    cut = trim(text)
    assert max(counting.encoded) <= 2 * Trimmer.FIRST_WINDOW, counting.encoded  # never the whole million
    assert sum(counting.encoded) <= 4 * Trimmer.FIRST_WINDOW
    assert cut == whole_text_trim(tokenizers[kind], text[:100_000])  # the kept tokens lie far inside this prefix


def adversarial_texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    pieces = ["the", "and", "a", "e", "x", " ", "  ", "\n", "\n\n", "\t", "é", "漢", "字", "🙂", "\u2581", "<s>",
              "</s>", "\u200d", "\r\n"]
    texts = []
    for size in (3, 40, 70, 75, 80, 150, 400, 1200):
        texts.append("".join(rng.choice(pieces) for _ in range(size)))
        texts.append("".join(rng.choice(pieces[:5] + pieces[7:]) for _ in range(size)))  # no space
        texts.append("".join(rng.choice(["漢", "🙂", "é", "\n"]) for _ in range(size)))
        period = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        texts.append(period * size)
    return texts


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["llama", "joins", "words"])
def test_the_cut_equals_tokenizing_the_whole_text(tokenizers, kind, seed):
    """Small first windows make the prefix grow many times on short texts, at every kind of boundary."""
    from ragloaders.eval.crag_answers import Trimmer

    trim = Trimmer(tokenizers[kind])
    for window in (8, 16, 64):
        trim.FIRST_WINDOW = window
        for text in adversarial_texts(seed):
            assert trim(text) == whole_text_trim(tokenizers[kind], text), (window, text)


def test_the_cut_of_the_samples_real_text_equals_tokenizing_it_whole(tokenizers):
    """CRAG's own answers, questions and retrieved pages (the sample's), as they are and with every space removed."""
    from ragloaders.eval.crag_answers import Trimmer

    texts = []
    for record in raw_records():
        texts += [record["answer"], record["query"]]
        texts += [page["page_snippet"] for page in record["search_results"][:2]]
        texts += [page["page_result"][:3000] for page in record["search_results"][:1]]
    texts += [text.replace(" ", "") for text in texts]
    for kind in ("llama", "joins"):
        trim = Trimmer(tokenizers[kind])
        trim.FIRST_WINDOW = 32
        for text in texts:
            assert trim(text) == whole_text_trim(tokenizers[kind], text), text[:200]


def test_a_null_answer_is_refused_naming_the_record(tmp_path):
    """CRAG's local_evaluation.py strips every ground truth first, so it stops on a null one (AttributeError)."""
    records = [{**record, "search_results": []} for record in raw_records()]  # (the pages are not scored)
    records[2]["answer"] = None
    (tmp_path / "data").mkdir()
    with bz2.open(tmp_path / "data" / "dev_data.jsonl.bz2", "wt", compresslevel=1, encoding="utf-8") as f:
        f.writelines(json.dumps(record) + "\n" for record in records)
    rows = [{"interaction_id": r["interaction_id"], "prediction": "yes"} for r in records]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    with pytest.raises(SourceError) as caught:
        score_answers("crag/task_1_and_2", path, data_dir=str(tmp_path / "data"), cache_dir=str(tmp_path / "cache"))
    assert_names(caught.value, "crag/task_1_and_2", repr(records[2]["interaction_id"]), "no answer")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_duplicate_column_is_refused_naming_the_file_and_the_column(tmp_path, suffix):
    path = tmp_path / f"p{suffix}"
    if suffix == ".csv":
        path.write_text("interaction_id,prediction,prediction\na,first,second\n", encoding="utf-8")
    else:
        columns = [pa.array(["a"]), pa.array(["first"]), pa.array(["second"])]
        pq.write_table(pa.Table.from_arrays(columns, names=["interaction_id", "prediction", "prediction"]), path)
    with pytest.raises(SourceError) as caught:
        read_predictions(path)
    assert_source_error(caught.value, path.name, "'prediction'", line=1 if suffix == ".csv" else None)


def test_predictions_of_another_split_are_refused(crafted, tmp_path, capsys):  # noqa: F811 - the fixture's value
    """The sample's validation split has no record: every prediction is for the test split."""
    path = write_jsonl(tmp_path / "p.jsonl", crafted_rows(crafted))
    with pytest.raises(UsageError) as caught:
        score_answers("crag/task_1_and_2", path, split="validation", **where(crafted))
    assert_names(caught.value, path, "10 are for records of other splits", "validation", "--split")
    args = ["eval", "crag/task_1_and_2", "--predictions", path, "--split", "validation", "--data-dir",
            crafted["data_dir"], "--cache-dir", crafted["cache_dir"]]
    assert main(args) == 2
    assert "another split" in capsys.readouterr().err
    ours = write_jsonl(tmp_path / "ours.jsonl", [{"interaction_id": "not-a-record", "prediction": "yes"}])
    with pytest.raises(UsageError) as caught:
        score_answers("crag/task_1_and_2", ours, split="test", **where(crafted))
    assert_names(caught.value, ours, "1 is not in crag/task_1_and_2", "test split (10 records)")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(UsageError) as caught:
        score_answers("crag/task_1_and_2", empty, split="validation", **where(crafted))
    assert_names(caught.value, empty, "no prediction", "nothing to score")


def test_unknown_and_absent_ids_name_the_predictions_file(crafted, tmp_path):  # noqa: F811 - the fixture's value
    rows = crafted_rows(crafted)[1:] + [{"interaction_id": "not-a-record", "prediction": "yes"}]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    with pytest.raises(UsageError) as caught:
        score_answers("crag/task_1_and_2", path, **where(crafted))
    assert str(caught.value).startswith(f"{path}: ")


def test_a_csv_prediction_as_long_as_a_jsonl_one_is_read(tmp_path):
    long = "é" * 300_000  # over the csv module's default field limit of 131,072 characters
    path = tmp_path / "p.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([["interaction_id", "prediction"], ["a", "short"], ["b", long]])
    limit = csv.field_size_limit()
    assert read_predictions(path) == {"a": "short", "b": long}
    assert csv.field_size_limit() == limit  # the process's limit is given back


def test_a_csv_error_names_the_line(tmp_path, monkeypatch):
    import ragloaders.eval.crag_answers as crag_answers

    monkeypatch.setattr(crag_answers, "MAX_LINE_BYTES", 1000)  # the limit stays the csv module's 131,072
    path = tmp_path / "p.csv"
    path.write_text("interaction_id,prediction\na,x\nb," + "y" * 140_000 + "\n", encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        read_predictions(path)
    assert_source_error(caught.value, "p.csv", "field limit", line=3)


_LOAD_TOKENIZER = """
import sys
from ragloaders.core.errors import SourceError
from ragloaders.eval.crag_answers import Trimmer
try:
    Trimmer(sys.argv[1])
except SourceError as e:
    print(e)
"""


def test_a_tokenizer_path_that_is_no_regular_file_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "tokenizer.json"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer forever
    done = subprocess.run([sys.executable, "-c", _LOAD_TOKENIZER, str(fifo)], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == f"{fifo}: cannot be read as --tokenizer's tokenizer.json (not a regular file)"
    from ragloaders.eval.crag_answers import Trimmer

    with pytest.raises(SourceError) as caught:
        Trimmer(tmp_path)
    assert_source_error(caught.value, tmp_path.name, "a folder")
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(Trimmer.MAX_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(SourceError) as caught:
        Trimmer(huge)
    assert_source_error(caught.value, "huge.json", f"larger than {Trimmer.MAX_FILE_BYTES:,} bytes")


def test_a_predictions_path_that_is_no_regular_file_or_is_compressed_says_so(tmp_path):
    with pytest.raises(UsageError) as caught:
        read_predictions(tmp_path)
    assert_names(caught.value, tmp_path, "a folder")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop, loop)
    for path in (fifo, loop, "/dev/zero"):
        with pytest.raises(UsageError) as caught:
            read_predictions(path)
        assert_names(caught.value, path, "not a regular file")
    packed = tmp_path / "p.jsonl"
    with gzip.open(packed, "wt", encoding="utf-8") as f:
        f.write('{"interaction_id": "a", "prediction": "x"}\n')
    with pytest.raises(UsageError) as caught:
        read_predictions(packed)
    assert_names(caught.value, packed, "gzip-compressed", "decompress it first")
