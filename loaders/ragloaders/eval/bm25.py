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
query sums its terms' postings over the documents they hold (all documents only when its postings are at least
1/DENSE_SCORING_SHARE of them), so a query costs time in proportion to its postings, and one without a known term
none. Tests check the scores against bm25s's own.

Memory is bounded by bytes, not rows: the postings of the query terms (8 bytes each); 4 bytes per document (its
length, and a score while a query whose postings are a large share of the documents is scored); the document ids as
the corpus gives them (slices of the memory-mapped Arrow file for a benchmark path), hashed once by Arrow to find a
repeated one; the word -> stem cache (at most WORD_CACHE_BYTES, words counted at their Python size); and the batch
being tokenized: at most BATCH_TEXT_BYTES of text (UTF-8 bytes of the indexed fields) in at most BATCH_ROWS
documents, held a few times over as Python strings and token ids. A document with more than LONG_DOCUMENT_BYTES of
text is tokenized alone, PIECE_WORDS words at a time: it costs a few copies of its text as Python strings (a word as
long as the document is copied by the stemmer too) and no list of its words.
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import SourceError, UsageError
from ..core.preview import preview

LUCENE_ENGLISH_STOPWORDS = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
)
"""Lucene's EnglishAnalyzer stop set (also bm25s's `STOPWORDS_EN`)."""

STOP, OTHER = -2, -1
"""Token ids of a stopword and of a term no query uses."""
BATCH_TEXT_BYTES = 4 << 20
"""Text (UTF-8 bytes of the indexed fields) tokenized at a time, at most, unless one document is longer."""
BATCH_ROWS = 20_000
"""Documents tokenized at a time, at most (bounds the cost per document of a batch of short ones)."""
LONG_DOCUMENT_BYTES = 256 << 10
"""A document with more text than this is tokenized alone, in pieces (no list of all its words is made)."""
PIECE_WORDS = 1 << 16
"""Words of a long document looked up at a time."""
WORD_CACHE_LIMIT = 2_000_000
"""Distinct words whose stem lookup is remembered; past this the cache starts afresh (memory stays bounded)."""
WORD_CACHE_BYTES = 64 << 20
"""Bytes the remembered words may take (their Python size plus WORD_ENTRY_BYTES each); past this the cache starts
afresh, and a word bigger than this alone is not remembered."""
WORD_ENTRY_BYTES = 48
"""What a dict entry costs beside its key (hash table slots, the value)."""
DENSE_SCORING_SHARE = 8
"""A query whose postings number at least 1/8 of the documents is scored into one array over every document;
any other over the documents its postings hold (the same scores, bit for bit; less time)."""


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

    def __post_init__(self) -> None:
        for name, low, high in (("k1", 0.0, math.inf), ("b", 0.0, 1.0)):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
                    or not low <= value <= high):
                expected = "a finite number >= 0" if high == math.inf else f"a number from {low:g} to {high:g}"
                raise UsageError(f"Bm25Settings({name}=...) must be {expected} (Lucene's range), got {preview(value)}")
        if not isinstance(self.token_pattern, str):
            raise UsageError(f"Bm25Settings(token_pattern=...) must be a regular expression (str), got "
                             f"{preview(self.token_pattern)}")
        try:
            re.compile(self.token_pattern)
        except re.error as e:
            raise UsageError(f"Bm25Settings(token_pattern=...) is not a regular expression ({e}): "
                             f"{preview(self.token_pattern)}") from None
        if not isinstance(self.stemmer, str):
            raise UsageError(f"Bm25Settings(stemmer=...) must name a PyStemmer algorithm (str), got "
                             f"{preview(self.stemmer)}")
        for name in ("stopwords", "fields"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"Bm25Settings({name}=...) must be a tuple of strings, got {preview(value)}")
        if not self.fields or len(set(self.fields)) != len(self.fields) or "_id" in self.fields:
            raise UsageError(f"Bm25Settings(fields=...) must name distinct text columns of the corpus (not _id), got "
                             f"{preview(self.fields)}")

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
        try:
            self.stem = Stemmer.Stemmer(settings.stemmer).stemWord
        except KeyError:
            raise UsageError(f"Bm25Settings(stemmer={preview(settings.stemmer)}) is not a PyStemmer algorithm; "
                             f"expected one of {', '.join(sorted(Stemmer.algorithms()))}") from None

    def terms(self, text: str) -> list[str]:
        return [self.stem(word) for word in self.split(text.lower()) if word not in self.stopwords]


