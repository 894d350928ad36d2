"""A SOURCE that is not a benchmark path: a folder in the hub's layout (one ragloaders built, or any other) or a hub
dataset repository, in ragloaders' or mteb's layout.

Where it is, how its configs load, which benchmark its card names (the last line ragloaders writes into every card),
and every failure to reach the hub said in one line that names the repository, the cause and the remedies. The hub
is asked once, with a short timeout and no retries, before any call that would retry: an unreachable hub costs
seconds, not a minute of `Retrying in 8s`. `HF_HUB_OFFLINE=1` is honoured: the hub cache's copy is used, or the
error says there is none.

A hub repository is read at one commit: the `revision` asked for (a commit, branch or tag; default the main branch)
is resolved to its commit id once, when the repository is opened, and its card and every file are read at that
commit (so a push in between cannot mix two versions); `Repository.commit` says which, and a log line too.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from .card_shape import (
    GLOB_MAGIC,
    check_splits,
    declared_patterns,
    info_row_counts,
    outside_pattern_problem,
    split_row_counts,
)
from .card_yaml import MAX_YAML_BYTES, check_card
from .deep_folders import make_folders
from .errors import MissingSourceError, SourceError, UsageError
from .output_target import is_inside, replace_with_text
from .prepared_cache import PreparedCache
from .preview import cut, did_you_mean, one_line, preview, previews
from .user_cache import read_small_file

BUILT_FROM = "<!-- built by ragloaders from {path} -->"
"""The last line of every card ragloaders writes (invisible when rendered): the benchmark path it was built from,
whose conventions (declared defects, keys, how runs are scored) apply to the folder or repository."""
BUILT_FROM_PATTERN = re.compile(r"^<!-- built by ragloaders from (\S+) -->$", re.MULTILINE)
CARD = "README.md"
STANDALONE_YAML = ".huggingface.yaml"
"""YAML that datasets merges over the card's front matter (`configs`, `dataset_info`, ...)."""
PROBE_TIMEOUT_SECONDS = 3.0
"""How long the one request that checks the hub may take (connect and read)."""
REMEDIES = ("set HF_ENDPOINT to a hub or mirror you can reach, set HF_HUB_OFFLINE=1 to use the copy in the hub cache, "
            "or work from local files (a built folder, or --data-dir with a benchmark path)")
REPO_ID_PART = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")
"""An owner or a name of a hub repo id (the hub's rules)."""
COMMIT_ID = re.compile(r"[0-9a-f]{40}")
SPLIT_NAME = re.compile(r"\w+(?:[-.]\w+)*")
"""A split's name as datasets accepts one (no slicing `[`, no `+`)."""
logger = logging.getLogger(__name__)
PUSH_REMEDIES = ("set HF_ENDPOINT to a hub or mirror you can reach (or HTTPS_PROXY to a proxy that reaches it) and "
                 "push again; meanwhile `ragloaders build PATH --out FOLDER` (or push --dry-run) works offline, and "
                 "`ragloaders push FOLDER --repo-id ...` uploads that folder as it is later")
"""What to do when a push cannot reach the hub (the hub cache's copy, REMEDIES' offline remedy, is no use to it)."""


