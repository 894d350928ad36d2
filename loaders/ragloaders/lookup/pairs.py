"""`ragloaders.pairs`: the reranker's input. One Parquet row per (query, document) of a run's top K, or of a
source's `top_ranked` config, with the query's text, the document's title and text and the qrels grade.

Streams: the pairs are made and written in batches of bounded size (the query and document texts are taken from the
memory-mapped tables by row number, `docstore.DocStore.rows_of`), so the output never sits in memory whole. The run
is read one query at a time (`eval.runs.iter_run`), so memory is bounded by one batch of the run's lines, one query's
documents and one output batch whatever the run's size; a run whose query's lines are not together is refused,
naming the line (every TREC tool writes each query's lines together).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..api import configs_of, is_benchmark_path, load
from ..core.errors import SourceError, UsageError
from ..core.hub_repository import open_repository
from ..core.output_target import check_output, write_new_file
from ..core.plural import counted
from ..core.preview import preview
from ..core.readers.lines import UTF8_BOM
from ..eval.data import ROLE_CONFIGS, config_for, refuse_null_grades, split_read
from ..eval.runs import iter_run, run_format
from .chunked_take import ChunkedRows
from .docstore import DocStore, docs
from .id_index import shown

if TYPE_CHECKING:
    import datasets

BATCH_BYTES = 64 << 20
"""Bytes of document text per written table, at most (or one document, when it alone is larger): the rankings are
gathered by the corpus's mean document size, then their pairs cut by the size of each document taken."""
BATCH_ROWS = (64, 10_000)
"""The fewest and most pairs per batch."""
DEFAULT_TOP = 100
"""BEIR's reranking setup re-ranks the top 100."""
MISSING = ("error", "skip")
"""What `pairs` does with a query or document of the run the source lacks: an error naming it, or skip it."""

Ranking = tuple[str, list[str], list[float | None], str]
"""(query id, document ids in rank order, their scores (None where top_ranked has none), where it is read: for
errors)."""


@dataclass
class PairsWritten:
    """What `pairs` wrote: the file, its rows, the queries they cover, and the qrels split that gave the labels
    (None when the source has no qrels, as CRAG: every label is then null)."""

    out: str
    rows: int
    queries: int
    labels_from: str | None
    skipped_queries: int = 0
    """With `missing="skip"`: queries of the run the source lacks (none of their pairs is written)."""
    skipped_documents: int = 0
    """With `missing="skip"`: pairs of known queries left out because the corpus lacks their document."""
    first_skipped_query: str | None = None
    first_skipped_document: str | None = None


