"""BEIR's file layout, read once for every dataset that comes in it (BEIR's catalogue, `beir-format`).

A dataset in this layout is a folder, or a zip holding it:

    corpus.jsonl          one JSON object per line: `_id`, `title` (optional), `text`, `metadata` (optional object)
    queries.jsonl         one JSON object per line: `_id`, `text`, `metadata` (optional object)
    qrels/<split>.tsv     `query-id<TAB>corpus-id<TAB>score` with that header line, LF or CRLF line ends

Three configs: `corpus` (split `corpus`), `queries` (split `queries`, every line of queries.jsonl) and `qrels` (one
split per qrels file). A dataset declares the shape of its `metadata`: a tuple of typed fields, each published as
a column of its own, or JSON_TEXT, one `metadata` column holding the object as JSON text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import datasets
import pyarrow as pa

from ..builder import RagBuilder
from ..errors import MissingSourceError
from ..facts import CardFacts
from ..readers.jsonl import Shard, read_jsonl, shards_of
from ..readers.qrels import QRELS_SCHEMA, read_qrels
from ..readers.values import JSON_FIELD
from ..source_files import SourceFiles, download_verified, verify_md5_once
from .beir_layout import CORPUS_FILE, JSON_TEXT, QRELS_FOLDER, QUERIES_FILE, REQUIRED, STRING, BeirLayout, Metadata


@dataclass(frozen=True)
class EntityFile:
    """How one of the JSONL files becomes a config: its file, its split, its leading columns, its metadata."""

    relpath: str
    split: str
    columns: tuple[str, ...]
    metadata: Callable[[BeirLayout], Metadata]


ENTITY_FILES = {
    "corpus": EntityFile(CORPUS_FILE, "corpus", ("_id", "title", "text"), lambda d: d.doc_metadata),
    "queries": EntityFile(QUERIES_FILE, "queries", ("_id", "text"), lambda d: d.query_metadata),
}
CONFIGS = ("corpus", "queries", "qrels")


def _metadata_fields(metadata: Metadata) -> list[pa.Field]:
    if metadata is JSON_TEXT:
        return [pa.field("metadata", STRING, metadata=JSON_FIELD)]
    return [pa.field("metadata", pa.struct(list(metadata)))]  # an empty struct still accepts `"metadata": {}`


def source_schema(layout: BeirLayout, config: str) -> pa.Schema:
    """The schema a line of corpus.jsonl / queries.jsonl is read with (metadata nested as in the file)."""
    entity = ENTITY_FILES[config]
    return pa.schema([pa.field(name, STRING) for name in entity.columns] + _metadata_fields(entity.metadata(layout)))


def output_schema(layout: BeirLayout, config: str) -> pa.Schema:
    """Columns as published: `_id`, (`title`,) `text`, then one typed column per metadata field (or `metadata`)."""
    if config == "qrels":
        return QRELS_SCHEMA
    fields = []
    for field in source_schema(layout, config):
        if field.name == "metadata" and pa.types.is_struct(field.type):
            fields.extend(field.type)
        else:
            fields.append(pa.field(field.name, field.type))
    return pa.schema(fields)


def flatten_metadata(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A table read with `source_schema` as `output_schema`: the metadata struct's fields become columns."""
    if "metadata" not in table.column_names or not pa.types.is_struct(table.schema.field("metadata").type):
        return table.cast(schema)
    metadata = table.column("metadata")
    children = dict(zip([f.name for f in metadata.type], metadata.flatten()))
    columns = [children[name] if name in children else table.column(name) for name in schema.names]
    return pa.Table.from_arrays(columns, schema=schema)


def qrels_splits(layout: BeirLayout, files: SourceFiles) -> list[datasets.SplitGenerator]:
    for split in layout.splits:
        files.require(layout.qrels_file(split))
    return [
        datasets.SplitGenerator(name=split, gen_kwargs={"shards": [Shard(files, layout.qrels_file(split))]})
        for split in layout.splits
    ]


def entity_splits(config: str) -> Callable[[BeirLayout, SourceFiles], list[datasets.SplitGenerator]]:
    entity = ENTITY_FILES[config]
    return lambda layout, files: [
        datasets.SplitGenerator(name=entity.split, gen_kwargs={"shards": shards_of(files, entity.relpath)})
    ]


def read_entities(config: str) -> Callable[[BeirLayout, Shard], Iterator[pa.Table]]:
    def read(layout: BeirLayout, shard: Shard) -> Iterator[pa.Table]:
        schema = output_schema(layout, config)
        for table in read_jsonl(shard, source_schema(layout, config), required=REQUIRED):
            yield flatten_metadata(table, schema)

    return read


@dataclass(frozen=True)
class ConfigPlan:
    """Per config: the splits it has and how one shard of source becomes tables."""

    splits: Callable[[BeirLayout, SourceFiles], list[datasets.SplitGenerator]]
    read: Callable[[BeirLayout, Shard], Iterator[pa.Table]]


