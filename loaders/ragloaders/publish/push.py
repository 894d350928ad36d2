"""`ragloaders push`: build a path into a staging folder and upload it to a hub dataset repository.

Uploads go in several commits (at most MAX_COMMIT_FILES files / MAX_COMMIT_BYTES bytes each), Parquet first and
README.md last, so the card appears only once its data is there. A push that was interrupted resumes when run
again: the staged folder is reused while the build's identity (in its manifest) is unchanged and every file it
lists still has its sha256 (else it is rebuilt, not trusted; Parquet output is deterministic), and files whose
content the repository already has are skipped. Only the files the manifest lists are uploaded.

Two steps, separable: `stage` + `plan` verify a staged folder against its manifest; `upload` sends a plan. What
`upload` may do in the repository:

- **Its record.** The repository holds HUB_MANIFEST (`.ragloaders-manifest.json` at its root, a different format
  from a folder's): every file ragloaders published there, with sha256, git blob id and size. Each commit that
  adds files writes it too, recording them in the same commit, so an interrupted push leaves no unrecorded file.
- **Deletes** only files the record lists that still hold what was published (by the hub's sha256 or blob id)
  and the new build no longer has, in the last commit, so the `configs:` globs never mix two builds -- and only
  when the staged folder was verified against its manifest in this run. Nothing else is ever deleted; other
  Parquet files are left and named in one line.
- **Overwrites** a file only when the record lists it unchanged or it already holds the same bytes. Any other file
  at a path the push writes (the repository's own card, a file changed since it was pushed, a HUB_MANIFEST that is
  not ragloaders') stops the push before its first commit, naming the files, unless `overwrite_foreign`
  (`--overwrite-foreign`); a file so replaced is ragloaders' from then on.

The staging folder follows the rules of output_folder.py (`--staging-dir` like `--out`); the default one lies
under the staging root, named from a validated repo id and path, so it cannot lead outside that root.
The token comes from HF_TOKEN or the stored login and is never printed.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..api import configs_of
from ..core.deep_folders import walk
from ..core.errors import UsageError
from ..core.hub_repository import (
    COMMIT_ID,
    PUSH_REMEDIES,
    REPO_ID_PART,
    HubError,
    check_revision,
    repo_id_problem,
)
from ..core.output_target import OutputFolderError
from ..core.plural import counted
from ..core.preview import one_line, preview, previews
from ..core.source_files import file_digest
from ..core.user_cache import user_cache_dir
from .build import build_identity
from .cards import CardOptions
from .hub_manifest import (
    HUB_MANIFEST,
    MAX_HUB_MANIFEST_BYTES,
    Published,
    hub_manifest_bytes,
    parse_hub_manifest,
)
from .manifest import MANIFEST, Manifest, Verdict, verify
from .target_lock import TargetLock

MAX_COMMIT_FILES = 50
MAX_COMMIT_BYTES = 2 << 30
STAGING_ENV = "RAGLOADERS_STAGING"
CARD = "README.md"
_NAME_PART = REPO_ID_PART  # each part of a benchmark path, as of a repo id
"""One part of a repo id (the hub's rules): letters, digits, '-', '_', '.'; no leading or trailing '-' or '.' (so
never '.' or '..'); 96 characters at most."""


@dataclass
class StagedFile:
    path_in_repo: str
    local_path: str
    size: int
    verified_sha256: str | None = None
    """The sha256 the folder's manifest lists, checked against the file in this run (then not read again)."""
    blob_id: str | None = field(default=None, repr=False)

    def sha256(self) -> str:
        return self.verified_sha256 or file_digest(self.local_path, "sha256")

    def git_sha1(self) -> str:
        """The file's git blob id (sha1 of `blob <size>\\0` + content), as the hub reports for non-LFS files."""
        if self.blob_id is None:
            self.blob_id = file_digest(self.local_path, "sha1", prefix=f"blob {self.size}\0".encode())
        return self.blob_id


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
    left: list[str] = field(default_factory=list)
    """Files of the plan left as they were: someone else changed them in the repository during the push."""


