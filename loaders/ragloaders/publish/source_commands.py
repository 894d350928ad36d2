"""`validate` and `push` on any SOURCE: a benchmark path (built from its files), a group path (each member), a folder
ragloaders built, or a hub dataset repository in ragloaders' or mteb's layout (`core.hub_repository`)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable

from ..api import group_members, is_benchmark_path
from ..core.errors import MissingSourceError, SourceError, UsageError
from ..core.hub_repository import (
    HubError,
    check_revision,
    hub_offline,
    open_repository,
    probe_hub,
    refuse_revision,
)
from ..core.output_target import MANIFEST
from ..core.plural import counted
from ..core.preview import previews
from .manifest import verify
from .push import PushResult, check_repo_id, describe, folder_held, plan, upload
from .validate import integrity, integrity_of_repository
from .validate_report import render_text


def validate_source(source: str, *, data_dir: str | None = None, cache_dir: str | None = None,
                    as_json: bool = False, as_path: str | None = None, revision: str | None = None,
                    out: Callable[[str], None] = print) -> int:
    """Print the integrity report of a SOURCE (every member's, one after the other, for a group path; a JSON list
    with `as_json`); return 0 when no report has a structural error, else 1. `as_path` (`--as`, normalised): the
    benchmark path whose declared defects and keys apply to a built folder or repository. `revision`: the commit,
    branch or tag of a hub repository to validate; the report names the commit read (`commit`)."""
    if is_benchmark_path(source):
        if as_path is not None:
            raise UsageError(f"{source} is a benchmark path: --as is for a built folder or a hub repository")
        refuse_revision(source, revision, "a benchmark path (built from its source files)")
        paths = group_members(source) or (source,)
        reports = [integrity(path, data_dir=data_dir, cache_dir=cache_dir) for path in paths]
    else:
        if data_dir:
            raise UsageError(f"{source}: --data-dir is for a benchmark path, not for a built folder or repository")
        repository = open_repository(source, revision).local()
        report = integrity_of_repository(repository.folder, cache_dir=cache_dir, as_path=as_path)
        reports = [{**report, "path": source, **({"commit": repository.commit} if repository.commit else {})}]
    if as_json:
        out(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2, ensure_ascii=False))
    else:
        out("\n".join(line for report in reports for line in render_text(report)))
    return 0 if all(report["ok"] for report in reports) else 1


def require_token_and_hub(repo_id: str) -> None:
    """Before any build or upload: a token is there, and the hub answers (within seconds, one line if not)."""
    from huggingface_hub import get_token

    check_repo_id(repo_id)
    if hub_offline():
        raise HubError(f"{repo_id}: HF_HUB_OFFLINE is set, so nothing can be pushed; unset it to push")
    if not get_token():
        raise UsageError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (nothing was built or uploaded)")
    probe_hub(repo_id, what="push")


def push_folder(folder: str, repo_id: str, *, private: bool = False, revision: str | None = None,
                commit_message: str | None = None, dry_run: bool = False, overwrite_foreign: bool = False,
                log: Callable[[str], None] = print) -> PushResult:
    """Upload a folder ragloaders built, as it is, to the dataset repo `repo_id`: only once every file its manifest
    lists verifies (size and sha256) and the build was complete; only the files it lists are uploaded.
    `overwrite_foreign` as in `push.upload`."""
    check_repo_id(repo_id)
    check_revision(repo_id, revision)
    if not os.path.isdir(folder):
        raise MissingSourceError(f"{folder}: no folder {folder} in {os.getcwd()}: push takes a benchmark path "
                                 "(`ragloaders list`) or a folder `ragloaders build` wrote, not a hub repository")
    with contextlib.nullcontext() if dry_run else folder_held(folder):
        return _push_verified(folder, repo_id, private=private, revision=revision, commit_message=commit_message,
                              dry_run=dry_run, overwrite_foreign=overwrite_foreign, log=log)


def _push_verified(folder: str, repo_id: str, *, private: bool, revision: str | None, commit_message: str | None,
                   dry_run: bool, overwrite_foreign: bool, log: Callable[[str], None]) -> PushResult:
    verdict = verify(folder)
    manifest = verdict.manifest
    if manifest is None:
        raise SourceError(folder, f"no ragloaders manifest ({MANIFEST} is missing, or is not one ragloaders could "
                                  "have written), so what to upload cannot be verified; build it with "
                                  "`ragloaders build PATH --out FOLDER`, or push the benchmark path")
    if not manifest.complete or verdict.altered or verdict.missing:
        changed = verdict.altered + verdict.missing
        raise SourceError(folder, f"does not verify against its manifest ({len(verdict.altered)} changed, "
                                  f"{len(verdict.missing)} missing files, e.g. {previews(changed, 3) or '-'}"
                                  f"{'' if manifest.complete else '; the build was not complete'}); build it again")
    if verdict.linked:
        raise SourceError(folder, f"{counted(len(verdict.linked), 'file')} the manifest lists "
                                  f"{'has' if len(verdict.linked) == 1 else 'have'} other names too (hard links: "
                                  f"{previews(verdict.linked, 3)}); a hard link may be another file of yours, "
                                  "even one outside the folder, so nothing is uploaded; build it again (a build "
                                  "writes new files)")
    if not dry_run:
        require_token_and_hub(repo_id)
    push_plan = plan(folder, verdict=verdict)
    if dry_run:
        log(f"dry run: would upload {folder} as it is to {repo_id}" + (f" (branch {revision})" if revision else ""))
        for line in describe(push_plan):
            log(line)
        return PushResult(push_plan)
    return upload(push_plan, repo_id, private=private, revision=revision, commit_message=commit_message,
                  overwrite_foreign=overwrite_foreign, log=log)


def is_folder_source(source: str) -> bool:
    """Whether `push` publishes `source` as a built folder (anything not a benchmark path)."""
    return not is_benchmark_path(source)
