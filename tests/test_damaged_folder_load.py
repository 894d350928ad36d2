"""`load` of a local folder that datasets fails to prepare or verify: the one-line error names what is wrong
(`hub_repository.rows_unlike_card`) without misreading what it cannot check: a folder of CSV data files keeps
datasets' own error (they were opened as Parquet), a card that declares no row count for a split is named as the
fault (datasets takes 0; the message blamed intact data files), a file added beside the built ones is said to be
added, and a hub-cache copy is told to be downloaded again rather than built."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
import ragloaders

CSV_CARD = """---
configs:
- config_name: corpus
  data_files:
  - split: corpus
    path: data/corpus.csv
dataset_info:
  config_name: corpus
  features:
  - name: _id
    dtype: string
  - name: text
    dtype: string
  splits:
  - name: corpus
    num_bytes: 10
    num_examples: 5
---
"""


@pytest.mark.parametrize("rows", ["_id,text\n1,x\n2,y,z,w\n3,u\n", "_id,text\n1,x\n2,y\n"],
                         ids=["ragged row", "fewer rows than the card"])
def test_a_csv_folder_that_fails_to_load_is_not_called_a_bad_parquet_file(rows, tmp_path):
    """A folder in the hub's layout with CSV data files: a bad row (DatasetGenerationError) or fewer rows than the
    card (SplitsVerificationError). rows_unlike_card opened the CSV with pq.ParquetFile: ArrowInvalid 'Parquet magic
    bytes not found' replaced datasets' error (before 9f85f85 datasets' own error was raised)."""
    folder = tmp_path / "csv"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(CSV_CARD)
    (folder / "data" / "corpus.csv").write_text(rows)
    with pytest.raises(Exception) as caught:
        ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))
    assert not isinstance(caught.value, pa.ArrowException), f"{type(caught.value).__name__}: {caught.value}"
    assert "magic bytes" not in str(caught.value), str(caught.value)


def test_a_split_without_num_examples_on_the_card_is_not_blamed_on_the_data_files(nfcorpus_build, tmp_path):
    """The card's corpus split lists num_bytes but no num_examples; every data file is as built. datasets fills in
    num_examples=0 and its verification fails; the message said 'hold 3,633 rows where the card declares 0; a data
    file was deleted, cut or replaced since the build': the card declares no count, and no file was touched.
    `check_card` refuses the card before datasets reads it."""
    folder = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, folder, ignore=shutil.ignore_patterns(".ragloaders*"))
    card = Path(folder) / "README.md"
    text = card.read_text()
    assert "    num_examples: 3633\n" in text
    card.write_text(text.replace("    num_examples: 3633\n", "", 1))
    with pytest.raises(ragloaders.SourceError) as caught:  # the card, not the data files, is at fault
        ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert "card declares 0" not in message and "deleted, cut or replaced" not in message, message
    assert message.startswith(str(card)) and "split 'corpus': num_examples missing" in message, message


def test_a_file_added_beside_the_built_ones_is_said_to_be_added(nfcorpus_build, tmp_path):
    """A copy of a data file left beside it (`corpus-00000-of-00001 (copy).parquet`, which the card's glob reads):
    twice the rows; the message says a file was added or replaced, not deleted."""
    folder = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, folder, ignore=shutil.ignore_patterns(".ragloaders*"))
    built = folder / "corpus" / "corpus-00000-of-00001.parquet"
    shutil.copyfile(built, built.with_name("corpus-00000-of-00001 (copy).parquet"))
    rows = ragloaders.load(nfcorpus_build.path, "corpus", split="corpus", data_dir=nfcorpus_build.data_dir,
                           cache_dir=nfcorpus_build.cache_dir).num_rows
    with pytest.raises(ragloaders.SourceError) as caught:
        ragloaders.load(str(folder), "corpus", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert f"hold {2 * rows:,} rows where the card declares {rows:,}" in message, message
    assert "added or replaced" in message and "deleted" not in message and "build the folder again" in message


def test_a_hub_cache_copy_with_fewer_rows_is_told_to_be_downloaded_again(nfcorpus_build, tmp_path, monkeypatch):
    """Offline, the hub cache's copy of a repository whose data file was cut: the remedy is to download it again,
    not to build a folder the user never built."""
    import huggingface_hub.constants
    import pyarrow.parquet as pq

    snapshot = tmp_path / "hub" / "datasets--org--nf" / "snapshots" / ("c" * 40)
    shutil.copytree(nfcorpus_build.out, snapshot, ignore=shutil.ignore_patterns(".ragloaders*"))
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("c" * 40)
    qrels = snapshot / "qrels" / "test-00000-of-00001.parquet"
    pq.write_table(pq.read_table(qrels).slice(0, 10), qrels)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ragloaders.SourceError) as caught:
        ragloaders.load("org/nf", "qrels", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert "split 'test'" in message and "hold 10 rows" in message and "download it again" in message, message
    assert "build the folder again" not in message


@pytest.mark.slow  # (seconds; CI runs it)
def test_a_damaged_data_file_is_one_line_on_the_command_line(nfcorpus_build, tmp_path):
    """datasets logs its own 'Failed to read file ... with error ...' line before the error ragloaders names the
    file with: two lines where the README promises one (a newcomer's finding)."""
    import os
    import subprocess
    import sys

    folder = tmp_path / "nf"
    shutil.copytree(nfcorpus_build.out, folder, ignore=shutil.ignore_patterns(".ragloaders*"))
    qrels = folder / "qrels" / "test-00000-of-00001.parquet"
    qrels.write_bytes(qrels.read_bytes()[:10_000])
    run = tmp_path / "run.trec"
    run.write_text("PLAIN-2 Q0 MED-10 1 1.0 t\n")
    done = subprocess.run([sys.executable, "-m", "ragloaders", "eval", str(folder), "--run", str(run), "--metrics",
                           "ndcg@10", "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True,
                          env={**os.environ, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"ragloaders: error: {qrels}: not a readable Parquet file"), done.stderr
