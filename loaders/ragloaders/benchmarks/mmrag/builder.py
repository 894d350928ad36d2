"""mmRAG: queries with graded chunk relevance over text, tables and a knowledge graph, and its chunk corpus.

Configs: `records` (the full query records), `queries`, `qrels` (splits train, dev, test) and `corpus`
(split corpus). Every file is a top-level JSON array, read as a stream: processed_documents.json is
5.3 GB. Errors name the file and the record's 0-based index in its array.

`answers` is `answer` parsed into a list of strings: "" gives [], a Python list literal of strings
("['a', \"b's\"]", read as Python reads it, never with `eval`: `readers.values.literal_string_list`) gives its
items, and any other string gives [that string]. A string that looks like a list but is not a valid literal of a
list of strings (or, in a form other than plain quoted items, is longer than 64 KiB) is kept whole as [answer]
(the documented fallback) and counted in a warning.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any, BinaryIO, ClassVar

import datasets
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ...core import json_array_cuts, json_cut_tables
from ...core.builder import RagBuilder
from ...core.errors import DownloadError, SourceError, is_no_space
from ...core.hub_repository import HubError, hub_offline, probe_hub
from ...core.plural import counted
from ...core.preview import preview as repr_preview
from ...core.readers.arrow_batches import tables_from_rows
from ...core.readers.json_array import array_elements_before, iter_json_array, iter_json_array_batches
from ...core.readers.jsonl import Shard
from ...core.readers.lines import UTF8_BOM
from ...core.readers.qrels import QRELS_SCHEMA
from ...core.readers.values import fits_int32, literal_string_list, preview
from ...core.source_files import SourceFiles, download_cause
from .catalogue import (
    ALL_FILES,
    BATCH_MEMORY,
    CHUNK_ID_PATTERN,
    CHUNK_ID_PREFIXES,
    CORPUS_BATCH_BYTES,
    CORPUS_BOUNDARY,
    CORPUS_FIELDS,
    CORPUS_FILE,
    CORPUS_RANGE_BYTES,
    CORPUS_SEPARATOR,
    DATASET_SCORE_KEYS,
    GRADES,
    HUB_REPO_ID,
    HUB_REVISION,
    PATH,
    PREFIX_KEY_LENGTH,
    QUERY_FIELDS,
    QUERY_FILES,
    SPLITS,
)
from .facts import card_facts

logger = logging.getLogger(__name__)

STRING = datasets.Value("string")
GRADE = datasets.Value("int32")
FEATURES = {
    "records": datasets.Features({
        "id": STRING,
        "query": STRING,
        "answer": STRING,
        "answers": datasets.List(STRING),
        "relevant_chunks": datasets.List({"chunk_id": STRING, "score": GRADE}),
        "ori_context": datasets.List(STRING),
        "dataset_score": {key: datasets.Value("int32") for key in DATASET_SCORE_KEYS},
    }),
    "queries": datasets.Features({"_id": STRING, "text": STRING}),
    "qrels": datasets.Features.from_arrow_schema(QRELS_SCHEMA),
    "corpus": datasets.Features({"_id": STRING, "title": STRING, "text": STRING, "source": STRING, "doc_id": STRING}),
    "routing": datasets.Features({"query-id": STRING, "dataset": STRING, "score": GRADE}),
}
"""Each config's features (here, not in the catalogue: `datasets` is imported with the builder only)."""


CORPUS_SCHEMA = FEATURES["corpus"].arrow_schema
"""Computed once: datasets builds it anew on every access."""
PIECE_PARSING = pa_json.ParseOptions(
    explicit_schema=pa.schema([(field, pa.string()) for field in CORPUS_FIELDS]),
    unexpected_field_behavior="error",
    newlines_in_values=True,  # pretty-printed records span lines
)


class InvalidRecord(ValueError):
    """What is wrong with one record; raised again as SourceError with the file and the record index."""


