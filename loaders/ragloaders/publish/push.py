"""`ragloaders push`: build a path into a staging folder and upload it to a hub dataset repository.

Uploads go in several commits (at most MAX_COMMIT_FILES files / MAX_COMMIT_BYTES bytes each), Parquet first and
README.md last, so the card appears only once its data is there. A push that was interrupted resumes when run
again: the staged folder is reused while the build's identity is unchanged (else rebuilt; Parquet output is
deterministic), and files whose content the repository already has are skipped. Parquet files of an older build
that this build no longer has are deleted in the last commit, so the `configs:` globs never mix two builds.
The token comes from HF_TOKEN or the stored login and is never printed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..api import builder, configs_of
from ..core.sources import file_digest

MAX_COMMIT_FILES = 50
MAX_COMMIT_BYTES = 2 << 30
STAGING_ENV = "RAGLOADERS_STAGING"
CARD = "README.md"


@dataclass
class StagedFile:
    path_in_repo: str
    local_path: str
    size: int

    def sha256(self) -> str:
        return file_digest(self.local_path, "sha256")

    def git_sha1(self) -> str:
        """The file's git blob id (sha1 of `blob <size>\\0` + content), as the hub reports for non-LFS files."""
        return file_digest(self.local_path, "sha1", prefix=f"blob {self.size}\0".encode())


@dataclass
class PushPlan:
    staged_dir: str
    files: list[StagedFile]
    commits: list[list[StagedFile]] = field(default_factory=list)


@dataclass
class PushResult:
    plan: PushPlan
    uploaded: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)


def default_staging_dir(path: str, repo_id: str) -> str:
    root = os.environ.get(STAGING_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "ragloaders", "staging")
    return os.path.join(root, repo_id.replace("/", "--"), path.strip("/").replace("/", "--"))


def build_identity(path: str, data_dir: str | None, cache_dir: str | None, repo_id: str) -> dict:
    """What a staged folder was built from: the builders' cache hashes cover the code and the source files."""
    hashes = {config: builder(path, config, data_dir=data_dir, cache_dir=cache_dir).hash for config in configs_of(path)}
    return {"path": path.strip("/"), "repo_id": repo_id, "builders": hashes}


def stage(path: str, staged_dir: str, *, repo_id: str, data_dir: str | None = None, cache_dir: str | None = None,
          num_proc: int | None = None, log: Callable[[str], None] = print) -> None:
    """Build `path` into `staged_dir`, unless it already holds a complete build with the same identity."""
    from .build import build_folder

    marker = staged_dir.rstrip("/") + ".build.json"
    identity = build_identity(path, data_dir, cache_dir, repo_id)
    if os.path.isdir(staged_dir) and os.path.isfile(marker):
        with open(marker, encoding="utf-8") as f:
            if json.load(f) == identity:
                log(f"reusing the staged build in {staged_dir}")
                return
    build_folder(path, staged_dir, data_dir=data_dir, cache_dir=cache_dir, num_proc=num_proc, repo_id=repo_id)
    with open(marker, "w", encoding="utf-8") as f:
        json.dump(identity, f)


def staged_files(staged_dir: str) -> list[StagedFile]:
    files = []
    for folder, _, names in os.walk(staged_dir):
        for name in names:
            local = os.path.join(folder, name)
            files.append(StagedFile(os.path.relpath(local, staged_dir).replace(os.sep, "/"), local,
                                    os.path.getsize(local)))
    return sorted(files, key=lambda f: (f.path_in_repo == CARD, f.path_in_repo))


def batches(files: list[StagedFile], max_files: int, max_bytes: int) -> Iterator[list[StagedFile]]:
    """Consecutive groups of at most `max_files` files and `max_bytes` bytes (a bigger file goes alone)."""
    batch: list[StagedFile] = []
    for staged in files:
        if batch and (len(batch) >= max_files or sum(f.size for f in batch) + staged.size > max_bytes):
            yield batch
            batch = []
        batch.append(staged)
    if batch:
        yield batch


