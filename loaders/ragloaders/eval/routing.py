"""mmRAG's routing task: a run that ranks the five source datasets for each query, scored against the `routing`
config (each query's `dataset_score`) with the measures of nju-websoft/mmRAG `mmrag_experiments/exp/routing/eval.py`
(ranx: NDCG@5, Hits@1 ... Hits@5; see ranx_metrics).

A routing run is a TREC run (`qid Q0 dataset rank score tag`) or a `.parquet` / `.jsonl` table with the columns
`query-id`, `dataset`, `score` (the routing config's own shape). Malformed input is a SourceError naming the file
and the line or record, as for retrieval runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import SourceError
from ..core.readers.jsonl import Shard, iter_json_records
from ..core.sources import SourceFiles
from .runs import Run, _read_rows, read_run, run_format

ROUTING_RUN_COLUMNS = ("query-id", "dataset", "score")
Row = tuple[int, "str | None", "str | None", "float | None"]


def read_routing_run(path: str | os.PathLike) -> Run:
    """A routing run file as {query id: {dataset: score}}."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such routing run file")
    fmt = run_format(path)
    if fmt == "trec":
        return read_run(path)
    if fmt == "parquet":
        return _read_rows(path, _parquet_rows(path), unit="record")
    return _read_rows(path, _jsonl_rows(path), unit="line")


def _check_schema(path: str, schema: pa.Schema) -> None:
    names = schema.names
    missing = [name for name in ROUTING_RUN_COLUMNS if name not in names]
    unexpected = [name for name in names if name not in ROUTING_RUN_COLUMNS]
    if missing or unexpected:
        raise SourceError(path, f"a routing run table has the columns {', '.join(ROUTING_RUN_COLUMNS)}; "
                                f"missing {missing}, unexpected {unexpected}")
    for name in ROUTING_RUN_COLUMNS[:2]:
        kind = schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise SourceError(path, f"column `{name}` must hold strings, got {kind}")
    kind = schema.field("score").type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        raise SourceError(path, f"column `score` must be numeric, got {kind}")


def _parquet_rows(path: str) -> Iterator[Row]:
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise SourceError(path, f"not a readable Parquet file ({e})") from None
    _check_schema(path, parquet.schema_arrow)
    index = 0
    for batch in parquet.iter_batches(batch_size=65_536, columns=list(ROUTING_RUN_COLUMNS)):
        for query_id, dataset, score in zip(*(batch.column(n).to_pylist() for n in ROUTING_RUN_COLUMNS)):
            index += 1
            yield index, query_id, dataset, None if score is None else float(score)


def _jsonl_rows(path: str) -> Iterator[Row]:
    folder, name = os.path.split(os.path.abspath(path))
    for number, _, record in iter_json_records(Shard(SourceFiles(folder), name)):
        if not isinstance(record, dict) or sorted(record) != sorted(ROUTING_RUN_COLUMNS):
            raise SourceError(path, f"expected an object with exactly the keys {', '.join(ROUTING_RUN_COLUMNS)}, "
                                    f"got {record!r:.80}", line=number)
        query_id, dataset, score = (record[n] for n in ROUTING_RUN_COLUMNS)
        for key, value in (("query-id", query_id), ("dataset", dataset)):
            if value is not None and not isinstance(value, str):
                raise SourceError(path, f"`{key}` must be a string (ids are never converted), got {value!r}",
                                  line=number)
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise SourceError(path, f"`score` must be a number, got {score!r}", line=number)
        yield number, query_id, dataset, None if score is None else float(score)
