"""What BEIR tells the dataset card and `ragloaders validate`: known defects, published counts, field notes."""

from __future__ import annotations

from dataclasses import replace

from ...core.facts import BEIR_CAPPED_RECALL, CardFacts, EvalConventions, KnownDefect, PublishedCounts
from .catalogue import BASE_URL, DATASETS, PUBLISHED_QUERY_SPLIT
from .citations import BEIR_CITATION

KNOWN_DEFECTS: dict[str, tuple[KnownDefect, ...]] = {
    "beir/arguana": (
        KnownDefect("missing_docs", "qrels", "a few qrels point at docs missing from corpus.jsonl, e.g. "
                    "test-free-speech-debate-yfsdfkhbwu-con03b (beir-cellar/beir#101, #172)", split="test"),
        KnownDefect("shared_ids", "queries", "queries are also corpus passages; BEIR's evaluation ignores a query "
                    "retrieving itself (beir-cellar/beir#72)"),
    ),
    "beir/quora": (
        KnownDefect("shared_ids", "queries", "questions are also corpus entries; BEIR's evaluation ignores a query "
                    "retrieving itself (beir-cellar/beir#72)"),
    ),
}
"""Upstream defects `ragloaders validate` reports as warnings."""


def published_counts(path: str) -> PublishedCounts:
    """BEIR's published figures: distinct test (msmarco: dev) query ids in the qrels; corpus documents."""
    dataset = DATASETS[path]
    counts: dict[tuple[str, str | None], int] = {}
    if dataset.test_queries is not None:
        counts[("qrels", PUBLISHED_QUERY_SPLIT.get(path, "test"))] = dataset.test_queries
    if dataset.corpus_docs is not None:
        counts[("corpus", "corpus")] = dataset.corpus_docs
    return counts


def known_defects(path: str) -> tuple[KnownDefect, ...]:
    """The upstream defects of a BEIR path that `ragloaders validate` reports as warnings."""
    return KNOWN_DEFECTS.get(path, ())


CARD_NOTES: dict[str, tuple[str, ...]] = {
    "beir/nq": ("BEIR's table lists train and test for nq, but nq.zip holds only test qrels.",),
}
"""Upstream facts for the dataset card that no validation check finds (those are in KNOWN_DEFECTS)."""

FIELD_NOTES = {
    "corpus._id": "document id, a string byte for byte as in corpus.jsonl",
    "corpus.title": "document title (may be empty)",
    "corpus.text": "document text",
    "queries._id": "query id, a string byte for byte as in queries.jsonl",
    "queries.text": "query text",
    "metadata": "the line's `metadata` object as JSON text (its keys vary per line)",
    **{name: "from the line's `metadata` object" for name in (
        "url", "pubmed_id", "stance", "authors", "year", "cited_by", "references", "tags", "query", "narrative",
        "description")},
    "query-id": "a `_id` of the queries config",
    "corpus-id": "a `_id` of the corpus config",
    "score": "relevance grade as in the qrels file (0 and negative grades kept)",
    "corpus-ids": "`_id`s of the corpus config in BM25 rank order (optional configs made by `ragloaders build --with`)",
    "scores": "the BM25 score of each of `corpus-ids`, aligned with it and non-increasing (float32; to fuse or "
              "threshold)",
}


def card_facts(path: str) -> CardFacts:
    """What the dataset card of a BEIR path says."""
    dataset = DATASETS[path]
    family = dataset.name.split("/")[0]
    published = [f"{count:,} {what}" for count, what in
                 ((dataset.test_queries, f"{PUBLISHED_QUERY_SPLIT.get(path, 'test')} queries"),
                  (dataset.corpus_docs, "corpus documents")) if count is not None]
    summary = (
        f"BEIR's `{dataset.name}` retrieval dataset as configs `corpus` (split `corpus`), `queries` (split "
        f"`queries`, every line of queries.jsonl) and `qrels` (splits {', '.join(f'`{s}`' for s in dataset.splits)}). "
        f"Metadata fields are columns of their own. BEIR publishes {' and '.join(published) or 'no counts'}."
    )
    source_files = []
    if dataset.md5:
        source_files.append({"name": f"{dataset.archive}.zip", "url": f"{BASE_URL}/{dataset.archive}.zip",
                             "md5": dataset.md5, "bytes": dataset.zip_bytes})
    return CardFacts(
        family="beir",
        pretty_name=f"BEIR {dataset.name}",
        summary=summary,
        license=dataset.license_id,
        license_text=dataset.license,
        license_name=f"{family}-license" if dataset.license_id == "other" else None,
        license_link=dataset.license_link or None,
        citations=[BEIR_CITATION, dataset.citation],
        source_files=source_files,
        obtain=dataset.obtain,
        known_defects=list(CARD_NOTES.get(path, ())),
        field_notes=FIELD_NOTES,
        tags=[family],
        homepage="https://github.com/beir-cellar/beir",
        baselines={row: {"BM25 flat": flat, "BM25 multifield": multifield}
                   for row, (flat, multifield) in PUBLISHED_BM25_NDCG10.items()},
        baselines_note=bm25_note(path),
    )