def parse_answers(answer: str) -> tuple[list[str], bool]:
    """(`answer` as a list of strings, whether it fell back to [answer] because it looks like a list but is not one)."""
    text = answer.strip()
    if not text:
        return [], False
    if not (text.startswith("[") and text.endswith("]")):
        return [answer], False
    value = literal_string_list(text)
    return ([answer], True) if value is None else (value, False)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_query_record(record: Any) -> None:
    """Raise InvalidRecord saying what is wrong with one query record, if anything."""
    if not isinstance(record, dict):
        raise InvalidRecord(f"expected a JSON object, got {preview(record)}")
    for name, kind in QUERY_FIELDS.items():
        if name not in record:
            raise InvalidRecord(f"missing field `{name}`")
        if not isinstance(record[name], kind):
            raise InvalidRecord(f"`{name}` must be a {kind.__name__}, got {preview(record[name])}")
    unknown = [key for key in record if key not in QUERY_FIELDS]
    if unknown:
        raise InvalidRecord(f"unexpected field {repr_preview(unknown[0])}; expected only {list(QUERY_FIELDS)}")
    for chunk_id, grade in record["relevant_chunks"].items():
        if not _int(grade) or grade not in GRADES:
            where = f"relevant_chunks[{repr_preview(chunk_id)}]"
            raise InvalidRecord(f"`{where}` must be a grade in {list(GRADES)}, got {preview(grade)}")
    for position, doc in enumerate(record["ori_context"]):
        if not isinstance(doc, str):
            raise InvalidRecord(f"`ori_context[{position}]` must be a string, got {preview(doc)}")
    scores = record["dataset_score"]
    if sorted(scores) != sorted(DATASET_SCORE_KEYS):
        raise InvalidRecord(f"`dataset_score` must have the keys {list(DATASET_SCORE_KEYS)}, got {list(scores)}")
    for key, score in scores.items():
        if not _int(score) or not fits_int32(score):
            raise InvalidRecord(f"`dataset_score.{key}` must be an int32, got {preview(score)}")


def query_rows(record: dict) -> Iterator[tuple[dict, int]]:
    yield {"_id": record["id"], "text": record["query"]}, len(record["query"]) + 16


def qrel_rows(record: dict) -> Iterator[tuple[dict, int]]:
    for chunk_id, grade in record["relevant_chunks"].items():
        yield {"query-id": record["id"], "corpus-id": chunk_id, "score": grade}, 48


def full_record_rows(record: dict, answers: list[str]) -> Iterator[tuple[dict, int]]:
    row = {
        "id": record["id"],
        "query": record["query"],
        "answer": record["answer"],
        "answers": answers,
        "relevant_chunks": [{"chunk_id": c, "score": g} for c, g in record["relevant_chunks"].items()],
        "ori_context": record["ori_context"],
        "dataset_score": {key: record["dataset_score"][key] for key in DATASET_SCORE_KEYS},
    }
    yield row, 2 * len(record["query"]) + 32 * (len(row["relevant_chunks"]) + len(row["ori_context"]))


def routing_rows(record: dict) -> Iterator[tuple[dict, int]]:
    for dataset, grade in record["dataset_score"].items():
        yield {"query-id": record["id"], "dataset": dataset, "score": grade}, 48


QUERY_FILE_ROWS = {"queries": query_rows, "qrels": qrel_rows, "routing": routing_rows}
"""Config -> the rows one checked query record gives, each with a rough size in bytes (`records`: full_record_rows,
which also takes the parsed answers)."""


def refuse_what_orjson_refuses(shard: Shard) -> None:
    """Raise SourceError (file, record) if orjson refuses the file that the streaming parser accepted: an unpaired
    surrogate escape (`"\\ud800"`), which ijson's C backend turns into "?". One rule for every reader."""
    with shard.open() as stream:
        document = stream.read()
    body = document.removeprefix(UTF8_BOM)
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError as e:
        with shard.open() as stream:  # what the streaming parser refuses too: its message (truncation, depth, ...)
            for _ in iter_json_array_batches(stream, shard.name):
                pass
        offset, problem = json_array_cuts.orjson_problem(body, e)
        offset += len(document) - len(body)
        with shard.open() as stream:
            index = array_elements_before(stream, shard.name, offset)
        raise SourceError(shard.name, problem, record=index) from None


EMPTY_ARRAY = "no records: the array is empty"