def check_repo_id(repo_id: str) -> str:
    """`owner/name` or `name` of legal characters (the hub's rules), else a ValueError saying what is wrong."""
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise UsageError(f"--repo-id {preview(repo_id)}: {problem}")
    return repo_id


def staging_root() -> str:
    return os.environ.get(STAGING_ENV) or user_cache_dir("staging")


def default_staging_dir(path: str, repo_id: str) -> str:
    """`<staging root>/<owner>--<name>/<path with '/' as '--'>`: both parts are checked, so the folder lies
    inside the root (and distinct repo ids or paths never share one: neither may contain '--')."""
    check_repo_id(repo_id)
    parts = path.split("/")
    if not all(_NAME_PART.fullmatch(part) for part in parts) or "--" in path or ".." in path:
        raise UsageError(f"{preview(path)}: not a benchmark path; `ragloaders list` shows them")
    root = os.path.realpath(staging_root())
    staged = os.path.join(root, repo_id.replace("/", "--"), "--".join(parts))
    if os.path.commonpath([root, os.path.realpath(staged)]) != root or os.path.realpath(staged) == root:
        raise ValueError(f"the staging folder of {repo_id} and {path} would lie outside {root}")
    return staged


def stage(path: str, staged_dir: str, *, repo_id: str, data_dir: str | None = None, cache_dir: str | None = None,
          num_proc: int | None = None, into_existing: bool = False, card: CardOptions | None = None,
          derived: Derived | None = None, log: Callable[[str], None] = print) -> Verdict:
    """Build `path` into `staged_dir`, unless it holds a complete build with the same identity whose files all
    verify against its manifest; return the verification of the folder made in this run. `card`: what the builder
    of their own data (beir-format) states on its card; `derived`: the configs `--with` makes from the data, called
    only when the folder is built (so a reused staged build does not rank again)."""
    from .build import build_folder

    identity = build_identity(path, data_dir, cache_dir, repo_id, card, derived=derived.names if derived else None)
    if os.path.isdir(staged_dir):
        verdict = verify(staged_dir)
        legacy = staged_dir.rstrip("/") + ".build.json"  # written beside it before manifests (0.2.0 dev builds)
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
        elif verdict.linked:
            log(f"the staged build in {staged_dir} has hard links ({previews(verdict.linked, 3)}), which push "
                "does not upload: building it again")
    build_folder(path, staged_dir, data_dir=data_dir, cache_dir=cache_dir, num_proc=num_proc, repo_id=repo_id,
                 into_existing=into_existing, altered="set_aside", option="--staging-dir", card=card,
                 **(derived.make() if derived else {}))
    verdict = verify(staged_dir)
    if not _trusted(verdict, identity):
        raise OutputFolderError(f"--staging-dir {staged_dir}: the folder just built does not verify against its "
                                "manifest (was it changed during the build?)")
    return verdict


@dataclass(frozen=True)
class Derived:
    """Configs made from the data beside the built ones (`--with top_ranked,hard_negatives`)."""

    names: list[str]
    make: Callable[[], dict]
    """Returns `build_folder`'s `extra_tables` and `extra_notes` for `names` (slow: it ranks the corpus)."""


def _trusted(verdict: Verdict, identity: dict) -> bool:
    manifest = verdict.manifest
    return (manifest is not None and manifest.complete and manifest.identity == identity and bool(manifest.files)
            and not verdict.altered and not verdict.missing and not verdict.linked)


