"""The `datasets` builder of `crag/mock_kg`: one config per table of the catalogue, split `train`; each reader kind
read by the one function the dispatch table names."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import datasets
import pyarrow as pa

from ...core.builder import RagBuilder
from ...core.errors import MissingSourceError, SourceError
from ...core.readers.arrow_batches import tables_from_rows
from ...core.source_files import Download, download_verified, file_identity, mirror_base
from . import sqlite
from .catalogue import BY_CONFIG, FOLDER, NBA_TABLES, SOURCE_FILES, SPLIT, TABLES, MockKgTable, Reader
from .facts import BASE_URL, BASE_URL_ENV, CITATION, HOMEPAGE, LICENSE
from .files import iter_json_object, iter_jsonl_pairs, iter_pickle_dict, read_company_csv
from .frames import frame_table
from .shapes import table_schema

logger = logging.getLogger(__name__)

class Plan(NamedTuple):
    """How a reader kind is built: the schema and extra arguments found before generating, then the tables."""

    prepare: Callable[[list[str], MockKgTable], tuple[pa.Schema | None, tuple[str, ...]]]
    """(schema, JSON columns): the declared schema, or what the file says (a DataFrame's, an nba table's)."""
    tables: Callable[[list[str], MockKgTable, pa.Schema, tuple[str, ...]], Iterable[pa.Table]]


def _declared(paths: list[str], table: MockKgTable) -> tuple[pa.Schema | None, tuple[str, ...]]:
    return table_schema(table), ()


def _sqlite_schema(paths: list[str], table: MockKgTable) -> tuple[pa.Schema, tuple[str, ...]]:
    connection = sqlite.open_sqlite(paths[0])
    try:
        schema, json_columns = sqlite.sqlite_table_schema(connection, paths[0], table.sqlite_table or "")
        undeclared = sorted(set(sqlite.sqlite_tables(connection)) - set(NBA_TABLES))
    finally:
        connection.close()
    if undeclared:
        logger.warning("%s holds tables with no config in crag/mock_kg, so not published: %s (declare them "
                       "in crag_mock_kg.catalogue.NBA_TABLES)", paths[0], ", ".join(undeclared))
    return schema, tuple(json_columns)


def _frame_tables(paths: list[str], table: MockKgTable, schema: pa.Schema, _: tuple[str, ...]) -> Iterator[pa.Table]:
    whole = frame_table(paths[0], table.none_cells)
    if whole.schema != schema:
        raise SourceError(paths[0], "the DataFrame changed while the dataset was being built")
    return (whole.slice(start, sqlite.BATCH_ROWS) for start in range(0, whole.num_rows, sqlite.BATCH_ROWS))


RowReader = Callable[[list[str], MockKgTable], Iterator[tuple[dict, int]]]


def _from_rows(read: RowReader) -> Callable[[list[str], MockKgTable, pa.Schema, tuple[str, ...]], Iterable[pa.Table]]:
    """Tables of (row, size) pairs, bounded by rows and bytes (BATCH_ROWS and BATCH_BYTES, read when called)."""
    def tables(paths: list[str], table: MockKgTable, schema: pa.Schema, _: tuple[str, ...]) -> Iterable[pa.Table]:
        return tables_from_rows(read(paths, table), schema, max_rows=sqlite.BATCH_ROWS,
                                max_bytes=sqlite.BATCH_BYTES)

    return tables


PLANS: dict[Reader, Plan] = {
    Reader.CSV: Plan(_declared, lambda paths, table, schema, _: read_company_csv(paths[0])),
    Reader.SQLITEDICT: Plan(_declared, _from_rows(lambda paths, t: sqlite.iter_sqlitedict(paths[0], t))),
    Reader.JSON_OBJECT: Plan(_declared, _from_rows(lambda paths, t: iter_json_object(paths[0], t))),
    Reader.JSONL_PAIRS: Plan(_declared, _from_rows(iter_jsonl_pairs)),
    Reader.PICKLE_DICT: Plan(_declared, _from_rows(lambda paths, t: iter_pickle_dict(paths[0], t))),
    Reader.PICKLE_FRAME: Plan(lambda paths, table: (frame_table(paths[0], table.none_cells).schema, ()), _frame_tables),
    Reader.SQLITE_TABLE: Plan(_sqlite_schema, lambda paths, table, schema, json_columns: sqlite.iter_sqlite_table(
        paths[0], table.sqlite_table or "", schema, list(json_columns))),
}
"""The one place a reader kind is decided."""


def candidate_paths(data_dir: str, relpath: str) -> list[str]:
    """Where `relpath` (e.g. `finance/finance_price.sqlite`) may be under `data_dir`: in the `cragkg/` folder itself,
    or in a folder holding `cragkg/` or `mock_api/cragkg/` (the repository)."""
    return [os.path.join(data_dir, prefix, relpath) for prefix in ("", "cragkg", FOLDER)]


def local_path(data_dir: str, relpath: str) -> str | None:
    """The first of `candidate_paths` that is a regular file (or a link to one)."""
    return next((candidate for candidate in candidate_paths(data_dir, relpath) if os.path.isfile(candidate)), None)


class MockKgBuilder(RagBuilder):
    """Builder for `crag/mock_kg`: one config per table of CRAG's mock knowledge graphs, split `train`."""

    BUILDER_CONFIGS = [datasets.BuilderConfig(name=t.config, version=RagBuilder.VERSION, description=t.holds)
                       for t in TABLES]
    DEFAULT_WRITER_BATCH_SIZE = 1_000

    @property
    def table(self) -> MockKgTable:
        return BY_CONFIG[self.config.name]

    def source_identity(self, data_dir: str | None, config: datasets.BuilderConfig) -> Any:
        table = BY_CONFIG[config.name]
        if data_dir is None:
            return [(download.url, download.size) for download in self.downloads(table)]
        return [file_identity(local_path(data_dir, f) or os.path.join(data_dir, f)) for f in table.files]

    @staticmethod
    def downloads(table: MockKgTable) -> list[Download]:
        base = mirror_base(BASE_URL, BASE_URL_ENV)
        return [Download(SOURCE_FILES[f].url(base), size=SOURCE_FILES[f].size, mirror_env=BASE_URL_ENV)
                for f in table.files]

    def _info(self) -> datasets.DatasetInfo:
        schema = table_schema(BY_CONFIG[self.config.name])
        return datasets.DatasetInfo(
            description=f"CRAG mock knowledge graph: {self.config.name} ({self.config.description})",
            features=datasets.Features.from_arrow_schema(schema) if schema is not None else None,
            citation=CITATION,
            homepage=HOMEPAGE,
            license=LICENSE,
        )

    def source_paths(self, dl_manager: Any) -> list[str]:
        """The local files of this config: from data_dir, or downloaded (sizes checked)."""
        table = self.table
        if self.config.data_dir:
            paths = []
            for relpath in table.files:
                path = local_path(self.config.data_dir, relpath)
                special = next((c for c in candidate_paths(self.config.data_dir, relpath) if os.path.lexists(c)), None)
                if path is None and special is not None:  # a FIFO, a device, a dangling link: named, never opened
                    raise MissingSourceError(f"{self.config.data_dir}: {self.config.name} needs {relpath}: {special} "
                                             "is not a regular file")
                if path is None:
                    url = SOURCE_FILES[relpath].url(mirror_base(BASE_URL, BASE_URL_ENV))
                    raise MissingSourceError(
                        f"{self.config.data_dir}: {self.config.name} needs {relpath} (the `cragkg/` folder of CRAG's "
                        f"mock API, or the repository holding it); get it from {url}, or build without data_dir to "
                        "download it")
                paths.append(path)
            return paths
        manager = self.download_manager(dl_manager)
        return [download_verified(manager, download) for download in self.downloads(table)]

    def source_files_read(self) -> list[str]:
        return self.source_paths(None)

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        paths = self.source_paths(dl_manager)
        schema, json_columns = PLANS[self.table.reader].prepare(paths, self.table)
        if schema is not None:
            self.info.features = datasets.Features.from_arrow_schema(schema)
        # a tuple: datasets shards list arguments over num_proc workers, and `paths` is the only list to split
        kwargs = {"paths": paths, "schema": schema, "json_columns": json_columns}
        return [datasets.SplitGenerator(name=SPLIT, gen_kwargs=kwargs)]

    def _generate_tables(self, paths: list[str], schema: pa.Schema,
                         json_columns: tuple[str, ...] = ()) -> Iterator[tuple[int, pa.Table]]:
        yield from enumerate(PLANS[self.table.reader].tables(paths, self.table, schema, json_columns))
