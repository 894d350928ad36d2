"""`ragloaders push`: build a path into a staging folder and upload it to a hub dataset repository.

Uploads go in several commits (at most MAX_COMMIT_FILES files / MAX_COMMIT_BYTES bytes each), Parquet first and
README.md last, so the card appears only once its data is there. A push that was interrupted resumes when run
again: the staged folder is reused while the build's identity (in its manifest) is unchanged and every file it
lists still has its sha256 (else it is rebuilt, not trusted; Parquet output is deterministic), and files whose
content the repository already has are skipped. Only the files the manifest lists are uploaded. Parquet files of
an older build that this build no longer has are deleted in the last commit, so the `configs:` globs never mix two
builds -- and only when the staged folder was verified against its manifest in this run.
The staging folder follows the rules of output_folder.py (`--staging-dir` like `--out`); the default one lies
under the staging root, named from a validated repo id and path, so it cannot lead outside that root.
The token comes from HF_TOKEN or the stored login and is never printed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..api import configs_of
from ..core.sources import file_digest
from .build import build_identity
from .output_folder import MANIFEST, Manifest, OutputFolderError, Verdict, verify

MAX_COMMIT_FILES = 50
MAX_COMMIT_BYTES = 2 << 30
STAGING_ENV = "RAGLOADERS_STAGING"
CARD = "README.md"
_NAME_PART = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")
"""One part of a repo id (the hub's rules): letters, digits, '-', '_', '.'; no leading or trailing '-' or '.' (so
never '.' or '..'); 96 characters at most."""


@dataclass
class StagedFile:
    path_in_repo: str
    local_path: str
    size: int
    verified_sha256: str | None = None
    """The sha256 the folder's manifest lists, checked against the file in this run (then not read again)."""

    def sha256(self) -> str:
        return self.verified_sha256 or file_digest(self.local_path, "sha256")

    def git_sha1(self) -> str:
        """The file's git blob id (sha1 of `blob <size>\\0` + content), as the hub reports for non-LFS files."""
        return file_digest(self.local_path, "sha1", prefix=f"blob {self.size}\0".encode())


@dataclass
class PushPlan:
    staged_dir: str
    files: list[StagedFile]
    commits: list[list[StagedFile]] = field(default_factory=list)
    verified: bool = False
    """The files were checked against the folder's manifest (sha256) in this run: only then may a push delete."""


@dataclass
class PushResult:
    plan: PushPlan
    uploaded: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)


def check_repo_id(repo_id: str) -> str:
    """`owner/name` or `name` of legal characters (the hub's rules), else a ValueError saying what is wrong."""
    parts = repo_id.split("/") if isinstance(repo_id, str) else []
    if not 1 <= len(parts) <= 2 or not all(_NAME_PART.fullmatch(part) for part in parts):
        raise ValueError(f"--repo-id {repo_id!r}: expected OWNER/NAME or NAME, each of letters, digits, '-', '_' "
                         "and '.', not starting or ending with '-' or '.', 96 characters at most")
    if "--" in repo_id or ".." in repo_id or repo_id.endswith(".git"):
        raise ValueError(f"--repo-id {repo_id!r}: '--' and '..' are not allowed, nor a name ending in '.git'")
    return repo_id


def staging_root() -> str:
    return os.environ.get(STAGING_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "ragloaders", "staging")


def default_staging_dir(path: str, repo_id: str) -> str:
    """`<staging root>/<owner>--<name>/<path with '/' as '--'>`: both parts are checked, so the folder lies
    inside the root (and distinct repo ids or paths never share one: neither may contain '--')."""
    check_repo_id(repo_id)
    parts = path.strip("/").split("/")
    if not all(_NAME_PART.fullmatch(part) for part in parts) or "--" in path or ".." in path:
        raise ValueError(f"{path!r}: not a benchmark path; `ragloaders list` shows them")
    root = os.path.realpath(staging_root())
    staged = os.path.join(root, repo_id.replace("/", "--"), "--".join(parts))
    if os.path.commonpath([root, os.path.realpath(staged)]) != root or os.path.realpath(staged) == root:
        raise ValueError(f"the staging folder of {repo_id} and {path} would lie outside {root}")
    return staged