def staged_files(staged_dir: str, manifest: Manifest | None = None) -> list[StagedFile]:
    """The files to upload: those `manifest` lists (the folder's other entries are not ragloaders'), with the
    sha256 it lists (pass a manifest only once the folder was verified against it), or, with no manifest, every
    file of the folder but a manifest."""
    if manifest is not None:
        names = list(manifest.files)
    else:
        names = [os.path.relpath(os.path.join(folder, name), staged_dir).replace(os.sep, "/")
                 for folder, _, files in walk(staged_dir) for name in files]
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
    yield (f"{counted(len(files), 'file')}, {counted(size, 'byte', grouped=True)}, {counted(len(commits), 'commit')}, "
           f"from {push_plan.staged_dir}")
    for number, commit in enumerate(push_plan.commits, start=1):
        for staged in commit:
            yield f"  commit {number}: {staged.path_in_repo} ({staged.size:,} bytes)"


# --- what the repository holds of ragloaders' ---------------------------------------------------------------------

def published_of(staged: StagedFile) -> Published:
    return Published(staged.sha256(), staged.git_sha1(), staged.size)


def read_hub_manifest(repo_id: str, revision: str | None, remote: dict) -> dict[str, Published] | None:
    """The repository's manifest (None when it has none, or one that is not ragloaders')."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    entry = remote.get(HUB_MANIFEST)
    if entry is None:
        return None
    if entry.size > MAX_HUB_MANIFEST_BYTES:
        return None
    url = hf_hub_url(repo_id, HUB_MANIFEST, repo_type="dataset", revision=revision)
    with get_session().stream("GET", url, headers=build_hf_headers(), follow_redirects=True) as response:
        hf_raise_for_status(response)
        data = bytearray()
        for chunk in response.iter_bytes():  # (the listing's size is the hub's word; what it sends is counted)
            data += chunk
            if len(data) > MAX_HUB_MANIFEST_BYTES:
                return None
    return parse_hub_manifest(bytes(data))


@dataclass
class RepositoryView:
    """What the repository holds, sorted by whose it is, against what a push would write."""

    remote: dict
    recorded: dict[str, Published]
    """Files a previous ragloaders push recorded that still hold what it published: ragloaders' own."""
    foreign_manifest: bool
    """The repository has a file at HUB_MANIFEST that is not a ragloaders manifest."""

    def own(self, path: str) -> bool:
        return path in self.recorded

    def overlaps(self, files: list[StagedFile]) -> list[str]:
        """Paths the push would overwrite that hold something ragloaders did not publish (or that was changed
        since): files of the repository's own."""
        clashes = [f.path_in_repo for f in files if f.path_in_repo in self.remote and not self.own(f.path_in_repo)
                   and not _same_content(f, self.remote[f.path_in_repo])]
        return clashes + ([HUB_MANIFEST] if self.foreign_manifest else [])


def view_repository(repo_id: str, revision: str | None, remote: dict) -> RepositoryView:
    previous = read_hub_manifest(repo_id, revision, remote)
    recorded = {path: published for path, published in (previous or {}).items()
                if path in remote and published.is_content_of(remote[path])}
    return RepositoryView(remote, recorded, HUB_MANIFEST in remote and previous is None)


def _same_content(staged: StagedFile, remote) -> bool:
    if remote is None:
        return False
    if remote.lfs is not None:
        return remote.lfs.sha256 == staged.sha256()
    return remote.blob_id == staged.git_sha1()


MAX_RACES = 8
"""Commits by someone else during one push after which it stops (each one makes it read the repository again)."""


@dataclass(frozen=True)
class _Snapshot:
    head: str | None
    view: RepositoryView


