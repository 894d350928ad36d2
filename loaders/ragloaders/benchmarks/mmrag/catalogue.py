"""mmRAG as data: its files, splits, published counts, chunk-id prefixes and the features of every config."""

from __future__ import annotations

import re

import pyarrow as pa

from ...core.json_array_cuts import boundary_pattern, separator_pattern

PATH = "mmrag"
HUB_REPO_ID = "Askio/mmrag_benchmark"
HUB_REVISION = "main"
SPLITS = ("train", "dev", "test")
QUERY_FILES = {split: f"mmrag_{split}.json" for split in SPLITS}
CORPUS_FILE = "processed_documents.json"
ALL_FILES = (*QUERY_FILES.values(), CORPUS_FILE)
GRADES = (0, 1, 2)
DATASET_SCORE_KEYS = ("tat", "triviaqa", "ott", "kg", "nq")
CHUNK_ID_PREFIXES = (
    ("nq_", "nq"),
    ("triviaqa_", "triviaqa"),
    ("ott_", "ott"),
    ("tat_", "tat"),
    ("m.", "kg"),
    ("g.", "kg"),
)
"""Chunk id prefix -> source: `<src>_<doc>_<chunk>` for nq, triviaqa, ott, tat; `<freebase mid>_<chunk>` for
the knowledge graph, where mids (`m.0_hp_2l_205`, `g.1255hy64l_5`) may themselves contain `_`."""
CHUNK_ID_PATTERN = "^(?:" + "|".join(re.escape(prefix) for prefix, _ in CHUNK_ID_PREFIXES) + ").+_[0-9]+$"
"""A chunk id: a known prefix, a non-empty rest (prefix and rest make the doc id), then `_<chunk number>`."""
PREFIX_KEY_LENGTH = min(len(prefix) for prefix, _ in CHUNK_ID_PREFIXES)
"""The first characters of a well-formed chunk id already tell its prefix (checked below): a cheap lookup key."""
if len({prefix[:PREFIX_KEY_LENGTH] for prefix, _ in CHUNK_ID_PREFIXES}) != len(CHUNK_ID_PREFIXES):
    raise ValueError("CHUNK_ID_PREFIXES: two prefixes share their first PREFIX_KEY_LENGTH characters")
PUBLISHED_QUERIES = {"train": 3_072, "dev": 766, "test": 1_286}
QUERY_FILE_BYTES = {"train": 3_138_030, "dev": 871_660, "test": 1_297_080}
"""Sizes of the query files on the hub (equal to the GitHub release, nju-websoft/mmRAG data/mmRAG_ds)."""
CORPUS_BATCH_BYTES = 1 << 20
"""Bytes of processed_documents.json per corpus table: larger batches only raise peak memory (bench/README.md,
"mmRAG corpus", choices measured on the way)."""
CORPUS_RANGE_BYTES = 64 << 20
"""Bytes of processed_documents.json per range of the parallel path (what num_proc shares out)."""
CORPUS_BOUNDARY = boundary_pattern(("id", "text"))
"""Where a corpus record starts: `,` then `{"id":` or `{"text":` (whitespace allowed); see core/json_array_cuts.py."""
CORPUS_SEPARATOR = separator_pattern(("id", "text"))
"""The `,` between two corpus records (CORPUS_BOUNDARY without the record's start)."""

BATCH_MEMORY = pa.system_memory_pool()
"""Corpus batches are allocated with malloc: pyarrow's default mimalloc pool keeps ~15 MB more resident here."""

QUERY_FIELDS = {
    "id": str, "query": str, "answer": str, "relevant_chunks": dict, "ori_context": list, "dataset_score": dict,
}
CORPUS_FIELDS = ("id", "text")


