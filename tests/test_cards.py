"""Dataset cards: the README of a built folder parses back without loss, loads without our code, tells the facts."""

from __future__ import annotations

import datasets
import duckdb
import pyarrow.parquet as pq
import pytest
import ragloaders
import yaml
from conftest import DATA
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard
from ragloaders.api import builder, configs_of, registry
from ragloaders.benchmarks import benchmark_of
from ragloaders.benchmarks.beir import catalogue as beir
from ragloaders.benchmarks.beir import citations as beir_citations
from ragloaders.publish import cards
from ragloaders.publish.build import ConfigOutput, SplitOutput

PATH = "beir/nfcorpus"
HUB_LICENSES = {"apache-2.0", "cc-by-2.5", "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0",
                "cc-by-nc-4.0", "gpl-3.0", "other", "unknown"}


@pytest.fixture(scope="module")
def built(nfcorpus_build):
    return nfcorpus_build.out, nfcorpus_build.outputs, nfcorpus_build.cache_dir


def features_without_data(path: str) -> dict[str, datasets.Features]:
    return {config: builder(path, config).info.features for config in configs_of(path)}


def walk(feature):
    yield feature
    if isinstance(feature, dict):
        for sub in feature.values():
            yield from walk(sub)
    elif hasattr(feature, "feature"):
        yield from walk(feature.feature)


def test_no_json_feature_in_any_config_of_any_benchmark():
    json_type = getattr(datasets, "Json", None)
    assert json_type is not None  # else this test would prove nothing
    for path in registry():
        for config, features in features_without_data(path).items():
            kinds = {type(f).__name__ for f in walk(features)}
            assert "Json" not in kinds, f"{path} {config}"


def test_card_metadata_parses_back_without_loss(built):
    out, outputs, _ = built
    card = DatasetCard.load(out / "README.md")
    configs = MetadataConfigs.from_dataset_card_data(card.data)
    assert configs == {o.name: {"data_files": o.data_files} for o in outputs}
    infos = DatasetInfosDict.from_dataset_card_data(card.data)
    for output in outputs:
        info = infos[output.name]
        assert info.features == output.info.features
        assert {s: (i.num_examples, i.num_bytes) for s, i in info.splits.items()} == {
            s.name: (s.num_examples, s.num_bytes) for s in output.splits.values()}
        assert info.download_size == sum(s.file_bytes for s in output.splits.values())
    assert card.data.license == "other" and card.data.license_name == "nfcorpus-license"
    assert card.data.pretty_name == "BEIR nfcorpus"
    assert card.data.size_categories == ["100K<n<1M"]
    assert "text-retrieval" in card.data.task_categories and "nfcorpus" in card.data.tags
    rendered = yaml.safe_load(card.data.to_yaml())
    assert yaml.safe_load(cards.card_data(outputs).to_yaml()).items() <= rendered.items()


def test_card_text_has_the_build_numbers_checksums_and_both_citations(built):
    out, outputs, _ = built
    text = (out / "README.md").read_text()
    assert 'load_dataset("<org>/<repo>", "qrels")' in text  # built without a repo id
    card = cards.render_card(benchmark_of(PATH), PATH, outputs, repo_id="org/nfcorpus")
    assert 'load_dataset("org/nfcorpus", "qrels")' in card
    assert "| qrels | train | 110,575 |" in text  # splits with real counts
    assert "a89dba18a62ef92f7d323ec890a0d38d" in text and "2,448,432" in text
    assert "@inproceedings{thakur2021beir" in text and "@inproceedings{boteva2016nfcorpus" in text
    assert "Computed on this build by `ragloaders validate`" in text
    assert "1: 11,758, 2: 576" in text  # test score histogram
    for section in ("How to load", "Fields", "Splits", "Integrity", "Source files", "Known upstream defects",
                    "Licence", "Citation"):
        assert f"\n## {section}\n" in text


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.slow
def test_staged_folder_loads_like_ragloaders(built, streaming, tmp_path):
    out, _, cache_dir = built
    for config in configs_of(PATH):
        expected = ragloaders.load(PATH, config, data_dir=str(DATA / "beir"), cache_dir=cache_dir)
        got = datasets.load_dataset(str(out), config, streaming=streaming, cache_dir=str(tmp_path))
        assert sorted(got) == sorted(expected)
        for split in expected:
            assert got[split].features == expected[split].features
            rows = list(got[split]) if streaming else got[split].to_list()
            assert rows == expected[split].to_list()