def _snapshot(api, repo_id: str, revision: str | None) -> _Snapshot:
    """The branch's head commit, then what the branch holds. Read in this order, the view is never older than the
    head the next commit is pinned to: a commit landing between the two reads makes that commit fail (HTTP 412)."""
    head = api.repo_info(repo_id, repo_type="dataset", revision=revision).sha
    if not isinstance(head, str) or not COMMIT_ID.fullmatch(head):
        raise HubError(f"{repo_id}: the hub gave no head commit of {revision or 'main'} (got {preview(head)}), so a "
                       "commit could not be pinned to what the push read; nothing was sent")
    remote = {}
    for listed, entry in enumerate(api.list_repo_tree(repo_id, repo_type="dataset", revision=revision,
                                                      recursive=True)):
        if listed >= MAX_REPOSITORY_FILES:  # (folders counted too: a listing of folders alone can page for ever)
            raise HubError(f"{repo_id}: the hub lists more than {MAX_REPOSITORY_FILES:,} files and folders in the "
                           "repository; ragloaders pushes only into a repository of fewer")
        if hasattr(entry, "blob_id"):
            remote[entry.path] = entry
    return _Snapshot(head, view_repository(repo_id, revision, remote))


MAX_REPOSITORY_FILES = 1_000_000
"""Files of a repository a push reads the listing of at most (the hub advises under 100,000 a repository; a listing
that goes on paging is stopped here, not when memory runs out)."""


def _identity(remote) -> tuple:
    return remote.blob_id, remote.lfs.sha256 if remote.lfs is not None else None


RACE_STATUS = (412, 409)
"""What the hub answers a commit racing another: 412 Precondition Failed (`parent_commit` is no longer the branch's
head: "A commit has happened since"), 409 Conflict (another commit is in progress), as `datasets`' push_to_hub
reads them."""


def parent_moved(error: BaseException) -> bool:
    """Whether the hub refused a commit because someone else committed meanwhile (RACE_STATUS, on the error or on
    the one it was raised while handling)."""
    return any(getattr(getattr(e, "response", None), "status_code", None) in RACE_STATUS
               for e in (error, error.__context__) if e is not None)


