"""What a newcomer reads in a card built by `ragloaders build --out` is true of that folder: its configs counted,
its own load lines, CRAG's fields explained, the mock knowledge graphs' files and tables accounted for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import ragloaders
import yaml
from ragloaders.cli import main as cli_main


def card(folder: Path) -> str:
    return (folder / "README.md").read_text(encoding="utf-8")


def yaml_configs(folder: Path) -> list[str]:
    return [c["config_name"] for c in yaml.safe_load(card(folder).split("---\n")[1])["configs"]]


def config_folders(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def nfcorpus_with(nfcorpus_with_reranking) -> Path:
    return nfcorpus_with_reranking


@pytest.fixture(scope="module")
def crag_example(crag_build) -> Path:
    return crag_build.out


@pytest.fixture(scope="module")
def mock_kg(mock_kg_build) -> tuple[Path, dict[str, int]]:
    return mock_kg_build.out, mock_kg_build.counts


@pytest.mark.slow  # (seconds; CI runs it)
def test_the_card_counts_the_configs_the_folder_has(nfcorpus_with):
    configs = yaml_configs(nfcorpus_with)
    assert sorted(configs) == config_folders(nfcorpus_with) and len(configs) == 5
    text = card(nfcorpus_with)
    assert "This build has 5 configs: `corpus`, `queries`, `qrels`, `top_ranked` and `hard_negatives`." in text
    assert not re.search(r"\b(three|four) configs\b", text)
    assert "5 configs written, with their splits" in text


def test_a_card_built_with_out_shows_the_folders_own_load_lines(nfcorpus_with):
    text = card(nfcorpus_with)
    assert "<org>/<repo>" not in text
    for config in yaml_configs(nfcorpus_with):
        assert f'{config} = load_dataset("{nfcorpus_with}", "{config}")' in text
    glob = re.search(r"SELECT count\(\*\) FROM '([^']+)';", text).group(1)
    assert glob == f"{nfcorpus_with}/corpus/corpus-*.parquet" and list(nfcorpus_with.glob("corpus/corpus-*.parquet"))


def test_the_card_says_how_files_are_cut(nfcorpus_with):
    text = card(nfcorpus_with)
    assert "a larger one is cut into a multiple of 8 files whose row counts differ by one at most" in text
    assert "well under the dataset viewer's 286 MiB" in text


def test_the_crag_card_reads_as_sentences_and_explains_every_field(crag_example):
    text = card(crag_example)
    assert "(This build says which)" not in text and "; This build says" not in text
    assert 'The section "This build" says which' in text
    fields = text.split("## Fields")[1].split("\n## ")[0]
    rows = [line.split(" | ") for line in fields.splitlines() if line.startswith("| ") and "`" in line]
    assert rows, fields
    empty = [f"{row[0][2:]}.{row[1]}" for row in rows if not row[3].strip(" |")]
    assert empty == []


def test_the_mock_kg_card_accounts_for_its_files_and_tables(mock_kg):
    folder, counts = mock_kg
    text = card(folder)
    build = text.split("## This build")[1].split("\n## ")[0]
    written = sorted(c for c, n in counts.items() if n)
    left_out = sorted(c for c, n in counts.items() if not n)
    assert config_folders(folder) == written and sorted(yaml_configs(folder)) == written
    assert f"{len(written)} configs written, with their splits" in build
    assert left_out and f"Left out: {', '.join(f'`{c}`' for c in left_out)}: no rows in the files read" in build
    assert "The builder did not report the files it read" not in text
    sources = text.split("## Source files")[1].split("\n## ")[0]
    read = sources.split("The official files")[0]
    for name in ("company_name.dict", "nba.sqlite", "kg.0.jsonl.bz2"):  # each with its bytes and sha256
        row = next(line for line in read.splitlines() if line.startswith(f"| `{name}` |"))
        assert re.search(r"\| `[0-9a-f]{64}` \|", row) and "not the published file" in row, row


def test_validate_mock_kg_prints_its_source_lines(mock_kg_build, capsys):
    cli_main(["validate", "crag/mock_kg", "--data-dir", str(mock_kg_build.kg), "--cache-dir", mock_kg_build.cache_dir])
    lines = capsys.readouterr().out.splitlines()
    sources = [line for line in lines if line.startswith("source: ")]
    assert any(line.startswith("source: company_name.dict (") for line in sources)
    assert any(line.startswith("source: nba.sqlite (") for line in sources)


def test_help_of_load_names_the_mock_kg_and_built_folders():
    doc = ragloaders.load.__doc__
    assert "crag/mock_kg" in doc and "<domain>_<table>" in doc
    assert "ragloaders build" in doc and "hub dataset repository id" in doc


def test_rows_too_large_for_the_viewer_are_noted():
    from ragloaders.publish.cards import splits_section
    from ragloaders.publish.parquet import LARGE_ROW_BYTES, ConfigOutput, SplitOutput

    output = ConfigOutput("records", None)
    output.splits["test"] = SplitOutput("test", 10, 10 * 3 * LARGE_ROW_BYTES // 2, ["records/t.parquet"])
    output.splits["validation"] = SplitOutput("validation", 10, 10 * LARGE_ROW_BYTES, ["records/v.parquet"])
    text = splits_section([output])
    assert "Rows average more than 2 MiB in `records/test` (3.0 MiB): the dataset viewer may not show them" in text
    assert "records/validation" not in text.split("Rows average")[1]  # exactly 2 MiB is not over