def pairs(
    source: str,
    out: str | os.PathLike,
    *,
    run: str | os.PathLike | None = None,
    from_top_ranked: bool = False,
    top: int = DEFAULT_TOP,
    split: str | None = None,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    revision: str | None = None,
    missing: str = "error",
) -> PairsWritten:
    """Write the (query, document) pairs of a run's top `top` per query to the new Parquet file `out`.

    Columns: `query-id`, `query` (its text), `corpus-id`, `rank` (1 = best), `score` (the run's, or top_ranked's
    `scores`; null where it has none), `title`, `text`, `label` (the grade in the qrels split `split` where the
    pair is judged, else null). Queries come in the run's order; each query's documents by score, highest first
    (equal scores in the run's order), as `rank` numbers them.

    Args:
        source: what `ragloaders.docs` takes: a benchmark path (with `data_dir` or a download), a built folder or a
            hub repository.
        out: a new `.parquet` file, under the rules of `bm25 --out` (`core.output_target.check_output`).
        run: a run file as `ragloaders eval` reads it (TREC, `.parquet`, `.jsonl`); or else `from_top_ranked`: the
            source's `top_ranked` config (split `split`, or its only split in a folder or repository).
        top: documents per query.
        split: the qrels split the labels come from, and top_ranked's (None: `test`, as `eval`). Given for a run
            of a source without qrels, it would choose nothing: a ValueError.
        missing: `error` (the default): a query or document of the run the source lacks is a ValueError naming it
            and its line; `skip`: an unknown query's pairs and a pair whose document is unknown are left out, the
            others keeping their `rank` in the run's top `top` (the skipped ones leave gaps), and counted in the
            result (`skipped_queries`, `skipped_documents`).

    The run is read one query at a time (`eval.runs.iter_run`): memory stays bounded whatever its size, and each
    query's lines must be together (a query that comes back after another is an error naming both lines).

    Raises:
        ValueError: a query or document of the run that the source does not have (naming the id and the line or
            record) unless `missing="skip"`, a run whose query's lines are not together, a bad argument, and what
            `ragloaders.docs` raises. FileExistsError / OutputFolderError: `out`.
    """
    if (run is None) == (not from_top_ranked):
        raise UsageError("pairs takes a run (run= / --run RUN) or from_top_ranked (--from-top-ranked), one of them")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise UsageError(f"top (--top) must be a whole number of documents per query, at least 1; got {preview(top)}")
    if missing not in MISSING:
        raise UsageError(f"missing must be one of {', '.join(MISSING)}; got {preview(missing)}")
    target = check_output(out, kind="file", data_dir=data_dir, cache_dir=cache_dir, source=source)
    if os.path.splitext(target)[1].lower() != ".parquet":
        raise UsageError(f"out (--out) {os.fspath(out)}: pairs are written as Parquet; name a file ending in .parquet")
    options: dict[str, Any] = {"data_dir": data_dir, "cache_dir": cache_dir, "revision": revision}
    corpus = docs(source, "corpus", **options)
    queries = docs(source, config_for(source, "queries"), **options)
    qrels_config = next((name for name in ROLE_CONFIGS["qrels"] if name in configs_in(source)), None)
    if split is not None and qrels_config is None and not from_top_ranked:
        raise UsageError(f"split (--split) {preview(split)}: {source} has no qrels, so a run's pairs have no labels "
                         "and no split to choose (the split chooses the labels and, with --from-top-ranked, "
                         "top_ranked's split)")
    split = "test" if split is None else split
    labels_split, labels = grades(source, qrels_config, split, options) if qrels_config else (None, {})
    if from_top_ranked:
        rankings, read = top_ranked_rankings(source, split, top, options), f"{source} top_ranked {split}"
    else:
        rankings, read = run_rankings(os.fspath(run), top), os.fspath(run)
    first = next(rankings, None)
    if first is None:  # (as eval refuses it: an empty file of pairs would look like a complete answer)
        raise SourceError(read, "holds no result: no pair to write")
    rankings = itertools.chain([first], rankings)
    writer = PairWriter(corpus, queries, labels, skip=missing == "skip")
    rows, count = write_new_file(target, lambda partial: writer.write(partial, rankings))
    return PairsWritten(target, rows, count, f"{qrels_config} {labels_split}" if qrels_config else None,
                        writer.skipped_queries, writer.skipped_documents, writer.first_skipped_query,
                        writer.first_skipped_document)


def configs_in(source: str) -> list[str]:
    """The config names of a benchmark path, folder or repository."""
    return configs_of(source) if is_benchmark_path(source) else open_repository(source).configs()


def split_of(source: str, config: str, split: str, options: dict[str, Any]) -> tuple[str, datasets.Dataset]:
    """(the split read, its dataset) for `split` of a config, chosen as `eval` chooses it (`split_read`)."""
    splits = load(source, config, **_given(options))
    read = split_read(source, config, split, list(splits))
    return read, splits[read]


def grades(source: str, config: str, split: str, options: dict[str, Any]
           ) -> tuple[str, dict[tuple[str, str], int]]:
    """(the split read, (query id, document id) -> grade) of a qrels split (a pair listed twice keeps its last
    grade, as `eval`)."""
    read, dataset = split_of(source, config, split, options)
    refuse_null_grades(dataset.data.table, ("query-id", "corpus-id", "score"), f"{source} {config} {read}")
    columns = (dataset.data.table.column(name).to_pylist() for name in ("query-id", "corpus-id", "score"))
    return read, {(query_id, doc_id): grade for query_id, doc_id, grade in zip(*columns)}


def run_rankings(path: str, top: int) -> Iterator[Ranking]:
    """Each query of a run with its top `top` documents by score (equal scores in the run's order), read one query
    at a time."""
    for query_id, scored in iter_run(path):
        ranked = sorted(scored.items(), key=lambda item: -item[1])[:top]
        yield query_id, [doc_id for doc_id, _ in ranked], [score for _, score in ranked], path