def upload(push_plan: PushPlan, repo_id: str, *, private: bool = False, revision: str | None = None,
           commit_message: str | None = None, overwrite_foreign: bool = False,
           log: Callable[[str], None] = print) -> PushResult:
    """`_upload` (what a push may do in the repository, and how it is pinned), with the hub's refusals and a dropped
    connection as one bounded line (HubError) naming what to do."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return _upload(push_plan, repo_id, private=private, revision=revision, commit_message=commit_message,
                       overwrite_foreign=overwrite_foreign, log=log)
    except HubError:
        raise
    except HfHubHTTPError as error:
        raise hub_refused(repo_id, error) from None
    except OSError as error:
        if error.filename is not None:  # a local file, not the hub
            raise
        raise HubError(f"{repo_id}: the hub stopped answering during the upload ({one_line(error, HUB_WORDS)}); "
                       f"{PUSH_REMEDIES}") from None


HUB_WORDS = 300
"""Characters of the hub's own words (an error's body, as huggingface_hub words it) a message shows at most."""


def hub_refused(repo_id: str, error: Exception) -> HubError:
    """One line for an HTTP error the hub answered a push with, by its status."""
    status = getattr(getattr(error, "response", None), "status_code", None)
    said = one_line(error, HUB_WORDS)
    if status == 401:
        return HubError(f"{repo_id}: the hub refused the token (HTTP 401): set HF_TOKEN to a token with write access, "
                        f"or run `hf auth login` ({said})")
    if status == 403:
        return HubError(f"{repo_id}: the token may not write to this repository (HTTP 403): use a token with write "
                        f"access to it ({said})")
    return HubError(f"{repo_id}: the hub refused the upload (HTTP {status}): {said}")


def _upload(push_plan: PushPlan, repo_id: str, *, private: bool, revision: str | None, commit_message: str | None,
            overwrite_foreign: bool, log: Callable[[str], None]) -> PushResult:
    """Create the repo (and branch) if needed, then commit the plan's batches, skipping what the repo already has.

    Every commit also writes the repository manifest (HUB_MANIFEST): the files ragloaders published there. Only
    files it records, still holding what was published, are ragloaders'; a verified plan deletes those the new
    build no longer has (in the last commit). A file the push would overwrite that is not ragloaders' (the
    repository's own, or one changed since it was pushed) stops the push before any commit unless
    `overwrite_foreign`; any other file of the repository is left as it is.

    Each commit is pinned to the head commit the push last read (`parent_commit`). When someone else committed
    since (the hub answers HTTP 412, or 409 while another commit is in progress: `parent_moved`), the repository is
    read again and the push carries on without touching any file that is no longer ragloaders' (edited, replaced,
    deleted or added at a path it writes since the push began: a deleted file is not put back; not even with
    `overwrite_foreign`, which covers only what the push saw at its start); such files are named in one line at the
    end and listed in `PushResult.left`. A
    HUB_MANIFEST replaced by something else, or more than MAX_RACES such commits, stop the push in one line."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    if not get_token():
        raise UsageError("no Hugging Face token: set HF_TOKEN or run `hf auth login`")
    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    if revision:
        api.create_branch(repo_id, repo_type="dataset", branch=revision, exist_ok=True)
    snapshot = _snapshot(api, repo_id, revision)
    view = snapshot.view
    foreign = view.overlaps(push_plan.files)
    if foreign and not overwrite_foreign:
        raise UsageError(f"{repo_id} already holds {len(foreign)} file(s) the push would overwrite that ragloaders "
                         f"did not publish there or that were changed since ({previews(foreign, 5)}); nothing was "
                         "sent: move them in the repository, or pass --overwrite-foreign to replace them")
    allowed = {path: _identity(view.remote[path]) for path in foreign}
    """What the user allowed to be replaced: those files as the push found them."""
    result = PushResult(push_plan)
    local = {f.path_in_repo for f in push_plan.files}
    may_delete = push_plan.verified
    stale = sorted(p for p in view.recorded if p not in local)
    if stale and not may_delete:
        log(f"not deleting {counted(len(stale), 'file')} of {repo_id} that the staged folder lacks: it was not "
            "verified against a manifest in this run")
    left = sorted(p for p in view.remote if p.endswith(".parquet") and p not in local and not view.own(p))
    if left:
        log(f"leaving {len(left)} Parquet files of {repo_id} that no ragloaders push recorded ({previews(left, 3)}"
            "): ragloaders deletes only files it published")
    recorded = dict(view.recorded)
    manifest_now = view.remote.get(HUB_MANIFEST)
    head = snapshot.head
    theirs: set[str] = set()
    """Paths of the plan that became someone else's during the push: never written again."""
    seen = set(view.remote)
    """Paths the repository held at any read of the push (one gone since was deleted by someone else)."""
    done: list[StagedFile] = []
    races = 0
    message = commit_message or f"Upload {repo_id} built by ragloaders"
    number = 0
    while number < len(push_plan.commits):
        commit = push_plan.commits[number]
        last = number + 1 == len(push_plan.commits)
        kept = [f for f in commit if f.path_in_repo not in theirs]
        changed = [f for f in kept if not _same_content(f, view.remote.get(f.path_in_repo))]
        additions = [verified_addition(f) for f in changed]
        record = {**recorded, **{f.path_in_repo: published_of(f) for f in kept}}
        deleted = sorted(p for p in view.recorded if p not in local) if last and may_delete else []
        for path in deleted:
            record.pop(path, None)
        record_bytes = hub_manifest_bytes(record)
        operations: list = [*additions, *(CommitOperationDelete(p) for p in deleted)]
        if (operations or last) and (manifest_now is None or manifest_now.blob_id != _git_sha1(record_bytes)):
            operations.append(CommitOperationAdd(HUB_MANIFEST, record_bytes))  # in the commit of the files it records
        progress = f"commit {number + 1}/{len(push_plan.commits)}"
        if operations:
            try:
                api.preupload_lfs_files(repo_id, additions, repo_type="dataset", revision=revision)
                require_stored_as_verified(zip(changed, additions))
                info = api.create_commit(repo_id, operations, commit_message=f"{message} ({number + 1}/"
                                         f"{len(push_plan.commits)})", repo_type="dataset", revision=revision,
                                         parent_commit=head)
            except HfHubHTTPError as error:
                if not parent_moved(error):
                    raise
                races += 1
                if races > MAX_RACES:
                    raise UsageError(f"{repo_id} kept changing during the push ({races} commits by someone else); "
                                     f"stopped before {progress}: push again when it is quiet") from None
                log(f"{progress}: {repo_id} changed since it was read (a commit by someone else): reading it again")
                snapshot = _snapshot(api, repo_id, revision)
                view, head, manifest_now = snapshot.view, snapshot.head, snapshot.view.remote.get(HUB_MANIFEST)
                if view.foreign_manifest and allowed.get(HUB_MANIFEST) != _identity(view.remote[HUB_MANIFEST]):
                    raise UsageError(f"{repo_id}: {HUB_MANIFEST} was replaced during the push by a file that is not "
                                     f"ragloaders' record; stopped before {progress}") from None
                remaining = {f.path_in_repo for c in push_plan.commits[number:] for f in c}
                theirs |= {p for p in view.overlaps(push_plan.files) if p in remaining
                           and allowed.get(p) != _identity(view.remote[p])}
                theirs |= {p for p in remaining if p in seen and p not in view.remote}  # deleted meanwhile
                seen |= set(view.remote)
                theirs |= {f.path_in_repo for f in done
                           if f.path_in_repo in view.remote and not _same_content(f, view.remote[f.path_in_repo])}
                recorded = {**{p: v for p, v in view.recorded.items() if p not in theirs},
                            **{f.path_in_repo: published_of(f) for f in done
                               if _same_content(f, view.remote.get(f.path_in_repo))}}
                continue
            head = info.oid
            manifest_now = _Written(_git_sha1(record_bytes))
            result.commits.append(info.oid)
            result.uploaded += [f.path_in_repo for f in changed]
            result.deleted += deleted
            log(f"{progress}: {counted(len(changed), 'file')} uploaded"
                + (f", {counted(len(deleted), 'stale file')} deleted" if deleted else ""))
        else:
            log(f"{progress}: already in {repo_id}, skipped")
        result.unchanged += [f.path_in_repo for f in kept if f not in changed]
        recorded = record
        done += kept
        number += 1
    result.left = sorted(theirs)
    if theirs:
        log(f"left {len(theirs)} file(s) of {repo_id} as someone else changed them during the push "
            f"({previews(result.left, 5)}): they are no longer ragloaders'; push again with --overwrite-foreign to "
            "replace them")
    return result