def stage(path: str, staged_dir: str, *, repo_id: str, data_dir: str | None = None, cache_dir: str | None = None,
          num_proc: int | None = None, into_existing: bool = False, log: Callable[[str], None] = print) -> Verdict:
    """Build `path` into `staged_dir`, unless it holds a complete build with the same identity whose files all
    verify against its manifest; return the verification of the folder made in this run."""
    from .build import build_folder

    identity = build_identity(path, data_dir, cache_dir, repo_id)
    if os.path.isdir(staged_dir):
        verdict = verify(staged_dir)
        legacy = staged_dir.rstrip("/") + ".build.json"  # what ragloaders 0.2 and older wrote beside the folder
        if verdict.manifest is None and os.path.isfile(legacy) and not into_existing:
            raise OutputFolderError(f"--staging-dir {staged_dir} was staged by an older ragloaders without a "
                                    f"manifest, so its files cannot be verified; delete it and {legacy}, then push "
                                    "again")
        if _trusted(verdict, identity):
            log(f"reusing the staged build in {staged_dir} (every file checked against its manifest)")
            return verdict
        if verdict.manifest is not None and (verdict.altered or verdict.missing):
            log(f"the staged build in {staged_dir} does not match its manifest "
                f"({len(verdict.altered)} changed, {len(verdict.missing)} missing files): building it again")
    build_folder(path, staged_dir, data_dir=data_dir, cache_dir=cache_dir, num_proc=num_proc, repo_id=repo_id,
                 into_existing=into_existing, altered="set_aside", option="--staging-dir")
    verdict = verify(staged_dir)
    if not _trusted(verdict, identity):
        raise OutputFolderError(f"--staging-dir {staged_dir}: the folder just built does not verify against its "
                                "manifest (was it changed during the build?)")
    return verdict


def _trusted(verdict: Verdict, identity: dict) -> bool:
    manifest = verdict.manifest
    return (manifest is not None and manifest.complete and manifest.identity == identity and bool(manifest.files)
            and not verdict.altered and not verdict.missing)


def staged_files(staged_dir: str, manifest: Manifest | None = None) -> list[StagedFile]:
    """The files to upload: those `manifest` lists (the folder's other entries are not ragloaders'), with the
    sha256 it lists (pass a manifest only once the folder was verified against it), or, with no manifest, every
    file of the folder but a manifest."""
    if manifest is not None:
        names = list(manifest.files)
    else:
        names = [os.path.relpath(os.path.join(folder, name), staged_dir).replace(os.sep, "/")
                 for folder, _, files in os.walk(staged_dir) for name in files]
    files = [StagedFile(name, os.path.join(staged_dir, name), os.path.getsize(os.path.join(staged_dir, name)),
                        manifest.files[name].sha256 if manifest is not None else None)
             for name in names if name != MANIFEST]
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


def plan(staged_dir: str, *, max_files: int = MAX_COMMIT_FILES, max_bytes: int = MAX_COMMIT_BYTES,
         verdict: Verdict | None = None) -> PushPlan:
    """The commits of a push; `verdict` (from `stage`/`verify` in this run) makes the plan verified: its files
    are then the manifest's, and only a verified plan may delete files in the repository."""
    verified = verdict is not None and verdict.manifest is not None and not verdict.altered and not verdict.missing
    files = staged_files(staged_dir, verdict.manifest if verified else None)
    data = [f for f in files if f.path_in_repo != CARD]
    commits = list(batches(data, max_files, max_bytes)) + [[f for f in files if f.path_in_repo == CARD]]
    return PushPlan(staged_dir, files, [c for c in commits if c], verified=verified)


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
    if stale and not push_plan.verified:
        log(f"not deleting {len(stale)} Parquet files of {repo_id} that the staged folder lacks: it was not "
            "verified against a manifest in this run")
        stale = []
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
         max_files: int | None = None, max_bytes: int | None = None, into_existing: bool = False,
         log: Callable[[str], None] = print) -> PushResult:
    """Stage `path` and upload it to the dataset repo `repo_id`; `dry_run` stops after staging and tells the plan."""
    check_repo_id(repo_id)
    configs_of(path)  # an unknown path is refused before any folder is made
    staged_dir = staging_dir or default_staging_dir(path, repo_id)
    verdict = stage(path, staged_dir, repo_id=repo_id, data_dir=data_dir, cache_dir=cache_dir, num_proc=num_proc,
                    into_existing=into_existing, log=log)
    push_plan = plan(staged_dir, max_files=max_files or MAX_COMMIT_FILES, max_bytes=max_bytes or MAX_COMMIT_BYTES,
                     verdict=verdict)
    if dry_run:
        log(f"dry run: would upload to {repo_id}" + (f" (branch {revision})" if revision else ""))
        for line in describe(push_plan):
            log(line)
        return PushResult(push_plan)
    return upload(push_plan, repo_id, private=private, revision=revision, commit_message=commit_message, log=log)
