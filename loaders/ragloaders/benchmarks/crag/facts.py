"""What CRAG tells the dataset card and `ragloaders validate`: field notes, known defects, published counts."""

from __future__ import annotations

from ...core.facts import CardFacts, EvalConventions, KnownDefect, PublishedCounts, Release
from .catalogue import HOMEPAGE, LICENSE, RELEASES
from .citations import CITATION

FIELD_NOTES = {
    "interaction_id": "the question's unique id",
    "query_time": "when the question was asked (its answer may depend on it), as in the source",
    "domain": "finance, sports, music, movie or open",
    "question_type": "simple, simple_w_condition, comparison, aggregation, set, multi-hop, post-processing or "
                     "false_premise",
    "static_or_dynamic": "how fast the answer changes: static, slow-changing, fast-changing or real-time",
    "query": "the question",
    "answer": "the ground-truth answer, as in the source",
    "page_snippet": "the search engine's snippet of the page",
    "records.split": "the source's `split`: 0 = validation, 1 = public test",
    "alt_ans": "other valid answers (the example file's `alternative_answers` string, parsed)",
    "popularity": "head / torso / tail (v5 only; null in v4 and the example file)",
    "search_results": "the pages returned for the query, in the source's order (see `rank`)",
    "queries._id": "interaction_id",
    "queries.text": "the question",
    "corpus._id": "first 20 hex digits of sha256 over the page's url and html, each length-prefixed and a null told "
                  "apart from \"\" (so two different pages never share an id): the same page has the same id in "
                  "every build",
    "corpus.title": "page_name",
    "corpus.text": "text extracted from the HTML (Resiliparse, whitespace-normalised)",
    "corpus.url": "page_url, as in the source",
    "corpus.html": "page_result, the full HTML as in the source (may be empty)",
    "last_modified": "page_last_modified as in the source (may be empty or start with a space)",
    "query-id": "interaction_id of the question",
    "corpus-id": "`_id` of the page in `corpus`",
    "rank": "1-based position of the page in the question's search_results (what that order is: the summary above)",
    "corpus-ids": "`_id`s of the question's search_results pages in their order (for reranking; what that order is: "
                  "the summary above); a page listed twice keeps both positions, so an id may appear twice",
}
PAGE_ORDER = {
    "task_1_and_2": "the file's order, not a search rank: CRAG's task 1&2 pages are 5 \"randomly selected from the "
                    "top-10\" pages of the search (CRAG's dataset documentation), so `rank` and `top_ranked` keep "
                    "the order the file lists them in",
    "task_3": "the search's order: task 3's up to 50 pages are the search results as ranked",
}
"""What the order of a question's pages (`search_results.rank`, `top_ranked`) is, per task."""
CARD_NOTES = (
    "Some `page_result` values are empty (`text` is then empty too); `page_last_modified` is often empty or starts "
    "with a space; answers include the strings \"nan\", \"invalid question\" and \"i don't know\".",
)


def published_counts(path: str) -> PublishedCounts:
    """(config, split or None for all) -> the record count CRAG publishes (task 1&2 only; for `ragloaders validate`)."""
    records = next((r.records for r in RELEASES if f"crag/{r.task}" == path and r.records), None)
    return {("queries", None): records} if records else {}


def releases(path: str) -> tuple[Release, ...]:
    """Each release of a task with its files and its record count (the example file's 10 records are its own)."""
    return tuple(
        Release(release.name, tuple({"name": d.url.rsplit("/", 1)[-1], "url": d.url, "bytes": d.size,
                                     **({"md5": d.md5} if d.md5 else {})} for d in release.downloads()),
                {(config, None): release.records for config in ("records", "queries")} if release.records else {})
        for release in RELEASES if f"crag/{release.task}" == path
    )


KNOWN_DEFECTS = (
    KnownDefect("duplicate_pairs", "search_results", "CRAG often lists the same page twice among one question's "
                "search results: both are kept in `records`, `search_results` and `top_ranked`, at their own ranks; "
                "`corpus` holds the page once."),
)


def known_defects(path: str) -> tuple[KnownDefect, ...]:
    """Upstream facts that `ragloaders validate` reports as warnings, not errors."""
    return KNOWN_DEFECTS


def card_facts(path: str) -> CardFacts:
    """What the dataset card of a CRAG path says."""
    task = path.split("/", 1)[-1]
    releases = [r for r in RELEASES if r.task == task]
    pages = "5 web pages" if task == "task_1_and_2" else "up to 50 web pages"
    published = [f"{r.name}: {r.records:,}" for r in releases if r.records]
    summary = (
        f"CRAG {task.replace('_', ' ')}: questions with {pages} each, as configs `records` (every field of every "
        "record), `queries`, `corpus` (distinct pages), `search_results` and `top_ranked` (each question's pages as "
        f"corpus ids, in {PAGE_ORDER[task]}), split into `validation` and `test` by "
        "each record's `split` (`corpus`: one split, `corpus`). The section \"This build\" says which release was "
        "read and which splits it has."
        + (f" Records published per release: {', '.join(published)}." if published else "")
    )
    source_files = [
        {"name": f"{download.url.rsplit('/', 1)[-1]} ({release.name})", "url": download.url, "bytes": download.size,
         **({"md5": download.md5} if download.md5 else {})}
        for release in releases for download in release.downloads()
    ]
    return CardFacts(
        family="crag",
        pretty_name=f"CRAG {task}",
        summary=summary,
        license="cc-by-nc-4.0",
        license_text=LICENSE,
        citations=[CITATION],
        source_files=source_files,
        known_defects=list(CARD_NOTES),
        field_notes=FIELD_NOTES,
        tags=["crag"],
        homepage=HOMEPAGE,
    )


EVAL_CONVENTIONS = EvalConventions(
    unlabelled="CRAG has no relevance labels for a run (its search_results are the pages a search returned, not "
               "judgements); its answers are scored with `eval --predictions FILE`, and `ragloaders bm25` still ranks "
               "its pages",
)


def eval_conventions(path: str) -> EvalConventions:
    """CRAG runs cannot be scored: it has no relevance labels."""
    return EVAL_CONVENTIONS
