"""A BM25 baseline over title + text that runs on a loaded corpus in bounded memory.

Scoring is bm25s's `lucene` variant (the one Lucene and Pyserini use): for a query term t in a
document d, idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl)) with idf(t) = ln(1 + (N - df + 0.5) /
(df + 0.5)), summed over the query's terms (a repeated term counts each time). Text is lower-cased,
split into `\\w+` tokens (single characters kept, as Lucene's StandardTokenizer keeps them),
Lucene's 33 English stopwords removed and the rest stemmed with the Snowball English stemmer
(PyStemmer); |d| counts the tokens left after stopword removal. k1 = 0.9 and b = 0.4 are
Anserini's defaults, which Pyserini's BEIR regressions use.

Two conditions, as Pyserini publishes two BM25 figures per BEIR dataset (pyserini/2cr/beir.yaml):
- **flat** (the default): title and text joined into one field, one set of statistics over all documents;
- **multifield** (`Bm25Settings(multifield=True)`, `ragloaders bm25 --multifield`): title and text indexed as two
  fields and queried with equal weights, as Anserini's multifield BEIR indexes are searched with
  `-fields contents=1.0 title=1.0`: each field is scored by Lucene's BM25 with its own statistics (its document
  frequencies, its document lengths, and, as Lucene's field statistics count them, only the documents that hold a
  term in the field: N and the average length are over those) and the fields' scores are summed.

bm25s itself builds its index from Python lists of every token of every document, which does not
fit a 5M-document corpus in memory. Here only the terms the queries use are indexed: one pass over
the corpus in batches spools (term, document, tf) postings to a temporary file and keeps the
document lengths; the postings are then laid out term by term (CSC, as bm25s lays them out) and each
query sums its terms' postings into one score per document. Memory is the postings of the query
terms (8 bytes each) plus 4 bytes per document. Tests check the scores against bm25s's own.
"""

from __future__ import annotations

import itertools
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from ..core.errors import UsageError
from ..core.preview import preview

LUCENE_ENGLISH_STOPWORDS = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
)
"""Lucene's EnglishAnalyzer stop set (also bm25s's `STOPWORDS_EN`)."""

STOP, OTHER = -2, -1
"""Token ids of a stopword and of a term no query uses."""
CORPUS_BATCH_ROWS = 20_000
WORD_CACHE_LIMIT = 2_000_000
"""Distinct words whose stem lookup is remembered; past this the cache starts afresh (memory stays bounded)."""


@dataclass(frozen=True)
class Bm25Settings:
    """How the baseline tokenizes and scores; `describe()` is what a dataset card says about it."""

    k1: float = 0.9
    b: float = 0.4
    token_pattern: str = r"\w+"
    stemmer: str = "english"
    """A PyStemmer algorithm: `english` is Snowball's English (Porter2) stemmer."""
    stopwords: tuple[str, ...] = LUCENE_ENGLISH_STOPWORDS
    fields: tuple[str, ...] = ("title", "text")
    """Corpus columns joined with a space into the indexed text (a null counts as empty), or, `multifield`, each
    indexed as a field of its own."""
    multifield: bool = False
    """Pyserini's multifield condition (module docstring): each field scored with its own statistics, summed."""

    def describe(self) -> str:
        over = (f"{' and '.join(self.fields)} as separate fields (Pyserini's multifield: each field's own "
                "statistics, scores summed with equal weights)" if self.multifield else
                f"{' + '.join(self.fields)} (Pyserini's flat: one field)")
        return (
            f"BM25 (bm25s's Lucene variant, k1={self.k1}, b={self.b}) over {over}; "
            f"text lower-cased, split into `{self.token_pattern}` tokens, Lucene's {len(self.stopwords)} English "
            f"stopwords removed, Snowball `{self.stemmer}` stemmer (PyStemmer)"
        )


DEFAULT_SETTINGS = Bm25Settings()