def test_duckdb_joins_staged_qrels_to_corpus_with_plain_sql(built):
    out, _, _ = built
    con = duckdb.connect()
    [(joined, qrels)] = con.execute(f"""
        SELECT count(c._id), (SELECT count(*) FROM '{out}/qrels/test-*.parquet')
        FROM '{out}/qrels/test-*.parquet' q JOIN '{out}/corpus/*.parquet' c ON q."corpus-id" = c._id
    """).fetchall()
    assert joined == qrels == pq.read_table(next((out / "qrels").glob("test-*.parquet"))).num_rows == 12_334
    scores = con.execute(f"SELECT score, count(*) FROM '{out}/qrels/test-*.parquet' GROUP BY score ORDER BY score")
    assert scores.fetchall() == [(1, 11_758), (2, 576)]


def test_parquet_files_are_zstd_with_bounded_row_groups(built):
    out, _, _ = built
    for path in out.rglob("*.parquet"):
        metadata = pq.ParquetFile(path).metadata
        assert all(metadata.row_group(i).column(0).compression == "ZSTD" for i in range(metadata.num_row_groups))
        assert all(metadata.row_group(i).num_rows <= 100_000 for i in range(metadata.num_row_groups))


def synthetic_outputs(path: str) -> list[ConfigOutput]:
    outputs = []
    for config in configs_of(path):
        output = ConfigOutput(config, builder(path, config).info)
        if path in beir.DATASETS:
            splits = beir.DATASETS[path].splits if config == "qrels" else [config]
        else:
            splits = ["corpus"] if config == "corpus" else ["test"]
        for split in splits:
            output.splits[split] = SplitOutput(split, 5, 100, [f"{config}/{split}-00000-of-00001.parquet"], 50)
        outputs.append(output)
    return outputs


@pytest.mark.parametrize("path", list(beir.DATASETS))
def test_every_beir_card_renders_with_its_licence_and_source_citation(path):
    dataset = beir.DATASETS[path]
    text = cards.render_card(benchmark_of(path), path, synthetic_outputs(path))
    card = DatasetCard(text)
    assert card.data.license == dataset.license_id in HUB_LICENSES
    assert (getattr(card.data, "license_link", None) is not None) == (dataset.license_id == "other")
    assert dataset.citation.splitlines()[0] in text and beir_citations.BEIR_CITATION.splitlines()[0] in text
    assert "Not computed for this build" in text
    assert MetadataConfigs.from_dataset_card_data(card.data).keys() == {"corpus", "queries", "qrels"}


def test_fever_is_cc_by_sa_3_not_4():
    assert beir.DATASETS["beir/fever"].license_id == "cc-by-sa-3.0"
    assert all(d.citation.startswith("@") for d in beir.DATASETS.values())


def test_integrity_findings_and_known_defects_are_shown():
    report = {
        "ok": False,
        "errors": [{"check": "missing_docs", "config": "qrels", "split": "test", "count": 3, "ids": ["q1 -> d9"],
                    "message": "qrels point at docs missing from the corpus"}],
        "warnings": [{"check": "shared_ids", "config": "queries", "split": None, "count": 7, "ids": [],
                      "message": "query ids that are also corpus ids", "note": "self-matches are ignored"}],
        "shared_ids": 7,
        "splits": [{"config": "qrels", "split": "test", "rows": 10, "score_histogram": {"-1": 2, "0": 8}}],
    }
    text = cards.render_card(benchmark_of("beir/arguana"), "beir/arguana", synthetic_outputs("beir/arguana"),
                             integrity=report)
    assert "- qrels/test: qrels point at docs missing from the corpus; e.g. `q1 -> d9` …." in text
    known = " A known upstream defect (see Known upstream defects)."
    assert "- queries: query ids that are also corpus ids." + known in text
    assert "self-matches are ignored" not in text  # a warning's note is the declared defect's, listed once below
    assert "| qrels | test | 10 | -1: 2, 0: 8 |" in text
    assert "No structural errors." not in text
    assert "retrieving itself" in text  # arguana's declared defects, from beir_facts.KNOWN_DEFECTS


