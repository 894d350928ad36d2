"""The report of `ragloaders validate`, typed, and its rendering for a terminal (the checks are in `validate`).

The types are TypedDicts: the report is JSON as it is (`validate --json`, and the dataset card's integrity
section, read it by these keys).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypedDict

from ..core.output_target import MANIFEST
from ..core.plural import counted
from ..core.preview import preview


class _FindingKeys(TypedDict):

    check: str
    """One of validate.CHECKS."""
    config: str
    split: str | None
    count: int
    """How many offending ids (or columns, or rows off the published count): always complete."""
    ids: list[Any]
    """The first SAMPLE_IDS of them (pairs as "query -> doc"; columns for `column_type`)."""
    message: str


class Finding(_FindingKeys, total=False):
    """One check that failed in one config (and split; None: all splits)."""

    note: str
    """The declared known upstream defect that covers it (warnings only)."""


class _SplitKeys(TypedDict):
    config: str
    split: str
    rows: int


class SplitFacts(_SplitKeys, total=False):
    """What was measured on one (config, split); the optional keys depend on the config's role."""

    published: int | None
    compared: bool
    duplicate_ids: int
    empty_texts: int
    empty_text_ids: list[str]
    queries: int
    docs: int
    missing_queries: int
    missing_docs: int
    duplicate_pairs: int
    score_histogram: dict[str, int]
    duplicate_keys: int


class _ReportKeys(TypedDict):

    path: str
    ok: bool
    errors: list[Finding]
    warnings: list[Finding]
    unobserved_defects: list[dict[str, Any]]
    shared_ids: int | None
    splits: list[SplitFacts]
    source: dict[str, Any] | None


class Report(_ReportKeys, total=False):
    """The whole report (see validate.integrity for what each key holds)."""

    form: str
    """Only in a repository's report: "folder" (a local folder) or "repository" (a hub repository)."""
    built_from: str | None
    """Only in a repository's report: the benchmark path its ragloaders card names, if any."""
    validated_as: str | None
    """Only in a repository's report: the benchmark path `--as` named, whose declared defects and keys applied."""
    commit: str
    """Only in a hub repository's report: the commit id read (the `--revision` asked for, resolved)."""
    recorded_files: dict[str, Any]
    """Only in the report of a local folder (or a hub repository's snapshot) holding ragloaders' record of its files:
    {"record": "build" | "repository", "verified": files whose sha256 and size are the recorded ones, "altered",
    "missing": how many are not (each an `altered_files` error)}; `"record": None` (and zeros) for a local folder
    whose card says ragloaders built it but that holds no such record: its files were not checked."""


def finding(check: str, config: str, split: str | None, ids: list[Any], count: int, message: str) -> Finding:
    return {"check": check, "config": config, "split": split, "count": count, "ids": ids, "message": message}


def describe(found: Finding) -> str:
    """One finding in one line: check, where, message, the ids listed."""
    where = found["config"] + (f"/{found['split']}" if found["split"] else "")
    ids = f": {', '.join(map(preview, found['ids']))}" if found["ids"] else ""
    more = " ..." if len(found["ids"]) < found["count"] and found["ids"] else ""
    return f"{found['check']} in {where}: {found['message']}{ids}{more}"


COUNTED = (("docs", "doc"), ("missing_queries", "dangling query id"), ("missing_docs", "dangling corpus id"),
           ("duplicate_ids", "duplicate id"), ("duplicate_pairs", "duplicate pair"),
           ("duplicate_keys", "repeated key"), ("empty_texts", "empty text"))
"""The counts of a split's facts a terminal report shows, in this order, with what they count (one of it)."""


def render_text(report: Report) -> Iterable[str]:
    """The report as lines for a terminal."""
    yield report["path"] + (f" at commit {report['commit']}" if report.get("commit") else "")
    for facts in report["splits"]:
        line = f"  {facts['config']}/{facts['split']}: {counted(facts['rows'], 'row', grouped=True)}"
        if "queries" in facts:
            line += f", {counted(facts['queries'], 'query', 'queries', grouped=True)}"
        if facts.get("published") is not None:
            line += f" (published {facts['published']:,}{'' if facts.get('compared', True) else ', not compared'})"
        for count, what in COUNTED:
            if count in facts:  # every count the check made, 0 included
                line += f", {counted(facts[count], what, grouped=True)}"
        if "score_histogram" in facts:
            line += f", scores {facts['score_histogram']}"
        yield line
    if report["shared_ids"] is not None:
        yield f"  query ids that are also corpus ids: {report['shared_ids']:,}"
    yield from source_lines(report.get("source"), report.get("built_from"), report.get("validated_as"),
                            report.get("form", "repository"))
    if (recorded := report.get("recorded_files")) is not None and recorded["record"] is None:
        yield (f"files: not checked: the card says ragloaders built this folder, but its record of the files "
               f"({MANIFEST}) is not beside them (a copy of `folder/*` leaves it out; build it again to check them)")
    elif recorded is not None:
        record = "the build's record" if recorded["record"] == "build" else "the repository's record"
        yield (f"files: {counted(recorded['verified'], 'file')} verified against {record}"
               + (f", {recorded['altered'] + recorded['missing']:,} not (below)"
                  if recorded["altered"] + recorded["missing"] else ""))
    for found in report["errors"]:
        yield f"ERROR {describe(found)}"
    for found in report["warnings"]:
        yield f"WARNING {describe(found)} [known upstream defect: {found['note']}]"
    for defect in report["unobserved_defects"]:
        yield f"note: declared defect not observed: {defect['check']} in {defect['config']} ({defect['note']})"
    yield "OK" if report["ok"] else f"FAILED: {len(report['errors'])} structural error(s)"


def source_lines(source: dict[str, Any] | None, built_from_path: str | None = None,
                 validated_as: str | None = None, form: str = "repository") -> Iterable[str]:
    """What was read and whether the published counts were compared, as terminal lines; `form`: what a source
    without files read is, a local "folder" or a hub "repository"."""
    if source is None:
        by = (f" built by ragloaders from {built_from_path}" if built_from_path else "") + (
            f"{',' if built_from_path else ''} validated as {validated_as} (--as: its declared upstream defects "
            "apply)" if validated_as
            else " (its declared upstream defects apply)" if built_from_path else "")
        yield f"source: a {form}{by}; no source files read: published counts not compared"
        return
    for f in source["files"]:
        yield f"source: {f['name']} ({f['bytes']:,} bytes; {', '.join(f['configs'])}): {f['note']}"
    if source.get("release"):
        yield f"release: {source['release']}"
    reasons: dict[str, list[str]] = {}
    for config, why in source["not_compared"].items():
        reasons.setdefault(why, []).append(config)
    for why, configs in reasons.items():
        yield f"note: {', '.join(configs)}: counts not compared with the published ones ({why})"