def read_query_file(shard: Shard, config: str) -> Iterator[pa.Table]:
    schema = FEATURES[config].arrow_schema
    fallbacks = 0
    refuse_what_orjson_refuses(shard)

    def rows() -> Iterator[tuple[dict, int]]:
        nonlocal fallbacks
        index = -1
        with shard.open() as stream:
            for index, record in iter_json_array(stream, shard.name):
                try:
                    check_query_record(record)
                except InvalidRecord as e:
                    raise SourceError(shard.name, str(e), record=index) from None
                if config == "records":
                    answers, fell_back = parse_answers(record["answer"])
                    fallbacks += fell_back
                    yield from full_record_rows(record, answers)
                else:
                    yield from QUERY_FILE_ROWS[config](record)
        if index < 0:
            raise SourceError(shard.name, EMPTY_ARRAY)

    yield from tables_from_rows(rows(), schema, max_rows=2_000)
    if fallbacks:
        logger.warning("%s: %s like a list but %s not a list literal; kept whole", shard.name,
                       counted(fallbacks, "answer looks", "answers look"), "is" if fallbacks == 1 else "are")


def split_chunk_ids(ids: pa.Array) -> tuple[pa.Array, pa.Array, int | None]:
    """(doc ids, sources, index of the first id that fits no source or None) of an array of chunk ids."""
    well_formed = pc.match_substring_regex(ids, CHUNK_ID_PATTERN, memory_pool=BATCH_MEMORY)
    first_bad = None if pc.all(well_formed).as_py() else pc.index(well_formed, False).as_py()
    doc_ids = pc.list_element(pc.split_pattern(ids, "_", max_splits=1, reverse=True, memory_pool=BATCH_MEMORY), 0)
    keys = pc.utf8_slice_codeunits(ids, 0, PREFIX_KEY_LENGTH, memory_pool=BATCH_MEMORY)
    known = pa.array([prefix[:PREFIX_KEY_LENGTH] for prefix, _ in CHUNK_ID_PREFIXES])
    names = pa.array([source for _, source in CHUNK_ID_PREFIXES])
    sources = pc.take(names, pc.index_in(keys, value_set=known, memory_pool=BATCH_MEMORY), memory_pool=BATCH_MEMORY)
    return doc_ids, sources, first_bad


def string_arrays(ids: list, texts: list, first_index: int, name: str) -> tuple[pa.Array, pa.Array]:
    """Parallel lists of chunk ids and texts, read from records first_index, first_index+1, ..., as Arrow strings;
    SourceError naming the record when a value is not a string."""
    columns = {}
    for field, values in (("id", ids), ("text", texts)):
        try:
            columns[field] = pa.array(values, pa.string(), memory_pool=BATCH_MEMORY)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            columns[field] = None
        if columns[field] is None or columns[field].null_count:
            position = next(i for i, value in enumerate(values) if not isinstance(value, str))
            raise SourceError(
                name, f"`{field}` must be a string, got {preview(values[position])}", record=first_index + position
            ) from None
    return columns["id"], columns["text"]


def corpus_table(chunk_ids: pa.Array, texts: pa.Array, first_index: int, name: str) -> pa.Table:
    """The corpus table of chunk ids and texts read from records first_index, first_index+1, ..."""
    doc_ids, sources, bad = split_chunk_ids(chunk_ids)
    if bad is not None:
        expected = ", ".join(f"{prefix}…" for prefix, _ in CHUNK_ID_PREFIXES)
        raise SourceError(
            name,
            f"chunk id {repr_preview(chunk_ids[bad].as_py())} fits no source: expected <prefix><doc>_<chunk number> "
            f"with a prefix among {expected}",
            record=first_index + bad,
        )
    titles = pa.array([""] * len(chunk_ids), pa.string())
    return pa.Table.from_arrays([chunk_ids, titles, texts, sources, doc_ids], schema=CORPUS_SCHEMA)


