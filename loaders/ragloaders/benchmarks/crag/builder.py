"""CRAG (Meta's Comprehensive RAG benchmark): `crag/task_1_and_2` and `crag/task_3`.

Configs; splits `validation` (records with `split` 0) and `test` (`split` 1), except `corpus`:

- `records`: every field of a record, typed, one schema for every release: v4, v5 (adds
  `popularity`) and the older example file (`alternative_answers` as a string such as "[]",
  parsed with `ast.literal_eval` into `alt_ans`). Values stay as the source has them ("nan"
  answers, empty `page_result`, `page_last_modified` empty or with a leading space).
- `queries`: `_id` (interaction_id), `text` (query), then the question's labels and answers.
- `corpus` (one split, `corpus`): one row per distinct page: `_id`, `title` (page_name), `text`
  (html_text.html_to_text of the HTML, in worker processes: core.html_text_workers), `html`
  (page_result), `url`, `last_modified`. A page is its URL plus its HTML; title and last_modified
  come from its first occurrence in the file.
- `search_results` (in place of qrels: CRAG has no relevance labels): `query-id`, `corpus-id`,
  `rank` (1-based position in the record's `search_results`), `page_snippet`; a page listed
  twice in one record gives two rows.
- `top_ranked` (mteb's reranking input): `query-id`, `corpus-ids` (the record's search results in
  their order, as `corpus` ids; a page listed twice keeps both positions).

Page ids: `page_id(url, html)` = the first 20 hex digits of sha256 over url then html, each encoded
unambiguously (null as one 0x00 byte; a string as 0x01, its UTF-8 length in 8 bytes, its UTF-8
bytes), so no two different (url, html) pairs share an encoding and a null page differs from an
empty one. It depends on the page only, never on file order.

One pass: only `records` reads the source. Every other config is generated from the prepared
`records` (the cached records builder with the same data_dir, cache_dir and release; prepared first
if it is not cached yet), read back in bounded record batches with plain reads, so building every
config decompresses the source once. In `build --out` without a cache dir (every config prepared into
a batch spool), `records`' own pass makes the derived configs' rows as it goes (DerivedInPass, told
by `write_ahead`), the same rows batched the same way, and none of them reads `records` back.
`records` also keeps the split of every record in file order (RECORD_SPLITS_FILE beside its Arrow
files), from which `corpus` visits the records in file order.
Streaming reads the source directly for every config.

Sources: task 1&2 is one `.jsonl.bz2`; task 3 a `.tar.bz2` cut into four `.partN` pieces (v4
part1..4, v5 part0..3), read in order as one stream through every `.jsonl` member, never written
out joined or extracted. bzip2 is decompressed in parallel (compressed.open_bz2). A non-streaming
build decompresses once for both splits: the first split's pass keeps the other split's tables
in temporary Arrow files (spool.py), which the second split reads and deletes; into a batch spool
(`build --out`), it writes them straight into the second split's spool (`spool_ahead`).
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import logging
import os
import posixpath
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasets.naming import filenames_for_dataset_split

from ...core.builder import RagBuilder, identity_hash
from ...core.compressed import iter_tar_members, open_bz2, open_joined, order_parts
from ...core.errors import ContentError, MissingSourceError, SourceError, UsageError
from ...core.html_text_workers import texts_in_order
from ...core.preview import preview
from ...core.readers.arrow_batches import RowBatcher, TableBatcher, iter_file_batches
from ...core.readers.jsonl import parse_object_lines
from ...core.readers.lines import iter_lines
from ...core.readers.strict_json import loads_strict
from ...core.readers.threads import FeedThread
from ...core.readers.values import check_required, conform, literal_string_list
from ...core.source_files import download_verified, file_identity
from .catalogue import (
    BUILDER_PARAMETERS,
    HOMEPAGE,
    LICENSE,
    RECORDS_SCHEMA,
    RELEASES,
    SCHEMAS,
    SOURCE_FIELDS,
    SPLITS,
    TASKS,
    CragRelease,
)
from .citations import CITATION
from .spool import Spool, SpoolWriter

logger = logging.getLogger(__name__)

BATCH_BYTES = 16 << 20
BATCH_ROWS = 1_000


def _hash_field(digest: Any, value: str | None) -> None:
    if value is None:
        digest.update(b"\0")
        return
    data = value.encode("utf-8", "surrogatepass")
    digest.update(b"\1" + len(data).to_bytes(8, "big"))
    digest.update(data)


def page_id(url: str | None, html: str | None) -> str:
    """The corpus id of a page: 20 hex digits of sha256 over url and html, each length-prefixed (null marked apart
    from ""), so that the encoding of two different pages never coincides."""
    digest = hashlib.sha256()
    _hash_field(digest, url)
    _hash_field(digest, html)
    return digest.hexdigest()[:20]


def _string_values(array: pa.Array) -> tuple[Any, Any, memoryview]:
    """(null mask or None, value offsets, data) of a string or large_string array, its slice offset applied."""
    kind = np.int64 if pa.types.is_large_string(array.type) else np.int32
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, dtype=kind)[array.offset:array.offset + len(array) + 1]
    nulls = array.is_null().to_numpy(zero_copy_only=False) if array.null_count else None
    return nulls, offsets, memoryview(data) if data is not None else memoryview(b"")


def page_ids_of(pages: pa.StructArray) -> list[str]:
    """`page_id(page_url, page_result)` of each page of a `records` search_results struct array, hashed from the
    Arrow data (UTF-8, as `page_id` encodes the strings) without making Python strings of the HTML."""
    columns = [_string_values(pc.struct_field(pages, name)) for name in ("page_url", "page_result")]
    ids = []
    for index in range(len(pages)):
        digest = hashlib.sha256()
        for nulls, offsets, data in columns:
            if nulls is not None and nulls[index]:
                digest.update(b"\0")
                continue
            start, end = int(offsets[index]), int(offsets[index + 1])
            digest.update(b"\1" + (end - start).to_bytes(8, "big"))
            digest.update(data[start:end])
        ids.append(digest.hexdigest()[:20])
    return ids


def id_of(page: dict) -> str:
    """A page's corpus id: the one read with it from prepared `records` (PAGE_ID), else `page_id` of it."""
    return page[PAGE_ID] if PAGE_ID in page else page_id(page["page_url"], page["page_result"])