class HubError(ConnectionError):
    """The hub could not be reached, or has no such repository: one line with the repository, the cause and what
    to do. `unreachable`: why the hub could not be reached ("" when it answered)."""

    def __init__(self, message: str, unreachable: str = ""):
        super().__init__(message)
        self.unreachable = unreachable


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) asks for no network."""
    from huggingface_hub import constants

    return constants.is_offline_mode()


def innermost_cause(error: BaseException) -> str:
    """`Type: message` of the exception at the bottom of `error`'s chain (the socket's own words), on one line."""
    while (error.__cause__ or error.__context__) is not None:
        error = error.__cause__ or error.__context__
    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:300]


def repo_id_problem(repo_id: str) -> str | None:
    """What makes `repo_id` not a hub repo id (`owner/name` or `name`, by the hub's rules); None when it is one."""
    parts = repo_id.split("/") if isinstance(repo_id, str) else []
    if not 1 <= len(parts) <= 2 or not all(REPO_ID_PART.fullmatch(part) for part in parts):
        return ("expected OWNER/NAME or NAME, each of letters, digits, '-', '_' and '.', not starting or ending with "
                "'-' or '.', 96 characters at most")
    if "--" in repo_id or ".." in repo_id or repo_id.endswith(".git"):
        return "'--' and '..' are not allowed, nor a name ending in '.git'"
    return None


def looks_like_repo_id(name: str) -> bool:
    """`owner/name` or `name` as the hub allows it (so `./x`, `/x`, `a/b/c`, `~/x` are not)."""
    return repo_id_problem(name) is None


def remedies_for(what: str) -> str:
    """What to do when the hub cannot be reached for `what`: a push has its own remedies (PUSH_REMEDIES)."""
    return PUSH_REMEDIES if what == "push" else REMEDIES


def probe_hub(repo_id: str, *, what: str = "dataset repository") -> int:
    """Ask the hub for the dataset repository `repo_id` once (PROBE_TIMEOUT_SECONDS, no retry); return the HTTP
    status (200 it exists; 401 / 404 it does not, or it is private and no token allows it). Raises HubError in one
    line when the hub cannot be reached."""
    from huggingface_hub import get_token
    from huggingface_hub.utils import get_session

    url = f"{hub_endpoint()}/api/datasets/{repo_id}"
    token = get_token()  # not build_hf_headers: its user agent first asks the hub for a registry, for 3 s more
    try:  # with the token, if any: a private repository answers only to it
        response = get_session().get(url, headers={"authorization": f"Bearer {token}"} if token else {},
                                     timeout=PROBE_TIMEOUT_SECONDS, follow_redirects=True)
    except Exception as e:  # refused, DNS, timeout, TLS, proxy: each its own httpx type
        cause = innermost_cause(e)
        raise HubError(f"{repo_id}: cannot reach the hub at {hub_endpoint()} for this {what} ({cause}); "
                       f"{remedies_for(what)}", unreachable=cause) from None
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    if response.status_code >= 500 or (response.status_code == 200 and kind != "application/json"):
        cause = f"it answered HTTP {response.status_code}" + ("" if kind == "application/json" else
                                                              f" with {kind or 'no content type'}, not the hub's API")
        raise HubError(f"{repo_id}: the hub at {hub_endpoint()} does not work for this {what} ({cause}); "
                       f"{remedies_for(what)}", unreachable=cause)
    return response.status_code


@dataclass(frozen=True)
class Repository:
    """A built folder or a hub dataset repository, by the name the user gave."""

    name: str
    folder: str | None = None
    """A local folder holding its files (a built folder, or the hub cache's copy of a repository)."""
    repo_id: str | None = None
    """The hub repository id, when it is one."""
    commit: str | None = None
    """The commit id of the hub repository that is read (every file and the card at that commit)."""
    revision: str | None = None
    """The revision asked for (a commit, branch or tag), None for the default branch."""

    @property
    def location(self) -> str:
        """What `datasets.load_dataset` reads: the local folder when there is one, else the repo id."""
        return self.folder or self.repo_id or self.name

    def local(self) -> Repository:
        """This repository with every file in a local folder (a hub repository is downloaded into the hub cache,
        or found there when offline)."""
        if self.folder is not None:
            return self
        folder = cached_snapshot(self.repo_id or self.name, offline=False, revision=self.commit)
        if self.commit is not None:
            remember_revision(self.repo_id or self.name, self.revision, self.commit)
        return Repository(self.name, folder, self.repo_id, self.commit, self.revision)

    @property
    def hub_revision(self) -> str | None:
        """What `datasets` and huggingface_hub are given as `revision`: the commit, when the repository is read from
        the hub (a local folder, the hub cache's snapshot included, is that commit already)."""
        return self.commit if self.folder is None else None

    def describe(self) -> str:
        """How a report names what is read: `org/name at commit <sha>` (`(revision v1)` when one was asked for), or
        the folder."""
        if self.repo_id is None:
            return self.name
        asked = f" (revision {self.revision})" if self.revision and self.revision != self.commit else ""
        return f"{self.repo_id} at commit {self.commit}{asked}"

    def configs(self, card: tuple[dict[str, Any], str] | None = None) -> list[str]:
        """The names of its configs, as datasets finds them once the card is checked (`check_card`; `card`: what it
        gave, when the caller has checked it already). SourceError naming the card when a data file it names is
        missing, or when no file matches the data files of the config datasets opens every config with
        (`no_data_files_error`)."""
        import datasets
        from datasets.exceptions import DataFilesNotFoundError

        if card is None:
            self.check_card()
        try:
            return list(datasets.get_dataset_config_names(self.location, revision=self.hub_revision))
        except DataFilesNotFoundError:
            raise no_data_files_error(self.location, self.hub_revision) from None
        except FileNotFoundError as e:  # it resolves every config's data files
            raise missing_file_error(e, repository_file_name(self.location, CARD)) from None

    def check_card(self) -> tuple[dict[str, Any], str]:
        """The card's YAML (and `.huggingface.yaml`'s) within core/card_yaml's budget and of the shape datasets
        reads, before `datasets` parses it (an alias bomb in its `configs:` would expand in memory): a local
        folder's files, or a hub repository's, downloaded alone first; a SourceError naming the file if not
        (`checked_repository_card`, whose (fields, name) it gives)."""
        return checked_repository_card(self.location, revision=self.hub_revision)

    def load(self, config: str | None, *, split: str | None = None, streaming: bool = False,
             cache_dir: str | None = None, **kwargs: Any) -> Any:
        """`datasets.load_dataset` of one config (None: the card's `default: true` one, or the only one); a missing
        config names the ones there are; a local data file that does not read as Parquet is a SourceError naming
        it (datasets says only that the generation failed), and so is a local split whose files hold another number
        of rows than the card declares (`rows_unlike_card`; datasets' verification found it), and so is a structure
        nested too deep for datasets to read (`too_deep_error`)."""
        import datasets
        from datasets.exceptions import DatasetGenerationError, SplitsVerificationError

        builder = self.builder(config, cache_dir=cache_dir)
        config = builder.config.name
        prepared = None
        if not streaming and os.path.isdir(self.location):
            prepared = PreparedCache(builder)
            if kwargs.get("download_mode") is None:
                kwargs["download_mode"] = prepared.download_mode()
        try:
            loaded = datasets.load_dataset(self.location, config, split=split, streaming=streaming,
                                           cache_dir=cache_dir, revision=self.hub_revision, **kwargs)
            if prepared is not None:
                prepared.remember(kwargs["download_mode"])
            if self.folder is None and self.repo_id is not None and self.commit is not None:
                remember_revision(self.repo_id, self.revision, self.commit)
            return loaded
        except (DatasetGenerationError, SplitsVerificationError) as e:
            if not os.path.isdir(self.location):
                raise
            damaged = (unreadable_parquet(builder) if isinstance(e, DatasetGenerationError) else
                       rows_unlike_card(builder, self, config))
            if damaged is None:
                raise not_prepared(repository_file_name(self.location, CARD), config, e.__cause__ or e) from e
            raise damaged from None
        except (TypeError, ValueError, KeyError, AttributeError) as e:  # from a card entry datasets' builder takes
            if isinstance(e, (SourceError, UsageError)):
                raise
            if split is not None:  # (datasets' ValueError: 'Unknown split "tset". Should be one of [...]')
                self.require_split(config, split)
            if not os.path.isdir(self.location):
                raise
            raise not_prepared(repository_file_name(self.location, CARD), config, e) from e
        except RecursionError:  # datasets reads a Parquet file's schema metadata (JSON) recursively
            raise too_deep_error(builder, self, config) from None

    def require_split(self, config: str, split: str) -> None:
        """A UsageError naming the splits of `config` when `split`, a plain split name (not `test[:10]` or
        `train+test`), is not one of them."""
        import datasets

        if not SPLIT_NAME.fullmatch(split):
            return
        names = list(datasets.load_dataset_builder(self.location, config, revision=self.hub_revision
                                                   ).config.data_files or {})
        if split not in names:
            raise UsageError(f"{self.describe()} {config} has no split {preview(split)}{did_you_mean(split, names)}; "
                             f"its splits are {', '.join(map(preview, names))}")

    def builder(self, config: str | None, *, cache_dir: str | None = None) -> Any:
        """`datasets.load_dataset_builder` of one config (`chosen_config`), its data files checked to be the
        repository's own (`require_own_data_files`): what `load` loads."""
        card = self.check_card()
        config = self.chosen_config(config, card)
        builder = config_builder(self.location, config, revision=self.hub_revision, cache_dir=cache_dir, card=card)
        require_own_data_files(self.location, config, builder)
        return builder

    def chosen_config(self, config: str | None, card: tuple[dict[str, Any], str] | None = None) -> str:
        """`config`, or for None the card's `default: true` one (of the commit read) or the only one; a UsageError
        naming the configs there are when it is not one of them or there is no default. `card`: as `configs`."""
        import datasets

        configs = self.configs(card)
        if config is None:
            config = datasets.get_dataset_default_config_name(self.location, revision=self.hub_revision) or (
                configs[0] if len(configs) == 1 else None)
            if config is None:
                raise UsageError(f"{self.name} has no default config: name one of {', '.join(configs)}")
        if config not in configs:
            raise UsageError(f"{self.name} has no config {preview(config)}; its configs are {', '.join(configs)}")
        return config

    def card_text(self) -> str | None:
        """Its README.md, or None when it has none (a hub repository's is downloaded alone, at its commit)."""
        return card_text(self.location, revision=self.hub_revision)

    def built_from(self) -> str | None:
        """The benchmark path its card says ragloaders built it from (the card's last BUILT_FROM line), if any."""
        found = BUILT_FROM_PATTERN.findall(self.card_text() or "")
        return found[-1] if found else None


OFFLINE_NOTE = " (HF_HUB_OFFLINE is set: the hub cache holds part of this repository)"


def config_builder(location: str, config: str, *, revision: str | None = None, cache_dir: str | None = None,
                   card: tuple[dict[str, Any], str] | None = None) -> Any:
    """`datasets.load_dataset_builder` of `config` of the folder or repository `location` (`revision`: the commit of
    a hub repository; `cache_dir`: datasets' cache root), with a SourceError naming the card for a data file the card
    names that is not there, a `configs` entry datasets' builder refuses, or, before datasets resolves them, data
    files of the config that could lie outside `location` (`refuse_outside_patterns`). `card`: what
    `checked_repository_card` gave for `location`, when the caller has it (else it is read and checked here: datasets
    opens the repository again)."""
    import datasets

    metadata, name = card or checked_repository_card(location, revision=revision)
    refuse_outside_patterns(location, metadata, config, card=name)
    card = repository_file_name(location, CARD)
    if cache_dir and "://" not in str(cache_dir):  # (datasets makes it with os.makedirs, which recurses)
        make_folders(os.path.expanduser(str(cache_dir)))
    try:
        return datasets.load_dataset_builder(location, config, revision=revision, cache_dir=cache_dir)
    except FileNotFoundError as e:  # a file the card names exactly; its message also lists every extension known
        raise missing_file_error(e, card, f"config {preview(config)}: ", offline_note(location)) from None
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # a configs entry datasets' builder refuses
        raise not_prepared(card, config, e) from None


def refuse_outside_patterns(location: str, metadata: dict[str, Any], config: str | None = None, *,
                            card: str) -> None:
    """SourceError naming the `card` of the folder or repository `location` (`metadata`: its fields, as
    `checked_yaml` gives them) when, before datasets resolves them, data files it declares could lie outside
    it (`card_shape.outside_pattern_problem`: a URL datasets would fetch, an absolute glob it would walk; in a local
    folder also a glob whose leading folder is a link that leads out, as `x/**` with `x` a link to /). `config`
    None: what datasets resolves as soon as it opens the repository (the first config's data files, which it reads
    to choose the builder, and every config's `data_dir`); else the data files of `config`, so that another config
    with outside files does not stop this one."""
    bounds = data_file_bounds(location) if os.path.isdir(location) else None
    for number, entry in enumerate(metadata.get("configs") or []):
        name, data_dir = entry["config_name"], entry.get("data_dir")
        if config is None and data_dir is not None:
            problem = outside_pattern_problem(data_dir, walked=True) or walk_leaves(location, data_dir, "", bounds)
            if problem:
                raise SourceError(card, f"config {preview(name)} has data_dir {shown_path(data_dir)}, outside "
                                        f"{location}; a card's data files must be inside its folder or repository "
                                        f"({problem}; refused before any is read)")
        if name != config and (config is not None or number):
            continue
        for split, pattern in declared_patterns(entry):
            problem = outside_pattern_problem(pattern) or walk_leaves(location, data_dir or "", pattern, bounds)
            if problem:
                where = f" split {preview(split)}" if split is not None else ""
                raise SourceError(card, f"config {preview(name)}{where} reads {shown_path(pattern)}, outside "
                                        f"{location}; a card's data files must be inside its folder or repository "
                                        f"({problem}; refused before any is read)")


def walk_leaves(location: str, data_dir: str, pattern: str, bounds: list[str] | None) -> str | None:
    """For a local folder (`bounds`: `data_file_bounds(location)`; None for a hub repository, None returned), what
    is wrong when the folder datasets walks for `pattern` under `data_dir` (the parts before its first glob; a
    literal path is looked up, not walked: "" for a walked `data_dir` alone) resolves, symlinks followed, outside
    the folder; None when it stays inside or nothing is walked."""
    if bounds is None or (pattern and not GLOB_MAGIC.search(pattern)):
        return None
    parts = pattern.split("/")
    fixed = parts[:next(number for number, part in enumerate(parts) if GLOB_MAGIC.search(part))] if pattern else []
    walked = os.path.join(location, data_dir, *fixed)
    resolved = os.path.realpath(walked)
    if within(resolved, bounds):
        return None
    return f"datasets would walk {shown_path(walked)}, which leads (symlinks followed) to {shown_path(resolved)}"


def shown_path(path: str) -> str:
    """A path from a card (or made from one) in a message: as it is when printable, else as `preview` quotes it;
    cut to 160 characters either way."""
    return cut(path, 160) if path.isprintable() else preview(path, 160)


def require_own_data_files(location: str, config: str, builder: Any) -> None:
    """SourceError naming the card when a config's data files, as `datasets` resolves the card's `configs:` into
    its `builder` (`config_builder`), lie outside the folder or repository `location` (`../`, an absolute path,
    another repository, a URL: a card chooses what of its own is read, not what of the reader's), or, in a local
    folder, when one resolves (symlinks followed, as opening it would) to a file outside it (see
    `data_file_bounds`); or when a split's declared files match none there (a partial copy, as a hub cache left by an
    interrupted download)."""
    local = os.path.isdir(location)
    card = repository_file_name(location, CARD)
    offline = offline_note(location)
    data_files = builder.config.data_files or {}
    roots = {os.path.join(os.path.normpath(root), "") for root in (os.path.abspath(location),
                                                                   os.path.realpath(location))}
    bounds = data_file_bounds(location) if local else []
    for split, files in data_files.items():
        if not files:
            raise SourceError(card, f"config {preview(config)} split {preview(split)}: no file matches the data "
                                    f"files the card "
                                    f"declares{offline}")
        if len(set(files)) != len(files):  # datasets reads a file as often as the patterns name it
            seen: set[str] = set()
            twice = next(file for file in files if file in seen or seen.add(file))
            raise SourceError(card, f"config {preview(config)} split {preview(split)}: its data files name "
                                    f"{preview(str(twice))} more than once (datasets would read its rows as often; "
                                    "refused)")
        for file in files:
            inside = (any(os.path.normpath(file).startswith(root) for root in roots) if local else
                      file.startswith(f"hf://datasets/{location}@") and "/../" not in file)
            if not inside:
                raise SourceError(card, f"config {preview(config)} split {preview(split)} reads {shown_path(file)}, "
                                        f"outside {location}; a card's data files must be inside its folder or "
                                        "repository (refused)")
            if local:
                require_own_file(file, location, f"config {preview(config)} split {preview(split)}: ", bounds)


def not_prepared(card: str, config: str, cause: BaseException) -> SourceError:
    """The SourceError naming the `card` of a repository whose `config` datasets could not make a builder of or
    prepare, for `cause` (a `configs` entry its builder cannot use, such as `columns: 5` or `filters: 5`)."""
    return SourceError(card, f"config {preview(config)}: datasets could not prepare it from the card and its files "
                             f"({type(cause).__name__}: {one_line(cause, 200)})")


def missing_file_error(error: FileNotFoundError, card: str, where: str = "", offline: str = "") -> Exception:
    """The SourceError naming the card for datasets' "Unable to find '<pattern>'" (a data file the card names
    exactly that is not there), its pattern shown bounded (datasets' message holds it whole, and every extension it
    knows); `error` itself for any other."""
    missing = re.match(r"Unable to find '(.*?)'(?: with any supported extension|$)", str(error), re.DOTALL)
    if missing is None:
        return error
    return SourceError(card, f"{where}no file {preview(missing.group(1))}, which the card declares{offline}")


def no_data_files_error(location: str, revision: str | None) -> SourceError:
    """The SourceError for datasets' DataFilesNotFoundError ("No (supported) data files found in <folder>"), which
    names neither the card nor a config: datasets resolves the data files of the first of the card's configs to
    open any config, so when they match no file it reads (Parquet, CSV, JSON, ...), no config opens. Names the card
    and that config's patterns; for a repository whose card declares no configs, the folder or repository."""
    configs = check_repository_yaml(location, revision=revision).get("configs") or []
    if not configs:
        card = ("its card declares no configs (data_files)" if card_text(location, revision=revision) is not None
                else f"no card ({CARD}) to declare its configs")
        return SourceError(location, f"no data file datasets reads (Parquet, CSV, JSON, ...) in it, and {card}")
    first, files = configs[0], configs[0].get("data_files")
    if files is None:  # (datasets then looks for data files anywhere in the folder)
        return SourceError(location, "no data file datasets reads (Parquet, CSV, JSON, ...) in it")
    patterns = [pattern for _, pattern in declared_patterns(first)]
    return SourceError(repository_file_name(location, CARD),
                       f"config {preview(first['config_name'])}: no data file datasets reads (a regular Parquet, CSV, "
                       f"JSON, ... file) matches its data files ({previews(patterns, 3, 60)}); datasets opens every "
                       f"config with the first one's files, so no config opens until they are back"
                       f"{offline_note(location)}")


def offline_note(location: str) -> str:
    """OFFLINE_NOTE when HF_HUB_OFFLINE is set and `location` is the hub cache's copy of a repository (a part of
    it may be missing there); "" for any other folder."""
    return OFFLINE_NOTE if hub_offline() and (not os.path.isdir(location) or is_hub_snapshot(location)) else ""


def require_own_file(file: str, location: str, where: str = "", bounds: list[str] | None = None) -> None:
    """SourceError naming `file` (a data file of the local folder `location`) when it resolves, symlinks followed
    as opening it would follow them (`x/..` after a linked `x` included), to a file outside what
    `data_file_bounds(location)` allows; `where` starts the message."""
    resolved = os.path.realpath(file)
    if not within(resolved, bounds or data_file_bounds(location)):
        raise SourceError(file, f"{where}this data file resolves (symlinks followed) to {resolved}, outside "
                                f"{location}; a folder's data files must be its own (refused)")


def data_file_bounds(location: str) -> list[str]:
    """Where the data files of the local folder `location` may resolve to (symlinks followed): the folder itself
    (its real path), and, for a hub-cache snapshot (`<repository cache>/snapshots/<commit>`, whose files are links
    into `<repository cache>/blobs`), that repository's blobs; never another repository's cache."""
    real = os.path.realpath(location)
    bounds = [real]
    if is_hub_snapshot(location):
        bounds.append(os.path.join(os.path.dirname(os.path.dirname(real)), "blobs"))
    return bounds


def within(resolved: str, bounds: list[str]) -> bool:
    """Whether the resolved path `resolved` is one of `bounds` (`data_file_bounds`) or lies inside one."""
    return any(is_inside(resolved, bound) for bound in bounds)


def is_hub_snapshot(location: str) -> bool:
    """Whether the local folder `location` is a hub-cache snapshot (`<repository cache>/snapshots/<commit>`)."""
    return os.path.basename(os.path.dirname(os.path.realpath(location))) == "snapshots"


MAX_CARD_BYTES = 16 << 20
"""The largest README.md read (ragloaders' cards hold about 10 KB, the hub's longest a few MB; of it, the YAML front
matter may hold card_yaml.MAX_YAML_BYTES)."""


def card_text(location: str, *, revision: str | None = None) -> str | None:
    """The README.md of a folder, or of the hub dataset repository `location` (downloaded alone, at `revision`: a
    commit, branch or tag, default the main branch), read as huggingface_hub reads a card (UTF-8, a leading BOM
    dropped, line ends as they are); None when it has none. SourceError for bytes that are not UTF-8, or for a card
    that is not a regular file of its own or is over MAX_CARD_BYTES (`repository_file_text`)."""
    return repository_file_text(location, CARD, revision=revision, encoding="utf-8-sig", newline="",
                                max_bytes=MAX_CARD_BYTES)


def repository_file_name(location: str, name: str) -> str:
    """How a message names the file `name` at the top of a folder or of the hub repository `location`."""
    return os.path.join(location, name) if os.path.isdir(location) else f"{location}/{name}"


def repository_file_text(location: str, name: str, *, max_bytes: int, revision: str | None = None,
                         encoding: str = "utf-8", newline: str | None = None) -> str | None:
    """The text of the file `name` at the top of a folder, or of the hub dataset repository `location` (downloaded
    alone, at `revision`), decoded strictly with `encoding` and `newline` as `open` takes them (as the reader
    whose view is checked reads it); None when it has none. SourceError naming the file for bytes that do not
    decode, or, before it is read, for a file over `max_bytes`; in a folder, also for a name there that is not a
    regular file of the folder (`require_regular_file`: a FIFO, a device, a folder, a link leading outside it), which
    datasets would open and read to its end."""
    import io

    path = os.path.join(location, name)
    if not os.path.isdir(location):
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError

        try:
            path = hf_hub_download(location, name, repo_type="dataset", revision=revision)
        except EntryNotFoundError:
            return None
    elif not os.path.lexists(path):
        return None
    else:
        require_regular_file(path, location)
    data = read_regular_file(path, max_bytes)
    try:
        with io.TextIOWrapper(io.BytesIO(data), encoding=encoding, newline=newline) as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise SourceError(path, f"not UTF-8 text at byte {e.start:,} ({e.reason}), where huggingface_hub and "
                                "datasets read it as UTF-8") from None


def require_regular_file(path: str, location: str) -> None:
    """SourceError naming `path` (a file at the top of the local folder `location` that datasets reads, such as its
    card) when it is not a regular file, or is a symbolic link that does not lead to one within the folder (or, for a
    hub-cache snapshot, its repository's blobs: `data_file_bounds`). Checked with stat alone: nothing is opened (a
    FIFO would block its reader, a device or a link to a big file outside fill its memory)."""
    import stat

    resolved = os.path.realpath(path)
    link = f"a symbolic link to {preview(resolved)}" if os.path.islink(path) else ""
    if link and not within(resolved, data_file_bounds(location)):
        raise SourceError(path, f"{link}, outside {location}; datasets would read it as this folder's own "
                                "(refused, not opened)")
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise SourceError(path, f"{link or 'it'} cannot be read ({e.strerror or type(e).__name__}); datasets "
                                "would take the folder for one without it (refused)") from None
    if not stat.S_ISREG(mode):
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else
                "not a regular file")
        raise SourceError(path, f"{f'{link}, ' if link else ''}{kind}, not a regular file: datasets would wait on "
                                "it, read it without end or take the folder for one without it (refused, not opened)")


