"""What `ragloaders list` says about each path: its size and whether the user must supply its files."""

from __future__ import annotations

from ..core.facts import Benchmark

UNITS = ((1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "kB"))


def human_bytes(size: int) -> str:
    """`2.4 MB`, `739.3 MB`, `5.3 GB` (powers of 1024), or `812 B`."""
    for scale, unit in UNITS:
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def supplied_by_user(benchmark: Benchmark, path: str) -> str:
    """How to obtain the files of a path whose files cannot be downloaded (bioasq, signal1m, trec-news, robust04,
    beir-format); "" for every path ragloaders downloads itself."""
    facts = benchmark.card_facts(path)
    return facts.obtain if not facts.source_files and facts.obtain else ""


def path_size(benchmark: Benchmark, path: str) -> str:
    """The published size of a path: corpus documents, and the bytes of its official files (the newest release's,
    for a benchmark with several; `+` when a file's size is not published)."""
    parts = []
    docs = benchmark.published_counts(path).get(("corpus", "corpus"))
    if docs:
        parts.append(f"{docs:,} docs")
    releases = benchmark.releases(path)
    files = list(releases[0].files) if releases else benchmark.card_facts(path).source_files
    sizes = [f.get("bytes") for f in files]
    if any(sizes):
        known = human_bytes(sum(size for size in sizes if size))
        of = f" ({releases[0].name})" if releases else ""
        parts.append(f"{known}{'+' if None in sizes else ''} download{of}")
    return "; ".join(parts) or "size not published"
