"""What the card of a `beir-format` build says: the data is the user's own, with nothing published about it."""

from __future__ import annotations

from ...core.facts import BEIR_CAPPED_RECALL, CardFacts, EvalConventions, KnownDefect

PATH = "beir-format"

FIELD_NOTES = {
    "corpus._id": "document id, a string byte for byte as in corpus.jsonl",
    "corpus.title": "document title (null when the line has none)",
    "corpus.text": "document text",
    "queries._id": "query id, a string byte for byte as in queries.jsonl",
    "queries.text": "query text",
    "metadata": "the line's `metadata` object as JSON text (null when the line has none)",
    "query-id": "a `_id` of the queries config",
    "corpus-id": "a `_id` of the corpus config",
    "score": "relevance grade as in the qrels file",
    "corpus-ids": "`_id`s of the corpus config in BM25 rank order (optional configs made by `ragloaders build --with`)",
    "scores": "the BM25 score of each of `corpus-ids`, aligned with it and non-increasing (float32; to fuse or "
              "threshold)",
}


SHARED_IDS = KnownDefect("shared_ids", "queries", "query ids that are also corpus ids: BEIR's evaluator drops a "
                         "retrieved document whose id is its query's (ignore_identical_ids=True), and so does "
                         "`ragloaders eval` unless --keep-identical-ids")
"""A query id that is also a corpus id is a warning in `validate`, not a structural error: BEIR's layout allows it."""
EVAL_CONVENTIONS = EvalConventions(ignore_identical_ids=True, extra_metrics=BEIR_CAPPED_RECALL)
"""Data in BEIR's layout is scored as BEIR's EvaluateRetrieval scores it."""


def known_defects(path: str) -> tuple[KnownDefect, ...]:
    """What `validate` reports as a warning in a folder in BEIR's layout: shared query and corpus ids."""
    return (SHARED_IDS,)


def eval_conventions(path: str) -> EvalConventions:
    return EVAL_CONVENTIONS


def card_facts(path: str) -> CardFacts:
    """The card of a folder in BEIR's layout: no publisher, so no counts, no official files and licence `unknown`
    unless whoever builds it states one (`--license`, `--pretty-name`)."""
    return CardFacts(
        family=PATH,
        pretty_name="Retrieval data in BEIR's layout",
        summary=("A retrieval dataset as three configs: `corpus` (split `corpus`), `queries` (split `queries`, every "
                 "line of queries.jsonl) and `qrels` (one split per qrels file). `metadata` objects are kept as JSON "
                 "text."),
        license="unknown",
        license_text="Not stated by whoever built this repository from their own files",
        obtain="the builder's own files in BEIR's layout, read from a local folder (`data_dir`)",
        field_notes=FIELD_NOTES,
        tags=[PATH],
        own_data=True,
    )