class _TermIds(dict):
    """word -> id of its stem among the query terms, OTHER for any other stem, STOP for a stopword.
    A cache: a miss computes the stem."""

    def __init__(self, analyzer: Analyzer, vocabulary: dict[str, int]):
        super().__init__()
        self.analyzer, self.vocabulary = analyzer, vocabulary
        self.cached_bytes = 0

    def __missing__(self, word: str) -> int:
        value = STOP if word in self.analyzer.stopwords else self.vocabulary.get(self.analyzer.stem(word), OTHER)
        size = sys.getsizeof(word) + WORD_ENTRY_BYTES
        if size > WORD_CACHE_BYTES:
            return value
        if len(self) >= WORD_CACHE_LIMIT or self.cached_bytes + size > WORD_CACHE_BYTES:
            self.clear()
            self.cached_bytes = 0
        self[word] = value
        self.cached_bytes += size
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

    def postings(self, term_counts: Iterable[tuple[int, int]]) -> int:
        """How many postings a query given as (term id, count) pairs sums."""
        return sum(int(self.indptr[term + 1] - self.indptr[term]) for term, _ in term_counts)

    def candidate_scores(self, term_counts: Sequence[tuple[int, int]], positions: np.ndarray,
                         num_candidates: int) -> np.ndarray:
        """`scores` over the candidates only: `positions` gives, for each posting of the query's terms in turn, its
        document's place among the candidates. The same float32 additions in the same order as `scores`, so the
        same values bit for bit."""
        scores = np.zeros(num_candidates, dtype=np.float32)
        taken = 0
        for term, count in term_counts:
            start, end = self.indptr[term], self.indptr[term + 1]
            scores[positions[taken: taken + end - start]] += np.float32(count) * self.data[start:end]
            taken += end - start
        return scores


def corpus_texts(table: pa.Table, fields: Sequence[str]) -> list[str]:
    """The indexed text of each row: `fields` joined with a space."""
    columns = [table.column(name).to_pylist() for name in fields]
    return [" ".join(value or "" for value in values) for values in zip(*columns)]


def _spool_batch(spool, terms: np.ndarray, docs: np.ndarray, tfs: np.ndarray) -> None:
    for array in (terms, docs, tfs):
        spool.write(np.ascontiguousarray(array, dtype=np.int32).tobytes())


def check_fields(table: pa.Table, fields: Sequence[str]) -> None:
    """UsageError unless the corpus table has `_id` and every field of `fields` as a text column."""
    for name in ("_id", *fields):
        if name not in table.column_names:
            raise UsageError(f"the corpus has no column {preview(name)} (Bm25Settings(fields=...) names the columns "
                             f"indexed); its columns are {', '.join(map(preview, table.column_names))}")
        kind = table.schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise UsageError(f"the corpus column {preview(name)} holds {kind}, not text; Bm25Settings(fields=...) "
                             "names text columns")


def text_batches(table: pa.Table, fields: Sequence[str]) -> Iterator[pa.Table]:
    """`table` in slices of at most BATCH_TEXT_BYTES of text in `fields` and BATCH_ROWS rows; a row with more than
    LONG_DOCUMENT_BYTES of text is a slice of its own."""
    sizes = np.zeros(table.num_rows, dtype=np.int64)
    for name in fields:
        sizes += pc.fill_null(pc.binary_length(table.column(name)), 0).to_numpy().astype(np.int64)
    before = np.concatenate([[0], np.cumsum(sizes)])
    long_rows = np.flatnonzero(sizes > LONG_DOCUMENT_BYTES)
    start = 0
    while start < table.num_rows:
        next_long = long_rows[np.searchsorted(long_rows, start)] if len(long_rows) and long_rows[-1] >= start else None
        if next_long == start:
            end = start + 1
        else:
            end = int(np.searchsorted(before, before[start] + BATCH_TEXT_BYTES, side="right")) - 1
            end = min(max(end, start + 1), start + BATCH_ROWS, table.num_rows if next_long is None else next_long)
        yield table.slice(start, end - start)
        start = end


