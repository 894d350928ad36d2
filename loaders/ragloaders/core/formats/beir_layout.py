"""BEIR's file layout as data (`BeirLayout`): what BEIR's catalogue declares without importing the builder that
reads it (core/formats/beir.py, which imports `datasets`)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..source_files import Download

STRING = pa.string()
JSON_TEXT = None
"""A `metadata` shape: the object kept as one JSON text column (for keys that vary per line, or are not known)."""
Metadata = tuple[pa.Field, ...] | None
CORPUS_FILE, QUERIES_FILE, QRELS_FOLDER = "corpus.jsonl", "queries.jsonl", "qrels"
REQUIRED = ("_id", "text")


@dataclass(frozen=True)
class BeirLayout:
    """One dataset in BEIR's layout: where its files are and what its lines hold."""

    name: str
    splits: tuple[str, ...]
    """The qrels splits, each a file `qrels/<split>.tsv`."""
    doc_metadata: Metadata = ()
    query_metadata: Metadata = ()
    root: str = ""
    """The dataset's folder inside its zip ("" when the files are at the zip's top)."""
    archive: str = ""
    """The zip (without `.zip`) a `data_dir` may hold instead of the extracted folder; "" when none is known."""
    md5: str | None = None
    """Of the official zip, checked once per zip when a zip is read."""
    download: Download | None = None
    obtain: str = ""
    """Why there is no download and where to get the files, when there is none."""

    def qrels_file(self, split: str) -> str:
        return f"{QRELS_FOLDER}/{split}.tsv"

    def all_files(self) -> list[str]:
        return [CORPUS_FILE, QUERIES_FILE, *map(self.qrels_file, self.splits)]