REQUIRED_FIELDS = ("interaction_id", "query", "split")
SOURCE_SCHEMA = pa.schema(SOURCE_FIELDS)


def legacy_alt_ans(legacy: str, alt_ans: list | None) -> list[str]:
    """`alt_ans` from the example file's `alternative_answers` (a Python list literal of strings); ContentError
    when both are given or it is no such literal."""
    if alt_ans is not None:
        raise ContentError("both `alt_ans` and `alternative_answers` present")
    value = literal_string_list(legacy)
    if value is None:
        raise ContentError("`alternative_answers` must be a list of strings such as \"['a']\", "
                           f"got {preview(legacy)}")
    return value


def normalize(record: Any) -> dict:
    """A source record as a `records` row; ValueError says what is wrong."""
    row = conform(record, SOURCE_FIELDS)
    check_required(row, REQUIRED_FIELDS)
    legacy = row.pop("alternative_answers")
    if legacy is not None:
        row["alt_ans"] = legacy_alt_ans(legacy, row["alt_ans"])
    if row["split"] not in SPLITS:
        raise ContentError(f"`split` must be 0 (validation) or 1 (test), got {preview(row['split'])}")
    if row["search_results"] is not None and None in row["search_results"]:
        raise ContentError(f"`search_results[{row['search_results'].index(None)}]` must be an object, got null")
    return row


ALT_ANS = RECORDS_SCHEMA.get_field_index("alt_ans")


def record_table(line: bytes) -> pa.Table | None:
    """One source line as a one-row `records` table parsed straight to Arrow (no Python string of its HTML), when
    `normalize(loads_strict(line))` would give that row; None when that path must decide (and say what is wrong)."""
    table = parse_object_lines(line, SOURCE_SCHEMA, REQUIRED_FIELDS)
    if table is None:
        return None
    legacy = table.column("alternative_answers")[0].as_py()
    table = table.drop_columns(["alternative_answers"])
    if legacy is not None:
        try:
            alt_ans = legacy_alt_ans(legacy, table.column(ALT_ANS)[0].as_py())
        except ContentError:
            return None
        table = table.set_column(ALT_ANS, RECORDS_SCHEMA.field(ALT_ANS),
                                 pa.array([alt_ans], RECORDS_SCHEMA.field(ALT_ANS).type))
    if table.column("split")[0].as_py() not in SPLITS or pc.list_flatten(table.column("search_results")).null_count:
        return None
    return table


@dataclass(frozen=True)
class CragSource:
    """The local files of one release, read as a sequence of JSONL streams (one, or the tar's members)."""

    release: CragRelease
    paths: tuple[str, ...]

    @property
    def name(self) -> str:
        if len(self.paths) == 1:
            return self.paths[0]
        return os.path.join(os.path.dirname(self.paths[0]), os.path.basename(self.paths[0]).rsplit(".part", 1)[0]
                            + ".part*")

    def identity(self) -> list:
        return [file_identity(path) for path in self.paths]

    def streams(self) -> Iterator[tuple[str, BinaryIO]]:
        """(name for errors, decompressed JSONL stream), each to be read to its end before the next."""
        if self.release.task == "task_1_and_2":
            with open_bz2(self.paths[0], name=self.name) as stream:
                yield self.name, stream
            return
        found = False
        with open_joined(list(self.paths)) as joined, open_bz2(joined, name=self.name) as tar:
            for member, content in iter_tar_members(tar, name=self.name):
                if not member.endswith(".jsonl") or posixpath.basename(member).startswith("."):
                    logger.warning("%s: skipping tar member %s (not a .jsonl file)", self.name, preview(member))
                    continue
                found = True
                yield f"{self.name}:{member}", content
        if not found:
            raise SourceError(self.name, "the tar holds no .jsonl member")

    def lines(self) -> Iterator[tuple[str, int, bytes]]:
        """(name for errors, line number, line) for every non-blank line, in file order."""
        for name, stream in self.streams():
            yield from ((name, number, line) for number, line in iter_lines(stream, name, skip_bom=True,
                                                                            skip_blank=True))

    def records(self) -> Iterator[tuple[dict, int]]:
        """(`records` row, size of its JSON line) for every record, in file order."""
        for name, number, line in self.lines():
            yield record_row(name, number, line), len(line)

    def record_tables(self) -> Iterator[tuple[pa.Table, int, int]]:
        """(one-row `records` table, size of its JSON line, its split) for every record, in file order: parsed
        straight to Arrow (`record_table`) where it can be, else as `records` gives it; the same rows either way."""
        for name, number, line in self.lines():
            table = record_table(line)
            if table is None:
                table = pa.Table.from_pylist([record_row(name, number, line)], schema=RECORDS_SCHEMA)
            yield table, len(line), table.column("split")[0].as_py()


