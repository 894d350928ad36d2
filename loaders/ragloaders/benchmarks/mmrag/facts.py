"""What mmRAG tells the dataset card and `ragloaders validate`: field notes and published counts."""

from __future__ import annotations

from ...core.facts import AuthorsMeasures, CardFacts, EvalConventions, PublishedCounts
from .catalogue import CORPUS_FILE, HUB_REPO_ID, HUB_REVISION, PUBLISHED_QUERIES, QUERY_FILE_BYTES, QUERY_FILES
from .citations import MMRAG_CITATION

FIELD_NOTES = {
    "records.id": "query id, as in the file (`<source dataset>_<n>`)",
    "records.query": "the question",
    "records.answer": "the answer exactly as in the file: a string, often the Python repr of a list, sometimes empty",
    "records.answers": "`answer` parsed into a list of strings (a Python list literal, as ast.literal_eval reads it; a "
                       "plain string gives [it]; \"\" gives []); a string that looks like a list but is not one is "
                       "kept whole",
    "records.relevant_chunks": "every judged chunk with its grade (0, 1, 2), in file order",
    "records.ori_context": "ids of the documents the query was written from",
    "records.dataset_score": "per source, as in the file",
    "queries._id": "query id (`id` of `records`)",
    "queries.text": "the question (`query` of `records`)",
    "query-id": "a `_id` of the queries config",
    "corpus-id": "a chunk id (`_id` of the corpus config)",
    "score": "relevance grade 0, 1 or 2 (grade 0 kept)",
    "corpus-ids": "chunk ids in BM25 rank order (optional configs made by `ragloaders build --with`)",
    "scores": "the BM25 score of each of `corpus-ids`, aligned with it and non-increasing (float32; to fuse or "
              "threshold)",
    "corpus._id": "chunk id: `<source>_<doc>_<chunk>`, or `<freebase mid>_<chunk>` for the knowledge graph",
    "corpus.title": "always empty (chunks have no title)",
    "corpus.text": "chunk text",
    "source": "nq, triviaqa, ott, tat or kg, from the chunk id's prefix",
    "doc_id": "the chunk id without its last `_<chunk>` (mids may contain `_`)",
    "routing.query-id": "a `_id` of the queries config",
    "routing.dataset": "a source dataset: tat, triviaqa, ott, kg or nq (the keys of `dataset_score`, in file order)",
    "routing.score": "the query's `dataset_score` for that dataset: its graded relevance for routing (0 = none)",
}


def published_counts(path: str) -> PublishedCounts:
    """Queries per split as published (for qrels: distinct query ids). The corpus count ("3.2M chunks") is not
    published exactly by a source checked here, so it is not declared."""
    configs = ("records", "queries", "qrels")
    counts: dict[tuple[str, str | None], int] = {
        (config, split): count for config in configs for split, count in PUBLISHED_QUERIES.items()
    }
    return counts


def card_facts(path: str) -> CardFacts:
    """What the dataset card of mmRAG says."""
    hub = f"https://huggingface.co/datasets/{HUB_REPO_ID}/resolve/{HUB_REVISION}"
    source_files = [{"name": name, "url": f"{hub}/{name}", "bytes": QUERY_FILE_BYTES.get(split)}
                    for split, name in QUERY_FILES.items()]
    source_files.append({"name": CORPUS_FILE, "url": f"{hub}/{CORPUS_FILE}"})
    return CardFacts(
        family="mmrag",
        pretty_name="mmRAG",
        summary=(
            "mmRAG as configs `records` (the full query records), `queries`, `qrels` and `routing` (the "
            "`dataset_score` labels as query-id, dataset, score; splits `train`, `dev`, `test`) and `corpus` (split "
            "`corpus`: every chunk of processed_documents.json). mmRAG publishes "
            + " / ".join(f"{count:,}" for count in PUBLISHED_QUERIES.values())
            + " queries (train / dev / test) and about 3.2M chunks."
        ),
        license="apache-2.0",
        license_text="Apache License 2.0 (mmRAG repository LICENSE and hub card)",
        citations=[MMRAG_CITATION],
        source_files=source_files,
        known_defects=[],
        field_notes=FIELD_NOTES,
        tags=["mmrag"],
        homepage="https://github.com/nju-websoft/mmRAG",
        baselines_note=BASELINE_NOTE,
    )