def _word_of(pattern: re.Pattern) -> Callable[[re.Match], object]:
    """What `pattern.findall` gives for a match: the whole match, its one group ("" where it took no part), or the
    tuple of its groups."""
    if pattern.groups == 0:
        return operator.methodcaller("group")
    if pattern.groups == 1:
        return lambda match: match.group(1) or ""
    return operator.methodcaller("groups", "")


def _long_document(text: str, pattern: re.Pattern, lookup: Callable[[str], int], num_terms: int
                   ) -> tuple[int, np.ndarray, np.ndarray]:
    """(length, query terms, their counts) of one document, its words looked up PIECE_WORDS at a time."""
    text = text.lower()  # (the caller holds no other reference: the text as given is freed here)
    matches, word_of = pattern.finditer(text), _word_of(pattern)
    length, counts = 0, np.zeros(num_terms, dtype=np.int64)
    # (no list of the matches: holding thousands of them makes the garbage collector walk them again and again)
    while len(ids := np.fromiter(map(lookup, map(word_of, itertools.islice(matches, PIECE_WORDS))), dtype=np.int32)):
        length += int(np.count_nonzero(ids != STOP))
        counts += np.bincount(ids[ids >= 0], minlength=num_terms)
    terms = np.flatnonzero(counts)
    return length, terms, counts[terms]


def build_index(
    corpus: Iterable[pa.Table], term_ids: _TermIds, num_terms: int, settings: Bm25Settings, *,
    tmp_dir: str | None = None, field_statistics: bool = False,
) -> QueryTermIndex:
    """One pass over `corpus` (tables with `_id` and the text fields) into a QueryTermIndex of the query terms.
    `field_statistics`: N and the average length count only the documents with a term in the field (Lucene's)."""
    pattern = re.compile(settings.token_pattern)
    split = pattern.findall
    lookup = term_ids.__getitem__
    doc_frequency = np.zeros(num_terms, dtype=np.int64)
    lengths, id_chunks, batch_sizes = [], [], []
    num_docs = 0
    with tempfile.TemporaryFile(dir=tmp_dir, prefix="ragloaders-bm25-") as spool:
        for table in corpus:
            check_fields(table, settings.fields)
            if not table.num_rows:
                continue
            id_chunks.extend(table.column("_id").cast(pa.string()).chunks)
            for batch in text_batches(table, settings.fields):
                texts = corpus_texts(batch, settings.fields)
                if len(texts) == 1 and len(texts[0]) > LONG_DOCUMENT_BYTES:
                    length, terms, tfs = _long_document(texts.pop(), pattern, lookup, num_terms)
                    lengths.append(np.array([length], dtype=np.int32))
                    docs = np.zeros(len(terms), dtype=np.int64)
                else:
                    tokens = [list(map(lookup, split(text.lower()))) for text in texts]
                    del texts
                    counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
                    flat = np.fromiter(itertools.chain.from_iterable(tokens), dtype=np.int32, count=int(counts.sum()))
                    del tokens
                    local = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
                    lengths.append(np.bincount(local[flat != STOP], minlength=len(counts)).astype(np.int32))
                    query_terms = flat >= 0
                    keys, tfs = np.unique(flat[query_terms].astype(np.int64) * len(counts) + local[query_terms],
                                          return_counts=True)
                    del flat, local, query_terms
                    terms, docs = np.divmod(keys, len(counts))
                doc_frequency += np.bincount(terms, minlength=num_terms)
                _spool_batch(spool, terms, docs + num_docs, tfs)
                batch_sizes.append(len(terms))
                num_docs += batch.num_rows
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


def check_top_k(top_k: object, name: str) -> None:
    """UsageError unless `top_k` is a whole number (an int) of at least 1, naming it as the caller gave it (`name`:
    its keyword or option)."""
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral):
        raise UsageError(f"{name} must be a whole number of documents (an int, at least 1), got {preview(top_k)}")
    if top_k < 1:
        raise UsageError(f"{name} must be at least 1, got {preview(top_k)}")