INLINE_BYTES = 10 << 20
"""Files up to this size (the hub keeps a larger one in LFS or Xet storage, never inline in a commit) are read once,
checked against the sha256 the folder was verified with, and sent as those bytes."""


def verified_addition(staged: StagedFile):
    """The upload of `staged` as it was verified in this run: a file of up to INLINE_BYTES as its bytes, checked
    (a file changed or swapped since, or a symlink in its place, is refused); a larger one from its path, which
    huggingface_hub reads into LFS or Xet storage (`require_stored_as_verified` says what is checked there)."""
    from huggingface_hub import CommitOperationAdd

    if staged.size > INLINE_BYTES:
        return CommitOperationAdd(staged.path_in_repo, staged.local_path)
    try:  # (O_NONBLOCK: a FIFO put in its place is not waited on)
        handle = os.open(staged.local_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise changed_since_verified(staged, f"it cannot be opened as a regular file: {error.strerror}") from None
    with os.fdopen(handle, "rb") as file:
        regular = stat.S_ISREG(os.fstat(file.fileno()).st_mode)
        data = file.read(INLINE_BYTES + 1) if regular else b""
    if not regular or len(data) != staged.size or (
            staged.verified_sha256 and hashlib.sha256(data).hexdigest() != staged.verified_sha256):
        raise changed_since_verified(staged, "its bytes are no longer those verified")
    staged.blob_id = _git_sha1(data)
    return CommitOperationAdd(staged.path_in_repo, data)


def require_stored_as_verified(uploads: Iterable[tuple[StagedFile, Any]]) -> None:
    """After huggingface_hub uploaded the large files of a commit, before the commit names them: the sha256 it
    computed of each is the one each was verified with. With Xet (hf_xet installed, the default) that sha256 is
    computed in the same read as the upload, so a file changed or swapped before or during it stops the push here;
    its bytes may have reached the hub's storage, but no commit refers to them. Over plain LFS, huggingface_hub
    hashes a file and reads it again to upload it: a file rewritten in place between the two reads is caught only
    by the hub's own check of the upload (a swap is caught here; a build into the folder waits for the push)."""
    for staged, addition in uploads:
        if staged.verified_sha256 and staged.size > INLINE_BYTES and (
                addition.upload_info.size != staged.size
                or addition.upload_info.sha256.hex() != staged.verified_sha256):
            raise changed_since_verified(staged, "the bytes sent are not those verified")


def changed_since_verified(staged: StagedFile, how: str) -> OutputFolderError:
    return OutputFolderError(f"{staged.local_path} changed after the folder was verified against its manifest "
                             f"({how}); stopped before the commit that would hold it: push again once nothing writes "
                             "there")


@dataclass(frozen=True)
class _Written:
    blob_id: str


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@contextlib.contextmanager
def folder_held(folder: str) -> Iterator[None]:
    """The build lock on `folder` (target_lock.py) while it is pushed: a build into it waits for the push, and the
    push for a build already writing it. Where the lock file beside the folder cannot be made (a read-only place,
    where no build writes either) the push goes on without it; every file is checked as it is sent all the same
    (`verified_addition`)."""
    target = os.path.realpath(folder)
    lock = TargetLock(target)
    try:
        if os.path.dirname(target) == target:
            raise PermissionError(target)
        lock.acquire()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def push(path: str, repo_id: str, *, data_dir: str | None = None, cache_dir: str | None = None,
         num_proc: int | None = None, private: bool = False, revision: str | None = None,
         commit_message: str | None = None, staging_dir: str | None = None, dry_run: bool = False,
         max_files: int | None = None, max_bytes: int | None = None, into_existing: bool = False,
         overwrite_foreign: bool = False, card: CardOptions | None = None, derived: Derived | None = None,
         log: Callable[[str], None] = print) -> PushResult:
    """Stage `path` and upload it to the dataset repo `repo_id`; `dry_run` stops after staging and tells the plan.
    `overwrite_foreign` lets the push replace files of the repository that ragloaders did not publish (see
    `upload`); `card` is what the builder of their own data (beir-format: `--license`, `--pretty-name`) states on
    its card; `derived` the configs `--with` adds (see `stage`)."""
    check_repo_id(repo_id)
    check_revision(repo_id, revision)
    configs_of(path)  # an unknown path is refused before any folder is made
    staged_dir = staging_dir or default_staging_dir(path, repo_id)
    verdict = stage(path, staged_dir, repo_id=repo_id, data_dir=data_dir, cache_dir=cache_dir, num_proc=num_proc,
                    into_existing=into_existing, card=card, derived=derived, log=log)
    push_plan = plan(staged_dir, max_files=max_files or MAX_COMMIT_FILES, max_bytes=max_bytes or MAX_COMMIT_BYTES,
                     verdict=verdict)
    if dry_run:
        log(f"dry run: would upload to {repo_id}" + (f" (branch {revision})" if revision else ""))
        for line in describe(push_plan):
            log(line)
        return PushResult(push_plan)
    with folder_held(staged_dir):
        return upload(push_plan, repo_id, private=private, revision=revision, commit_message=commit_message,
                      overwrite_foreign=overwrite_foreign, log=log)