class Analyzer:
    """Text to terms: lower-case, split, drop stopwords, stem."""

    def __init__(self, settings: Bm25Settings):
        try:
            import Stemmer
        except ImportError:
            raise ImportError("the BM25 baseline needs PyStemmer: pip install 'ragloaders[eval]'") from None

        self.split = re.compile(settings.token_pattern).findall
        self.stopwords = frozenset(settings.stopwords)
        self.stem = Stemmer.Stemmer(settings.stemmer).stemWord

    def terms(self, text: str) -> list[str]:
        return [self.stem(word) for word in self.split(text.lower()) if word not in self.stopwords]


class _TermIds(dict):
    """word -> id of its stem among the query terms, OTHER for any other stem, STOP for a stopword.
    A cache: a miss computes the stem."""

    def __init__(self, analyzer: Analyzer, vocabulary: dict[str, int]):
        super().__init__()
        self.analyzer, self.vocabulary = analyzer, vocabulary

    def __missing__(self, word: str) -> int:
        if len(self) >= WORD_CACHE_LIMIT:
            self.clear()
        value = STOP if word in self.analyzer.stopwords else self.vocabulary.get(self.analyzer.stem(word), OTHER)
        self[word] = value
        return value


@dataclass
class QueryTermIndex:
    """BM25 weights of the query terms in every document, term by term (CSC: `indptr`, `indices`, `data`)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    num_docs: int
    doc_ids: pa.ChunkedArray

    def scores(self, term_counts: Iterable[tuple[int, int]]) -> np.ndarray:
        """One float32 BM25 score per document for a query given as (term id, count) pairs."""
        scores = np.zeros(self.num_docs, dtype=np.float32)
        for term, count in term_counts:
            start, end = self.indptr[term], self.indptr[term + 1]
            scores[self.indices[start:end]] += np.float32(count) * self.data[start:end]
        return scores


def corpus_texts(table: pa.Table, fields: Sequence[str]) -> list[str]:
    """The indexed text of each row: `fields` joined with a space."""
    columns = [table.column(name).to_pylist() for name in fields]
    return [" ".join(value or "" for value in values) for values in zip(*columns)]


def _spool_batch(spool, terms: np.ndarray, docs: np.ndarray, tfs: np.ndarray) -> None:
    for array in (terms, docs, tfs):
        spool.write(np.ascontiguousarray(array, dtype=np.int32).tobytes())


def build_index(
    corpus: Iterable[pa.Table], term_ids: _TermIds, num_terms: int, settings: Bm25Settings, *,
    tmp_dir: str | None = None, field_statistics: bool = False,
) -> QueryTermIndex:
    """One pass over `corpus` (tables with `_id` and the text fields) into a QueryTermIndex of the query terms.
    `field_statistics`: N and the average length count only the documents with a term in the field (Lucene's)."""
    split = re.compile(settings.token_pattern).findall
    lookup = term_ids.__getitem__
    doc_frequency = np.zeros(num_terms, dtype=np.int64)
    lengths, id_chunks, batch_sizes = [], [], []
    num_docs = 0
    with tempfile.TemporaryFile(dir=tmp_dir, prefix="ragloaders-bm25-") as spool:
        for table in corpus:
            if not table.num_rows:
                continue
            id_chunks.extend(table.column("_id").chunks)
            tokens = [list(map(lookup, split(text.lower()))) for text in corpus_texts(table, settings.fields)]
            counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
            flat = np.fromiter(itertools.chain.from_iterable(tokens), dtype=np.int64, count=int(counts.sum()))
            local = np.repeat(np.arange(len(tokens), dtype=np.int64), counts)
            lengths.append(np.bincount(local[flat != STOP], minlength=len(tokens)).astype(np.int32))
            query_terms = flat >= 0
            keys, tfs = np.unique(flat[query_terms] * len(tokens) + local[query_terms], return_counts=True)
            terms, docs = np.divmod(keys, len(tokens))
            doc_frequency += np.bincount(terms, minlength=num_terms)
            _spool_batch(spool, terms, docs + num_docs, tfs)
            batch_sizes.append(len(keys))
            num_docs += len(tokens)
        spool.seek(0)
        doc_lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int32)
        return _lay_out(spool, batch_sizes, doc_frequency, doc_lengths, settings,
                        pa.chunked_array(id_chunks, type=pa.string()), field_statistics)