def record_row(name: str, number: int, line: bytes) -> dict:
    """Record `number` of `name` as a `records` row, or SourceError saying what is wrong with it."""
    try:
        return normalize(loads_strict(line))
    except ValueError as e:
        raise SourceError(name, str(e), record=number) from None


RowsOf = Callable[[dict, int], Iterator[tuple[dict, int]]]
"""(record, size of its JSON line) -> the rows of one config (not `corpus`: `corpus_tables`), each with a size in
bytes."""


def record_rows(row: dict, nbytes: int) -> Iterator[tuple[dict, int]]:
    yield row, nbytes


QUERY_FIELDS = [name for name in SCHEMAS["queries"].names if name not in ("_id", "text")]
"""The `queries` columns taken from a record as they are (after `_id` = interaction_id and `text` = query)."""


def query_rows(row: dict, nbytes: int) -> Iterator[tuple[dict, int]]:
    yield {"_id": row["interaction_id"], "text": row["query"], **{name: row[name] for name in QUERY_FIELDS}}, 256


def search_result_rows(row: dict, nbytes: int) -> Iterator[tuple[dict, int]]:
    for rank, page in enumerate(row["search_results"] or (), start=1):
        yield {"query-id": row["interaction_id"], "corpus-id": id_of(page),
               "rank": rank, "page_snippet": page["page_snippet"]}, 128 + len(page["page_snippet"] or "")


def top_ranked_rows(row: dict, nbytes: int) -> Iterator[tuple[dict, int]]:
    ids = [id_of(page) for page in row["search_results"] or ()]
    yield {"query-id": row["interaction_id"], "corpus-ids": ids}, 64 + 24 * len(ids)


CONFIG_ROWS: dict[str, RowsOf] = {
    "records": record_rows, "queries": query_rows, "search_results": search_result_rows,
    "top_ranked": top_ranked_rows,
}
RECORD_COLUMNS: dict[str, list[str]] = {
    "queries": ["interaction_id", "query", *QUERY_FIELDS],
    "corpus": ["search_results"],
    "search_results": ["interaction_id", "search_results"],
    "top_ranked": ["interaction_id", "search_results"],
}
"""The `records` columns each derived config reads."""
PAGE_FIELDS: dict[str, list[str]] = {
    "corpus": ["page_name", "page_url", "page_result", "page_last_modified"],
    "search_results": ["page_snippet"],
    "top_ranked": [],
}
"""The page fields each config made from `search_results` reads (besides the page's id, PAGE_ID): the HTML only
where it is written out."""
PAGE_ID = "corpus-id"
"""The key of a page's id in the pages read back from prepared `records` (not a field of the source's pages)."""
RECORD_SPLITS_FILE = "crag-record-splits.bin"
"""Written by `records` beside its Arrow files: the `split` of every record in file order, one byte each."""


def record_batches(paths: Sequence[str], columns: list[str]) -> Iterator[pa.Table]:
    """The record batches of prepared `records` Arrow files (or of the Parquet files a build wrote them as), in
    order, as tables of `columns` (for Parquet, a column may be a nested field's path: `search_results.list.…`)."""
    names = list(dict.fromkeys(name.split(".", 1)[0] for name in columns))
    for batch in iter_file_batches(paths, columns):
        yield pa.Table.from_batches([batch]).select(names)


def record_rows_from(paths: Sequence[str], columns: list[str]) -> Iterator[tuple[dict, int]]:
    """(row of `columns`, rough size in bytes) for every record of prepared `records` Arrow files, in order.

    Each record becomes Python objects only when it is reached: a task 3 record holds ~50 pages of HTML (~5 MB),
    and a whole batch of them as Python strings was ~80 MB on top of the batch itself."""
    for table in record_batches(paths, columns):
        size = table.nbytes // max(1, table.num_rows)
        for index in range(table.num_rows):
            yield table.slice(index, 1).to_pylist()[0], size


PAGE_IDS: dict[tuple, list[str]] = {}
"""The page ids (`page_ids_of`) of the prepared `records` files last read whole in this process, by file identity
(`file_identity`): the configs made after `corpus` (search_results, top_ranked) take them instead of reading and
hashing every page's HTML again. Only the files of one folder are kept."""
HTML_FIELDS = {"page_url", "page_result"}
"""The page fields a page id is computed from."""


def _remember_page_ids(key: tuple, ids: list[str]) -> None:
    if any(os.path.dirname(known[0]) != os.path.dirname(key[0]) for known in PAGE_IDS):
        PAGE_IDS.clear()
    PAGE_IDS[key] = ids


def _page_leaves(path: str, fields: Sequence[str]) -> list[str] | None:
    """The Parquet column paths of the `search_results` pages' `fields` (page_snippet alone when there is none: the
    lists' shape is what is wanted), to read the pages without their HTML; None for an Arrow IPC file."""
    if not path.endswith(".parquet"):
        return None
    with pq.ParquetFile(path) as file:
        paths = [file.schema.column(index).path for index in range(len(file.schema))]
    wanted = set(fields) or {"page_snippet"}
    return [leaf for leaf in paths if leaf.startswith("search_results.") and leaf.rsplit(".", 1)[1] in wanted]


