"""What mmRAG tells the dataset card and `ragloaders validate`: field notes and published counts."""

from __future__ import annotations

from ...core.facts import CardFacts, EvalConventions, PublishedCounts
from .catalogue import CORPUS_FILE, HUB_REPO_ID, HUB_REVISION, PUBLISHED_QUERIES, QUERY_FILE_BYTES, QUERY_FILES
from .citations import MMRAG_CITATION

FIELD_NOTES = {
    "records.id": "query id, as in the file (`<source dataset>_<n>`)",
    "records.query": "the question",
    "records.answer": "the answer exactly as in the file: a string, often the Python repr of a list, sometimes empty",
    "records.answers": "`answer` parsed into a list of strings (ast.literal_eval of a list literal; a plain string "
                       "gives [it]; \"\" gives []); a string that looks like a list but is not one is kept whole",
    "records.relevant_chunks": "every judged chunk with its grade (0, 1, 2), in file order",
    "records.ori_context": "ids of the documents the query was written from",
    "records.dataset_score": "per source, as in the file",
    "queries._id": "query id (`id` of `records`)",
    "queries.text": "the question (`query` of `records`)",
    "query-id": "a `_id` of the queries config",
    "corpus-id": "a chunk id (`_id` of the corpus config)",
    "score": "relevance grade 0, 1 or 2 (grade 0 kept)",
    "corpus-ids": "chunk ids in BM25 rank order (optional configs made by `ragloaders build --with`)",
    "corpus._id": "chunk id: `<source>_<doc>_<chunk>`, or `<freebase mid>_<chunk>` for the knowledge graph",
    "corpus.title": "always empty (chunks have no title)",
    "corpus.text": "chunk text",
    "source": "nq, triviaqa, ott, tat or kg, from the chunk id's prefix",
    "doc_id": "the chunk id without its last `_<chunk>` (mids may contain `_`)",
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
            "mmRAG as configs `records` (the full query records), `queries` and `qrels` (splits `train`, `dev`, "
            "`test`) and `corpus` (split `corpus`: every chunk of processed_documents.json). mmRAG publishes "
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


BASELINE_NOTE = (
    "No BM25 figure is published for mmRAG's chunk corpus. ragloaders' BM25 baseline (bm25s's Lucene variant, "
    "k1=0.9, b=0.4, Snowball English stemmer, Lucene's English stopwords, over title + text) and its trec_eval "
    "scoring give one (`pip install 'ragloaders[eval]'`; grades 0/1/2 are nDCG gains, the binary measures count "
    "grade >= 1):\n\n```\nragloaders bm25 mmrag --out bm25.trec\nragloaders eval mmrag --run bm25.trec\n```"
)

EVAL_CONVENTIONS = EvalConventions(notes=(
    "mmRAG's qrels are graded 0/1/2: nDCG uses the grades as gains; Recall, MAP, MRR and P count grade >= 1 as "
    "relevant (`--relevance-level 2` counts grade 2 only)",
))


def eval_conventions(path: str) -> EvalConventions:
    """How runs on mmRAG are scored: graded qrels, the binary measures at grade >= 1."""
    return EVAL_CONVENTIONS