def _lay_out(
    spool, batch_sizes: list[int], doc_frequency: np.ndarray, doc_lengths: np.ndarray, settings: Bm25Settings,
    doc_ids: pa.ChunkedArray, field_statistics: bool = False,
) -> QueryTermIndex:
    num_docs = len(doc_lengths)
    indptr = np.concatenate([[0], np.cumsum(doc_frequency)]).astype(np.int64)
    indices = np.empty(indptr[-1], dtype=np.int32)
    data = np.empty(indptr[-1], dtype=np.float32)
    counted = int(np.count_nonzero(doc_lengths)) if field_statistics else num_docs
    if num_docs:
        average = doc_lengths.sum() / counted if field_statistics and counted else doc_lengths.mean()
        idf = np.log1p((counted - doc_frequency + 0.5) / (doc_frequency + 0.5))
        norm = settings.k1 * (1 - settings.b + settings.b * doc_lengths / max(average, 1e-9))
    filled = indptr[:-1].copy()
    for size in batch_sizes:
        terms, docs, tfs = (np.frombuffer(spool.read(4 * size), dtype=np.int32) for _ in range(3))
        # postings of one batch come sorted by term: a posting's place is its term's next free slot plus its
        # rank among the batch's postings of that term
        first = np.searchsorted(terms, terms, side="left")
        places = filled[terms] + (np.arange(size) - first)
        indices[places] = docs
        data[places] = (idf[terms] * tfs / (tfs + norm[docs])).astype(np.float32)
        filled += np.bincount(terms, minlength=len(filled))
    return QueryTermIndex(indptr, indices, data, num_docs, doc_ids)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest positive scores, highest first; ties go to the earlier document."""
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) > k:
        values = scores[candidates]
        kth = np.partition(values, len(values) - k)[len(values) - k]
        above = candidates[values > kth]
        candidates = np.concatenate([above, candidates[values == kth][: k - len(above)]])
    return candidates[np.lexsort((candidates, -scores[candidates]))]


def check_top_k(top_k: int, name: str) -> None:
    """UsageError unless `top_k` is at least 1, naming it as the caller gave it (`name`: its keyword or option)."""
    if top_k < 1:
        raise UsageError(f"{name} must be at least 1, got {preview(top_k)}")


def rank(
    corpus: Iterable[pa.Table],
    queries: Sequence[tuple[str, str]],
    *,
    top_k_docs: int = 1000,
    settings: Bm25Settings = DEFAULT_SETTINGS,
    tmp_dir: str | None = None,
) -> Iterator[tuple[str, list[str], list[float]]]:
    """(query id, document ids best first, their scores) for each (query id, text) of `queries`, over `corpus`
    (tables with `_id` and the text fields, read once). Only documents sharing a term with the query are
    returned, so a query may get fewer than `top_k_docs` (none if all its words are stopwords)."""
    check_top_k(top_k_docs, "top_k_docs")
    analyzer = Analyzer(settings)
    vocabulary: dict[str, int] = {}
    query_terms = []
    for query_id, text in queries:
        counts = Counter(vocabulary.setdefault(term, len(vocabulary)) for term in analyzer.terms(text or ""))
        query_terms.append((query_id, sorted(counts.items())))
    term_ids = _TermIds(analyzer, vocabulary)
    if settings.multifield:
        tables = list(corpus)  # slices of the memory-mapped corpus: one pass per field
        indexes = [build_index(tables, term_ids, len(vocabulary), replace(settings, fields=(field,)), tmp_dir=tmp_dir,
                               field_statistics=True) for field in settings.fields]
    else:
        indexes = [build_index(corpus, term_ids, len(vocabulary), settings, tmp_dir=tmp_dir)]
    index = indexes[0]
    for query_id, counts in query_terms:
        scores = index.scores(counts)
        for field_index in indexes[1:]:
            scores += field_index.scores(counts)
        best = top_k(scores, top_k_docs)
        yield query_id, index.doc_ids.take(pa.array(best)).to_pylist(), [float(s) for s in scores[best]]