def top_ranked_rankings(source: str, split: str, top: int, options: dict[str, Any]) -> Iterator[Ranking]:
    """Each row of the source's `top_ranked` split: a query and its first `top` documents, with their scores where
    it has them (BEIR's BM25 `scores`, aligned with `corpus-ids`; CRAG's pages have none)."""
    if "top_ranked" not in configs_in(source):
        raise UsageError(f"{source} has no top_ranked config (a folder built with `ragloaders build --with "
                         "top_ranked` has one); pass a run (run= / --run) instead")
    read, dataset = split_of(source, "top_ranked", split, options)
    table = dataset.data.table
    row = 0
    for batch in table.to_batches(max_chunksize=1024):
        ids = batch.column("corpus-ids").to_pylist()
        scores = batch.column("scores").to_pylist() if "scores" in batch.schema.names else [None] * len(ids)
        for query_id, doc_ids, doc_scores in zip(batch.column("query-id").to_pylist(), ids, scores):
            row += 1
            _check_top_ranked_row(f"{source} top_ranked {read}", row, query_id, doc_ids)
            kept = doc_ids[:top]
            given = list(doc_scores or [])[:top]
            if len(given) != len(kept):  # no scores, or not one per document: none is taken for another's
                given = [None] * len(kept)
            yield query_id, kept, given, f"{source} top_ranked, row {row}"


def _check_top_ranked_row(where: str, row: int, query_id: str | None, doc_ids: list[str | None] | None) -> None:
    """SourceError naming the row of a `top_ranked` split without a query id or a list of document ids, or whose
    list holds a null. (A document may come twice: CRAG's search results hold one page twice for some queries.)"""
    if query_id is None or doc_ids is None:
        raise SourceError(where, f"{'query-id' if query_id is None else 'corpus-ids'} is null", record=row)
    if None in doc_ids:
        raise SourceError(where, f"query {shown(query_id)}: corpus-ids holds a null at position "
                                 f"{doc_ids.index(None) + 1}", record=row)