def read_regular_file(path: str, max_bytes: int) -> bytes:
    """The bytes of the regular file `path`, `max_bytes` at most (`user_cache.read_small_file`: opened without
    waiting, so a FIFO put in its place cannot block): SourceError naming it when it holds more, or is not (or no
    longer) a regular file once open."""
    if (size := os.stat(path).st_size) > max_bytes:
        raise SourceError(path, f"{size:,} bytes, over the {max_bytes:,} such a file may hold")
    try:
        data = read_small_file(path, max_bytes)
    except OSError:
        raise SourceError(path, "not a regular file (replaced while it was read?); refused") from None
    if data is None:
        raise SourceError(path, f"more than {max_bytes:,} bytes (it grew while it was read), over the {max_bytes:,} "
                                "such a file may hold")
    return data


def check_repository_yaml(location: str, *, revision: str | None = None) -> dict[str, Any]:
    """What `datasets` reads of a repository's YAML, checked by `check_card`: its README.md's front matter, updated
    with its `.huggingface.yaml` when it has one (datasets merges that file over the card, and reads it whole with
    `yaml.safe_load`); {} for neither. A SourceError naming the file at fault, or the card, if not; or naming the
    card when data files datasets resolves as soon as it opens the repository could lie outside it
    (`refuse_outside_patterns`)."""
    return checked_repository_card(location, revision=revision)[0]