def page_batches_from(paths: Sequence[str], columns: list[str], fields: Sequence[str]
                      ) -> Iterator[tuple[pa.Table, pa.ListArray, pa.StructArray, list[str]]]:
    """For each record batch of prepared `records` files, in order: (its table of `columns`, its `search_results`
    lists, their pages (one struct array; only `fields` where the file is Parquet and the ids are
    known), the pages' ids (PAGE_IDS, else computed from the Arrow data with `page_ids_of`))."""
    for path in paths:
        key = tuple(file_identity(path))
        known = PAGE_IDS.get(key) if not HTML_FIELDS & set(fields) else None
        leaves = _page_leaves(path, fields) if known is not None else None
        read = columns if not leaves else [name for name in columns if name != "search_results"] + leaves
        file_ids: list[str] = []
        for table in record_batches([path], read):
            lists = table.column("search_results").combine_chunks()
            pages = lists.flatten()
            if known is None:
                ids = page_ids_of(pages)
            else:
                ids = known[len(file_ids):len(file_ids) + len(pages)]
                if len(ids) != len(pages):
                    raise SourceError(path, "damaged `records` files: more pages than when first read")
            file_ids += ids
            yield table, lists, pages, ids
        if known is None:
            _remember_page_ids(key, file_ids)
        elif len(file_ids) != len(known):
            raise SourceError(path, "damaged `records` files: fewer pages than when first read")


def _record_page_ranges(lists: pa.ListArray) -> Iterator[tuple[int, int] | None]:
    """(start, end) of each record's pages in `lists.flatten()`, None for a null list."""
    offsets = lists.offsets.to_numpy()
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    for index in range(len(lists)):
        yield (int(offsets[index]) - int(offsets[0]), int(offsets[index + 1]) - int(offsets[0])) if valid[index] \
            else None


def page_record_rows_from(paths: Sequence[str], columns: list[str], fields: Sequence[str]
                          ) -> Iterator[tuple[dict, int]]:
    """As `record_rows_from`, but each record's `search_results` pages hold only `fields` and their id (PAGE_ID),
    computed from the Arrow data (or taken from PAGE_IDS, the HTML then not read at all where the file is Parquet):
    no Python string is made of HTML that is not written out."""
    for table, lists, pages, ids in page_batches_from(paths, columns, fields):
        yield from rows_with_pages(table, lists, pages, ids, fields)


def rows_with_pages(table: pa.Table, lists: pa.ListArray, pages: pa.StructArray, ids: list[str],
                    fields: Sequence[str]) -> Iterator[tuple[dict, int]]:
    """(row, rough size in bytes) of each record of `table`, its `search_results` (`lists`, their `pages`, the pages'
    `ids`) as pages of only `fields` and their id (PAGE_ID)."""
    size = table.nbytes // max(1, table.num_rows)
    others = table.drop_columns(["search_results"])
    values = {name: pc.struct_field(pages, name) for name in fields}
    rows = others.to_pylist() if others.num_columns else [{} for _ in range(len(lists))]
    for row, pages_of in zip(rows, _record_page_ranges(lists)):
        if pages_of is None:
            row["search_results"] = None
        else:
            start, end = pages_of
            columns_of = {name: array[start:end].to_pylist() for name, array in values.items()}
            row["search_results"] = [{PAGE_ID: ids[at], **{name: columns_of[name][at - start]
                                                           for name in fields}} for at in range(start, end)]
        yield row, size


def record_pages_from(paths: Sequence[str]) -> Iterator[tuple[pa.StructArray, list[str]]]:
    """(its pages as one struct array, their ids) for every record of prepared `records` files, in order: the pages
    stay Arrow data (no Python string of their HTML)."""
    for _, lists, pages, ids in page_batches_from(paths, ["search_results"], PAGE_FIELDS["corpus"]):
        for pages_of in _record_page_ranges(lists):
            start, end = pages_of or (0, 0)
            yield pages.slice(start, end - start), ids[start:end]


Record = TypeVar("Record")
TEXT_BATCH_BYTES = 4 << 20
"""HTML bytes whose text one worker extracts at a time (core.html_text_workers)."""


def html_bytes(pages: pa.StructArray) -> list[bytes | None]:
    """Each page's HTML (`page_result`) as its UTF-8 bytes, None where null."""
    nulls, offsets, data = _string_values(pc.struct_field(pages, "page_result"))
    return [None if nulls is not None and nulls[index] else bytes(data[offsets[index]:offsets[index + 1]])
            for index in range(len(pages))]


def new_page_batches(records: Iterable[tuple[pa.StructArray, list[str]]]
                     ) -> Iterator[tuple[pa.StructArray, list[str]]]:
    """The pages of `records` ((pages, ids) of each record) whose id was not given before, in order, in struct arrays
    of about TEXT_BATCH_BYTES of HTML (a record's new pages never cut), each with their ids."""
    seen: set[str] = set()
    parts: list[pa.StructArray] = []
    ids: list[str] = []
    size = 0
    for pages, page_ids in records:
        fresh = []
        for index, pid in enumerate(page_ids):
            if pid not in seen:
                seen.add(pid)
                fresh.append(index)
        if fresh:
            part = pages if len(fresh) == len(pages) else pages.take(fresh)
            parts.append(part)
            ids += [page_ids[index] for index in fresh]
            _, offsets, _ = _string_values(pc.struct_field(part, "page_result"))
            size += int(offsets[-1]) - int(offsets[0])
        if size >= TEXT_BATCH_BYTES:
            yield pa.concat_arrays(parts), ids
            parts, ids, size = [], [], 0
    if parts:
        yield pa.concat_arrays(parts), ids


def pages_of(table: pa.Table) -> tuple[pa.ListArray, pa.StructArray, list[str]]:
    """A one-row `records` table's search results: the list array, its pages as one struct array, their ids."""
    lists = table.column("search_results").combine_chunks()
    pages = lists.flatten()
    return lists, pages, page_ids_of(pages)


