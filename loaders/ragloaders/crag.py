"""CRAG (Meta's Comprehensive RAG benchmark): `crag/task_1_and_2` and `crag/task_3`.

Configs; splits `validation` (records with `split` 0) and `test` (`split` 1), except `corpus`:

- `default`: every field of a record, typed, one schema for every release: v4, v5 (adds
  `popularity`) and the older example file (`alternative_answers` as a string such as "[]",
  parsed with `ast.literal_eval` into `alt_ans`). Values stay as the source has them ("nan"
  answers, empty `page_result`, `page_last_modified` empty or with a leading space).
- `queries`: `_id` (interaction_id), `text` (query), then the question's labels and answers.
- `corpus` (one split, `corpus`): one row per distinct page: `_id`, `title` (page_name), `text`
  (html_text.html_to_text of the HTML), `html` (page_result), `url`, `last_modified`. A page is
  its URL plus its HTML; title and last_modified come from its first occurrence in the file.
- `search_results` (in place of qrels: CRAG has no relevance labels): `query-id`, `corpus-id`,
  `rank` (1-based position in the record's `search_results`), `page_snippet`; a page listed
  twice in one record gives two rows.

Page ids: `page_id(url, html)` = the first 20 hex digits of sha256(url + "\\0" + html), both in
UTF-8 (null counts as ""): it depends on the page only, never on file order.

Sources: task 1&2 is one `.jsonl.bz2`; task 3 a `.tar.bz2` cut into four `.partN` pieces (v4
part1..4, v5 part0..3), read in order as one stream through every `.jsonl` member, never written
out joined or extracted. bzip2 is decompressed in parallel (compressed.open_bz2). A non-streaming
build decompresses once for both splits: the first split's pass keeps the other split's tables
in a temporary lz4 Arrow file, which the second split reads and deletes.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import logging
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import datasets
import orjson
import pyarrow as pa

from .base import RagBuilder
from .compressed import iter_tar_members, open_bz2, open_joined, order_parts
from .errors import MissingSourceError, SourceError
from .html_text import html_to_text
from .readers import check_required, conform, iter_lines
from .sources import Download, download_verified, file_identity

logger = logging.getLogger(__name__)

BASE_URL = "https://github.com/facebookresearch/CRAG/raw/refs/heads/main"
BASE_URL_ENV = "RAGLOADERS_CRAG_BASE_URL"
"""Set to a mirror laid out like the repository (`data/<file>`, `example_data/<file>`); sizes are still checked."""

LICENSE = "CC BY-NC 4.0"
HOMEPAGE = "https://github.com/facebookresearch/CRAG"
CITATION = """@article{yang2024crag,
  title={{CRAG} -- Comprehensive {RAG} Benchmark},
  author={Xiao Yang and Kai Sun and Hao Xin and Yushi Sun and Nikita Bhalla and Xiangsen Chen and Sajal Choudhary and
          Rongze Daniel Gui and Ziran Will Jiang and Ziyu Jiang and Lingkun Kong and Brian Moran and Jiaqi Wang and
          Yifan Ethan Xu and An Yan and Chenyu Yang and Eting Yuan and Hanwen Zha and Nan Tang and Lei Chen and
          Nicolas Scheffer and Yue Liu and Nirav Shah and Rakesh Wanga and Anuj Kumar and Wen-tau Yih and
          Xin Luna Dong},
  journal={arXiv preprint arXiv:2406.04744},
  year={2024},
  url={https://arxiv.org/abs/2406.04744}
}"""


@dataclass(frozen=True)
class CragRelease:
    """One published form of a CRAG task: its files in order, with their published byte sizes.

    The repository publishes no checksums for the release files (they live in Git LFS, whose oids
    are not listed anywhere official), so downloads are checked by size only.
    """

    task: str
    name: str
    files: tuple[str, ...]
    sizes: tuple[int, ...]
    folder: str = "data"
    md5: str | None = None
    records: int | None = None
    joined: str | None = None
    """The single file that `cat` of the parts gives (also accepted in data_dir)."""

    def downloads(self) -> list[Download]:
        base = os.environ.get(BASE_URL_ENV, BASE_URL).rstrip("/")
        return [Download(f"{base}/{self.folder}/{name}", md5=self.md5, size=size)
                for name, size in zip(self.files, self.sizes)]


_T3_V4, _T3_V5 = "crag_task_3_dev_v4.tar.bz2", "crag_task_3_dev_v5.tar.bz2"
RELEASES: tuple[CragRelease, ...] = (
    # Newest first: without `release`, the first one available is used.
    CragRelease("task_1_and_2", "v5", ("crag_task_1_and_2_dev_v5.jsonl.bz2",), (739_310_088,), records=2_706),
    CragRelease("task_1_and_2", "v4", ("crag_task_1_and_2_dev_v4.jsonl.bz2",), (739_384_484,), records=2_706),
    CragRelease("task_1_and_2", "example", ("dev_data.jsonl.bz2",), (2_032_693,), folder="example_data",
                md5="3f6f5794005d7991786690d81f5cdac2", records=10),
    CragRelease("task_3", "v5", tuple(f"{_T3_V5}.part{n}" for n in range(4)),
                (2_147_483_648,) * 3 + (1_283_117_287,), joined=_T3_V5),
    CragRelease("task_3", "v4", tuple(f"{_T3_V4}.part{n}" for n in range(1, 5)),
                (2_097_152_000,) * 3 + (1_432_877_269,), joined=_T3_V4),
)
TASKS = ("task_1_and_2", "task_3")

STRING, TEXT, INT = pa.string(), pa.large_string(), pa.int64()
PAGE = pa.struct([
    ("page_name", STRING), ("page_url", STRING), ("page_snippet", STRING), ("page_result", TEXT),
    ("page_last_modified", STRING),
])
LABELS = [
    pa.field("query_time", STRING), pa.field("domain", STRING), pa.field("question_type", STRING),
    pa.field("static_or_dynamic", STRING),
]
DEFAULT_SCHEMA = pa.schema([
    pa.field("interaction_id", STRING), *LABELS, pa.field("query", STRING), pa.field("answer", STRING),
    pa.field("alt_ans", pa.list_(STRING)), pa.field("split", INT), pa.field("popularity", STRING),
    pa.field("search_results", pa.list_(PAGE)),
])
SOURCE_FIELDS = [*DEFAULT_SCHEMA, pa.field("alternative_answers", STRING)]
"""What a record may hold: every release's fields, and the example file's `alternative_answers` string."""
SCHEMAS = {
    "default": DEFAULT_SCHEMA,
    "queries": pa.schema([
        pa.field("_id", STRING), pa.field("text", STRING), *LABELS, pa.field("popularity", STRING),
        pa.field("answer", STRING), pa.field("alt_ans", pa.list_(STRING)),
    ]),
    "corpus": pa.schema([
        pa.field("_id", STRING), pa.field("title", STRING), pa.field("text", TEXT), pa.field("html", TEXT),
        pa.field("url", STRING), pa.field("last_modified", STRING),
    ]),
    "search_results": pa.schema([
        pa.field("query-id", STRING), pa.field("corpus-id", STRING), pa.field("rank", pa.int32()),
        pa.field("page_snippet", STRING),
    ]),
}
SPLITS = {0: "validation", 1: "test"}
BATCH_BYTES = 16 << 20
BATCH_ROWS = 1_000


def page_id(url: str | None, html: str | None) -> str:
    """The corpus id of a page: 20 hex digits of sha256(url + NUL + html)."""
    digest = hashlib.sha256((url or "").encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update((html or "").encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:20]


def parse_alternative_answers(text: str) -> list[str]:
    """The example file's `alternative_answers` ("[]", "['a', 'b']") as a list (literal_eval, never eval)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"`alternative_answers` must be a list of strings such as \"['a']\", got {text[:60]!r}")
    return value


def normalize(record: Any) -> dict:
    """A source record as a `default` row; ValueError says what is wrong."""
    row = conform(record, SOURCE_FIELDS)
    check_required(row, ("interaction_id", "query", "split"))
    legacy = row.pop("alternative_answers")
    if legacy is not None:
        if row["alt_ans"] is not None:
            raise ValueError("both `alt_ans` and `alternative_answers` present")
        row["alt_ans"] = parse_alternative_answers(legacy)
    if row["split"] not in SPLITS:
        raise ValueError(f"`split` must be 0 (validation) or 1 (test), got {row['split']!r}")
    if row["search_results"] is not None and None in row["search_results"]:
        raise ValueError(f"`search_results[{row['search_results'].index(None)}]` must be an object, got null")
    return row


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
                    logger.warning("%s: skipping tar member %r (not a .jsonl file)", self.name, member)
                    continue
                found = True
                yield f"{self.name}:{member}", content
        if not found:
            raise SourceError(self.name, "the tar holds no .jsonl member")

    def records(self) -> Iterator[tuple[dict, int]]:
        """(`default` row, size of its JSON line) for every record, in file order."""
        for name, stream in self.streams():
            for number, line in iter_lines(stream, name):
                if not line or line.isspace():
                    continue
                try:
                    row = normalize(orjson.loads(line))
                except orjson.JSONDecodeError as e:
                    raise SourceError(name, f"invalid JSON ({e})", record=number) from None
                except ValueError as e:
                    raise SourceError(name, str(e), record=number) from None
                yield row, len(line)


def config_rows(config: str, row: dict, nbytes: int, seen: set[str]) -> Iterator[tuple[dict, int]]:
    """The rows of `config` that one record gives, with their approximate sizes in bytes."""
    if config == "default":
        yield row, nbytes
        return
    if config == "queries":
        yield {"_id": row["interaction_id"], "text": row["query"], **{name: row[name] for name in SCHEMAS[config].names
                                                                    if name not in ("_id", "text")}}, 256
        return
    for rank, page in enumerate(row["search_results"] or (), start=1):
        html = page["page_result"]
        pid = page_id(page["page_url"], html)
        if config == "search_results":
            yield {"query-id": row["interaction_id"], "corpus-id": pid, "rank": rank,
                   "page_snippet": page["page_snippet"]}, 128 + len(page["page_snippet"] or "")
        elif pid not in seen:
            seen.add(pid)
            text = None if html is None else html_to_text(html)
            yield {"_id": pid, "title": page["page_name"], "text": text, "html": html, "url": page["page_url"],
                   "last_modified": page["page_last_modified"]}, len(html or "") + len(text or "")


class Batches:
    """Rows gathered into tables bounded by rows and by bytes."""

    def __init__(self, schema: pa.Schema):
        self.schema, self.rows, self.size = schema, [], 0

    def add(self, row: dict, nbytes: int) -> pa.Table | None:
        self.rows.append(row)
        self.size += nbytes
        return self.flush() if len(self.rows) >= BATCH_ROWS or self.size >= BATCH_BYTES else None

    def flush(self) -> pa.Table | None:
        if not self.rows:
            return None
        table = pa.Table.from_pylist(self.rows, schema=self.schema)
        self.rows, self.size = [], 0
        return table


@dataclass(frozen=True)
class Spool:
    """Where the first split's pass keeps the second split's tables (Arrow IPC stream, lz4)."""

    path: str

    def tables(self) -> Iterator[pa.Table]:
        # Plain reads, not a memory map: mapped pages would count in the process's RSS up to the spool's size.
        with pa.OSFile(self.path, "rb") as source:
            for batch in pa.ipc.open_stream(source):
                yield pa.Table.from_batches([batch])


class _SpoolWriter:
    def __init__(self, spool: Spool, schema: pa.Schema):
        self.spool, self.partial = spool, spool.path + ".partial"
        self.writer = pa.ipc.new_stream(self.partial, schema, options=pa.ipc.IpcWriteOptions(compression="lz4"))

    def write(self, table: pa.Table | None) -> None:
        if table is not None:
            self.writer.write_table(table)

    def commit(self) -> None:
        self.writer.close()
        os.replace(self.partial, self.spool.path)

    def discard(self) -> None:
        self.writer.close()
        if os.path.exists(self.partial):
            os.remove(self.partial)


class CragBuilder(RagBuilder):
    """Builder for `crag/task_1_and_2` and `crag/task_3`; `release="v4"` (or "v5", "example") picks a release."""

    BUILDER_CONFIGS = [datasets.BuilderConfig(name=name, version=RagBuilder.VERSION) for name in SCHEMAS]
    DEFAULT_WRITER_BATCH_SIZE = 16
    """Rows per Arrow record batch: records reach several MB of HTML (datasets' default of 1000 peaks at 1.3 GB)."""

    def __init__(self, path: str, config_name: str, *, release: str | None = None, **kwargs: Any):
        self.task = path.split("/", 1)[-1]
        if path not in BUILDERS:
            raise ValueError(f"unknown CRAG path {path!r}; known: {', '.join(BUILDERS)}")
        names = [r.name for r in RELEASES if r.task == self.task]
        if release is not None and release not in names:
            raise ValueError(f"{path} has no release {release!r}; its releases are {', '.join(names)}")
        self.release = release
        self._spool_dir: str | None = None
        if config_name in ("queries", "search_results"):
            kwargs.setdefault("writer_batch_size", 1_000)
        super().__init__(path, config_name, **kwargs)

    def releases(self) -> list[CragRelease]:
        return [r for r in RELEASES if r.task == self.task and self.release in (None, r.name)]

    def source_identity(self, data_dir: str | None) -> Any:
        if data_dir is None:
            release = self.releases()[0]
            return [release.name, [(d.url, d.size) for d in release.downloads()]]
        return self.source_in(data_dir).identity()

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=f"CRAG {self.task}: {self.config.name}",
            features=datasets.Features.from_arrow_schema(SCHEMAS[self.config.name]),
            citation=CITATION,
            homepage=HOMEPAGE,
            license=LICENSE,
        )

    def source_in(self, data_dir: str) -> CragSource:
        """The newest release (or the chosen one) whose files are in `data_dir`."""
        for release in self.releases():
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
            " + ".join(r.files) + (f" (or {r.joined})" if r.joined else "") for r in self.releases()
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

    def _download_and_prepare(self, dl_manager, verification_mode, **kwargs):
        # Only a full preparation generates both splits one after the other in this process: only
        # then may the first split's pass keep the second split's rows for it.
        output = self._output_dir if os.path.isdir(str(self._output_dir)) else None
        self._spool_dir = tempfile.mkdtemp(prefix="ragloaders-crag-spool-", dir=output)
        try:
            super()._download_and_prepare(dl_manager, verification_mode, **kwargs)
        finally:
            shutil.rmtree(self._spool_dir, ignore_errors=True)
            self._spool_dir = None
        # datasets cannot read back a split with no rows (the example file has only `split` 1): leave it out.
        kept = datasets.SplitDict(dataset_name=self.dataset_name)
        for name, info in self.info.splits.items():
            if info.num_examples:
                kept.add(info)
            else:
                pattern = os.path.join(glob.escape(self._output_dir), f"{self.dataset_name}-{name}*.arrow")
                for path in glob.glob(pattern):
                    os.remove(path)
        self.info.splits = kept

    def _split_generators(self, dl_manager):
        source = self.source(dl_manager)
        config = self.config.name
        if config == "corpus":
            return [datasets.SplitGenerator(name="corpus", gen_kwargs={"source": source})]
        spool = Spool(os.path.join(self._spool_dir, f"{config}-test.arrow")) if self._spool_dir else None
        return [
            datasets.SplitGenerator(name="validation", gen_kwargs={"source": source, "split": 0, "spool_out": spool}),
            datasets.SplitGenerator(name="test", gen_kwargs={"source": source, "split": 1, "spool_in": spool}),
        ]

    def _generate_tables(
        self, source: CragSource, split: int | None = None, spool_out: Spool | None = None,
        spool_in: Spool | None = None,
    ) -> Iterator[tuple[int, pa.Table]]:
        if spool_in is not None and os.path.isfile(spool_in.path):
            yield from enumerate(spool_in.tables())
            os.remove(spool_in.path)
            return
        config, schema = self.config.name, SCHEMAS[self.config.name]
        keep = Batches(schema)
        other = _SpoolWriter(spool_out, schema) if spool_out is not None else None
        other_batches = Batches(schema)
        seen: set[str] = set()
        index = records = 0
        try:
            for row, nbytes in source.records():
                records += 1
                kept = split is None or row["split"] == split
                if not kept and other is None:
                    continue
                for out_row, size in config_rows(config, row, nbytes, seen):
                    if kept:
                        if (table := keep.add(out_row, size)) is not None:
                            yield index, table
                            index += 1
                    else:
                        other.write(other_batches.add(out_row, size))
            if records == 0:
                raise SourceError(source.name, "no records")
            if (table := keep.flush()) is not None:
                yield index, table
            if other is not None:
                other.write(other_batches.flush())
                other.commit()
                other = None
        finally:
            if other is not None:
                other.discard()