def refuse_repeated_query_ids(queries: Sequence[tuple[str, str]], name: str) -> None:
    """SourceError naming a query id that `queries` hold twice (a run ranks each query once: eval refuses a run
    that lists a document twice for a query); `name` says which queries they are."""
    first: dict[str, int] = {}
    for position, (query_id, _) in enumerate(queries):
        if first.setdefault(query_id, position) != position:
            repeats = sum(1 for other, _ in queries if other == query_id)
            raise SourceError(name, f"the query id {preview(query_id)} is held by {repeats} of the {len(queries):,} "
                                    f"queries ranked (at positions {first[query_id] + 1} and {position + 1}); a run "
                                    "ranks each query once, so query ids must be unique (`ragloaders validate` lists "
                                    "the duplicates)")


def refuse_repeated_doc_ids(doc_ids: pa.ChunkedArray, name: str) -> None:
    """SourceError naming a row without an id or an id that two rows hold (`name` says which corpus): a run lists a
    document once per query, and eval refuses one listing it twice. Arrow hashes the ids (no Python string each)."""
    if doc_ids.null_count:
        row = int(np.flatnonzero(np.asarray(doc_ids.is_null()))[0])
        raise SourceError(name, f"row {row} has no _id (null): a run names each document by its id")
    counts = pc.value_counts(doc_ids)
    repeated = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
    if len(repeated):
        value = repeated[0].as_py()
        rows = np.flatnonzero(np.asarray(pc.equal(doc_ids, value)))
        raise SourceError(name, f"the _id {preview(value)} is held by {len(rows)} rows "
                                f"({', '.join(map(str, rows[:5]))}{', …' if len(rows) > 5 else ''}, counting from 0); "
                                f"{len(repeated):,} {'id repeats' if len(repeated) == 1 else 'ids repeat'} in all. A "
                                "run lists a document once per query, so corpus ids must be unique (`ragloaders "
                                "validate` lists the duplicates)")


def rank_query(indexes: Sequence[QueryTermIndex], term_counts: Sequence[tuple[int, int]], k: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(document rows best first, their float32 scores) of one query, its scores summed over `indexes` (the fields),
    as `top_k` picks them: a query without a term costs nothing, one with few postings only their documents."""
    postings = sum(index.postings(term_counts) for index in indexes)
    if not postings:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if postings * DENSE_SCORING_SHARE >= indexes[0].num_docs:
        scores = indexes[0].scores(term_counts)
        for field_index in indexes[1:]:
            scores += field_index.scores(term_counts)
        best = top_k(scores, k)
        return best, scores[best]
    rows = np.concatenate([index.indices[index.indptr[term]: index.indptr[term + 1]]
                           for index in indexes for term, _ in term_counts])
    # candidates in document order, so that top_k's ties still go to the earlier document
    candidates, positions = np.unique(rows, return_inverse=True)
    scores, taken = None, 0
    for index in indexes:
        size = index.postings(term_counts)
        part = index.candidate_scores(term_counts, positions[taken: taken + size], len(candidates))
        taken += size
        scores = part if scores is None else scores + part
    best = top_k(scores, k)
    return candidates[best], scores[best]


def rank(
    corpus: Iterable[pa.Table],
    queries: Sequence[tuple[str, str]],
    *,
    top_k_docs: int = 1000,
    settings: Bm25Settings = DEFAULT_SETTINGS,
    tmp_dir: str | None = None,
    corpus_name: str = "corpus",
    queries_name: str = "queries",
) -> Iterator[tuple[str, list[str], list[float]]]:
    """(query id, document ids best first, their scores) for each (query id, text) of `queries`, over `corpus`
    (tables with `_id` and the text fields, read once). Only documents sharing a term with the query are
    returned, so a query may get fewer than `top_k_docs` (none if all its words are stopwords). A query id given
    twice or a corpus id held by two rows (or none) is refused (SourceError naming `queries_name` / `corpus_name`)
    before any query is ranked: a run could not be scored."""
    check_top_k(top_k_docs, "top_k_docs")
    refuse_repeated_query_ids(queries, queries_name)
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
    doc_ids = indexes[0].doc_ids
    refuse_repeated_doc_ids(doc_ids, corpus_name)
    for query_id, counts in query_terms:
        best, scores = rank_query(indexes, counts, top_k_docs)
        yield query_id, doc_ids.take(pa.array(best)).to_pylist() if len(best) else [], [float(s) for s in scores]
