"""Property-based round trips: BEIR and mmRAG files with arbitrary Unicode ids and texts come back exactly
through `ragloaders.load`, and through `build` then `datasets.load_dataset` on the built folder.

Limits of the generated input, and why:
- no lone surrogates (U+D800..U+DFFF) anywhere: they cannot be encoded in UTF-8, so no valid file holds them;
- qrels ids hold no tab, LF or CR: they are the TSV's column and line separators (BEIR has no quoting);
- mmRAG chunk ids are `<source prefix><at least one character>_<ASCII digits>`, as the builder requires, and
  hold no LF: mmrag.CHUNK_ID_PATTERN's `.+` does not match one, so such an id is refused (a clear SourceError);
- corpus and queries have at least one line (an empty one is refused, tests/test_input_fidelity.py);
- the build tests give every split at least one row: datasets 5.2 cannot load an empty Parquet split
  ("corresponds to no data"), so an empty split cannot be published; `ragloaders.load` does give empty splits.
Everything else is arbitrary: empty strings, leading zeros, spaces, other control characters, U+2028, NUL.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import datasets
import pytest
import ragloaders
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragloaders.benchmarks.mmrag.catalogue import CHUNK_ID_PREFIXES, DATASET_SCORE_KEYS
from ragloaders.publish.build import build_folder

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
ID = st.one_of(TEXT, st.from_regex(r"\A0[0-9]{0,6}\Z"))  # and leading zeros, which must stay
TSV_ID = ID.filter(lambda s: not set(s) & {"\t", "\n", "\r"})
SCORE = st.integers(-(2**31), 2**31 - 1)
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BUILD_SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def dump_line(record: dict, ascii_only: bool, line_end: str) -> str:
    return json.dumps(record, ensure_ascii=ascii_only) + line_end


@st.composite
def beir_files(draw, min_rows: int = 0) -> dict:
    rows = {"min_size": max(min_rows, 1), "max_size": 6}  # an empty corpus, queries or qrels file is refused
    entities = rows
    return {
        "corpus": draw(st.lists(st.fixed_dictionaries({"_id": ID, "title": TEXT, "text": TEXT}), **entities)),
        "queries": draw(st.lists(st.fixed_dictionaries({"_id": ID, "text": TEXT}), **entities)),
        "qrels": {split: draw(st.lists(st.tuples(TSV_ID, TSV_ID, SCORE), **rows)) for split in ("train", "test")},
        "ascii_only": draw(st.booleans()),
        "line_end": draw(st.sampled_from(["\n", "\r\n"])),
    }


def write_styled_beir(folder: Path, files: dict) -> None:
    """A scifact-shaped BEIR folder (corpus without metadata; splits train and test)."""
    (folder / "qrels").mkdir(parents=True)
    style = (files["ascii_only"], files["line_end"])
    for name in ("corpus", "queries"):
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8", newline="") as f:
            f.writelines(dump_line(record, *style) for record in files[name])
    for split, rows in files["qrels"].items():
        with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="") as f:
            f.write("query-id\tcorpus-id\tscore" + files["line_end"])
            f.writelines(f"{q}\t{d}\t{s}{files['line_end']}" for q, d, s in rows)


def expected_beir(files: dict) -> dict[tuple[str, str], list[dict]]:
    queries = [{**q, "metadata": None} for q in files["queries"]]  # scifact queries carry a metadata column
    expected = {("corpus", "corpus"): files["corpus"], ("queries", "queries"): queries}
    for split, rows in files["qrels"].items():
        expected[("qrels", split)] = [{"query-id": q, "corpus-id": d, "score": s} for q, d, s in rows]
    return expected


def rows_of(dataset) -> list[dict]:
    return dataset.to_list()


@SETTINGS
@given(files=beir_files())
def test_beir_files_round_trip_through_load(files):
    with tempfile.TemporaryDirectory() as tmp:
        write_styled_beir(Path(tmp, "scifact"), files)
        for (config, split), rows in expected_beir(files).items():
            loaded = ragloaders.load("beir/scifact", config, split=split, data_dir=os.path.join(tmp, "scifact"),
                                     cache_dir=os.path.join(tmp, "cache"))
            assert rows_of(loaded) == rows, (config, split)


@BUILD_SETTINGS
@given(files=beir_files(min_rows=1))
def test_beir_files_round_trip_through_build_and_load_dataset(files):
    with tempfile.TemporaryDirectory() as tmp:
        write_styled_beir(Path(tmp, "scifact"), files)
        out = os.path.join(tmp, "out")
        build_folder("beir/scifact", out, data_dir=os.path.join(tmp, "scifact"), cache_dir=os.path.join(tmp, "cache"))
        for (config, split), rows in expected_beir(files).items():
            loaded = datasets.load_dataset(out, config, split=split, cache_dir=os.path.join(tmp, "hub-cache"))
            assert rows_of(loaded) == rows, (config, split)


PREFIX = st.sampled_from(CHUNK_ID_PREFIXES)
CHUNK_DOC = TEXT.filter(lambda s: s and "\n" not in s)
CHUNK_ID = st.builds(lambda prefix, doc, number: (prefix[0] + doc + f"_{number}", prefix[1]),
                     PREFIX, CHUNK_DOC, st.integers(0, 10**6))


@st.composite
def mmrag_files(draw, min_rows: int = 0) -> dict:
    chunks = draw(st.lists(CHUNK_ID, min_size=1, max_size=6, unique_by=lambda c: c[0]))
    chunk_ids = [chunk_id for chunk_id, _ in chunks]
    query = st.fixed_dictionaries({
        "id": ID, "query": TEXT, "answer": TEXT,
        "relevant_chunks": st.dictionaries(st.sampled_from(chunk_ids), st.sampled_from([0, 1, 2]),
                                           min_size=min_rows, max_size=4),
        "ori_context": st.lists(TEXT, max_size=3),
        "dataset_score": st.fixed_dictionaries({key: st.integers(-(2**31), 2**31 - 1) for key in DATASET_SCORE_KEYS}),
    })
    return {
        "splits": {split: draw(st.lists(query, min_size=min_rows, max_size=4)) for split in ("train", "dev", "test")},
        "corpus": [{"id": chunk_id, "text": draw(TEXT)} for chunk_id in chunk_ids],
        "sources": dict(chunks),
        "indent": draw(st.sampled_from([None, 4])),
        "ascii_only": draw(st.booleans()),
    }


def write_mmrag(folder: Path, files: dict) -> None:
    folder.mkdir()
    style = {"indent": files["indent"], "ensure_ascii": files["ascii_only"]}
    for split, records in files["splits"].items():
        (folder / f"mmrag_{split}.json").write_text(json.dumps(records, **style), encoding="utf-8")
    (folder / "processed_documents.json").write_text(json.dumps(files["corpus"], **style), encoding="utf-8")


def expected_mmrag(files: dict) -> dict[tuple[str, str], list[dict]]:
    expected = {("corpus", "corpus"): [
        {"_id": c["id"], "title": "", "text": c["text"], "source": files["sources"][c["id"]],
         "doc_id": c["id"].rsplit("_", 1)[0]}
        for c in files["corpus"]
    ]}
    for split, records in files["splits"].items():
        expected[("queries", split)] = [{"_id": r["id"], "text": r["query"]} for r in records]
        expected[("qrels", split)] = [{"query-id": r["id"], "corpus-id": chunk_id, "score": grade}
                                      for r in records for chunk_id, grade in r["relevant_chunks"].items()]
        expected[("records", split)] = [
            {key: r[key] for key in ("id", "query", "answer", "ori_context", "dataset_score")}
            | {"relevant_chunks": [{"chunk_id": c, "score": g} for c, g in r["relevant_chunks"].items()]}
            for r in records
        ]
    return expected


def without_answers(rows: list[dict]) -> list[dict]:
    """`answers` is derived from `answer` (tested in test_mmrag.py); the round trip compares the source fields."""
    return [{key: value for key, value in row.items() if key != "answers"} for row in rows]


@SETTINGS
@given(files=mmrag_files(min_rows=1))  # (an empty array is refused: test_mmrag.py)
def test_mmrag_files_round_trip_through_load(files):
    with tempfile.TemporaryDirectory() as tmp:
        write_mmrag(Path(tmp, "mmrag"), files)
        for (config, split), rows in expected_mmrag(files).items():
            loaded = ragloaders.load("mmrag", config, split=split, data_dir=os.path.join(tmp, "mmrag"),
                                     cache_dir=os.path.join(tmp, "cache"))
            assert without_answers(rows_of(loaded)) == rows, (config, split)


# four builds of generated samples (seconds): in CI; the BEIR one runs by default, and mmrag's reading by the test above
@pytest.mark.slow
@BUILD_SETTINGS
@given(files=mmrag_files(min_rows=1))
def test_mmrag_files_round_trip_through_build_and_load_dataset(files):
    with tempfile.TemporaryDirectory() as tmp:
        write_mmrag(Path(tmp, "mmrag"), files)
        out = os.path.join(tmp, "out")
        build_folder("mmrag", out, data_dir=os.path.join(tmp, "mmrag"), cache_dir=os.path.join(tmp, "cache"))
        for (config, split), rows in expected_mmrag(files).items():
            loaded = datasets.load_dataset(out, config, split=split, cache_dir=os.path.join(tmp, "hub-cache"))
            assert without_answers(rows_of(loaded)) == rows, (config, split)