FIELD_NOTES = {
    "default.split": "the source's `split`: 0 = validation, 1 = public test",
    "alt_ans": "other valid answers (the example file's `alternative_answers` string, parsed)",
    "popularity": "head / torso / tail (v5 only; null in v4 and the example file)",
    "search_results": "the pages returned for the query, in rank order, as in the source (5 per question in task 1&2, "
                      "up to 50 in task 3)",
    "queries._id": "interaction_id",
    "queries.text": "the question",
    "corpus._id": "first 20 hex digits of sha256(url + NUL + html): the same page has the same id in every build",
    "corpus.title": "page_name",
    "corpus.text": "text extracted from the HTML (Resiliparse, whitespace-normalised)",
    "corpus.html": "page_result, the full HTML as in the source (may be empty)",
    "last_modified": "page_last_modified as in the source (may be empty or start with a space)",
    "query-id": "interaction_id of the question",
    "corpus-id": "`_id` of the page in `corpus`",
    "rank": "1-based position of the page in the question's search_results",
}
KNOWN_DEFECTS = (
    "The same page often appears twice among one question's search results: both rows are kept in `default` and "
    "`search_results`, one row in `corpus`.",
    "Some `page_result` values are empty (`text` is then empty too); `page_last_modified` is often empty or starts "
    "with a space; answers include the strings \"nan\", \"invalid question\" and \"i don't know\".",
)