def described_pages(pages: pa.StructArray, ids: list[str], index: int | None) -> str:
    """A batch of corpus pages in a message: how many, and the first ids; or its page `index`: its id and URL."""
    if index is not None:
        return f"corpus page {ids[index]} (page_url {preview(pages[index]['page_url'].as_py())})"
    shown = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
    return f"{len(ids):,} corpus page(s) of the records: {shown}"


def corpus_tables(batches: Iterable[tuple[pa.StructArray, list[str]]],
                  started: Callable[[Callable[[], None]], None] | None = None) -> Iterator[pa.Table]:
    """`corpus` tables of `new_page_batches`, each page's text extracted from its HTML in worker processes
    (`texts_in_order`; `started` as it says), cut where `_batched` cuts the same rows (BATCH_ROWS rows, BATCH_BYTES of
    HTML and text characters)."""
    batcher = TableBatcher(max_rows=BATCH_ROWS, max_bytes=BATCH_BYTES)
    schema = SCHEMAS["corpus"]
    for (pages, ids), texts in texts_in_order(((batch, html_bytes(batch[0])) for batch in batches),
                                              describe=lambda batch, index: described_pages(*batch, index),
                                              started=started):
        html = pc.struct_field(pages, "page_result")
        table = pa.Table.from_arrays([
            pa.array(ids, schema.field("_id").type), pc.struct_field(pages, "page_name"),
            pa.array(texts, schema.field("text").type), html, pc.struct_field(pages, "page_url"),
            pc.struct_field(pages, "page_last_modified"),
        ], schema=schema)
        sizes = pc.utf8_length(html).fill_null(0).to_pylist()
        for row, text in enumerate(texts):
            if (full := batcher.add(table.slice(row, 1), sizes[row] + len(text or ""))) is not None:
                yield full
    if (full := batcher.flush()) is not None:
        yield full


def rows_in_file_order(split_paths: Sequence[Sequence[str]], order_path: str,
                       read: Callable[[Sequence[str]], Iterator[Record]]) -> Iterator[Record]:
    """Every record of prepared `records` in source file order, each split's as `read` gives them (one item a
    record): the splits' records interleaved as RECORD_SPLITS_FILE says."""
    readers = [read(paths) for paths in split_paths]
    with open(order_path, "rb") as order:
        while block := order.read(1 << 16):
            for split in block:
                row = next(readers[split], None)
                if row is None:
                    raise SourceError(order_path, f"damaged `records` cache: split {split} has fewer rows than this "
                                      "file lists (delete the cache folder to rebuild it)")
                yield row
    for split, reader in enumerate(readers):
        if next(reader, None) is not None:
            raise SourceError(order_path, f"damaged `records` cache: split {split} has more rows than this file "
                              "lists (delete the cache folder to rebuild it)")


RECORDS_AHEAD = 4
"""Records given to DerivedInPass's thread and not yet taken: what the pass holds beyond its own (a task 3 record is
~20 MB of JSON)."""


class DerivedInPass:
    """The derived configs' rows, made during `records`' own pass over the source in a build into batch spools: each
    record's one-row `records` table, given in file order with its split (`add`), becomes the rows of every config of
    `builders` (config -> its builder, prepared into a batch spool) on a thread of its own (FeedThread), batched as
    `_batched` and `corpus_tables` batch the same rows read back from prepared `records`, and written straight into
    those configs' spools (`spool_ahead`). Once committed (`commit`), each config's preparation takes them as they
    are and never reads `records` back; `discard` gives them up."""

    def __init__(self, builders: dict[str, CragBuilder]):
        self.corpus = builders["corpus"].spool_ahead("corpus") if "corpus" in builders else None
        self.splits = {(config, code): (builder.spool_ahead(name),
                                        RowBatcher(SCHEMAS[config], max_rows=BATCH_ROWS, max_bytes=BATCH_BYTES))
                       for config, builder in builders.items() if config != "corpus" for code, name in SPLITS.items()}
        self.feed = FeedThread(self._derive, ahead=RECORDS_AHEAD)

    def add(self, table: pa.Table, split: int) -> None:
        """The next record (its one-row `records` table, its split code); an error of the thread, if it had one."""
        self.feed.put((table, split))

    def _record_pages(self, records: Iterable[tuple[pa.Table, int]]) -> Iterator[tuple[pa.StructArray, list[str]]]:
        """(pages, their ids) of each record, in order, once its rows of the configs with splits are written."""
        for table, split in records:
            lists, pages, ids = pages_of(table)
            for (config, code), (spool, batcher) in self.splits.items():
                if code != split:
                    continue
                columns = table.select(RECORD_COLUMNS[config])
                rows = (rows_with_pages(columns, lists, pages, ids, PAGE_FIELDS[config]) if config in PAGE_FIELDS
                        else ((row, 0) for row in columns.to_pylist()))
                for row, nbytes in rows:
                    for out, size in CONFIG_ROWS[config](row, nbytes):
                        spool.write(batcher.add(out, size))
            yield pages, ids

    def _derive(self, records: Iterator[tuple[pa.Table, int]], on_stop: Callable[[Callable[[], None]], None]
                ) -> None:
        pages = self._record_pages(records)
        if self.corpus is None:
            for _ in pages:
                pass
            return
        tables = corpus_tables(new_page_batches(pages), started=on_stop)
        try:
            for table in tables:
                self.corpus.write(table)
        finally:
            tables.close()  # its workers end (and are waited for) here, not once the error's traceback is let go

    def _spools(self) -> list[Any]:
        return [spool for spool, _ in self.splits.values()] + ([self.corpus] if self.corpus is not None else [])

    def commit(self) -> None:
        """Wait for the rows of every record given, then commit every config's spool (its error, if it had one)."""
        self.feed.finish()
        for spool, batcher in self.splits.values():
            spool.write(batcher.flush())
        for spool in self._spools():
            spool.commit()

    def discard(self) -> None:
        """Stop making rows (the HTML-to-text workers killed) and delete what was spooled."""
        try:
            self.feed.stop()
        finally:
            for spool in self._spools():
                spool.discard()


