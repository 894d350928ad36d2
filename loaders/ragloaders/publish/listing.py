"""What `ragloaders list` says about each path: its size and whether the user must supply its files."""

from __future__ import annotations

from ..benchmarks import BENCHMARKS
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
    for a benchmark with several; `+` when a file's size is not published; a file several paths share is said so)."""
    parts = []
    docs = benchmark.published_counts(path).get(("corpus", "corpus"))
    if docs:
        parts.append(f"{docs:,} docs")
    files = official_files(benchmark, path)
    sizes = [f.get("bytes") for f in files]
    if any(sizes):
        known = human_bytes(sum(size for size in sizes if size))
        releases = benchmark.releases(path)
        of = f" ({releases[0].name})" if releases else ""
        sharing = sorted({other for f in files for other in paths_sharing(f)} - {path})
        shared = f", one {files[0]['name']} shared with {len(sharing)} other paths" if sharing else ""
        parts.append(f"{known}{'+' if None in sizes else ''} download{of}{shared}")
    return "; ".join(parts) or "size not published"


def official_files(benchmark: Benchmark, path: str) -> list[dict]:
    """The official files of a path (its newest release's, for a benchmark with several)."""
    releases = benchmark.releases(path)
    return list(releases[0].files) if releases else list(benchmark.card_facts(path).source_files)


def paths_sharing(file: dict) -> list[str]:
    """Every path whose official files include `file` (same url): the 12 cqadupstack forums share one zip."""
    if not file.get("url"):
        return []
    return [path for benchmark in BENCHMARKS for path in benchmark.builders
            if any(f.get("url") == file["url"] for f in official_files(benchmark, path))]