CQADUPSTACK = "beir/cqadupstack"
BEIR_SCORING = EvalConventions(ignore_identical_ids=True, extra_metrics=BEIR_CAPPED_RECALL)
"""How BEIR's EvaluateRetrieval scores every dataset: a retrieved document whose id is its query's dropped (its
default, ignore_identical_ids=True; Pyserini's `--remove-query`), capped recall beside trec_eval's measures."""
_SELF_MATCH_NOTE = ("its queries are also corpus entries, so without dropping identical ids a query retrieves "
                    "itself first (beir-cellar/beir#72, PR #91)",)
EVAL_CONVENTIONS: dict[str, EvalConventions] = {
    "beir/arguana": replace(BEIR_SCORING, notes=_SELF_MATCH_NOTE),
    "beir/quora": replace(BEIR_SCORING, notes=_SELF_MATCH_NOTE),
    CQADUPSTACK: replace(
        BEIR_SCORING,
        mean_over=tuple(path for path in DATASETS if path.startswith(CQADUPSTACK + "/")),
        notes=("cqadupstack is the mean of its 12 forums' scores, as BEIR and Pyserini report it; the run's ids "
               "are `<forum>/<id>` (what `ragloaders bm25 beir/cqadupstack` writes)",),
    ),
}
"""Paths whose runs BEIR scores with more than BEIR_SCORING (every other path: BEIR_SCORING)."""


def eval_conventions(path: str) -> EvalConventions:
    """How BEIR scores runs on `path` (also the group path beir/cqadupstack)."""
    return EVAL_CONVENTIONS.get(path, BEIR_SCORING)


PUBLISHED_BM25_SOURCE = (
    "Pyserini's BEIR regressions (castorini/pyserini, pyserini/2cr/beir.yaml): BM25 nDCG@10 on the test split, "
    "`flat` (title and text in one field) and `multifield` (title and text as separate fields) Lucene indexes"
)
PUBLISHED_BM25_NDCG10: dict[str, tuple[float, float]] = {
    "beir/trec-covid": (0.5947, 0.6559),
    "beir/nfcorpus": (0.3218, 0.3254),
    "beir/nq": (0.3055, 0.3285),
    "beir/hotpotqa": (0.6330, 0.6027),
    "beir/fiqa": (0.2361, 0.2361),
    "beir/arguana": (0.3970, 0.4142),
    "beir/webis-touche2020": (0.4422, 0.3673),
    CQADUPSTACK: (0.3021, 0.2987),
    "beir/quora": (0.7886, 0.7886),
    "beir/dbpedia-entity": (0.3180, 0.3128),
    "beir/scidocs": (0.1490, 0.1581),
    "beir/fever": (0.6513, 0.7530),
    "beir/climate-fever": (0.1651, 0.2129),
    "beir/scifact": (0.6789, 0.6647),
    "beir/bioasq": (0.5225, 0.4646),
    "beir/signal1m": (0.3304, 0.3304),
    "beir/trec-news": (0.3952, 0.3977),
    "beir/robust04": (0.4070, 0.4070),
    "beir/cqadupstack/android": (0.3801, 0.3709),
    "beir/cqadupstack/english": (0.3453, 0.3321),
    "beir/cqadupstack/gaming": (0.4822, 0.4418),
    "beir/cqadupstack/gis": (0.2901, 0.2904),
    "beir/cqadupstack/mathematica": (0.2015, 0.2046),
    "beir/cqadupstack/physics": (0.3214, 0.3248),
    "beir/cqadupstack/programmers": (0.2802, 0.2963),
    "beir/cqadupstack/stats": (0.2711, 0.2790),
    "beir/cqadupstack/tex": (0.2244, 0.2086),
    "beir/cqadupstack/unix": (0.2749, 0.2788),
    "beir/cqadupstack/webmasters": (0.3059, 0.3008),
    "beir/cqadupstack/wordpress": (0.2483, 0.2562),
}
"""BM25 nDCG@10 (flat, multifield) from PUBLISHED_BM25_SOURCE (castorini/pyserini at commit 02c4e7fa): the 14
public BEIR datasets (cqadupstack: the mean of its 12 forums), the four a user brings (bioasq, signal1m, trec-news,
robust04) and each cqadupstack forum. Both conditions run with `--remove-query`; multifield with
`--fields contents=1.0 title=1.0`. The BEIR paper's Elasticsearch figure for nfcorpus is 0.325."""


def bm25_note(path: str) -> str:
    """The source of PUBLISHED_BM25_NDCG10 and the two commands that reproduce a path's figure."""
    scored = CQADUPSTACK if path.startswith(CQADUPSTACK + "/") else path
    return (
        f"From {PUBLISHED_BM25_SOURCE}; the BEIR paper's Elasticsearch BM25 gives 0.325 on nfcorpus. "
        "Reproduce a row with ragloaders' BM25 baseline (bm25s's Lucene variant, k1=0.9, b=0.4, "
        "Snowball English stemmer, Lucene's English stopwords) and its trec_eval scoring "
        "(`pip install 'ragloaders[eval]'`): `BM25 flat` indexes title + text as one field, `BM25 multifield` "
        "(`--multifield`) title and text as two fields, each with its own statistics, scores summed:\n\n"
        f"```\nragloaders bm25 {scored} --out bm25.trec                # flat\n"
        f"ragloaders bm25 {scored} --multifield --out bm25-mf.trec  # multifield\n"
        f"ragloaders eval {scored} --run bm25.trec --metrics ndcg@10\n```"
        "\n\nOn the official nfcorpus.zip these commands measured 0.3204 flat (Pyserini: 0.3218) and 0.3237 "
        "multifield (Pyserini: 0.3254)."
    )
