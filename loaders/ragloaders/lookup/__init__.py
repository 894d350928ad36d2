"""Rows by id and the reranker's input: `docs(source)` looks rows of a config keyed by `_id` up by id (memory-mapped,
with an id index kept in the cache); `pairs(source, ...)` writes a run's (query, document) pairs with their texts and
labels as Parquet."""

from .docstore import DocStore, DocumentNotFound, DuplicateIdError, docs
from .pairs import PairsWritten, pairs

__all__ = ["DocStore", "DocumentNotFound", "DuplicateIdError", "PairsWritten", "docs", "pairs"]
