"""BEIR: the 18 datasets (cqadupstack as 12 forums), each as `corpus`, `queries` and `qrels`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import datasets
import pyarrow as pa

from ...core.builder import RagBuilder
from ...core.errors import MissingSourceError
from ...core.readers.jsonl import Shard, read_jsonl, shards_of
from ...core.readers.qrels import QRELS_SCHEMA, read_qrels
from ...core.readers.values import JSON_FIELD
from ...core.sources import SourceFiles, download_verified, verify_md5_once
from .catalogue import DATASETS, STRING, BeirDataset
from .citations import BEIR_CITATION


@dataclass(frozen=True)
class EntityFile:
    """How one of BEIR's JSONL files becomes a config: its file, its split, its leading columns."""

    relpath: str
    split: str
    columns: tuple[str, ...]
    metadata: Callable[[BeirDataset], tuple[pa.Field, ...] | None]


ENTITY_FILES = {
    "corpus": EntityFile("corpus.jsonl", "corpus", ("_id", "title", "text"), lambda d: d.doc_metadata),
    "queries": EntityFile("queries.jsonl", "queries", ("_id", "text"), lambda d: d.query_metadata),
}
REQUIRED = ("_id", "text")


def _metadata_fields(metadata: tuple[pa.Field, ...] | None) -> list[pa.Field]:
    if metadata is None:
        return [pa.field("metadata", STRING, metadata=JSON_FIELD)]
    return [pa.field("metadata", pa.struct(list(metadata)))]  # an empty struct still accepts `"metadata": {}`


def source_schema(dataset: BeirDataset, config: str) -> pa.Schema:
    """The schema a line of corpus.jsonl / queries.jsonl is read with (metadata nested as in the file)."""
    entity = ENTITY_FILES[config]
    return pa.schema([pa.field(name, STRING) for name in entity.columns] + _metadata_fields(entity.metadata(dataset)))


def output_schema(dataset: BeirDataset, config: str) -> pa.Schema:
    """Columns as published: `_id`, (`title`,) `text`, then one typed column per metadata field."""
    if config == "qrels":
        return QRELS_SCHEMA
    fields = []
    for field in source_schema(dataset, config):
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


def qrels_splits(dataset: BeirDataset, files: SourceFiles) -> list[datasets.SplitGenerator]:
    for split in dataset.splits:
        files.require(f"qrels/{split}.tsv")
    return [
        datasets.SplitGenerator(name=split, gen_kwargs={"shards": [Shard(files, f"qrels/{split}.tsv")]})
        for split in dataset.splits
    ]


def entity_splits(config: str) -> Callable[[BeirDataset, SourceFiles], list[datasets.SplitGenerator]]:
    entity = ENTITY_FILES[config]
    return lambda dataset, files: [
        datasets.SplitGenerator(name=entity.split, gen_kwargs={"shards": shards_of(files, entity.relpath)})
    ]


def read_entities(config: str) -> Callable[[BeirDataset, Shard], Iterator[pa.Table]]:
    def read(dataset: BeirDataset, shard: Shard) -> Iterator[pa.Table]:
        schema = output_schema(dataset, config)
        for table in read_jsonl(shard, source_schema(dataset, config), required=REQUIRED):
            yield flatten_metadata(table, schema)

    return read


@dataclass(frozen=True)
class ConfigPlan:
    """Per config: the splits it has and how one shard of source becomes tables."""

    splits: Callable[[BeirDataset, SourceFiles], list[datasets.SplitGenerator]]
    read: Callable[[BeirDataset, Shard], Iterator[pa.Table]]


CONFIG_PLANS = {
    "corpus": ConfigPlan(entity_splits("corpus"), read_entities("corpus")),
    "queries": ConfigPlan(entity_splits("queries"), read_entities("queries")),
    "qrels": ConfigPlan(qrels_splits, lambda dataset, shard: read_qrels(shard)),
}


class BeirBuilder(RagBuilder):
    BUILDER_CONFIGS = [datasets.BuilderConfig(name=name, version=RagBuilder.VERSION) for name in CONFIG_PLANS]

    def __init__(self, path: str, config_name: str, **kwargs: Any):
        if path not in DATASETS:
            raise ValueError(f"unknown BEIR dataset {path!r}; known: {', '.join(DATASETS)}")
        self.dataset = DATASETS[path]
        super().__init__(path, config_name, **kwargs)

    def source_identity(self, data_dir: str | None, config: datasets.BuilderConfig) -> Any:
        if data_dir is None:
            download = self.dataset.download
            return [download.url, download.md5] if download else None
        files = self.source_files_in(data_dir)
        return files.identity(["corpus.jsonl", "queries.jsonl"] + [f"qrels/{s}.tsv" for s in self.dataset.splits])

    def split_names(self) -> list[str]:
        return list(self.dataset.splits) if self.config.name == "qrels" else [ENTITY_FILES[self.config.name].split]

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=f"BEIR {self.dataset.name}: {self.config.name}",
            features=datasets.Features.from_arrow_schema(output_schema(self.dataset, self.config.name)),
            citation=BEIR_CITATION,
            homepage="https://github.com/beir-cellar/beir",
            license=self.dataset.license,
        )

    def source_files_in(self, data_dir: str) -> SourceFiles:
        """The dataset at `data_dir`: the extracted folder itself, a `<name>/` folder in it, the zip in it, or
        `data_dir` is the zip itself."""
        root = self.dataset.root
        if os.path.isfile(data_dir):
            return SourceFiles(data_dir, root=root)
        for folder in (data_dir, os.path.join(data_dir, root), os.path.join(data_dir, root.split("/")[-1])):
            if any(os.path.exists(os.path.join(folder, name)) for name in ("corpus.jsonl", "queries.jsonl", "qrels")):
                return SourceFiles(folder)
        zip_path = os.path.join(data_dir, f"{self.dataset.archive}.zip")
        if os.path.isfile(zip_path):
            return SourceFiles(zip_path, root=root)
        raise MissingSourceError(
            f"{data_dir}: expected the extracted BEIR folder (corpus.jsonl, queries.jsonl, qrels/) "
            f"or {self.dataset.archive}.zip"
        )

    def source_files(self, dl_manager: Any) -> SourceFiles:
        """The dataset's files: from `data_dir`, or the official zip downloaded and md5-checked."""
        if self.config.data_dir:
            files = self.source_files_in(self.config.data_dir)
            if files.is_zip and self.dataset.md5:  # once per zip identity: the marker lives in the cache
                verify_md5_once(files.location, self.dataset.md5, os.path.join(self._cache_dir_root, "ragloaders-md5"))
            return files
        download = self.dataset.download
        if download is None:
            raise MissingSourceError(f"BEIR {self.dataset.name} is {self.dataset.obtain}")
        return SourceFiles(download_verified(self.download_manager(dl_manager), download), root=self.dataset.root)

    def source_files_read(self) -> list[str]:
        files = self.source_files(None)
        if files.is_zip:
            return [files.location]
        names = [f"qrels/{s}.tsv" for s in self.dataset.splits] if self.config.name == "qrels" else [
            ENTITY_FILES[self.config.name].relpath]
        return [files.local_path(name) for name in names]

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return CONFIG_PLANS[self.config.name].splits(self.dataset, self.source_files(dl_manager))

    def _generate_tables(self, shards: list[Shard]) -> Iterator[tuple[tuple[int, int], pa.Table]]:
        read = CONFIG_PLANS[self.config.name].read
        for shard_index, shard in enumerate(shards):
            for table_index, table in enumerate(read(self.dataset, shard)):
                yield (shard_index, table_index), table
