"""What a report scored, named so that someone else can score the same: the `identity` block of `eval --json` and
the last lines of its text report.

It holds ragloaders' version; the source's form and what pins it: for a benchmark path the files read (name, bytes,
sha256: the archive, as the dataset card lists it), for a built folder the sha256 of its manifest (which lists every
file's sha256 as built), for a hub repository its id and the commit read, and for both the qrels scored against
named by their content; the split; the conventions that change a number
(relevance level, identical ids dropped or kept and how many); and the run file's name, size and sha256.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..api import builder, configs_of
from ..core.hub_repository import Repository
from ..core.output_target import MANIFEST
from ..core.source_files import file_digest
from ..core.version import VERSION
from .prepared_record import record_sources, recorded_sources

CATALOGUE, FOLDER, HUB = "benchmark path", "built folder", "hub repository"


def config_sources(path: str, config: str, *, data_dir: str | None, cache_dir: str | None) -> list[str]:
    """The local source files a config of the benchmark `path` reads (the archive itself for a zip); none for one
    whose builder does not list them."""
    try:
        return builder(path, config, data_dir=data_dir, cache_dir=cache_dir).source_files_read()
    except NotImplementedError:
        return []


def files_of(paths: Iterable[str], *, data_dir: str | None, cache_dir: str | None) -> list[dict[str, Any]]:
    """Each local source file that the configs of the benchmark `paths` read (the archive itself for a zip), once,
    with its size and sha256. A path's list is recorded (`prepared_record`) and read back while it holds."""
    where = {"data_dir": data_dir, "cache_dir": cache_dir}
    seen: dict[str, None] = {}
    for path in paths:
        read = recorded_sources(path, **where)
        if read is None:
            read = [file for config in configs_of(path) for file in config_sources(path, config, **where)]
            record_sources(path, read, **where)
        seen.update(dict.fromkeys(read))
    return [{"name": os.path.basename(file), "bytes": os.path.getsize(file), "sha256": file_digest(file, "sha256")}
            for file in seen]