class PairWriter:
    """Writes pairs in batches: the texts are taken from the memory-mapped tables by row number. An unknown query or
    document is a ValueError, or with `skip` its pairs are left out and counted."""

    def __init__(self, corpus: DocStore, queries: DocStore, labels: dict[tuple[str, str], int], *,
                 skip: bool = False):
        self.corpus, self.queries, self.labels = corpus, queries, labels
        self.skip = skip
        self.skipped_queries = self.skipped_documents = 0
        self.first_skipped_query: str | None = None
        self.first_skipped_document: str | None = None
        self.documents = corpus.table.select([name for name in ("title", "text") if name in corpus.table.column_names])
        self.document_rows = ChunkedRows(self.documents)
        self.query_texts = ChunkedRows(queries.table.column("text"))
        self.schema = pa.schema([
            ("query-id", pa.string()), ("query", _type_of(queries.table, "text")), ("corpus-id", pa.string()),
            ("rank", pa.int32()), ("score", pa.float64()), ("title", _type_of(corpus.table, "title")),
            ("text", _type_of(corpus.table, "text")), ("label", pa.int32())])
        mean = self.documents.nbytes / max(1, corpus.table.num_rows)
        self.batch_rows = int(min(max(BATCH_BYTES / max(mean, 1.0), BATCH_ROWS[0]), BATCH_ROWS[1]))
        self.document_bytes = text_bytes(self.documents)

    def write(self, path: str, rankings: Iterator[Ranking]) -> tuple[int, int]:
        """Write every ranking's pairs to the Parquet file `path`; returns (rows, queries with at least one pair)."""
        rows = queries = 0
        last_query: str | None = None
        pending: list[Ranking] = []
        size = 0
        with pq.ParquetWriter(path, self.schema) as writer:

            def write_pending() -> None:
                nonlocal rows, queries, last_query
                for table in self.batches(pending):
                    writer.write_table(table)
                    rows += table.num_rows
                    if table.num_rows:  # a query's pairs may span tables: count where its id changes
                        ids = table.column("query-id")
                        queries += pc.sum(pc.not_equal(ids[1:], ids[:-1])).as_py() or 0
                        queries += ids[0].as_py() != last_query
                        last_query = ids[-1].as_py()

            for ranking in rankings:
                pending.append(ranking)
                size += len(ranking[1])
                if size >= self.batch_rows:
                    write_pending()
                    pending, size = [], 0
            if pending or not rows:
                write_pending()
        if not rows:  # (every pair skipped: an empty file of pairs would look like a complete answer)
            raise UsageError(f"no pair to write: with --missing skip, every pair of the run was skipped "
                             f"({counted(self.skipped_queries, 'query', 'queries')} not in the queries, "
                             f"{counted(self.skipped_documents, 'pair')} whose document is not in the corpus)")
        return rows, queries

    def batches(self, rankings: list[Ranking]) -> Iterator[pa.Table]:
        """The pairs of `rankings` in tables of at most BATCH_BYTES of document text (one at least, maybe empty)."""
        query_ids = [query_id for query_id, doc_ids, _, _ in rankings for _ in doc_ids]
        doc_ids = [doc_id for _, ids, _, _ in rankings for doc_id in ids]
        query_rows = self.queries.rows_of([query_id for query_id, _, _, _ in rankings])
        doc_rows = self.corpus.rows_of(doc_ids)
        counts = np.fromiter((len(ids) for _, ids, _, _ in rankings), dtype=np.int64, count=len(rankings))
        ranks = (np.concatenate([np.arange(1, n + 1, dtype=np.int32) for n in counts]) if len(counts)
                 else np.zeros(0, dtype=np.int32))
        scores = [score for _, _, given, _ in rankings for score in given]
        pair_query_rows = np.repeat(query_rows, counts)
        if not self.skip:
            self._refuse_unknown(rankings, query_rows, doc_ids, doc_rows, counts)
        else:
            keep = self._count_unknown(rankings, query_rows, doc_ids, doc_rows, counts)
            if not keep.all():
                kept = np.flatnonzero(keep).tolist()
                query_ids, doc_ids, scores = ([values[i] for i in kept] for values in (query_ids, doc_ids, scores))
                doc_rows, pair_query_rows, ranks = doc_rows[keep], pair_query_rows[keep], ranks[keep]
        labels = [self.labels.get(pair) for pair in zip(query_ids, doc_ids)]
        for start, stop in cuts(self.document_bytes[doc_rows], BATCH_BYTES):
            taken = self.document_rows.take(doc_rows[start:stop])
            columns = {
                "query-id": pa.array(query_ids[start:stop], pa.string()),
                "query": self.query_texts.take(pair_query_rows[start:stop]),
                "corpus-id": pa.array(doc_ids[start:stop], pa.string()),
                "rank": pa.array(ranks[start:stop]),
                "score": pa.array(scores[start:stop], pa.float64()),
                "title": (taken.column("title") if "title" in taken.column_names else
                          pa.nulls(stop - start, pa.string())),
                "text": taken.column("text"),
                "label": pa.array(labels[start:stop], pa.int32()),
            }
            yield pa.table(columns, schema=self.schema)

    def _count_unknown(self, rankings: list[Ranking], query_rows: np.ndarray, doc_ids: list[str],
                       doc_rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Count the unknown queries of `rankings` and the unknown documents of their known queries; the mask of
        the pairs to keep."""
        known_query = query_rows >= 0
        of_known_query = np.repeat(known_query, counts)
        unknown_document = of_known_query & (doc_rows < 0)
        if not known_query.all():
            self.skipped_queries += int((~known_query).sum())
            if self.first_skipped_query is None:
                self.first_skipped_query = rankings[int(np.flatnonzero(~known_query)[0])][0]
        if unknown_document.any():
            self.skipped_documents += int(unknown_document.sum())
            if self.first_skipped_document is None:
                self.first_skipped_document = doc_ids[int(np.flatnonzero(unknown_document)[0])]
        return of_known_query & (doc_rows >= 0)

    def _refuse_unknown(self, rankings: list[Ranking], query_rows: np.ndarray, doc_ids: list[str],
                        doc_rows: np.ndarray, counts: np.ndarray) -> None:
        missing = np.flatnonzero(query_rows < 0)
        if len(missing):
            query_id, _, _, where = rankings[int(missing[0])]
            raise SourceError(**located(where, "query-id", query_id),
                              message=f"query {shown(query_id)} is not in {self.queries.name} "
                                      f"({counted(len(missing), 'unknown query', 'unknown queries', grouped=True)} "
                                      "in this batch)")
        missing = np.flatnonzero(doc_rows < 0)
        if len(missing):
            first = int(missing[0])
            query_id, _, _, where = rankings[int(np.repeat(np.arange(len(rankings)), counts)[first])]
            raise SourceError(**located(where, "corpus-id", doc_ids[first], query_id),
                              message=f"document {shown(doc_ids[first])} (query {shown(query_id)}) is not in "
                                      f"{self.corpus.name} ({counted(len(missing), 'unknown document', grouped=True)} "
                                      "in this batch)")


def text_bytes(table: pa.Table) -> np.ndarray:
    """The bytes of each row's text values (every string or large_string column), read from the columns' offsets:
    nothing is copied but one integer a row."""
    total = np.zeros(table.num_rows, dtype=np.int64)
    for column in table.columns:
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        kind = np.int64 if pa.types.is_large_string(column.type) else np.int32
        row = 0
        for chunk in column.chunks:
            offsets = chunk.buffers()[1]
            if offsets is not None and len(chunk):
                ends = np.frombuffer(offsets, dtype=kind)[chunk.offset: chunk.offset + len(chunk) + 1]
                total[row: row + len(chunk)] += np.diff(ends)
            row += len(chunk)
    return total


def cuts(sizes: np.ndarray, limit: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of consecutive runs of `sizes` whose sum is at most `limit` (a run of one larger item alone);
    one empty run for no sizes."""
    if not len(sizes):
        yield 0, 0
        return
    ends = np.cumsum(sizes)
    start = 0
    while start < len(sizes):
        before = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + limit, side="right")))
        yield start, stop
        start = stop