def _bad_corpus_record(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"expected a JSON object with `id` and `text`, got {preview(record)}"
    for name in CORPUS_FIELDS:
        if name not in record:
            return f"missing field `{name}`"
    unknown = [key for key in record if key not in CORPUS_FIELDS]
    return f"unexpected field {repr_preview(unknown[0])}; expected only {list(CORPUS_FIELDS)}" if unknown else None


def read_corpus(shard: Shard) -> Iterator[pa.Table]:
    """processed_documents.json (`[{"id": ..., "text": ...}, ...]`) as corpus tables, streamed (the exact path)."""
    with shard.open() as stream:
        yield from read_corpus_stream(stream, shard.name)


def read_corpus_stream(stream: BinaryIO, name: str, first_index: int = 0) -> Iterator[pa.Table]:
    """Corpus tables of about CORPUS_BATCH_BYTES from a stream of a corpus array, parsed by ijson."""
    for first, records in iter_json_array_batches(stream, name, buf_size=CORPUS_BATCH_BYTES):
        first += first_index
        columns = ids_and_texts(records)
        if columns is None:
            position, problem = next((i, p) for i, r in enumerate(records) if (p := _bad_corpus_record(r)))
            raise SourceError(name, problem, record=first + position)
        yield corpus_table(*string_arrays(*columns, first, name), first, name)


def ids_and_texts(records: list) -> tuple[list, list] | None:
    """The `id`s and `text`s of corpus records, or None when one is not exactly {id, text} (checked a batch at a
    time with comprehensions, not one Python statement per record)."""
    try:
        if sum(map(len, records)) != 2 * len(records):
            return None
        return [record["id"] for record in records], [record["text"] for record in records]
    except (KeyError, TypeError):
        return None


def corpus_ranges(shard: Shard) -> list[tuple[int, int]] | None:
    """Byte ranges of the corpus array, cut at record boundaries, for the parallel path; None for the exact one."""
    if not shard.files.is_seekable_file(shard.relpath):
        return None
    return json_cut_tables.array_ranges(shard.files.local_path(shard.relpath), CORPUS_BOUNDARY, CORPUS_RANGE_BYTES)


def _piece_table(piece: bytes | memoryview, name: str) -> pa.Table | None:
    """The corpus table of one piece, parsed by pyarrow; NotCut when anything is off (see
    json_cut_tables.parse_piece; also a missing or null field, or a chunk id of no source): the caller then finds
    the exact error."""
    parsed = json_cut_tables.parse_piece(piece, CORPUS_SEPARATOR, PIECE_PARSING, BATCH_MEMORY)
    if parsed is None:
        return None
    ids, texts = (parsed.column(field).combine_chunks(memory_pool=BATCH_MEMORY) for field in CORPUS_FIELDS)
    if ids.null_count or texts.null_count:
        raise json_array_cuts.NotCut("a record that is not {id, text}")
    try:
        return corpus_table(ids, texts, 0, name)
    except SourceError as e:
        raise json_array_cuts.NotCut(str(e)) from None


def _raise_exact_error(shard: Shard, path: str, start: int, piece: bytes | memoryview) -> None:
    """Raise the SourceError (file, record index in the whole array) for a piece the fast path refused: the
    streaming path reads the array up to the piece's end; what it accepts but orjson refuses is located by byte
    offset."""
    document = b"[" + piece + b"]"
    try:
        orjson.loads(document)
        refused = None
    except orjson.JSONDecodeError as e:
        refused = e
    for _ in read_corpus_stream(json_array_cuts.joined((path, 0, start + len(piece)), b"]"), shard.name):
        pass
    if refused is not None:
        offset, problem = json_array_cuts.orjson_problem(document, refused)
        with open(path, "rb") as stream:
            index = array_elements_before(stream, shard.name, start + max(0, offset - 1))
        raise SourceError(shard.name, problem, record=index) from None


def read_corpus_ranges(shard: Shard, ranges: list[tuple[int, int]]) -> Iterator[pa.Table]:
    """Corpus tables of byte ranges of the array, parsed piece by piece on several threads
    (core/json_cut_tables.py); any piece the fast path refuses ends in `_raise_exact_error`."""
    path = shard.files.local_path(shard.relpath)
    return json_cut_tables.read_ranges(
        path, ranges, CORPUS_BOUNDARY,
        parse=lambda piece: _piece_table(piece, shard.name),
        raise_exact_error=lambda offset, piece: _raise_exact_error(shard, path, offset, piece),
        read_stream=lambda stream: read_corpus_stream(stream, shard.name),
    )


def download_from_hub(filename: str, cache_dir: str | None) -> str:
    """One file of the hub dataset, downloaded (or found in the cache) with huggingface_hub; its local path."""
    from huggingface_hub import hf_hub_download, hf_hub_url

    url = hf_hub_url(HUB_REPO_ID, filename, repo_type="dataset", revision=HUB_REVISION)
    if not hub_offline():
        try:  # an unreachable hub: one line within seconds, before hf_hub_download's retries
            probe_hub(HUB_REPO_ID)
        except HubError as e:
            raise DownloadError(url, f"the hub cannot be reached: {e.unreachable}; with HF_HUB_OFFLINE=1 the copy "
                                "in the hub cache is used", mirror_env="HF_ENDPOINT") from None
    try:
        return hf_hub_download(
            repo_id=HUB_REPO_ID, repo_type="dataset", filename=filename, revision=HUB_REVISION, cache_dir=cache_dir
        )
    except Exception as e:  # no network, DNS, refused, HTTP errors, each its own huggingface_hub / httpx type
        if is_no_space(e):
            raise
        raise DownloadError(url, download_cause(e), mirror_env="HF_ENDPOINT") from e


class MmragBuilder(RagBuilder):
    BUILDER_CONFIGS: ClassVar[list[datasets.BuilderConfig]] = [
        datasets.BuilderConfig(name=name, version=RagBuilder.VERSION) for name in FEATURES
    ]
    DEFAULT_CONFIG_NAME = "records"

    def source_identity(self, data_dir: str | None, config: datasets.BuilderConfig) -> Any:
        if data_dir is None:
            return [HUB_REPO_ID, HUB_REVISION]
        return SourceFiles(data_dir).identity(list(ALL_FILES))

    def _info(self) -> datasets.DatasetInfo:
        facts = card_facts(PATH)
        return datasets.DatasetInfo(
            description=f"{facts.pretty_name}: {self.config.name}",
            features=FEATURES[self.config.name],
            citation="\n\n".join(facts.citations),
            homepage=facts.homepage,
            license=facts.license,
        )

    def source_shard(self, filename: str) -> Shard:
        """The file from `data_dir`, or else downloaded from the hub dataset."""
        if self.config.data_dir:
            files = SourceFiles(self.config.data_dir)
            files.require(filename)
            return Shard(files, filename)
        path = download_from_hub(filename, os.path.join(self.downloads_dir, "huggingface"))
        return Shard(SourceFiles(os.path.dirname(path)), os.path.basename(path))

    def source_files_read(self) -> list[str]:
        names = [CORPUS_FILE] if self.config.name == "corpus" else [QUERY_FILES[split] for split in SPLITS]
        return [self.source_shard(name).files.local_path(name) for name in names]

    def split_names(self) -> list[str]:
        return ["corpus"] if self.config.name == "corpus" else list(SPLITS)

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        if self.config.name == "corpus":
            shard = self.source_shard(CORPUS_FILE)
            return [datasets.SplitGenerator(name="corpus", gen_kwargs={"shard": shard, "ranges": corpus_ranges(shard)})]
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"shard": self.source_shard(QUERY_FILES[split])})
            for split in SPLITS
        ]

    def _generate_tables(
        self, shard: Shard, ranges: list[tuple[int, int]] | None = None
    ) -> Iterator[tuple[tuple[int, int], pa.Table]]:
        if ranges is not None:
            tables = read_corpus_ranges(shard, ranges)
        elif self.config.name == "corpus":
            tables = read_corpus(shard)
        else:
            tables = read_query_file(shard, self.config.name)
        rows = 0
        for index, table in enumerate(tables):
            rows += table.num_rows
            yield (0, index), table
        if not rows and self.config.name == "corpus":  # (a range of a non-empty array holds a record at least)
            raise SourceError(shard.name, EMPTY_ARRAY)


BUILDERS = {PATH: MmragBuilder}