def checked_repository_card(location: str, *, revision: str | None = None) -> tuple[dict[str, Any], str]:
    """(what `check_repository_yaml` gives, how a message names where it was read: `checked_yaml`'s)."""
    metadata, name = checked_yaml(location, revision=revision)
    refuse_outside_patterns(location, metadata, card=name)
    return metadata, name


def checked_yaml(location: str, *, revision: str | None = None) -> tuple[dict[str, Any], str]:
    """(what `check_repository_yaml` gives, checked by `check_card` alone, how a message names where it was read:
    the card, or the card with `.huggingface.yaml`)."""
    check_legacy_infos(location, revision=revision)
    card = card_text(location, revision=revision)
    name = repository_file_name(location, CARD)
    standalone = repository_file_text(location, STANDALONE_YAML, revision=revision, max_bytes=MAX_YAML_BYTES)
    if card is None and standalone is None:
        return {}, name
    if standalone is None:
        return check_card(card or "", name), name
    standalone_name = repository_file_name(location, STANDALONE_YAML)
    return check_card(card or "", name, standalone=(standalone, standalone_name)), f"{name} with {standalone_name}"


LEGACY_INFOS = "dataset_infos.json"
"""The config infos old versions of push_to_hub wrote; datasets still reads them, under the card's."""
MAX_LEGACY_INFOS_BYTES = 16 << 20