def published_counts(path: str) -> dict[tuple[str, str | None], int]:
    """(config, split or None for all) -> the record count CRAG publishes (task 1&2 only; for `ragloaders validate`)."""
    records = next((r.records for r in RELEASES if f"crag/{r.task}" == path and r.records), None)
    return {("queries", None): records} if records else {}


def known_defects(path: str) -> tuple:
    """Upstream facts that `ragloaders validate` reports as warnings, not errors."""
    from .validate import KnownDefect

    return (KnownDefect("duplicate_pairs", "search_results", "CRAG often lists the same page twice among one "
                        "question's search results; both rows are kept, at their own ranks."),)


def card_facts(path: str) -> dict:
    """What the dataset card of a CRAG path says (keys of ragloaders.cards.CardFacts)."""
    task = path.split("/", 1)[-1]
    releases = [r for r in RELEASES if r.task == task]
    pages = "5 web pages" if task == "task_1_and_2" else "up to 50 web pages"
    summary = (
        f"CRAG {task.replace('_', ' ')}: questions with {pages} each, as four configs: `default` (every field of every "
        "record), `queries`, `corpus` (distinct pages) and `search_results`, with splits `validation` and `test`"
        f" (`corpus`: one split, `corpus`). Built from release {releases[0].name} unless stated otherwise."
        + (f" CRAG publishes {releases[0].records:,} records." if releases[0].records else "")
    )
    source_files = [
        {"name": f"{download.url.rsplit('/', 1)[-1]} ({release.name})", "url": download.url, "bytes": download.size,
         **({"md5": download.md5} if download.md5 else {})}
        for release in releases for download in release.downloads()
    ]
    return {
        "family": "crag",
        "pretty_name": f"CRAG {task}",
        "summary": summary,
        "license": "cc-by-nc-4.0",
        "license_text": LICENSE,
        "citations": [CITATION],
        "source_files": source_files,
        "known_defects": list(KNOWN_DEFECTS),
        "field_notes": FIELD_NOTES,
        "tags": ["crag"],
        "homepage": HOMEPAGE,
    }


BUILDERS = {f"crag/{task}": CragBuilder for task in TASKS}
