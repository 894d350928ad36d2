"""mmRAG's routing task: a run that ranks the five source datasets for each query, scored against the `routing`
config (each query's `dataset_score`) with the measures of nju-websoft/mmRAG `mmrag_experiments/exp/routing/eval.py`
(ranx: NDCG@5, Hits@1 ... Hits@5; see ranx_metrics).

A routing run is a TREC run (`qid Q0 dataset rank score tag`) or a `.parquet` / `.jsonl` table with the columns
`query-id`, `dataset`, `score` (the routing config's own shape). Malformed input is a SourceError naming the file
and the line or record, as for retrieval runs.
"""

from __future__ import annotations

import os

from .runs import Run, read_run_table, read_trec_run, require_run_file, run_format

ROUTING_ITEM = "dataset"
"""The column a routing run table ranks: the source datasets."""


def read_routing_run(path: str | os.PathLike) -> Run:
    """A routing run file as {query id: {dataset: score}}."""
    path = os.fspath(path)
    require_run_file(path, "routing run")
    if run_format(path) == "trec":
        return read_trec_run(path, item=ROUTING_ITEM)
    return read_run_table(path, item=ROUTING_ITEM, what="routing run")