def source_identity(shown: str, read: Iterable[str], repository: Repository | None, *, data_dir: str | None,
                    cache_dir: str | None, qrels: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `source` of the identity block: `shown` as the user named it, and what pins its content (`read`: the
    benchmark paths read, for a benchmark path; `repository`: the folder or hub repository opened). A folder's or
    repository's also holds `qrels` (`qrels_identity` of the qrels scored against): its files may have changed
    since the build or the download, and datasets' cache of a local file is keyed on its time."""
    if repository is None:
        return {"form": CATALOGUE, "path": shown, "files": files_of(read, data_dir=data_dir, cache_dir=cache_dir)}
    if repository.repo_id is not None:
        return {"form": HUB, "repo_id": repository.repo_id, "commit": repository.commit,
                "revision": repository.revision, "qrels": qrels}
    manifest = os.path.join(repository.folder or shown, MANIFEST)
    return {"form": FOLDER, "folder": shown,
            "manifest_sha256": file_digest(manifest, "sha256") if os.path.isfile(manifest) else None, "qrels": qrels}


def qrels_identity(qrels: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """The qrels a run was scored against, named by their content: the (query, document) pairs and the sha256 of
    their lines `query-id TAB corpus-id TAB grade LF` (UTF-8), in the order read (a pair given twice is one, with
    its last grade, as it was scored)."""
    digest = hashlib.sha256()
    pairs = 0
    for query_id, grades in qrels.items():
        pairs += len(grades)
        digest.update("".join(f"{query_id}\t{doc_id}\t{grade}\n" for doc_id, grade in grades.items())
                      .encode("utf-8", "surrogatepass"))
    return {"pairs": pairs, "sha256": digest.hexdigest()}


def run_identity(run: Any) -> dict[str, Any]:
    """The run file's name, size and sha256; `{"file": None}` for a run given in memory."""
    if not isinstance(run, (str, os.PathLike)):
        return {"file": None}
    path = os.fspath(run)
    return {"file": os.path.basename(path), "bytes": os.path.getsize(path), "sha256": file_digest(path, "sha256")}


def source_line(source: dict[str, Any]) -> str:
    """The `source` of an identity block in words: what was read and what pins it."""
    if source["form"] == CATALOGUE:
        pinned = "; ".join(f"{f['name']} {f['bytes']:,} bytes sha256 {f['sha256']}" for f in source["files"])
        return f"{source['path']} ({CATALOGUE}; {pinned or 'no source file listed'})"
    if source["form"] == HUB:
        asked = f", revision {source['revision']}" if source["revision"] else ""
        return f"{source['repo_id']} ({HUB} at commit {source['commit']}{asked}{_qrels_words(source['qrels'])})"
    digest = source["manifest_sha256"]
    pinned = f"manifest sha256 {digest}" if digest else "no ragloaders manifest"
    return f"{source['folder']} ({FOLDER}; {pinned}{_qrels_words(source['qrels'])})"


def _qrels_words(qrels: dict[str, Any] | None) -> str:
    return f"; qrels scored {qrels['pairs']:,} pairs sha256 {qrels['sha256']}" if qrels else ""


def file_line(what: str, file: dict[str, Any]) -> str:
    """A `run_identity` in words (`what`: run, predictions)."""
    return f"{what} {file['file']} {file['bytes']:,} bytes sha256 {file['sha256']}" if file["file"] else (
        f"{what} given in memory")


def identity_lines(identity: dict[str, Any]) -> list[str]:
    """The identity block as the text report's last lines."""
    conventions = identity["conventions"]
    return [f"scored: ragloaders {identity['ragloaders']}; {source_line(identity['source'])}",
            f"scored: split {identity['split']}; relevance level {conventions['relevance_level']}; identical ids "
            f"{conventions['identical_ids']}" + (f" ({conventions['identical_ids_dropped']} dropped)"
                                                 if conventions["identical_ids"] == "dropped" else "")
            + f"; {file_line('run', identity['run'])}"]


def answers_identity(source: dict[str, Any], splits: list[str], predictions: Any, *, tokenizer: Any,
                     judge: str | None) -> dict[str, Any]:
    """What CRAG answers were scored against: ragloaders' version, the source, the splits, the predictions file,
    the tokenizer file that cut them (each changes a figure) and the judge asked (`Judge.describe`: its model, its
    endpoint with any query value redacted, and its system prompt's sha256)."""
    return {"ragloaders": VERSION, "source": source, "splits": splits, "predictions": run_identity(predictions),
            "tokenizer": run_identity(tokenizer) if tokenizer else None, "judge": judge}


def answers_identity_lines(identity: dict[str, Any]) -> list[str]:
    """An `answers_identity` as the text report's last lines."""
    asked = f"judge {identity['judge']}" if identity["judge"] else "no judge (CRAG's rules only)"
    trimmed = f"; {file_line('tokenizer', identity['tokenizer'])}" if identity["tokenizer"] else ""
    return [f"scored: ragloaders {identity['ragloaders']}; {source_line(identity['source'])}",
            f"scored: splits {'+'.join(identity['splits'])}; {file_line('predictions', identity['predictions'])}"
            f"{trimmed}; {asked}"]


def identity(source: dict[str, Any], split: str, run: Any, *, relevance_level: int, ignore_identical_ids: bool,
             keep_identical_ids: bool, dropped: int) -> dict[str, Any]:
    """The whole identity block (see the module docstring)."""
    rule = "dropped" if ignore_identical_ids and not keep_identical_ids else (
        "kept (--keep-identical-ids)" if ignore_identical_ids else "kept (this benchmark's rule)")
    return {"ragloaders": VERSION, "source": source, "split": split,
            "conventions": {"relevance_level": relevance_level, "identical_ids": rule,
                            "identical_ids_dropped": dropped},
            "run": run_identity(run)}