def _given_to(derived: DerivedInPass | None, tables: Iterator[tuple[pa.Table, int, int]]
              ) -> Iterator[tuple[pa.Table, int, int]]:
    """`tables` (`CragSource.record_tables`), each also given to `derived` (if any) as it passes."""
    for table, nbytes, split in tables:
        if derived is not None:
            derived.add(table, split)
        yield table, nbytes, split


@dataclass
class CragConfig(datasets.BuilderConfig):
    """A CRAG config; `release` ("v5", "v4", "example" for task 1&2) picks a release, else the newest found."""

    release: str | None = None


class CragBuilder(RagBuilder):
    """Builder for `crag/task_1_and_2` and `crag/task_3`."""

    BUILDER_CONFIG_CLASS = CragConfig
    BUILDER_CONFIGS = [CragConfig(name=name, version=RagBuilder.VERSION) for name in SCHEMAS]
    BUILDER_PARAMETERS = BUILDER_PARAMETERS
    DEFAULT_CONFIG_NAME = "records"
    DEFAULT_WRITER_BATCH_SIZE = 16
    """Rows per Arrow record batch: records reach several MB of HTML (datasets' default of 1000 peaks at 1.3 GB)."""

    def __init__(self, path: str, config_name: str, **kwargs: Any):
        self.task = path.split("/", 1)[-1]
        if path not in BUILDERS:
            raise UsageError(f"unknown CRAG path {preview(path)}; known: {', '.join(BUILDERS)}")
        names = [r.name for r in RELEASES if r.task == self.task]
        if kwargs.get("release") is not None and kwargs["release"] not in names:
            raise UsageError(f"{path} has no release {preview(kwargs['release'])}; its releases are {', '.join(names)}")
        self._spool_dir: str | None = None
        self.derived_ahead: dict[str, CragBuilder] = {}
        """The derived configs whose rows `records`' pass writes into their batch spools (`write_ahead`)."""
        self._cache_dir_arg = kwargs.get("cache_dir")
        if config_name in ("queries", "search_results", "top_ranked"):
            kwargs.setdefault("writer_batch_size", 1_000)
        super().__init__(path, config_name, **kwargs)

    def releases(self, release: str | None = None) -> list[CragRelease]:
        """This task's releases, newest first; only `release` (default: the config's) when one is chosen."""
        chosen = release if release is not None else getattr(getattr(self, "config", None), "release", None)
        return [r for r in RELEASES if r.task == self.task and chosen in (None, r.name)]

    def source_identity(self, data_dir: str | None, config: CragConfig) -> Any:
        if config.name != "records":
            # Derived configs are read from the prepared `records`: their identity is that cache's.
            parameters = {"release": config.release} if config.release is not None else {}
            records = dataclasses.replace(config, name="records")
            return ["records", identity_hash(self.path, "records", parameters, self.source_identity(data_dir, records))]
        if data_dir is None:
            release = self.releases(config.release)[0]
            return [release.name, [(d.url, d.size) for d in release.downloads()]]
        return self.source_in(data_dir, config.release).identity()

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=f"CRAG {self.task}: {self.config.name}",
            features=datasets.Features.from_arrow_schema(SCHEMAS[self.config.name]),
            citation=CITATION,
            homepage=HOMEPAGE,
            license=LICENSE,
        )

    def source_in(self, data_dir: str, chosen: str | None = None) -> CragSource:
        """The newest release (or the `chosen` one, by default the config's) whose files are in `data_dir`; or,
        when `data_dir` is one of the files itself (the `.jsonl.bz2`, the joined tar, a part), its release."""
        if os.path.isfile(data_dir):
            folder, name = os.path.split(data_dir)
            owner = next((r for r in self.releases(chosen) if name in r.files or name == r.joined), None)
            if owner is None:
                known = ", ".join(name for r in self.releases(chosen) for name in (*r.files, r.joined) if name)
                raise MissingSourceError(f"{data_dir}: not a file of CRAG {self.task}; expected one of {known}")
            return self.source_in(folder, owner.name)
        for release in self.releases(chosen):
            paths = [os.path.join(data_dir, name) for name in release.files]
            if release.joined is None:
                if os.path.isfile(paths[0]):
                    return CragSource(release, (paths[0],))
                continue
            parts = glob.glob(os.path.join(glob.escape(data_dir), glob.escape(release.joined) + ".part*"))
            if parts:
                ordered = order_parts(parts)
                comes_as = f"{release.name} comes as {', '.join(release.files)}"
                for path in paths:
                    if path not in ordered:
                        raise SourceError(path, f"missing part: {comes_as}")
                if ordered != paths:
                    raise SourceError(ordered[-1], f"unexpected part: {comes_as}")
                return CragSource(release, tuple(paths))
            joined = os.path.join(data_dir, release.joined)
            if os.path.isfile(joined):
                return CragSource(release, (joined,))
        expected = "; ".join(
            " + ".join(r.files) + (f" (or {r.joined})" if r.joined else "") for r in self.releases(chosen)
        )
        raise MissingSourceError(f"{data_dir}: no CRAG {self.task} files; expected {expected}")

    def source(self, dl_manager: Any) -> CragSource:
        if self.config.data_dir:
            return self.source_in(self.config.data_dir)
        # Each part is cached on its own once complete, so an interrupted task-3 download keeps the finished
        # parts. Within one file there is no resume: datasets 5.2 accepts DownloadConfig(resume_download=True)
        # but ignores it (get_from_cache reopens the `.incomplete` file with "w+b").
        release = self.releases()[0]
        manager = self.download_manager(dl_manager)
        paths = tuple(download_verified(manager, download) for download in release.downloads())
        return CragSource(release, paths)

    def source_files_read(self) -> list[str]:
        return list(self.source(None).paths)

    def source_release(self) -> str | None:
        return self.source(None).release.name

    def _download_and_prepare(self, dl_manager, verification_mode, **kwargs):
        # Only a full preparation generates both splits one after the other in this process: only
        # then may the first split's pass keep the second split's rows for it.
        output = self.prepared_dir if os.path.isdir(str(self.prepared_dir)) else None
        self._spool_dir = tempfile.mkdtemp(prefix="ragloaders-crag-spool-", dir=output)
        try:
            super()._download_and_prepare(dl_manager, verification_mode, **kwargs)
        finally:
            shutil.rmtree(self._spool_dir, ignore_errors=True)
            self._spool_dir = None

    def write_ahead(self, later: dict[str, datasets.DatasetBuilder]) -> None:
        """`records` makes the rows of every derived config of `later` prepared into a batch spool in its own pass
        (DerivedInPass)."""
        if self.config.name == "records" and self.batch_spool is not None:
            self.derived_ahead = {config: builder for config, builder in later.items()
                                  if config in RECORD_COLUMNS and getattr(builder, "batch_spool", None) is not None}

    def records_builder(self) -> CragBuilder:
        """The `records` builder of this path, data_dir, cache_dir and release, prepared (or found in the cache)."""
        release = {"release": self.config.release} if self.config.release is not None else {}
        records = CragBuilder(self.path, "records", data_dir=self.config.data_dir, cache_dir=self._cache_dir_arg,
                              **release)
        if records.hash != self.source_identity(self.config.data_dir, self.config)[1]:
            raise RuntimeError("the records cache identity differs from the one this config was hashed with")
        records.download_and_prepare()
        return records

    def prepared_inputs(self) -> list[str]:
        return [] if self.config.name == "records" else ["records"]

    def split_names(self) -> list[str]:
        return ["corpus"] if self.config.name == "corpus" else list(SPLITS.values())

    def _split_generators(self, dl_manager):
        config = self.config.name
        if config != "records" and self._spool_dir is not None:
            return self._derived_split_generators()
        source = self.source(dl_manager)
        if config == "corpus":
            return [datasets.SplitGenerator(name="corpus", gen_kwargs={
                "generate": "source", "source": source})]
        if self._spool_dir is None:  # streaming, or one split alone: each split reads the source
            return [datasets.SplitGenerator(name=name, gen_kwargs={
                "generate": "source", "source": source, "split": code})
                for code, name in SPLITS.items()]
        order = os.path.join(self.prepared_dir, RECORD_SPLITS_FILE) if config == "records" else None
        if self.batch_spool is not None:  # the test split's rows go straight into its batch spool (spool_ahead)
            return [
                datasets.SplitGenerator(name="validation", gen_kwargs={
                    "generate": "source", "source": source, "split": 0, "spool_ahead": "test", "order_out": order}),
                datasets.SplitGenerator(name="test", gen_kwargs={"generate": "source", "source": source, "split": 1}),
            ]
        spool = Spool(os.path.join(self._spool_dir, f"{config}-test.arrow"))
        return [
            datasets.SplitGenerator(name="validation", gen_kwargs={
                "generate": "source", "source": source, "split": 0, "spool_out": spool,
                "order_out": order}),
            datasets.SplitGenerator(name="test", gen_kwargs={
                "generate": "spool", "spool": spool, "source": source, "split": 1}),
        ]

    def _derived_split_generators(self) -> list[datasets.SplitGenerator]:
        records = self.records_builder()
        written = self.written_rows.get("records")
        files = {
            split: written.get(split, []) if written is not None else [path for path in filenames_for_dataset_split(
                records.prepared_dir, records.dataset_name, split, "arrow", records.info.splits[split].shard_lengths)
                if records.info.splits[split].num_examples]
            for split in SPLITS.values()
        }
        if self.config.name == "corpus":
            order = os.path.join(records.prepared_dir, RECORD_SPLITS_FILE)
            split_paths = tuple(tuple(files[name]) for _, name in sorted(SPLITS.items()))
            return [datasets.SplitGenerator(name="corpus", gen_kwargs={
                "generate": "records_in_file_order", "split_paths": split_paths,
                "order": order})]
        return [datasets.SplitGenerator(name=split, gen_kwargs={
            "generate": "records", "paths": paths}) for split, paths in files.items()]

    def _generate_tables(self, generate: str, **kwargs: Any) -> Iterator[tuple[int, pa.Table]]:
        """The split's tables, from the generator `_split_generators` chose for it (one of the four below)."""
        generators = {"source": self._tables_from_source, "spool": self._tables_from_spool,
                      "records": self._tables_from_records,
                      "records_in_file_order": self._tables_from_records_in_file_order}
        yield from generators[generate](**kwargs)

    def _read_records(self, paths: Sequence[str]) -> Iterator[tuple[dict, int]]:
        """The rows this derived config reads from prepared `records` Arrow files."""
        config = self.config.name
        if config in PAGE_FIELDS:
            return page_record_rows_from(paths, RECORD_COLUMNS[config], PAGE_FIELDS[config])
        return record_rows_from(paths, RECORD_COLUMNS[config])

    def _tables_from_records(self, paths: Sequence[str]) -> Iterator[tuple[int, pa.Table]]:
        """A derived config's split, from the prepared `records` Arrow files of that split."""
        yield from self._tables_of(self._read_records(paths))

    def _tables_from_records_in_file_order(self, split_paths: Sequence[Sequence[str]], order: str
                                           ) -> Iterator[tuple[int, pa.Table]]:
        """`corpus`, from the prepared `records` of every split, visited in source file order (`corpus_tables`)."""
        yield from enumerate(corpus_tables(new_page_batches(rows_in_file_order(split_paths, order,
                                                                                record_pages_from))))

    def _tables_from_spool(self, spool: Spool, source: CragSource, split: int) -> Iterator[tuple[int, pa.Table]]:
        """The second split, as the first split's pass kept it; from the source if that pass did not complete."""
        if spool.exists():
            yield from enumerate(spool.replay())
        else:
            yield from self._tables_from_source(source, split)

    def _tables_from_source(self, source: CragSource, split: int | None = None, spool_out: Spool | None = None,
                            order_out: str | None = None, spool_ahead: str | None = None
                            ) -> Iterator[tuple[int, pa.Table]]:
        """The rows of `split` (None: every record) read from the source files. The other split's rows are kept in
        `spool_out` for `_tables_from_spool`, or written into the batch spool of the split `spool_ahead` names
        (`spool_ahead`); `order_out`: the split of every record is written there, in file order
        (RECORD_SPLITS_FILE)."""
        if self.config.name == "corpus":  # (streaming) its text in worker processes, as from prepared `records`
            yield from enumerate(corpus_tables(new_page_batches(self._record_pages_from_source(source))))
            return
        rows_of, schema = CONFIG_ROWS[self.config.name], SCHEMAS[self.config.name]
        derived: DerivedInPass | None = None
        other: Any = None  # (SpoolWriter or SpoolAhead)
        try:  # from the first thing made: an interruption between two steps leaves no thread and no spool
            derived = DerivedInPass(self.derived_ahead) if self.derived_ahead and spool_ahead is not None else None
            if self.config.name == "records":  # parsed straight to Arrow
                kept, other_batches = (TableBatcher(max_rows=BATCH_ROWS, max_bytes=BATCH_BYTES) for _ in range(2))
                records_read = ((of, [(table, nbytes)])
                                for table, nbytes, of in _given_to(derived, source.record_tables()))
            else:
                kept, other_batches = (RowBatcher(schema, max_rows=BATCH_ROWS, max_bytes=BATCH_BYTES)
                                       for _ in range(2))
                records_read = ((row["split"], rows_of(row, nbytes)) for row, nbytes in source.records())
            other = (self.spool_ahead(spool_ahead) if spool_ahead is not None
                     else SpoolWriter(spool_out, schema) if spool_out is not None else None)
            splits = bytearray() if order_out is not None else None
            index = records = 0
            for record_split, out_rows in records_read:
                records += 1
                if splits is not None:
                    splits.append(record_split)
                keep = split is None or record_split == split
                if not keep and other is None:
                    continue
                for out_row, size in out_rows:
                    if keep:
                        if (table := kept.add(out_row, size)) is not None:
                            yield index, table
                            index += 1
                    else:
                        other.write(other_batches.add(out_row, size))
            if records == 0:
                raise SourceError(source.name, "no records")
            if (table := kept.flush()) is not None:
                yield index, table
            if other is not None:
                other.write(other_batches.flush())
                other.commit()
                other = None
            if derived is not None:
                derived.commit()
                derived = None
            if splits is not None:
                with open(order_out, "wb") as f:
                    f.write(splits)
        finally:
            if other is not None:
                other.discard()
            if derived is not None:
                derived.discard()

    @staticmethod
    def _record_pages_from_source(source: CragSource) -> Iterator[tuple[pa.StructArray, list[str]]]:
        """(pages, their ids) of every record of the source, in file order."""
        records = 0
        for table, _, _ in source.record_tables():
            records += 1
            yield pages_of(table)[1:]
        if records == 0:
            raise SourceError(source.name, "no records")

    def _tables_of(self, records: Iterable[tuple[dict, int]]) -> Iterator[tuple[int, pa.Table]]:
        """This config's tables from `records` rows (derived configs), batched as from the source."""
        rows_of = CONFIG_ROWS[self.config.name]
        yield from self._batched(out for row, nbytes in records for out in rows_of(row, nbytes))

    def _batched(self, rows: Iterable[tuple[dict, int]]) -> Iterator[tuple[int, pa.Table]]:
        """(index, table) of this config's rows, batched as from the source."""
        batcher = RowBatcher(SCHEMAS[self.config.name], max_rows=BATCH_ROWS, max_bytes=BATCH_BYTES)
        index = 0
        for row, size in rows:
            if (table := batcher.add(row, size)) is not None:
                yield index, table
                index += 1
        if (table := batcher.flush()) is not None:
            yield index, table


BUILDERS = {f"crag/{task}": CragBuilder for task in TASKS}
