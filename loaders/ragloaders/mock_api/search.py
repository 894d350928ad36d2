"""The name searches of CRAG's mock API: its normalisation and its two BM25 rankings, computed the same way.

The official server ranks names with `rank_bm25.BM25Okapi` (open, finance, movie) and with a BM25 that keeps only
terms whose idf exceeds 4 (music). Both are re-implemented here over postings (numpy arrays) instead of one Python
dict per name, performing the same floating-point operations in the same order, so scores are bit-identical:

- Okapi: idf = log(N - n + 0.5) - log(n + 0.5), a negative idf replaced by 0.25 x the mean idf (summed in order of
  first occurrence); a document's score adds, per query term in query order, idf * (f * (k1 + 1) / (f + k1 * (1 - b
  + b * dl / avgdl))); the top 10 are `np.argsort(scores)[::-1][:10]` over every document, scores of 0 dropped.
  numpy's sort of equal scores depends on the CPU (AVX-512 or not) but not on anything else: on one machine ours
  and the official server put ties in the same order.
- idf cut-off (music): terms with idf <= 4 are dropped; a document's score adds idf * f * (k1 + 1) / (f + k1 * (1 -
  b + b * dl / avgdl)) per query term; documents are ranked by score, ties in the order the query's terms first
  reached them (heapq.nlargest is stable), top 10.
"""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np
import pyarrow as pa

from .indexes import KeyIndex, sort_order

K1, B, EPSILON, IDF_CUTOFF = 1.5, 0.75, 0.25, 4
TOP = 10
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(name: str) -> str:
    """Lower case, `_` as a space, ASCII punctuation removed, whitespace runs as one space."""
    return " ".join(name.lower().replace("_", " ").translate(_PUNCTUATION).split())


def postings_arrays(documents: list[list[str]]) -> dict[str, Any]:
    """Which documents hold each term, how often, each document's length, the terms (ids in order of first
    occurrence: rank_bm25 sums idfs in that order) and their sorted order (for lookup)."""
    vocabulary: dict[str, int] = {}
    terms, docs, freqs = [], [], []
    doc_len = np.fromiter((len(d) for d in documents), dtype=np.int64, count=len(documents))
    for index, document in enumerate(documents):
        counts: dict[str, int] = {}
        for term in document:
            counts[term] = counts.get(term, 0) + 1
        for term, count in counts.items():
            terms.append(vocabulary.setdefault(term, len(vocabulary)))
            docs.append(index)
            freqs.append(count)
    term_ids = np.asarray(terms, dtype=np.int64)
    order = np.argsort(term_ids, kind="stable")
    words = pa.array(list(vocabulary), type=pa.string())
    return {"doc_len": doc_len, "docs": np.asarray(docs, dtype=np.int64)[order],
            "freqs": np.asarray(freqs, dtype=np.int64)[order],
            "starts": np.searchsorted(term_ids[order], np.arange(len(vocabulary) + 1)),
            "terms": words, "term_order": sort_order(words)}


