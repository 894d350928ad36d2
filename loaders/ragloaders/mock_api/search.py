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
import pyarrow.compute as pc

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

    def term_ids(self, terms: list[str]) -> list[int | None]:
        """term_id of each of `terms`: a binary search each or, for more terms than a 50th of the vocabulary, one
        hash lookup of them all (a binary search costs some microseconds; a query of 1 MiB may hold 200,000
        distinct words)."""
        if len(terms) * 50 <= len(self.terms.values):
            return [self.term_id(term) for term in terms]
        held = [term if _has_utf8(term) else None for term in terms]  # (a lone surrogate: in no UTF-8 vocabulary)
        return pc.index_in(pa.array(held, type=pa.string()), value_set=self.terms.values).to_pylist()

    def of(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """The documents holding the term (ascending) and its frequency in each."""
        start, end = self.starts[term_id], self.starts[term_id + 1]
        return np.asarray(self.docs[start:end]), np.asarray(self.freqs[start:end])

    def document_counts(self) -> np.ndarray:
        return np.diff(self.starts)


def _has_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


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
        """rank_bm25's `get_scores(query)`, bit for bit: each term's contributions are computed once however often
        it is repeated (`summed_in_query_order`)."""
        postings = self.postings
        distinct, positions = _distinct_terms(query)
        contributions: list[tuple[np.ndarray, np.ndarray] | None] = []
        for term_id in postings.term_ids(distinct):
            idf = 0.0 if term_id is None else float(self.idf[term_id])
            if not idf:
                contributions.append(None)
                continue
            docs, freqs = postings.of(term_id)
            dl = postings.doc_len[docs]
            f = freqs.astype(np.float64)
            contributions.append((docs, idf * (f * (K1 + 1) / (f + K1 * (1 - B + B * dl / postings.avgdl)))))
        return summed_in_query_order(positions, contributions, postings.size)

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
        """Documents (indexes) of the best 10 scores for the normalised `query`, best first, ties in the order the
        query's terms first reached them (each term's contributions computed once however often it is repeated)."""
        postings = self.postings
        distinct, positions = _distinct_terms(normalise(query).split())
        contributions: list[tuple[np.ndarray, np.ndarray] | None] = []
        for term_id in postings.term_ids(distinct):
            if term_id is None or not self.idf[term_id] > IDF_CUTOFF:
                contributions.append(None)
                continue
            idf = float(self.idf[term_id])
            docs, freqs = postings.of(term_id)
            lengths = postings.doc_len[docs].tolist()
            values = [idf * freq * (K1 + 1) / (freq + K1 * (1 - B + B * dl / postings.avgdl))
                      for freq, dl in zip(freqs.tolist(), lengths)]
            contributions.append((docs, np.asarray(values, dtype=np.float64)))
        sums = summed_in_query_order(positions, contributions, postings.size)
        # the official scores dict: its documents in the order they were first reached (terms in order of first
        # occurrence, each term's documents ascending), which sorted() keeps among equal scores
        scores: dict[int, float] = {}
        for found in contributions:
            if found is not None:
                for doc in found[0].tolist():
                    if doc not in scores:
                        scores[doc] = float(sums[doc])
        return sorted(scores, key=scores.__getitem__, reverse=True)[:TOP]


def _distinct_terms(terms: list[str]) -> tuple[list[str], list[int]]:
    """The distinct terms, in order of first occurrence, and the index among them of each term of `terms`."""
    index: dict[str, int] = {}
    positions = [index.setdefault(term, len(index)) for term in terms]
    return list(index), positions


def summed_in_query_order(positions: list[int], contributions: list[tuple[np.ndarray, np.ndarray] | None],
                          size: int) -> np.ndarray:
    """Each of `size` documents' score: 0.0 plus, for each query position in order, its term's contribution to the
    document. `positions`: each position's term (an index into `contributions`); `contributions[i]`: the documents
    holding term i (ascending) and its contribution to each, or None for a term that adds nothing.

    These are the very float additions, in the very order, of adding a term's contributions to every document once
    per occurrence (as the official servers do; floating-point sums depend on the order, so a term repeated k times
    cannot be added once as k times its contribution); but they are made once per group of documents that receive
    the same contribution from each term of the query (same terms, frequencies and lengths), which all end with the
    same sum. A term repeated 100,000 times costs 100,000 additions per group of the documents holding it (a few
    groups: documents differ by length and by which of the query's terms they hold), not per document; the cost is
    still occurrences x groups, which a query listing thousands of words of names beside a repeated term raises (on
    20,000 names, a crafted 1 MiB query takes 0.5-2.5 s)."""
    scores = np.zeros(size)
    active = [(term, found) for term, found in enumerate(contributions) if found is not None]
    if not active:
        return scores
    docs = np.concatenate([found[0] for _, found in active]).astype(np.int64, copy=False)
    terms = np.concatenate([np.full(len(found[0]), term, dtype=np.int64) for term, found in active])
    values = np.concatenate([found[1] for _, found in active]).astype(np.float64, copy=False)
    order = np.lexsort((terms, docs))  # by document, then term
    docs, terms, values = docs[order], terms[order], values[order]
    starts = np.flatnonzero(np.concatenate(([True], docs[1:] != docs[:-1])))
    ends = np.append(starts[1:], len(docs))
    groups: dict[bytes, int] = {}
    group_of = np.empty(len(starts), dtype=np.int64)
    members: dict[int, list[int]] = {term: [] for term, _ in active}
    added: dict[int, list[float]] = {term: [] for term, _ in active}
    for at, (start, end) in enumerate(zip(starts.tolist(), ends.tolist())):
        key = terms[start:end].tobytes() + values[start:end].tobytes()
        group = groups.get(key)
        if group is None:
            group = groups[key] = len(groups)
            for term, value in zip(terms[start:end].tolist(), values[start:end].tolist()):
                members[term].append(group)
                added[term].append(value)
        group_of[at] = group
    # the groups of the term that costs most (occurrences x groups) numbered first: its additions are to a slice
    occurrences = np.bincount(np.asarray(positions, dtype=np.int64), minlength=len(contributions))
    costliest = max(members, key=lambda term: int(occurrences[term]) * len(members[term]))
    renumbered = np.full(len(groups), -1, dtype=np.int64)
    renumbered[members[costliest]] = np.arange(len(members[costliest]))
    rest = renumbered < 0
    renumbered[rest] = np.arange(len(members[costliest]), len(groups))
    by_term: dict[int, tuple[Any, np.ndarray]] = {}
    for term in members:
        numbers = renumbered[members[term]]
        order = np.argsort(numbers, kind="stable")
        numbers, values = numbers[order], np.asarray(added[term], dtype=np.float64)[order]
        contiguous = len(numbers) and numbers[-1] - numbers[0] == len(numbers) - 1
        by_term[term] = (slice(int(numbers[0]), int(numbers[-1]) + 1) if contiguous else numbers, values)
    sums = np.zeros(len(groups))
    for term in positions:
        found = by_term.get(term)
        if found is not None:
            sums[found[0]] += found[1]
    scores[docs[starts]] = sums[renumbered[group_of]]
    return scores
