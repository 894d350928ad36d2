"""Scoring retrieval runs the way each benchmark's authors do, and a BM25 baseline that reproduces BEIR's table.

`evaluate(path, run)` scores a run file (or {query id: {document id: score}}) against a path's qrels with
trec_eval's measures under BEIR's names; `bm25(path, out=...)` writes the baseline run;
`reranking_tables(path)` gives the optional `top_ranked` and `hard_negatives` configs. Needs the `eval`
extra (`pip install 'ragloaders[eval]'`).
"""

from .baseline import RERANKING_CONFIGS, Bm25Run, bm25, reranking_description, reranking_tables
from .bm25 import DEFAULT_SETTINGS, Bm25Settings
from .metrics import DEFAULT_METRICS, INSTALL_EVAL, Scores, parse_metrics, score
from .report import EvalReport, evaluate
from .runs import Run, read_run, write_run

__all__ = [
    "DEFAULT_METRICS", "DEFAULT_SETTINGS", "INSTALL_EVAL", "RERANKING_CONFIGS", "Bm25Run", "Bm25Settings",
    "EvalReport", "Run", "Scores", "bm25", "evaluate", "parse_metrics", "read_run", "reranking_description",
    "reranking_tables", "score", "write_run",
]