def check_legacy_infos(location: str, *, revision: str | None = None) -> dict[str, Any] | None:
    """A repository's `dataset_infos.json` (None when it has none), or a SourceError naming it when datasets could
    not read it as it does (a JSON object of config -> info, each made a DatasetInfo), a config's splits do not
    declare counts datasets can verify (`card_shape.check_splits`), or it is over MAX_LEGACY_INFOS_BYTES (a few KB a
    config)."""
    import json

    text = repository_file_text(location, LEGACY_INFOS, revision=revision, max_bytes=MAX_LEGACY_INFOS_BYTES)
    if text is None:
        return None
    from datasets.info import DatasetInfo

    name = repository_file_name(location, LEGACY_INFOS)
    try:
        infos = json.loads(text)
        for config, info in infos.items():
            DatasetInfo.from_dict(info)
            check_splits(info.get("splits"), name, f"config {preview(config)}")
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        if isinstance(e, SourceError):
            raise
        raise SourceError(name, f"datasets cannot read it ({type(e).__name__}: {one_line(e, 200)})") from None
    return infos


def cached_snapshot(repo_id: str, *, offline: bool, revision: str | None = None) -> str:
    """The local folder of the dataset repository `repo_id` at `revision` (a commit, branch or tag; default the main
    branch) in the hub cache: downloaded (the hub was probed first), or, `offline`, the copy already there (HubError
    when there is none). The folder's name is the commit id (the hub cache's `snapshots/<commit>`)."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    if offline:
        try:
            return snapshot_folder(repo_id, snapshot_download(repo_id, repo_type="dataset", local_files_only=True,
                                                              revision=revision), revision)
        # (IsADirectoryError: a revision naming a folder of refs/, such as `refs/pr`, which huggingface_hub opens)
        except (LocalEntryNotFoundError, IsADirectoryError, NotADirectoryError):
            at = f" at revision {preview(revision)}" if revision else ""
            raise HubError(f"{repo_id}: HF_HUB_OFFLINE is set and the hub cache ({constants.HF_HUB_CACHE}) holds no "
                           f"copy of this dataset repository{at}; unset HF_HUB_OFFLINE to download it, or pass a built "
                           "folder") from None
    from huggingface_hub.errors import HfHubHTTPError

    probe_hub(repo_id)
    try:
        return snapshot_folder(repo_id, snapshot_download(repo_id, repo_type="dataset", revision=revision), revision)
    except (HfHubHTTPError, LocalEntryNotFoundError) as e:  # the hub answered the probe, then failed a download
        cause = innermost_cause(e)
        raise HubError(f"{repo_id}: the hub at {hub_endpoint()} failed while this dataset repository was downloaded "
                       f"({cause}); {REMEDIES}", unreachable=cause) from None


def hub_cache_folder(repo_id: str, cache: str | None = None) -> str:
    """The folder of the dataset repository `repo_id` in the hub cache `cache` (default huggingface_hub's own):
    huggingface_hub's `datasets--org--name`."""
    from huggingface_hub import constants

    return os.path.join(cache or constants.HF_HUB_CACHE, "datasets--" + repo_id.replace("/", "--"))


def snapshot_folder(repo_id: str, folder: str, revision: str | None, cache: str | None = None) -> str:
    """`folder`, which huggingface_hub gave as the snapshot of `repo_id`, once it is one: `snapshots/<commit id>` of
    that repository's folder in the hub cache `cache` (default huggingface_hub's own). (Offline, or when the hub
    cannot be reached, huggingface_hub follows the cache's `refs/<revision>` file wherever its text leads: a damaged
    or hostile one named any folder of the machine.)"""
    snapshots = os.path.join(hub_cache_folder(repo_id, cache), "snapshots")
    name = os.path.basename(os.path.normpath(folder))
    if not COMMIT_ID.fullmatch(name) or os.path.realpath(os.path.dirname(os.path.normpath(folder))) != \
            os.path.realpath(snapshots):
        raise HubError(f"{repo_id}: the hub cache's reference to {preview(revision or 'main')} leads to "
                       f"{preview(folder)}, not to a snapshot of this repository ({snapshots}/<commit id>): the cache "
                       "is damaged; delete that repository's folder in it to download it again")
    return folder


def remember_revision(repo_id: str, revision: str | None, commit: str) -> None:
    """Note in the hub cache that `revision` (a branch or tag; default the main branch) is at `commit`, as
    huggingface_hub does when it downloads by that name: ragloaders downloads by the commit it resolved, and an
    offline read of the name found no copy. Best effort: a cache that cannot be written keeps its old note."""
    name = revision or "main"
    if COMMIT_ID.fullmatch(name):
        return
    ref = os.path.join(hub_cache_folder(repo_id), "refs", *name.split("/"))
    try:
        make_folders(os.path.dirname(ref))
        replace_with_text(ref, commit, prefix=f".{os.path.basename(ref)}.")
    except OSError:
        pass


def unreadable_parquet(builder: Any) -> SourceError | None:
    """A SourceError naming the first Parquet data file of `builder`'s config that does not read to its end and
    why, or None when they all do. Each file is read in batches: this runs only once a load has failed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for files in (builder.config.data_files or {}).values():
        for path in files:
            if str(path).endswith(".parquet") and os.path.isfile(path):
                try:
                    with pq.ParquetFile(path) as parquet:
                        for _ in parquet.iter_batches(batch_size=65_536, use_threads=False):
                            pass
                except (pa.ArrowException, OSError) as e:
                    return SourceError(path, f"not a readable Parquet file ({one_line(e, 300)}); "
                                             "build the folder again")
    return None


def too_deep_error(builder: Any, repository: Repository, config: str) -> SourceError:
    """The SourceError for a RecursionError while datasets loaded `config` (`builder`'s) of `repository`: naming the
    first local Parquet data file whose schema metadata's `huggingface` entry (the features datasets reads where the
    card declares none) is JSON nested too deep to decode, else the card. Only each file's footer is read."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    for files in (builder.config.data_files or {}).values():
        for path in files:
            if not (str(path).endswith(".parquet") and os.path.isfile(path)):
                continue
            try:
                json.loads((pq.read_schema(path).metadata or {}).get(b"huggingface", b"{}"))
            except RecursionError:
                again = "download it again" if repository.repo_id else "build the folder again"
                return SourceError(path, f"config {preview(config)}: the `huggingface` entry of its Parquet schema "
                                         f"metadata (the features datasets reads) nests JSON too deep to read; {again}")
            except (pa.ArrowException, OSError, ValueError):
                continue
    return SourceError(repository_file_name(repository.location, CARD),
                       f"config {preview(config)}: datasets ran out of Python's stack reading it (a structure nested "
                       "too deep in the card or its data files' schema metadata)")


def rows_unlike_card(builder: Any, repository: Repository, config: str) -> SourceError | None:
    """A SourceError naming the card of a local `repository` (a built folder, or the hub cache's copy) when a split
    of `config` (`builder`'s), all of whose data files are Parquet, holds in their row groups another number of rows
    than the card declares (a file deleted, cut, added or swapped since it was written); None when every such split
    holds what the card says: datasets' own error stands. The card (with `.huggingface.yaml`) is read and checked
    again (`check_repository_yaml`: it may have changed since)."""
    import pyarrow.parquet as pq

    card, declarer, entry = os.path.join(repository.location, CARD), "the card", "the card's dataset_info"
    declared = split_row_counts(check_repository_yaml(repository.location), config)
    if declared is None:  # datasets then verifies the splits a legacy dataset_infos.json declares for the config
        legacy = check_legacy_infos(repository.location) or {}
        if len(legacy) == 1:  # (datasets takes a lone entry for the config `default`: an old name such as org--name)
            legacy = {"default": next(iter(legacy.values()))}
        declared = info_row_counts(legacy[config]) if config in legacy else None
        card, declarer = repository_file_name(repository.location, LEGACY_INFOS), LEGACY_INFOS
        entry = declarer
    if declared is None:
        return None
    again = ("download it again (its copy in the hub cache was changed)" if repository.repo_id else
             f"`ragloaders validate {preview(repository.name)}` names the files that changed; build the folder again")
    for split, files in (builder.config.data_files or {}).items():
        if split not in declared:
            return SourceError(card, f"config {preview(config)}: its data files hold a split {preview(split)} that "
                                     f"{entry} does not declare (it declares "
                                     f"{', '.join(map(preview, declared)) or 'none'}); write {declarer} again")
        if not all(str(path).endswith(".parquet") for path in files):
            continue
        expected = declared[split]
        found = 0
        for path in files:
            with pq.ParquetFile(path) as parquet:
                found += sum(parquet.metadata.row_group(group).num_rows for group in range(parquet.num_row_groups))
        if found != expected:
            change = "deleted, cut or replaced" if found < expected else "added or replaced"
            return SourceError(card, f"config {preview(config)} split {preview(split)}: its {len(files)} Parquet "
                                     f"file(s) hold {found:,} rows where {declarer} declares {expected:,}: a data file "
                                     f"was {change} since it was written; {again}")
    return None


def refuse_revision(name: str, revision: str | None, what: str) -> None:
    """ValueError in one line when a revision is given for something that is not a hub repository (`what`)."""
    if revision is not None:
        raise UsageError(f"{name}: a revision (revision= / --revision) is for a hub repository, and {name} is {what}, "
                         "read as it is")


def resolve_commit(repo_id: str, revision: str | None) -> str:
    """The commit id that `revision` (a commit, branch or tag; None: the main branch) of the hub dataset repository
    `repo_id` points at now. ValueError naming the revision when the repository has none of that name."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RevisionNotFoundError

    try:
        sha = HfApi().dataset_info(repo_id, revision=revision).sha
    except RevisionNotFoundError:
        raise UsageError(f"{repo_id}: the hub dataset repository has no revision {preview(revision)} (a commit id, "
                         "branch or tag)") from None
    except HfHubHTTPError as e:
        cause = innermost_cause(e)
        raise HubError(f"{repo_id}: the hub at {hub_endpoint()} failed to say which commit revision "
                       f"{revision or 'main'} is ({cause}); {REMEDIES}", unreachable=cause) from None
    if not isinstance(sha, str) or not COMMIT_ID.fullmatch(sha):
        raise HubError(f"{repo_id}: the hub at {hub_endpoint()} named no commit id for revision {revision or 'main'}; "
                       f"{REMEDIES}", unreachable="no commit id")
    return sha


REF_NAME_REFUSED = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^/|/$|^@$|(?:^|/)\.|\.lock(?:/|$)|\.$")
"""What git's `check-ref-format` refuses in a branch or tag name (a commit id has none of it): the hub cache reads
`refs/<revision>` as a path offline, so `../refs/main` would read as main, and `../../elsewhere` outside the cache."""


def check_revision(name: str, revision: str | None) -> None:
    """ValueError in one line, before the hub or its cache is asked, when `revision` (for the repository `name`) is
    empty (else taken for the main branch, or blamed on the hub) or cannot be a commit id, branch or tag
    (REF_NAME_REFUSED)."""
    if revision is None:
        return
    if not revision.strip():
        raise UsageError(f"{name}: the revision asked for is empty ({preview(revision)}); give a commit id, branch or "
                         "tag, or no revision for the main branch")
    if REF_NAME_REFUSED.search(revision):
        raise UsageError(f"{name}: {preview(revision)} cannot be a revision (a branch or tag name has no '..', "
                         "'//', control character, space or any of ~^:?*[\\, and does not start or end with '/' or "
                         "start a part with '.'); give a commit id, branch or tag, or no revision for the main branch")


def open_repository(name: str, revision: str | None = None) -> Repository:
    """The SOURCE `name` that is not a benchmark path: an existing folder, else a hub dataset repository (its copy
    in the hub cache with HF_HUB_OFFLINE) at `revision` (a commit, branch or tag; default the main branch),
    resolved to the commit it is read at (`Repository.commit`, also logged). Raises MissingSourceError for a name
    that can only be a folder and is not one, ValueError for a revision given with a folder, an empty one, or one the
    repository does not have, HubError (one line) when the hub cannot be reached or has no such repository --
    saying also that no local folder of that name exists."""
    check_revision(name, revision)
    location = os.path.expanduser(name)
    if os.path.isdir(location):
        refuse_revision(name, revision, "a local folder")
        if os.path.basename(os.path.normpath(location)) in ("", "."):  # (datasets names a dataset by its folder's
            location = os.path.abspath(location)  # name, and `.` has none: "dataset_name should be specified")
        return Repository(name, folder=location)
    if os.path.exists(location):
        raise MissingSourceError(f"{name}: a file, not a folder: pass a folder ragloaders built (README.md + "
                                 "Parquet), a hub repository id, or a benchmark path (`ragloaders list`)")
    here = f"no folder {name} in {os.getcwd()}"
    if not looks_like_repo_id(name.strip("/")):
        raise UsageError(f"unknown path {preview(name)}: {here}, nor is it a benchmark path (`ragloaders list` "
                         f"shows them) "
                         "or a hub repository id (org/name)")
    repo_id = name.strip("/")
    if hub_offline():
        try:
            folder = cached_snapshot(repo_id, offline=True, revision=revision)
        except HubError as e:
            raise HubError(f"{name}: {here}; {str(e).split(': ', 1)[1]}") from None
        return opened(Repository(name, folder=folder, repo_id=repo_id, commit=os.path.basename(folder),
                                 revision=revision))
    try:
        status = probe_hub(repo_id)
    except HubError as e:
        raise HubError(f"{name}: {here}, and the hub at {hub_endpoint()} cannot be reached to look for a dataset "
                       f"repository of that name ({e.unreachable}); {REMEDIES}", e.unreachable) from None
    if status in (401, 403, 404):
        raise HubError(f"{name}: {here}, and the hub at {hub_endpoint()} has no dataset repository {repo_id} "
                       f"(HTTP {status}; a private one needs HF_TOKEN)")
    return opened(Repository(name, repo_id=repo_id, commit=resolve_commit(repo_id, revision), revision=revision))


def opened(repository: Repository) -> Repository:
    logger.info("ragloaders: reading %s", repository.describe())
    return repository