PAPER = "Xu et al., mmRAG (arXiv:2505.11180), retrieval results on the test split"
PAPER_RETRIEVAL = {
    "BM25": {"NDCG@1": 0.531, "NDCG@3": 0.525, "NDCG@5": 0.534, "MAP@5": 0.345, "Hits@5": 2.725},
    "BGE": {"NDCG@5": 0.618},
}
"""The published figures transcribed so far (a metric left out of a row is not transcribed here, not zero)."""
PAPER_METRICS = ("NDCG@1", "NDCG@3", "NDCG@5", "MAP@1", "MAP@3", "MAP@5", "Hits@1", "Hits@3", "Hits@5")
"""What nju-websoft/mmRAG `mmrag_experiments/eval.py` computes with ranx (`ndcg@1`, `map@1`, `hits@1`, ...)."""
ROUTING_METRICS = ("NDCG@5", "Hits@1", "Hits@2", "Hits@3", "Hits@4", "Hits@5")
"""What nju-websoft/mmRAG `mmrag_experiments/exp/routing/eval.py` computes with ranx on `dataset_score`."""


def _paper_table() -> str:
    rows = ["| retriever | " + " | ".join(PAPER_METRICS) + " |", "|---" * (len(PAPER_METRICS) + 1) + "|"]
    for name, values in PAPER_RETRIEVAL.items():
        cells = [f"{values[m]:.3f}" if m in values else "—" for m in PAPER_METRICS]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


BASELINE_NOTE = (
    f"Published ({PAPER}; — = not transcribed here; Hits@k counts the relevant chunks in the top k, so it can "
    f"exceed 1):\n\n{_paper_table()}\n\n"
    "The authors score runs with ranx (nju-websoft/mmRAG, `mmrag_experiments/eval.py`) on the test split's graded "
    "`relevant_chunks`. `ragloaders eval mmrag` computes the same measures with ranx's definitions and tie order, "
    "beside BEIR's trec_eval set (`pip install 'ragloaders[eval]'`); `--routing` scores a ranking of the five "
    "source datasets per query against the `routing` config (NDCG@5, Hits@1-5, as "
    "`mmrag_experiments/exp/routing/eval.py`). ragloaders' own BM25 baseline (bm25s's Lucene variant, k1=0.9, "
    "b=0.4, Snowball English stemmer, Lucene's English stopwords, over title + text) is not the paper's BM25:"
    "\n\n```\nragloaders bm25 mmrag --out bm25.trec\nragloaders eval mmrag --run bm25.trec\n"
    "ragloaders eval mmrag --routing routing.jsonl\n```"
)

EVAL_CONVENTIONS = EvalConventions(
    notes=("mmRAG's qrels are graded 0/1/2: nDCG uses the grades as gains; the other measures count grade >= 1 as "
           "relevant (`--relevance-level 2` counts grade 2 only)",),
    authors_retrieval=AuthorsMeasures("mmRAG paper's measures (ranx, as nju-websoft/mmRAG mmrag_experiments/eval.py)",
                                      "mmRAG paper's measures", PAPER_METRICS),
    authors_routing=AuthorsMeasures(
        "mmRAG routing measures (ranx, as nju-websoft/mmRAG mmrag_experiments/exp/routing/eval.py)",
        "mmRAG routing measures", ROUTING_METRICS),
)


def eval_conventions(path: str) -> EvalConventions:
    """How runs on mmRAG are scored: graded qrels, the binary measures at grade >= 1."""
    return EVAL_CONVENTIONS
