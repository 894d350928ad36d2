"""CRAG as data: the releases of each task (files, sizes, record counts) and the schema of every config."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ...core.source_files import Download, mirror_base

BASE_URL = "https://github.com/facebookresearch/CRAG/raw/refs/heads/main"
BASE_URL_ENV = "RAGLOADERS_CRAG_BASE_URL"
"""Set to a mirror laid out like the repository (`data/<file>`, `example_data/<file>`); sizes are still checked."""

LICENSE = "CC BY-NC 4.0"
HOMEPAGE = "https://github.com/facebookresearch/CRAG"


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
        base = mirror_base(BASE_URL, BASE_URL_ENV)
        return [Download(f"{base}/{self.folder}/{name}", md5=self.md5, size=size, mirror_env=BASE_URL_ENV)
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
BUILDER_PARAMETERS = ("release",)
"""The config parameters CragBuilder takes (`load("crag/task_1_and_2", release="v4")`)."""

STRING, TEXT, INT = pa.string(), pa.large_string(), pa.int64()
PAGE = pa.struct([
    ("page_name", STRING), ("page_url", STRING), ("page_snippet", STRING), ("page_result", TEXT),
    ("page_last_modified", STRING),
])
LABELS = [
    pa.field("query_time", STRING), pa.field("domain", STRING), pa.field("question_type", STRING),
    pa.field("static_or_dynamic", STRING),
]
RECORDS_SCHEMA = pa.schema([
    pa.field("interaction_id", STRING), *LABELS, pa.field("query", STRING), pa.field("answer", STRING),
    pa.field("alt_ans", pa.list_(STRING)), pa.field("split", INT), pa.field("popularity", STRING),
    pa.field("search_results", pa.list_(PAGE)),
])
SOURCE_FIELDS = [*RECORDS_SCHEMA, pa.field("alternative_answers", STRING)]
"""What a record may hold: every release's fields, and the example file's `alternative_answers` string."""
SCHEMAS = {
    "records": RECORDS_SCHEMA,
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
    "top_ranked": pa.schema([pa.field("query-id", STRING), pa.field("corpus-ids", pa.list_(STRING))]),
}
SPLITS = {0: "validation", 1: "test"}
