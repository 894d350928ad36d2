"""Scoring retrieval runs the way each benchmark's authors do, and a BM25 baseline that reproduces BEIR's table.

`evaluate(path, run)` scores a run file (or {query id: {document id: score}}) against a path's qrels with
trec_eval's measures under BEIR's names, and mmRAG's with the paper's ranx measures too; `evaluate_routing`
scores an mmRAG routing run; `score_answers` scores CRAG answer predictions; `bm25(path, out=...)` writes the
baseline run;
`reranking_tables(path)` gives the optional `top_ranked` and `hard_negatives` configs. Needs the `eval`
extra (`pip install 'ragloaders[eval]'`).
"""

from .baseline import RERANKING_CONFIGS, Bm25Run, bm25, reranking_description, reranking_tables
from .bm25 import DEFAULT_SETTINGS, Bm25Settings
from .crag_answers import AnswerReport, read_predictions, score_answers
from .judge import Judge
from .metrics import DEFAULT_METRICS, INSTALL_EVAL, Scores, parse_metrics, score
from .ranx_metrics import ranx_order, ranx_score
from .report import EvalReport, evaluate, evaluate_routing
from .routing import read_routing_run
from .runs import Run, read_run, write_run

__all__ = [
    "DEFAULT_METRICS", "DEFAULT_SETTINGS", "INSTALL_EVAL", "RERANKING_CONFIGS", "AnswerReport", "Bm25Run",
    "Bm25Settings", "EvalReport", "Judge", "Run", "Scores", "bm25", "evaluate", "evaluate_routing", "parse_metrics",
    "ranx_order", "ranx_score", "read_predictions", "read_routing_run", "read_run", "reranking_description",
    "reranking_tables", "score", "score_answers", "write_run",
]