def _type_of(table: pa.Table, column: str) -> pa.DataType:
    return table.schema.field(column).type if column in table.column_names else pa.string()


def _given(options: dict[str, Any]) -> dict[str, Any]:
    """`load`'s options without a `revision` left unset (`load` refuses the keyword where it does not take it)."""
    return {name: value for name, value in options.items() if name != "revision" or value is not None}


def _parquet_record(path: str, column: str, value: str, query_id: str | None) -> dict[str, int]:
    """{"record": n} of the first row of a Parquet run naming `value` in `column` (and `query_id`), read a batch
    at a time up to it; {} when none does, or the file stops reading first (the error being reported stands)."""
    seen = 0
    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536, columns=["query-id", "corpus-id"]):
            match = pc.equal(batch.column(column), value)
            if query_id is not None:
                match = pc.and_(match, pc.equal(batch.column("query-id"), query_id))
            hits = np.flatnonzero(match.fill_null(False).to_numpy(zero_copy_only=False))
            if len(hits):
                return {"record": seen + int(hits[0]) + 1}
            seen += batch.num_rows
    except (pa.ArrowException, OSError):
        pass
    return {}


def located(where: str, column: str, value: str, query_id: str | None = None) -> dict[str, Any]:
    """`where` (a run file, or a top_ranked row) with the line or record that first names `value` in `column` (for
    a document, in a line of `query_id`), found by reading the run again: only an error takes this path. Returned
    as a SourceError's `path` and `line` or `record`."""
    if not os.path.isfile(where):
        return {"path": where}
    fmt = run_format(where)
    if fmt == "parquet":
        return {"path": where, **_parquet_record(where, column, value, query_id)}
    field = {"query-id": 0, "corpus-id": 2}[column]
    with open(where, "rb") as stream:
        for number, line in enumerate(stream, start=1):
            if number == 1:
                line = line.removeprefix(UTF8_BOM)  # a BOM, which the run's readers skip
            if fmt == "trec":
                fields = line.split()
                values = [f.decode("utf-8", "replace") for f in fields[:3]] if len(fields) >= 3 else None
                found = values and values[field] == value and (query_id is None or values[0] == query_id)
            else:
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                found = (isinstance(record, dict) and record.get(column) == value
                         and (query_id is None or record.get("query-id") == query_id))
            if found:
                return {"path": where, "line": number}
    return {"path": where}