def test_every_benchmark_path_gets_a_card_even_without_card_facts():
    for path in registry():
        text = cards.render_card(benchmark_of(path), path, synthetic_outputs(path))
        card = DatasetCard(text)
        assert card.data.pretty_name and card.data.license in HUB_LICENSES, path
        assert set(MetadataConfigs.from_dataset_card_data(card.data)) == set(configs_of(path))


# --- cards tell what was read -----------------------------------------------------------------------------------


def sha256_of(path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def crag_example_card(crag_build):
    return (crag_build.out / "README.md").read_text()


def test_crag_card_states_the_example_release_its_file_and_the_splits_written(crag_example_card):
    text = crag_example_card
    build = section(text, "This build")
    assert "The files read are the official files of release `example`" in build
    assert "| records | all | rows | 10 | 10 | equal |" in build and "2,706" not in build
    assert "Split `validation` of `records`, `queries`, `search_results`" in build
    assert "unless stated" not in text and "739,310,088" not in text  # no v5 claim, no v5 file listed
    sources = section(text, "Source files")
    example = DATA / "crag" / "dev_data.jsonl.bz2"
    assert f"| `dev_data.jsonl.bz2` | 2,032,693 | `{sha256_of(example)}` |" in sources
    assert "the official file of release `example` (size and md5 match)" in sources
    assert "v5: 2,706, v4: 2,706, example: 10" in text  # the published figures per release, in the summary
    assert text.endswith("\n\n<!-- built by ragloaders from crag/task_1_and_2 -->\n")  # read by validate


def test_each_defect_line_appears_once(crag_example_card):
    body = crag_example_card.split("\n---\n", 1)[1]  # after the YAML front matter
    lines = [line for line in body.splitlines() if line.startswith("- ")]
    assert sum("lists the same page twice" in line for line in lines) == 1
    assert len(lines) == len(set(lines))


def test_mmrag_sample_card_says_sample_and_compares_no_published_count(mmrag_build):
    text = (mmrag_build.out / "README.md").read_text()
    build = section(text, "This build")
    assert "**not** the published files: `mmrag_train.json` is 25,831 bytes; the official mmrag_train.json is " \
           "3,138,030 bytes" in build
    assert "| qrels | train | distinct query ids | 3,072 | 14 | not compared (other files) |" in build
    assert "| corpus | corpus | 664 |" in section(text, "Splits")
    assert "This build is a sample, a cut or another release: it holds 39 `records` rows, 39 `queries` rows, 670 " \
           "`qrels` rows, 664 `corpus` rows, 195 `routing` rows." in build
    assert "the 3.2M chunks" not in text and "(3,058)" not in text and "Findings:" not in text
    sources = section(text, "Source files")
    for name in ("mmrag_train.json", "mmrag_dev.json", "mmrag_test.json", "processed_documents.json"):
        path = DATA / "mmrag" / name
        assert f"| `{name}` | {path.stat().st_size:,} | `{sha256_of(path)}` |" in sources


def test_beir_card_names_the_zip_read_and_checks_it(built):
    out, _, _ = built
    text = (out / "README.md").read_text()
    zip_path = DATA / "beir" / "nfcorpus.zip"
    assert f"| `nfcorpus.zip` | 2,448,432 | `{sha256_of(zip_path)}` | corpus, queries, qrels | the official file " \
           "(size and md5 match) |" in text
    build = section(text, "This build")
    assert "| qrels | test | distinct query ids | 323 | 323 | equal |" in build
    assert "| corpus | corpus | rows | 3,633 | 3,633 | equal |" in build


def test_a_card_without_a_recorded_source_says_so():
    text = cards.render_card(benchmark_of(PATH), PATH, synthetic_outputs(PATH))
    assert "This build did not record which source files it read." in section(text, "This build")
    assert "The official files (this build did not record which it read)" in section(text, "Source files")
