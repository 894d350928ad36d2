"""What `crag/mock_kg` tells the dataset card and `ragloaders validate`: per-config facts, keys, defects."""

from __future__ import annotations

from ...core.facts import CardFacts, KnownDefect, PublishedCounts
from ...core.source_files import mirror_base
from .catalogue import SOURCE_FILES, SPLIT, TABLES

PATH = "crag/mock_kg"
BASE_URL = "https://github.com/facebookresearch/CRAG/raw/refs/heads/main"
BASE_URL_ENV = "RAGLOADERS_CRAG_BASE_URL"
"""Set to a mirror laid out like the CRAG repository (`mock_api/cragkg/<file>`); sizes are still checked. The same
variable as the CRAG tasks': one mirror of the repository serves both."""
LICENSE = "CC BY-NC 4.0"
HOMEPAGE = "https://github.com/facebookresearch/CRAG"
CITATION = """@article{yang2024crag,
  title={{CRAG} -- Comprehensive {RAG} Benchmark},
  author={Xiao Yang and Kai Sun and Hao Xin and Yushi Sun and Nikita Bhalla and Xiangsen Chen and Sajal Choudhary and
          Rongze Daniel Gui and Ziran Will Jiang and Ziyu Jiang and Lingkun Kong and Brian Moran and Jiaqi Wang and
          Yifan Ethan Xu and An Yan and Chenyu Yang and Eting Yuan and Hanwen Zha and Nan Tang and Lei Chen and
          Nicolas Scheffer and Yue Liu and Nirav Shah and Rakesh Wanga and Anuj Kumar and Wen-tau Yih and
          Xin Luna Dong},
  journal={arXiv preprint arXiv:2406.04744},
  year={2024},
  url={https://arxiv.org/abs/2406.04744}
}"""
"""The mock KGs belong to CRAG's release: its paper is the one to cite (the same text as the CRAG tasks' card)."""

FIELD_NOTES = {
    "finance_company.Name": "company name, as the CSV has it (the key of /finance/get_ticker_by_name)",
    "finance_company.Symbol": "ticker, as the CSV has it (pandas, which the server uses, would read 'NA' as NaN)",
    "finance_company.index": "the CSV's first, unnamed column (the index pandas wrote)",
    "ticker": "the SqliteDict key",
    "prices": "one entry per trading day (finance_price) or minute (finance_detailed_price), in the source's order; "
              "`date` is the source's key, e.g. '2023-02-28 00:00:00 EST'",
    "dividends": "one entry per dividend, in the source's order",
    "info": "the yfinance `info` object as JSON text",
    "movie_movies.key": "the JSON object's key: the normalised title the API searches over",
    "movie_persons.key": "the JSON object's key: the normalised name the API searches over",
    "movie_years.year": "the year, as the JSON object's key (a string)",
    "other": "the record's fields that the mock API code does not name, as a JSON object (null: none)",
    "record_json": "the whole record as JSON text, with what the typed columns lose: the order of its keys, a key "
                   "written null vs one absent, 7 vs 7.0 (the parsed value written again by Python's json.dumps, "
                   "not the file's bytes); `json.loads` of it is the record the mock API serves",
    "summary_structured": "the infobox as a JSON object (its keys vary per entity)",
    "members": "the band's members as in the source (a set in the source is sorted)",
    "entries": "the songs at this rank, one per chart date, as in the source's list",
    "charts": "one entry per chart date; `row` is the source's row of strings",
    "GF": "JSON text: the source mixes integers and strings in this column",
    "GA": "JSON text: the source mixes integers and strings in this column",
}
REPEATED_KEY = (
    "The mock API keeps the last of two equal keys (a CSV name given twice, an entity in both open/kg.0 and kg.1): "
    "every row is kept here, and a key that repeats is a warning (of `build` and `validate` alike), not an error, "
    "since the server itself answers it with one value. A JSON object that names a key twice is refused, as every "
    "JSON file ragloaders reads.")
CARD_NOTES = (
    REPEATED_KEY,
    "`sports_soccer_team_matches` holds rows whose `league` is null; the mock API leaves them out.",
    "NaN, pandas' missing value, is null here, as the mock API's JSON shows it.",
    "nba.sqlite is assumed to hold the 16 tables of the Kaggle \"NBA Database\" it matches; a table of the file that "
    "has no config is reported by the build, and a config whose table is missing fails naming the file's tables.",
    "A table with no rows in the source (nba.sqlite's `team_info_common` may be one) is left out of the hub folder: "
    "`datasets` cannot load a split with no rows.",
)


def keys(path: str) -> dict[str, tuple[str, ...]]:
    """config -> the column(s) the mock API looks rows up by (`validate` reports values that repeat)."""
    return {table.config: table.key for table in TABLES}


def published_counts(path: str) -> PublishedCounts:
    """CRAG publishes no row counts for the mock knowledge graphs."""
    return {}


def known_defects(path: str) -> tuple[KnownDefect, ...]:
    """A key that repeats in a table is a warning, wherever it is found (`build`, `validate` of the files or of a
    built folder): the mock API answers it with one value (the last), as the official server does, so the files
    are as CRAG serves them, not broken. Its absence is not noted."""
    return tuple(KnownDefect("duplicate_keys", table.config, REPEATED_KEY, may_be_absent=True)
                 for table in TABLES if table.key)


def config_table(written: list[str]) -> str:
    """What each table of `written` (the configs a build wrote) holds, the mock API endpoint it replaces, and a
    DuckDB query that does the same: only those tables, so a table left out is not listed."""
    rows = ["| config | holds | replaces | example (DuckDB over the Parquet) |", "|---|---|---|---|"]
    for table in (t for t in TABLES if t.config in written):
        parquet = f"'{table.config}/{SPLIT}-*.parquet'"
        example = table.example.format(parquet=parquet) if table.example else ""
        endpoints = ", ".join(f"`{e}`" for e in table.endpoints) or "— (not served by the API)"
        cells = [f"`{table.config}`", table.holds, endpoints, f"`{example}`" if example else ""]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def card_facts(path: str) -> CardFacts:
    """What the dataset card of `crag/mock_kg` says."""
    base = mirror_base(BASE_URL, BASE_URL_ENV)
    summary = (
        "CRAG's mock knowledge graphs: the tables of the files of `mock_api/cragkg/` (finance, movie, music, open, "
        f"sports; nba.sqlite's among them), each a config with one split, `{SPLIT}`; a table with no rows in the "
        "files read is left out (This build names it). What each table of this build holds, the mock API endpoint "
        "it replaces, and a query that does the same:"
    )
    source_files = [{"name": f.relpath, "url": f.url(base), "bytes": f.size, "sha256": f.sha256}
                    for f in SOURCE_FILES.values()]
    return CardFacts(
        family="crag_mock_kg",
        pretty_name="CRAG mock knowledge graphs",
        summary=summary,
        license="cc-by-nc-4.0",
        license_text=LICENSE,
        citations=[CITATION],
        source_files=source_files,
        known_defects=list(CARD_NOTES),
        field_notes=FIELD_NOTES,
        tags=["crag", "knowledge-graph"],
        homepage=HOMEPAGE,
        config_table=config_table,
    )