CONFIG_PLANS = {
    "corpus": ConfigPlan(entity_splits("corpus"), read_entities("corpus")),
    "queries": ConfigPlan(entity_splits("queries"), read_entities("queries")),
    "qrels": ConfigPlan(qrels_splits, lambda layout, shard: read_qrels(shard)),
}


def holds_layout(folder: str) -> bool:
    """Whether a folder holds a file or folder of BEIR's layout (corpus.jsonl, queries.jsonl, qrels/)."""
    return any(os.path.exists(os.path.join(folder, name)) for name in (CORPUS_FILE, QUERIES_FILE, QRELS_FOLDER))


class BeirLayoutBuilder(RagBuilder):
    """The builder of any dataset in BEIR's layout. A benchmark subclasses it, saying which layout a path has
    (`layout_of`) and what its card declares (`CARD_FACTS`: the description, citation, homepage and licence of
    `_info` come from there)."""

    BUILDER_CONFIGS = [datasets.BuilderConfig(name=name, version=RagBuilder.VERSION) for name in CONFIGS]
    CARD_FACTS: Callable[[str], CardFacts]

    def __init__(self, path: str, config_name: str, **kwargs: Any):
        self.layout = self.layout_of(path, kwargs.get("data_dir"))
        super().__init__(path, config_name, **kwargs)

    def layout_of(self, path: str, data_dir: str | None) -> BeirLayout:
        """The layout of `path`'s files (for a path whose files are only known once found: the one in `data_dir`)."""
        raise NotImplementedError

    def source_identity(self, data_dir: str | None, config: datasets.BuilderConfig) -> Any:
        if data_dir is None:
            download = self.layout.download
            return [download.url, download.md5] if download else None
        return self.source_files_in(data_dir).identity(self.layout.all_files())

    def split_names(self) -> list[str]:
        return list(self.layout.splits) if self.config.name == "qrels" else [ENTITY_FILES[self.config.name].split]

    def _info(self) -> datasets.DatasetInfo:
        facts = type(self).CARD_FACTS(self.path)
        return datasets.DatasetInfo(
            description=f"{facts.pretty_name}: {self.config.name}",
            features=datasets.Features.from_arrow_schema(output_schema(self.layout, self.config.name)),
            citation="\n\n".join(facts.citations),
            homepage=facts.homepage,
            license=facts.license_text,
        )

    def source_files_in(self, data_dir: str) -> SourceFiles:
        """The dataset at `data_dir`: the extracted folder itself, a folder named as its root in it (`<name>/`,
        `cqadupstack/<forum>/`, `<forum>/`), its zip in it, or `data_dir` is the zip itself."""
        root = self.layout.root
        if os.path.isfile(data_dir):
            return SourceFiles(data_dir, root=root)
        folders = [data_dir] + ([os.path.join(data_dir, root), os.path.join(data_dir, root.split("/")[-1])]
                                if root else [])
        for folder in folders:
            if holds_layout(folder):
                return SourceFiles(folder)
        zip_path = os.path.join(data_dir, f"{self.layout.archive}.zip")
        if self.layout.archive and os.path.isfile(zip_path):
            return SourceFiles(zip_path, root=root)
        also = f" or {self.layout.archive}.zip" if self.layout.archive else ""
        raise MissingSourceError(f"{data_dir}: expected the extracted BEIR folder (corpus.jsonl, queries.jsonl, "
                                 f"qrels/){also}")

    def source_files(self, dl_manager: Any) -> SourceFiles:
        """The dataset's files: from `data_dir`, or the official zip downloaded and md5-checked."""
        if self.config.data_dir:
            files = self.source_files_in(self.config.data_dir)
            if files.is_zip and self.layout.md5:  # once per zip identity: the marker lives in the cache
                verify_md5_once(files.location, self.layout.md5, os.path.join(self.cache_root, "ragloaders-md5"))
            return files
        if self.layout.download is None:
            raise MissingSourceError(f"{type(self).CARD_FACTS(self.path).pretty_name} is {self.layout.obtain}")
        downloaded = download_verified(self.download_manager(dl_manager), self.layout.download)
        return SourceFiles(downloaded, root=self.layout.root)

    def source_files_read(self) -> list[str]:
        files = self.source_files(None)
        if files.is_zip:
            return [files.location]
        names = list(map(self.layout.qrels_file, self.layout.splits)) if self.config.name == "qrels" else [
            ENTITY_FILES[self.config.name].relpath]
        return [files.local_path(name) for name in names]

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return CONFIG_PLANS[self.config.name].splits(self.layout, self.source_files(dl_manager))

    def _generate_tables(self, shards: list[Shard]) -> Iterator[tuple[tuple[int, int], pa.Table]]:
        read = CONFIG_PLANS[self.config.name].read
        for shard_index, shard in enumerate(shards):
            for table_index, table in enumerate(read(self.layout, shard)):
                yield (shard_index, table_index), table