class Postings:
    """The arrays of postings_arrays (loaded from a Store, memory-mapped)."""

    def __init__(self, arrays: dict[str, Any]):
        self.doc_len, self.docs, self.freqs, self.starts = (arrays[k] for k in ("doc_len", "docs", "freqs", "starts"))
        self.terms = KeyIndex(arrays["terms"], arrays["term_order"])
        self.size = len(self.doc_len)
        self.avgdl = int(self.doc_len.sum()) / self.size if self.size else 0.0

    def term_id(self, term: str) -> int | None:
        return self.terms.last(term)

    def of(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """The documents holding the term (ascending) and its frequency in each."""
        start, end = self.starts[term_id], self.starts[term_id + 1]
        return np.asarray(self.docs[start:end]), np.asarray(self.freqs[start:end])

    def document_counts(self) -> np.ndarray:
        return np.diff(self.starts)


def _idfs(arrays: dict[str, Any]) -> np.ndarray:
    """log(N - n + 0.5) - log(n + 0.5) of each term (n: its documents), by `math.log` as rank_bm25 computes it
    (numpy's log may differ in the last bit), once per distinct n."""
    counts = np.diff(arrays["starts"])
    size = len(arrays["doc_len"])
    distinct, where = np.unique(counts, return_inverse=True)
    values = [math.log(size - n + 0.5) - math.log(n + 0.5) for n in distinct.tolist()]
    return np.asarray(values, dtype=np.float64)[where.reshape(-1)] if len(counts) else np.zeros(0)


def with_okapi_idf(arrays: dict[str, Any]) -> dict[str, Any]:
    """postings arrays and rank_bm25 BM25Okapi's idf of each term (a negative one floored at 0.25 x the mean, the
    mean of the idfs summed one by one in term order, as rank_bm25 sums them)."""
    idf = _idfs(arrays)
    if len(idf):
        floor = EPSILON * (float(np.cumsum(idf)[-1]) / len(idf))
        idf = np.where(idf < 0, floor, idf)
    return {**arrays, "idf": idf}


def with_cutoff_idf(arrays: dict[str, Any]) -> dict[str, Any]:
    """postings arrays and the music BM25's idf of each term (used only when above IDF_CUTOFF)."""
    return {**arrays, "idf": _idfs(arrays)}


def okapi_arrays(documents: list[list[str]]) -> dict[str, Any]:
    """postings_arrays and rank_bm25 BM25Okapi's idf of each term."""
    return with_okapi_idf(postings_arrays(documents))


def cutoff_arrays(documents: list[list[str]]) -> dict[str, Any]:
    """postings_arrays and the music BM25's idf of each term."""
    return with_cutoff_idf(postings_arrays(documents))


class OkapiIndex:
    """rank_bm25's BM25Okapi scores; `top` ranks as the official server does. `arrays`: okapi_arrays(documents),
    or documents (a list of token lists) to build them here."""

    def __init__(self, arrays: dict[str, Any] | list[list[str]]):
        arrays = okapi_arrays(arrays) if isinstance(arrays, list) else arrays
        self.postings = Postings(arrays)
        self.idf = arrays["idf"]

    def scores(self, query: list[str]) -> np.ndarray:
        postings = self.postings
        scores = np.zeros(postings.size)
        for term in query:
            term_id = postings.term_id(term)
            idf = 0.0 if term_id is None else float(self.idf[term_id])
            if not idf:
                continue
            docs, freqs = postings.of(term_id)
            dl = postings.doc_len[docs]
            f = freqs.astype(np.float64)
            scores[docs] += idf * (f * (K1 + 1) / (f + K1 * (1 - B + B * dl / postings.avgdl)))
        return scores

    def top(self, query: str) -> list[int]:
        """Documents (indexes) of the best 10 nonzero scores for the normalised `query`, best first."""
        if not self.postings.size:
            return []
        scores = self.scores(normalise(query).split())
        return [int(i) for i in np.argsort(scores)[::-1][:TOP] if scores[i] != 0]


class CutoffIndex:
    """The music domain's BM25 (terms with idf <= 4 dropped); `top` ranks as the official server does.
    `arrays`: cutoff_arrays(documents), or the documents."""

    def __init__(self, arrays: dict[str, Any] | list[list[str]]):
        arrays = cutoff_arrays(arrays) if isinstance(arrays, list) else arrays
        self.postings = Postings(arrays)
        self.idf = arrays["idf"]

    def top(self, query: str) -> list[int]:
        postings = self.postings
        scores: dict[int, float] = {}
        for term in normalise(query).split():
            term_id = postings.term_id(term)
            if term_id is None or not self.idf[term_id] > IDF_CUTOFF:
                continue
            idf = float(self.idf[term_id])
            docs, freqs = postings.of(term_id)
            lengths = postings.doc_len[docs].tolist()
            for doc, freq, dl in zip(docs.tolist(), freqs.tolist(), lengths):
                denominator = K1 * (1 - B + B * dl / postings.avgdl)
                scores[doc] = scores.get(doc, 0.0) + idf * freq * (K1 + 1) / (freq + denominator)
        return sorted(scores, key=scores.__getitem__, reverse=True)[:TOP]