def plan(staged_dir: str, *, max_files: int = MAX_COMMIT_FILES, max_bytes: int = MAX_COMMIT_BYTES) -> PushPlan:
    files = staged_files(staged_dir)
    data = [f for f in files if f.path_in_repo != CARD]
    commits = list(batches(data, max_files, max_bytes)) + [[f for f in files if f.path_in_repo == CARD]]
    return PushPlan(staged_dir, files, [c for c in commits if c])


def describe(push_plan: PushPlan) -> Iterator[str]:
    files, commits = push_plan.files, push_plan.commits
    size = sum(f.size for f in files)
    yield f"{len(files)} files, {size:,} bytes, {len(commits)} commits, from {push_plan.staged_dir}"
    for number, commit in enumerate(push_plan.commits, start=1):
        for staged in commit:
            yield f"  commit {number}: {staged.path_in_repo} ({staged.size:,} bytes)"


def _same_content(staged: StagedFile, remote) -> bool:
    if remote is None:
        return False
    if remote.lfs is not None:
        return remote.lfs.sha256 == staged.sha256()
    return remote.blob_id == staged.git_sha1()


def upload(push_plan: PushPlan, repo_id: str, *, private: bool = False, revision: str | None = None,
           commit_message: str | None = None, log: Callable[[str], None] = print) -> PushResult:
    """Create the repo (and branch) if needed, then commit the plan's batches, skipping what the repo already has."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, get_token

    if not get_token():
        raise ValueError("no Hugging Face token: set HF_TOKEN or run `hf auth login`")
    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    if revision:
        api.create_branch(repo_id, repo_type="dataset", branch=revision, exist_ok=True)
    remote = {entry.path: entry for entry in api.list_repo_tree(repo_id, repo_type="dataset", revision=revision,
                                                                 recursive=True) if hasattr(entry, "blob_id")}
    result = PushResult(push_plan)
    local = {f.path_in_repo for f in push_plan.files}
    stale = sorted(p for p in remote if p.endswith(".parquet") and p not in local)
    message = commit_message or f"Upload {repo_id} built by ragloaders"
    for number, commit in enumerate(push_plan.commits, start=1):
        changed = [f for f in commit if not _same_content(f, remote.get(f.path_in_repo))]
        result.unchanged += [f.path_in_repo for f in commit if f not in changed]
        last = number == len(push_plan.commits)
        operations = [CommitOperationAdd(f.path_in_repo, f.local_path) for f in changed]
        if last:
            operations += [CommitOperationDelete(p) for p in stale]
        if not operations:
            log(f"commit {number}/{len(push_plan.commits)}: already in {repo_id}, skipped")
            continue
        info = api.create_commit(repo_id, operations, commit_message=f"{message} ({number}/{len(push_plan.commits)})",
                                 repo_type="dataset", revision=revision)
        result.commits.append(info.oid)
        result.uploaded += [f.path_in_repo for f in changed]
        result.deleted += stale if last else []
        log(f"commit {number}/{len(push_plan.commits)}: {len(changed)} files uploaded"
            + (f", {len(stale)} stale files deleted" if last and stale else ""))
    return result


def push(path: str, repo_id: str, *, data_dir: str | None = None, cache_dir: str | None = None,
         num_proc: int | None = None, private: bool = False, revision: str | None = None,
         commit_message: str | None = None, staging_dir: str | None = None, dry_run: bool = False,
         max_files: int | None = None, max_bytes: int | None = None,
         log: Callable[[str], None] = print) -> PushResult:
    """Stage `path` and upload it to the dataset repo `repo_id`; `dry_run` stops after staging and tells the plan."""
    staged_dir = staging_dir or default_staging_dir(path, repo_id)
    stage(path, staged_dir, repo_id=repo_id, data_dir=data_dir, cache_dir=cache_dir, num_proc=num_proc, log=log)
    push_plan = plan(staged_dir, max_files=max_files or MAX_COMMIT_FILES, max_bytes=max_bytes or MAX_COMMIT_BYTES)
    if dry_run:
        log(f"dry run: would upload to {repo_id}" + (f" (branch {revision})" if revision else ""))
        for line in describe(push_plan):
            log(line)
        return PushResult(push_plan)
    return upload(push_plan, repo_id, private=private, revision=revision, commit_message=commit_message, log=log)
