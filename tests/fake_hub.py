"""An in-memory stand-in for the parts of the Hugging Face Hub HTTP API that `ragloaders push` uses.

Served through huggingface_hub's client factory with an httpx `MockTransport` (httpx2 under huggingface_hub
2.x), so no socket is opened. Its state lives in a folder, so that a push killed half way (see
FAKE_HUB_EXIT_ON_COMMIT) can be resumed by another process. Endpoints: repo create, branch create, tree
listing, repo info, file download (resolve), validate-yaml, preupload, the LFS batch API with basic PUT upload and
verify, commit (refused with HTTP 412, as the hub does, when its parentCommit is not the branch's head), revision
info, tag create. A read (revision info, tree, resolve) takes a branch, a tag or a commit id: every commit keeps the
files it left, so a repository can be read as it was at any of them. FAKE_HUB_OWNER_EDITS makes the repository's
owner commit while a push runs.

Run as a script, it is `ragloaders` with the fake hub in place:
    python tests/fake_hub.py STATE_DIR [--max-commit-files N] -- push beir/nfcorpus --repo-id org/name ...
with HF_ENDPOINT=http://hub.test and HF_HUB_DISABLE_XET=1 set before start.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
import threading
from urllib.parse import unquote

try:
    import httpx2 as http  # huggingface_hub 2.x
except ImportError:
    import httpx as http  # huggingface_hub 1.x

ENDPOINT = "http://hub.test"
EXIT_ON_COMMIT_ENV = "FAKE_HUB_EXIT_ON_COMMIT"
"""Set to N: the process dies (os._exit) when the N-th commit request of the whole state arrives."""
OWNER_EDITS_ENV = "FAKE_HUB_OWNER_EDITS"
"""A JSON file {"N": {"repo": REPO, "files": {path: text or null}}}: just before the N-th commit request of the whole
state is handled, the repository's owner commits those files, null deleting one (a commit of their own: the
branch's head moves)."""
STALE_PARENT = "A commit has happened since. Please refresh and try again."
"""What the hub answers (HTTP 412) to a commit whose parentCommit is not the branch's head."""
LFS_SUFFIXES = (".parquet",)
REPO = r"(?P<repo>[^/]+/[^/]+)"


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    def __init__(self, state_dir: str):
        self.state_dir = state_dir
        os.makedirs(os.path.join(state_dir, "objects"), exist_ok=True)
        self.state_path = os.path.join(state_dir, "state.json")
        self.lock = threading.Lock()
        """LFS uploads arrive from several threads; each request reads and writes the state whole."""
        if not os.path.exists(self.state_path):
            self.save({"repos": {}, "commit_requests": 0, "requests": [], "lfs_uploads": []})

    # -- state ------------------------------------------------------------------------------------
    def load(self) -> dict:
        with open(self.state_path, encoding="utf-8") as f:
            return json.load(f)

    def save(self, state: dict) -> None:
        tmp = self.state_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, self.state_path)

    def object_path(self, key: str) -> str:
        return os.path.join(self.state_dir, "objects", key)

    def store(self, data: bytes) -> str:
        key = hashlib.sha256(data).hexdigest()
        with open(self.object_path(key), "wb") as f:
            f.write(data)
        return key

    def files(self, repo_id: str, revision: str = "main") -> dict[str, dict]:
        return self.load()["repos"][repo_id]["branches"][revision]["files"]

    def read(self, repo_id: str, path: str, revision: str = "main") -> bytes:
        with open(self.object_path(self.files(repo_id, revision)[path]["sha256"]), "rb") as f:
            return f.read()

    def export(self, repo_id: str, folder: str, revision: str = "main") -> None:
        """Write the repo's files at `revision` into `folder`, as a clone would."""
        for path in self.files(repo_id, revision):
            target = os.path.join(folder, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(self.read(repo_id, path, revision))

    def seed_repo(self, repo_id: str, files: dict[str, bytes]) -> None:
        """A repository made outside ragloaders, holding `files` on main."""
        state = self.load()
        state["repos"][repo_id] = {"private": False, "type": "dataset",
                                   "branches": {"main": {"files": {}, "commits": []}}}
        self.save(state)
        for path, data in files.items():
            self.seed_file(repo_id, path, data)

    def seed_file(self, repo_id: str, path: str, data: bytes, revision: str = "main") -> None:
        state = self.load()
        state["repos"][repo_id]["branches"][revision]["files"][path] = self._entry(path, data)
        self.save(state)

    def owner_commit(self, repo_id: str, files: dict[str, bytes | None], revision: str = "main") -> str:
        """A commit by the repository's owner writing `files` (None: deleting that file): the branch's head moves,
        as on the hub."""
        state = self.load()
        branch = state["repos"][repo_id]["branches"][revision]
        for path, data in files.items():
            if data is None:
                del branch["files"][path]
            else:
                branch["files"][path] = self._entry(path, data)
        oid = hashlib.sha1(json.dumps([len(branch["commits"]), sorted(files)]).encode()
                           + b"".join(data or b"" for data in files.values())).hexdigest()
        branch["commits"].append({"oid": oid, "summary": "edited by the owner", "paths": sorted(files)})
        self.save(state)
        return oid

    def _entry(self, path: str, data: bytes) -> dict:
        sha256 = self.store(data)
        lfs = path.endswith(LFS_SUFFIXES)
        return {"size": len(data), "sha256": sha256, "lfs": lfs, "oid": git_sha1(data)}

    # -- HTTP -------------------------------------------------------------------------------------
    def handle(self, request):
        request.read()
        with self.lock:
            return self._handle(request)

    def _handle(self, request):
        path = unquote(request.url.path)
        state = self.load()
        state["requests"].append({"method": request.method, "path": path,
                                  "authorized": request.headers.get("authorization", "").startswith("Bearer ")})
        self.save(state)
        routes = [
            ("POST", r"/api/repos/create", self.create_repo),
            ("POST", rf"/api/datasets/{REPO}/branch/(?P<branch>.+)", self.create_branch),
            ("POST", rf"/api/datasets/{REPO}/tag/(?P<rev>.+)", self.create_tag),
            ("GET", rf"/api/datasets/{REPO}/tree/(?P<rev>[^/]+)(?P<sub>/.*)?", self.tree),
            ("GET", rf"/api/datasets/{REPO}/revision/(?P<rev>.+)", self.revision_info),
            ("GET", rf"/api/datasets/{REPO}", lambda request, repo: self.revision_info(request, repo, "main")),
            ("POST", r"/api/validate-yaml", lambda request: (200, {})),
            ("POST", rf"/api/datasets/{REPO}/preupload/(?P<rev>.+)", self.preupload),
            ("POST", rf"/datasets/{REPO}\.git/info/lfs/objects/batch", self.lfs_batch),
            ("PUT", r"/lfs-upload/(?P<oid>[0-9a-f]{64})", self.lfs_upload),
            ("POST", r"/lfs-verify", lambda request: (200, {})),
            ("POST", rf"/api/datasets/{REPO}/commit/(?P<rev>.+)", self.commit),
            ("GET", rf"/datasets/{REPO}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", self.resolve),
            ("HEAD", rf"/datasets/{REPO}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", self.resolve_head),
        ]
        for method, pattern, handler in routes:
            match = re.fullmatch(pattern, path)
            if method == request.method and match:
                status, body, *headers = handler(request, **match.groupdict())
                if isinstance(body, bytes):
                    return http.Response(status, content=body, headers=headers[0] if headers else None)
                return http.Response(status, json=body, headers=headers[0] if headers else None)
        return http.Response(404, json={"error": f"fake hub: no route for {request.method} {path}"})

    def _repo(self, state: dict, repo: str):
        return state["repos"].get(repo)

    def at(self, state: dict, repo: str, rev: str) -> tuple[dict, str] | None:
        """(the files, the commit id) of `repo` at `rev`: a branch (its last commit; "0" * 40 for a branch with none,
        as seeded), a tag, or a commit id; None when there is no such revision."""
        entry = self._repo(state, repo)
        if entry is None:
            return None
        branches = entry["branches"]
        if rev in branches:
            commits = branches[rev]["commits"]
            return branches[rev]["files"], commits[-1]["oid"] if commits else "0" * 40
        rev = entry.get("tags", {}).get(rev, rev)
        for branch in branches.values():
            if rev == "0" * 40 and not branch["commits"]:
                return branch["files"], rev
            for commit in branch["commits"]:
                if commit["oid"] == rev and "files" in commit:
                    return commit["files"], rev
        return None

    def _read_at(self, repo: str, rev: str):
        """(the state, (files, commit id) of `repo` at `rev`), or (None, the hub's answer: no such repository or
        revision)."""
        state = self.load()
        if self._repo(state, repo) is None:
            return None, self._not_found(repo)
        found = self.at(state, repo, rev)
        if found is None:
            return None, self._no_revision(rev)
        return state, found

    def _no_revision(self, rev: str):
        return 404, {"error": f"Invalid rev id: {rev}"}, {"X-Error-Code": "RevisionNotFound"}

    def _not_found(self, repo: str):
        return 404, {"error": f"Repository {repo} not found"}, {"X-Error-Code": "RepoNotFound"}

    def create_repo(self, request):
        payload = json.loads(request.content)
        repo = f"{payload['organization']}/{payload['name']}"
        state = self.load()
        if repo in state["repos"]:
            return 409, {"error": "You already created this dataset repo", "url": f"{ENDPOINT}/datasets/{repo}"}
        state["repos"][repo] = {"private": payload.get("visibility") == "private", "type": payload.get("type"),
                                "branches": {"main": {"files": {}, "commits": []}}}
        self.save(state)
        return 200, {"url": f"{ENDPOINT}/datasets/{repo}"}

    def create_branch(self, request, repo, branch):
        state = self.load()
        if self._repo(state, repo) is None:
            return self._not_found(repo)
        branches = state["repos"][repo]["branches"]
        if branch in branches:
            return 409, {"error": "Reference already exists"}
        start = (json.loads(request.content or b"{}") or {}).get("startingPoint") or "main"
        found = self.at(state, repo, start)
        if found is None:
            return self._no_revision(start)
        files, sha = found
        commits = [{"oid": sha, "summary": f"branch {branch}", "paths": [], "files": files}] if sha != "0" * 40 else []
        branches[branch] = json.loads(json.dumps({"files": files, "commits": commits}))
        self.save(state)
        return 200, {}

    def create_tag(self, request, repo, rev):
        state, found = self._read_at(repo, rev)
        if state is None:
            return found
        tag = json.loads(request.content)["tag"]
        tags = state["repos"][repo].setdefault("tags", {})
        if tag in tags:
            return 409, {"error": "Tag already exists"}
        tags[tag] = found[1]
        self.save(state)
        return 200, {}

    def tree(self, request, repo, rev, sub=None):
        state, found = self._read_at(repo, rev)
        if state is None:
            return found
        files = found[0]
        prefix = (sub or "").strip("/")
        prefix = prefix + "/" if prefix else ""
        recursive = request.url.params.get("recursive", "").lower() == "true"
        entries, folders = [], set()
        for path, entry in sorted(files.items()):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix):].split("/")
            for depth in range(1, len(rest) if recursive else min(len(rest), 2)):
                folders.add(prefix + "/".join(rest[:depth]))
            if len(rest) > 1 and not recursive:
                continue
            item = {"type": "file", "path": path, "size": entry["size"], "oid": entry["oid"]}
            if entry["lfs"]:
                item["lfs"] = {"oid": entry["sha256"], "size": entry["size"], "pointerSize": 134}
            entries.append(item)
        if prefix and not entries and not folders:
            return 404, {"error": f"{sub} not found"}, {"X-Error-Code": "EntryNotFound"}
        entries += [{"type": "directory", "path": folder, "oid": git_sha1(folder.encode())}
                    for folder in sorted(folders)]
        return 200, entries

    def revision_info(self, request, repo, rev):
        state, found = self._read_at(repo, rev)
        if state is None:
            return found
        files, sha = found
        return 200, {"id": repo, "sha": sha, "siblings": [{"rfilename": p} for p in files]}

    def preupload(self, request, repo, rev):
        state = self.load()
        if self._repo(state, repo) is None:
            return self._not_found(repo)
        existing = state["repos"][repo]["branches"][rev]["files"]
        out = []
        for file in json.loads(request.content)["files"]:
            lfs = file["path"].endswith(LFS_SUFFIXES) or file["size"] > 10 << 20
            entry = existing.get(file["path"])
            oid = (entry["sha256"] if entry["lfs"] else entry["oid"]) if entry else None
            out.append({"path": file["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False,
                        "oid": oid})
        return 200, {"files": out}

    def lfs_batch(self, request, repo):
        objects = []
        for obj in json.loads(request.content)["objects"]:
            item = {"oid": obj["oid"], "size": obj["size"]}
            if not os.path.exists(self.object_path(obj["oid"])):
                item["actions"] = {"upload": {"href": f"{ENDPOINT}/lfs-upload/{obj['oid']}"},
                                   "verify": {"href": f"{ENDPOINT}/lfs-verify"}}
            objects.append(item)
        return 200, {"transfer": "basic", "objects": objects}

    def lfs_upload(self, request, oid):
        data = request.content
        if hashlib.sha256(data).hexdigest() != oid:
            return 400, {"error": "sha256 mismatch"}
        self.store(data)
        state = self.load()
        state["lfs_uploads"].append(oid)
        self.save(state)
        return 200, {}

    def resolve(self, request, repo, rev, file):
        state = self.load()
        if self._repo(state, repo) is None:
            return self._not_found(repo)
        found = self.at(state, repo, rev)
        entry = found[0].get(file) if found else None
        if entry is None:
            return 404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"}
        with open(self.object_path(entry["sha256"]), "rb") as f:
            return 200, f.read()

    def resolve_head(self, request, repo, rev, file):
        """What hf_hub_download asks before it downloads: the file's commit, etag and size."""
        state = self.load()
        found = self.at(state, repo, rev)
        entry = found[0].get(file) if found else None
        if entry is None:
            return 404, b"", {"X-Error-Code": "EntryNotFound"}
        sha = found[1]
        return 200, b"", {"X-Repo-Commit": sha, "ETag": f'"{entry["oid"]}"', "Content-Length": str(entry["size"])}

    def commit(self, request, repo, rev):
        state = self.load()
        state["commit_requests"] += 1
        self.save(state)
        if os.environ.get(EXIT_ON_COMMIT_ENV) == str(state["commit_requests"]):
            os._exit(17)
        if os.environ.get(OWNER_EDITS_ENV):
            with open(os.environ[OWNER_EDITS_ENV], encoding="utf-8") as f:
                edit = json.load(f).get(str(state["commit_requests"]))
            if edit:
                self.owner_commit(edit["repo"], {p: None if text is None else text.encode()
                                                 for p, text in edit["files"].items()})
                state = self.load()
        if self._repo(state, repo) is None:
            return self._not_found(repo)
        branch = state["repos"][repo]["branches"][rev]
        lines = [json.loads(line) for line in request.content.splitlines() if line.strip()]
        head = branch["commits"][-1]["oid"] if branch["commits"] else "0" * 40
        parent = lines[0]["value"].get("parentCommit")
        if parent is not None and parent != head:
            return 412, {"error": STALE_PARENT}
        for line in lines:
            value = line["value"]
            if line["key"] == "file":
                branch["files"][value["path"]] = self._entry(value["path"], base64.b64decode(value["content"]))
            elif line["key"] == "lfsFile":
                if not os.path.exists(self.object_path(value["oid"])):
                    return 400, {"error": f"LFS object {value['oid']} was never uploaded"}
                size = os.path.getsize(self.object_path(value["oid"]))
                branch["files"][value["path"]] = {"size": size, "sha256": value["oid"], "lfs": True,
                                                  "oid": git_sha1(value["oid"].encode())}
            elif line["key"] == "deletedFile":
                if value["path"] not in branch["files"]:
                    return 404, {"error": "A file with this name doesn't exist"}, {"X-Error-Code": "EntryNotFound"}
                del branch["files"][value["path"]]
        oid = hashlib.sha1(request.content).hexdigest()
        branch["commits"].append({"oid": oid, "summary": lines[0]["value"]["summary"],
                                  "paths": [line["value"]["path"] for line in lines[1:]],
                                  "files": json.loads(json.dumps(branch["files"]))})
        self.save(state)
        return 200, {"commitUrl": f"{ENDPOINT}/datasets/{repo}/commit/{oid}", "commitOid": oid,
                     "pullRequestUrl": None}


def install(state_dir: str) -> FakeHub:
    """Route every huggingface_hub request of this process to a FakeHub kept in `state_dir`."""
    from huggingface_hub import set_client_factory

    hub = FakeHub(state_dir)
    set_client_factory(lambda: http.Client(transport=http.MockTransport(hub.handle), follow_redirects=True))
    return hub


def uninstall() -> None:
    """Route huggingface_hub's requests of this process to the network again, through a plain client (what a test
    process is left with after an in-process fake-hub session): huggingface_hub has no public way to get its own
    default client factory back, and its tests reach only 127.0.0.1."""
    from huggingface_hub import set_client_factory

    set_client_factory(lambda: http.Client(follow_redirects=True))


def main(argv: list[str]) -> int:
    separator = argv.index("--")
    options, command = argv[:separator], argv[separator + 1:]
    install(options[0])
    if "--max-commit-files" in options:
        import ragloaders.publish.push

        ragloaders.publish.push.MAX_COMMIT_FILES = int(options[options.index("--max-commit-files") + 1])
    from ragloaders.cli import main as ragloaders_main

    return ragloaders_main(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
