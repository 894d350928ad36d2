"""What a build read, and which published release those files are.

The rule (`ragloaders validate` and the dataset card follow it): a benchmark publishes figures for a release, a set
of official files. Each file read is looked up among the official files by its name:

- **official**: same name and byte size, and the same md5 / sha256 where one is published. The counts of its
  release are compared with the built counts (CRAG's example file: 10 records; v4 and v5: 2,706).
- **differs**: an official name with another size or checksum: a sample, a cut, or another release. The counts of
  every config that read it are reported beside the built ones, **not compared**, and the report says why.
- **unlisted** (no official file of that name, e.g. the files of an extracted zip) or **unverified** (the official
  file has no published size or checksum): nothing tells which release it is, so the counts are compared, as for
  an official file (a mismatch is then an error: a damaged or partial source must not pass as complete).
- **own**: the path reads the user's own files (`CardFacts.own_data`, beir-format): no publisher, so no official
  file, no release and no published count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..core.facts import Benchmark, PublishedCounts, Release
from ..core.source_files import file_digests

OFFICIAL = "official"
"""The name of the one release of a benchmark that declares no releases (its card's official files)."""
OWN_FILE = "a file of your own data (no publisher, so no release)"
"""The note on each file a path of the user's own data read (`validate`'s source lines, the card's table)."""


def files_read(builders: Mapping[str, Any]) -> tuple[dict[str, list[str]], str | None]:
    """({local path: configs that read it}, release the builders say they read) for prepared builders
    ({config: builder}); a builder that cannot say (`source_files_read` not implemented) adds nothing."""
    read: dict[str, list[str]] = {}
    release = None
    for config, builder in builders.items():
        try:
            paths = builder.source_files_read()
        except NotImplementedError:
            continue
        for path in paths:
            read.setdefault(path, []).append(config)
        release = release or builder.source_release()
    return read, release


def releases_of(benchmark: Benchmark, path: str, default_counts: PublishedCounts) -> tuple[Release, ...]:
    """The path's published releases (as `benchmark` declares them); without declared ones, one release of the
    card's official files."""
    declared = benchmark.releases(path)
    if declared:
        return tuple(declared)
    return (Release(OFFICIAL, tuple(benchmark.card_facts(path).source_files), dict(default_counts)),)


def _identify(name: str, size: int, entries: list[tuple[Release, dict]], sums: dict[str, str]) -> dict:
    if not entries:
        return {"status": "unlisted", "release": None, "note": "not an official file name: its release is unknown"}
    for release, entry in entries:
        checks = [(key, entry[key]) for key in ("bytes", "md5", "sha256") if entry.get(key) is not None]
        actual = {"bytes": size, **sums}
        if all(actual[key] == value for key, value in checks):
            if not checks:
                return {"status": "unverified", "release": release.name, "official": entry,
                        "note": "the official file has no published size or checksum"}
            verified = " and ".join(key if key != "bytes" else "size" for key, _ in checks)
            return {"status": "official", "release": release.name, "official": entry,
                    "note": f"the official file{_of(release.name)} ({verified} match)"}
    release, entry = entries[0]
    if entry.get("bytes") is not None and entry["bytes"] != size:
        difference = f"{size:,} bytes; the official {name} is {entry['bytes']:,} bytes"
    else:
        algorithm = next(key for key in ("md5", "sha256") if entry.get(key) and sums.get(key) != entry[key])
        difference = f"{algorithm} {sums[algorithm]}; the official {name} has {entry[algorithm]}"
    return {"status": "differs", "release": None, "official": entry, "difference": difference,
            "note": f"not the published file ({difference}): a sample, a cut or another release"}


def _names(location: str, official_name: str | None) -> bool:
    """Whether the file at `location` has the official file's name: its base name, or its path ending in the official
    relative path (crag/mock_kg's `finance/company_name.dict`)."""
    if not official_name:
        return False
    return os.path.basename(location) == official_name or location.replace(os.sep, "/").endswith("/" + official_name)


def _of(release: str) -> str:
    return "" if release == OFFICIAL else f" of release `{release}`"


def source_report(benchmark: Benchmark, path: str, read: dict[str, list[str]], release: str | None,
                  default_counts: PublishedCounts, *, sha256: bool) -> dict:
    """What was read for `path` (of `benchmark`) and what it is, as a JSON-able dict:

        {"files": [{"name", "path", "bytes", "configs", "status", "release", "note", ["sha256"], ["md5"],
                    ["official"], ["difference"]}],  # status: official | differs | unlisted | unverified | own
         "release": str | None,            # the release identified (or that the builder picked)
         "published": {"config|split": n}, # the figures of that release ("split" empty: all splits)
         "compared": [config, ...],        # configs whose counts are compared with `published`
         "not_compared": {config: why}}    # configs whose counts are shown but not compared
    `sha256`: hash every file (a card records it); otherwise only where a checksum must be compared.
    """
    if benchmark.card_facts(path).own_data:
        files = [{"name": os.path.basename(location), "path": location, "bytes": os.path.getsize(location),
                  **file_digests(location, ["sha256"] if sha256 else []), "configs": configs, "status": "own",
                  "release": None, "note": OWN_FILE} for location, configs in read.items()]
        return {"files": files, "release": None, "published": {}, "compared": [], "not_compared": {}}
    releases = releases_of(benchmark, path, default_counts)
    candidates = [r for r in releases if release in (None, r.name)] or list(releases)
    files = []
    for location, configs in read.items():
        name = os.path.basename(location)
        size = os.path.getsize(location)
        entries = [(r, entry) for r in candidates for entry in r.files if _names(location, entry.get("name"))]
        wanted = sorted({key for _, entry in entries for key in ("md5", "sha256") if entry.get(key)}
                        | ({"sha256"} if sha256 else set()))
        sums = file_digests(location, wanted)
        files.append({"name": name, "path": location, "bytes": size, **sums, "configs": configs,
                      **_identify(name, size, entries, sums)})
    identified = {f["release"] for f in files if f["status"] == "official"}
    chosen = next((r for r in candidates if r.name in identified), None) if len(identified) == 1 else None
    if chosen is None and len(candidates) == 1:
        chosen = candidates[0]
    counts = dict(chosen.counts) if chosen else {}
    configs = {config for _, config_list in read.items() for config in config_list} | {c for c, _ in counts}
    not_compared = {}
    for config in sorted(configs):
        differing = [f for f in files if config in f["configs"] and f["status"] == "differs"]
        if differing:
            not_compared[config] = f"{differing[0]['name']}: {differing[0]['note']}"
        elif chosen is None:
            not_compared[config] = "the files read match no single published release"
    published = dict(counts) if counts else dict(candidates[0].counts)
    return {
        "files": files,
        "release": chosen.name if chosen and chosen.name != OFFICIAL and (identified or release) else release,
        "published": {f"{config}|{split or ''}": n for (config, split), n in published.items()},
        "compared": sorted(config for config in configs if config not in not_compared),
        "not_compared": not_compared,
    }


def published_of(source: dict) -> PublishedCounts:
    """The `published` figures of a source report as (config, split or None) -> count."""
    pairs = (key.split("|", 1) for key in source["published"])
    return {(config, split or None): source["published"][f"{config}|{split}"] for config, split in pairs}
