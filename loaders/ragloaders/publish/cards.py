"""Dataset cards: README.md whose YAML makes a built folder load without code, and whose text says what it holds.

The facts come from the path's `Benchmark` (its `card_facts(path) -> CardFacts`). The prose and the family-wide
YAML (task categories, language, tags) come from `dataset_cards/<family>.md`, a `string.Template` whose
`$placeholders` are the sections rendered here from the build's real numbers.
"""

from __future__ import annotations

import dataclasses
import os
import re
import string
from dataclasses import dataclass
from importlib import resources
from typing import Any

import datasets
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCardData

from ..api import configs_of
from ..core.card_yaml import load_yaml
from ..core.errors import UsageError
from ..core.facts import Benchmark, CardFacts
from ..core.hub_repository import BUILT_FROM, BUILT_FROM_PATTERN  # noqa: F401 (validate reads the pattern here)
from ..core.preview import preview
from .parquet import CUTTING_RULE, LARGE_ROW_BYTES, ConfigOutput

TEMPLATES_ENV = "RAGLOADERS_CARD_TEMPLATES"
"""Folder holding `<family>.md`; by default the package's `ragloaders.dataset_cards` (the top-level
`dataset_cards/` folder, installed with the package)."""
REPO_PLACEHOLDER = "<org>/<repo>"
DEFAULT_CONFIG = "records"
"""The config plain `load_dataset(repo)` gives (`default: true`); never named `default`, which mteb reads as qrels."""
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"))
LIST_PREVIEW = 10
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")
"""The form of a hub licence id (`cc-by-4.0`, `apache-2.0`, `gpl-3.0`)."""


@dataclass(frozen=True)
class CardOptions:
    """What whoever builds their own data (a path whose CardFacts.own_data is set) states on its card."""

    license: str | None = None
    """A hub licence id (`--license`); `other` is refused, since the hub then wants a name and a link as well."""
    pretty_name: str | None = None
    """The card's title (`--pretty-name`); default: the folder's name."""

    def __post_init__(self) -> None:
        if self.license is not None and (not LICENSE_ID.fullmatch(self.license) or self.license == "other"):
            raise UsageError(f"--license {preview(self.license)}: expected a hub licence id such as cc-by-4.0 or "
                             "apache-2.0 (lower case; `other` needs a name and link: edit the card after building)")
        if self.pretty_name is not None and (not self.pretty_name.strip() or len(self.pretty_name.splitlines()) > 1):
            raise UsageError(f"--pretty-name {preview(self.pretty_name)}: expected a non-empty name on one line")

    def given(self) -> dict[str, str]:
        return {name: value for name, value in dataclasses.asdict(self).items() if value is not None}


def check_options(benchmark: Benchmark, path: str, options: CardOptions) -> None:
    """Refuse card options for a path (of `benchmark`) whose card states its publisher's facts (before anything is
    built)."""
    if options.given() and not facts_for(benchmark, path).own_data:
        raise UsageError(f"--license and --pretty-name describe your own data (beir-format); the card of {path} "
                         "states what its publisher declares")


def folder_name(data_dir: str | None) -> str:
    """The name of the folder (or zip) read, without where it lies: a published card does not show local paths. On
    one line: a line break in a folder's name would end the card's title and could start a line of its own there."""
    name = os.path.basename(os.path.abspath(os.path.expanduser(data_dir))) if data_dir else ""
    return " ".join(name.splitlines())


def facts_for(benchmark: Benchmark, path: str, data_dir: str | None = None, options: CardOptions | None = None
              ) -> CardFacts:
    """The `CardFacts` the benchmark declares for `path`; for the user's own data, with what `options` state."""
    facts = benchmark.card_facts(path)
    options = options or CardOptions()
    if not facts.own_data:
        return facts
    return dataclasses.replace(
        facts,
        pretty_name=options.pretty_name or folder_name(data_dir) or facts.pretty_name,
        license=options.license or facts.license,
        license_text=f"`{options.license}`, as stated by whoever built this repository" if options.license
        else facts.license_text,
    )


def card_data(outputs: list[ConfigOutput]) -> DatasetCardData:
    """`configs:` (data_files per split) and `dataset_info:` (features, split sizes) for the built folder."""
    data = DatasetCardData()
    configs = {o.name: {"data_files": o.data_files, **({"default": True} if o.name == DEFAULT_CONFIG else {})}
               for o in outputs}
    MetadataConfigs(configs).to_dataset_card_data(data)
    infos = {}
    for output in outputs:
        info = datasets.DatasetInfo(features=output.info.features, config_name=output.name)
        info.splits = datasets.SplitDict()
        for split in output.splits.values():
            info.splits.add(datasets.SplitInfo(split.name, num_bytes=split.num_bytes, num_examples=split.num_examples))
        info.dataset_size = sum(split.num_bytes for split in output.splits.values())
        file_bytes = [getattr(split, "file_bytes", 0) for split in output.splits.values()]
        info.download_size = sum(file_bytes) if all(file_bytes) else None
        infos[output.name] = info
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def size_category(outputs: list[ConfigOutput]) -> str:
    rows = max((sum(s.num_examples for s in o.splits.values()) for o in outputs), default=0)
    return next((name for limit, name in SIZE_CATEGORIES if rows < limit), "n>1B")


def feature_type(feature: Any) -> str:
    """A short type name: `string`, `int32`, `list<string>`, `struct{chunk_id: string, score: int32}`."""
    if isinstance(feature, dict):
        return "struct{" + ", ".join(f"{name}: {feature_type(sub)}" for name, sub in feature.items()) + "}"
    if isinstance(feature, datasets.Value):
        return feature.dtype
    if isinstance(feature, (datasets.List, datasets.LargeList, datasets.Sequence)):
        kind = "large_list" if isinstance(feature, datasets.LargeList) else "list"
        return f"{kind}<{feature_type(feature.feature)}>"
    return type(feature).__name__


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def load_section(repo_id: str, outputs: list[ConfigOutput], *, folder: bool = False) -> str:
    """The `load_dataset` line of every config of the repository `repo_id` (or, `folder`, of the local folder of
    that name), and a DuckDB query over the first config's files."""
    lines = ["```python", "from datasets import load_dataset", ""]
    lines += [f'{o.name} = load_dataset("{repo_id}", "{o.name}")' for o in outputs]
    where = f"{repo_id.rstrip('/')}/" if folder else f"hf://datasets/{repo_id}/"
    lines += ["```", "", "Streaming works the same way: add `streaming=True`. The files are plain Parquet, so other "
              "engines read them too, e.g. DuckDB:", "", "```sql"]
    lines += [f"SELECT count(*) FROM '{where}{o.data_files[0]['path']}';" for o in outputs[:1]]
    lines += ["```"]
    if folder:
        lines += ["", f"This card was written for the folder `{repo_id}`; once it is pushed to the hub (`ragloaders "
                  f"push {repo_id} --repo-id ORG/NAME`), load it by the repository's id in its place."]
    return "\n".join(lines)


def configs_sentence(outputs: list[ConfigOutput]) -> str:
    """How many configs this build has, named (it may hold more than the benchmark's own, e.g. `build --with`)."""
    names = [f"`{o.name}`" for o in outputs]
    if len(names) > LIST_PREVIEW:
        return f"This build has {len(outputs)} configs (each is listed under Splits)."
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"This build has {len(outputs)} config{'s' if len(outputs) != 1 else ''}: {listed}."


def paragraph_end(text: str) -> str:
    """What goes after `text` before another sentence: a space, or a blank line after a Markdown table (a sentence
    on a table's last line would become a cell of its last row)."""
    lines = text.rstrip().splitlines()
    return "\n\n" if lines and lines[-1].startswith("|") else " "


def fields_section(outputs: list[ConfigOutput], notes: dict[str, str]) -> str:
    rows = []
    for output in outputs:
        for name, feature in (output.info.features or {}).items():  # None: columns known once built from the file
            note = notes.get(f"{output.name}.{name}", notes.get(name, ""))
            rows.append([output.name, f"`{name}`", feature_type(feature), note])
    return _table(["config", "column", "type", "meaning"], rows)


def splits_section(outputs: list[ConfigOutput]) -> str:
    rows = []
    for output in outputs:
        for split in output.splits.values():
            file_bytes = getattr(split, "file_bytes", 0)
            rows.append([output.name, split.name, f"{split.num_examples:,}", f"{split.num_bytes:,}",
                         len(split.files), f"{file_bytes:,}" if file_bytes else "—"])
    parts = [_table(["config", "split", "rows", "bytes (Arrow)", "Parquet files", "bytes (Parquet)"], rows),
             CUTTING_RULE]
    large = [f"`{o.name}/{s.name}` ({s.num_bytes / s.num_examples / (1 << 20):.1f} MiB)" for o in outputs
             for s in o.splits.values() if s.num_examples and s.num_bytes / s.num_examples > LARGE_ROW_BYTES]
    if large:
        parts.append(f"Rows average more than {LARGE_ROW_BYTES >> 20} MiB in {', '.join(large)}: the dataset viewer "
                     "may not show them; `datasets` and the other engines read them.")
    return "\n\n".join(parts)


def _official_files(facts: CardFacts, source: dict | None) -> list[dict]:
    """The official files of the release read (by name), else every official file the benchmark lists."""
    if source:
        named = [f["official"] for f in source["files"] if f.get("official")]
        if named:
            return named
    return facts.source_files


def sources_section(facts: CardFacts, data_dir: str | None, source: dict | None = None) -> str:
    """The files this build read (name, bytes, sha256, what they are), then the official files and where they are."""
    parts = []
    if source and source["files"]:
        rows = [[f"`{f['name']}`", f"{f['bytes']:,}", f"`{f['sha256']}`" if f.get("sha256") else "—",
                 ", ".join(f["configs"]), f["note"]] for f in source["files"]]
        parts.append("Files this build read (hashed when it was built):\n\n"
                     + _table(["file", "bytes", "sha256", "read by", "what it is"], rows))
    elif source is not None:
        parts.append("The builder did not report the files it read.")
    official = _official_files(facts, source)
    if official:
        rows = [[f.get("name", "—"), f"{f['bytes']:,}" if f.get("bytes") else "—",
                 f"md5 `{f['md5']}`" if f.get("md5") else (f"sha256 `{f['sha256']}`" if f.get("sha256") else "—"),
                 f.get("url", "—")] for f in official]
        parts.append(("The official files:" if source else "The official files (this build did not record which it "
                      "read):") + "\n\n" + _table(["file", "bytes", "checksum", "url"], rows))
    if facts.obtain:
        parts.append(f"The files are {facts.obtain}.")
    if data_dir:
        parts.append("This build read the files from a local folder (`data_dir`) rather than downloading them.")
    return "\n\n".join(parts) or "Not published."


def _value_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_value_text(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list):
        shown = ", ".join(f"`{v}`" for v in value[:LIST_PREVIEW])
        return (shown + (f" … ({len(value):,} in all)" if len(value) > LIST_PREVIEW else "")) if value else "none"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _flatten(value: Any, prefix: str = "") -> list[list[str]]:
    """Rows (`key.path`, value) of any JSON-able report; a dict of scalars below the top stays on one row."""
    nested = isinstance(value, dict) and (not prefix or any(isinstance(v, (dict, list)) for v in value.values()))
    if not nested:
        return [[prefix or "value", _value_text(value)]]
    rows = []
    for key, sub in value.items():
        rows += _flatten(sub, f"{prefix}.{key}" if prefix else str(key))
    return rows


SPLIT_CHECKS = (("rows", "rows"), ("queries", "distinct queries"),
                ("docs", "distinct docs"), ("duplicate_ids", "duplicate ids"),
                ("empty_texts", "empty texts"), ("missing_queries", "qrels → missing query"),
                ("missing_docs", "qrels → missing doc"), ("duplicate_pairs", "duplicate pairs"),
                ("duplicate_keys", "repeated keys"),
                ("score_histogram", "scores (score: rows)"))


def _finding_line(finding: dict) -> str:
    """One finding; its message already states the count. A known defect is named, its note is in the defects
    section (not repeated here)."""
    where = finding["config"] + (f"/{finding['split']}" if finding.get("split") else "")
    ids = ", ".join(f"`{i}`" for i in finding.get("ids", [])[:LIST_PREVIEW])
    more = " …" if ids and finding["count"] > min(len(finding.get("ids", [])), LIST_PREVIEW) else ""
    known = " A known upstream defect (see Known upstream defects)." if finding.get("note") else ""
    return f"- {where}: {finding['message']}{'; e.g. ' + ids + more if ids else ''}.{known}"


def integrity_section(integrity: dict | None) -> str:
    """The `validate.integrity` report of this build: a table per split, shared ids, findings."""
    if not integrity:
        return "Not computed for this build (`ragloaders validate PATH` reports it)."
    if "splits" not in integrity:
        return "Computed on this build:\n\n" + _table(["check", "result"], _flatten(integrity))
    splits = integrity["splits"]
    columns = [(key, title) for key, title in SPLIT_CHECKS if any(key in s for s in splits)]
    rows = [[s["config"], s["split"]] + [_value_text(s.get(key)) for key, _ in columns] for s in splits]
    parts = ["Computed on this build by `ragloaders validate`.",
             _table(["config", "split"] + [title for _, title in columns], rows)]
    if integrity.get("shared_ids") is not None:
        parts.append(f"Query ids that are also corpus ids: {integrity['shared_ids']:,}.")
    for key, title in (("errors", "Findings"), ("warnings", "Known upstream defects found")):
        if integrity.get(key):
            parts.append(f"{title}:\n\n" + "\n".join(_finding_line(f) for f in integrity[key]))
    if not integrity.get("errors"):
        parts.append("No structural errors.")
    return "\n\n".join(parts)


RELATION_MEASURE = "distinct query ids"
"""What a published figure of qrels / search_results counts (core.facts.PublishedCounts)."""


def _release_sentence(source: dict | None, outputs: list[ConfigOutput], own_data: bool = False) -> str:
    if source is None:
        return "This build did not record which source files it read."
    if not source["files"]:
        return "The builder did not report the files it read."
    if own_data:
        return ("The files read are the builder's own (see Source files): nothing is published about them, so no "
                "figure is compared.")
    statuses = {f["status"] for f in source["files"]}
    release = f"the official files of release `{source['release']}`" if source.get("release") else "the official files"
    if "differs" in statuses:
        first = next(f for f in source["files"] if f["status"] == "differs")
        of = f" of release `{source['release']}`" if source.get("release") else ""
        holds = ", ".join(f"{sum(s.num_examples for s in o.splits.values()):,} `{o.name}` rows" for o in outputs)
        return (f"The files read are **not** the published files{of}: `{first['name']}` is {first['difference']}. "
                f"This build is a sample, a cut or another release: it holds {holds}. The published figures below "
                "belong to the published files: they are shown beside this build's, not compared.")
    if statuses == {"official"}:
        checked = "size and checksum" if all(
            f["official"].get("md5") or f["official"].get("sha256") for f in source["files"]) else "size"
        return f"The files read are {release}: each matches its official file in {checked} (see Source files)."
    if "official" in statuses:
        return (f"The files read are {release} where an official size or checksum exists; the others could not be "
                "checked (see Source files).")
    return ("The files read have no published size or checksum to check them against (e.g. the files of an extracted "
            "archive): which release they are is not known; the published figures are compared as if they were.")


def _built_count(integrity: dict, config: str, split: str | None) -> int | None:
    facts = [f for f in integrity.get("splits", []) if f["config"] == config and split in (None, f["split"])]
    if not facts:
        return None
    measure = "queries" if any("queries" in f for f in facts) else "rows"
    return sum(f.get(measure, 0) for f in facts)


def build_section(outputs: list[ConfigOutput], integrity: dict | None, declared: list[str] | None = None,
                  own_data: bool = False, built: list[str] | None = None) -> str:
    """What this build holds: the release read, the configs and splits written (and the `declared` configs and
    splits left out, with why), and the published figures beside the built ones with a word on each difference.
    `built`: the configs asked for (`build --configs`), when not every declared one was."""
    source = (integrity or {}).get("source")
    parts = [_release_sentence(source, outputs, own_data)]
    written = "; ".join(f"`{o.name}`: {', '.join(f'`{s}`' for s in o.splits)}" for o in outputs)
    parts.append(f"{len(outputs)} config{'s' if len(outputs) != 1 else ''} written, with their splits: {written}.")
    if built is not None:
        others = [config for config in declared or [] if config not in built]
        asked = ", ".join(f"`{c}`" for c in built)
        parts.append(f"A partial build: only {asked} {'was' if len(built) == 1 else 'were'} asked for (`--configs`); "
                     f"not built: {', '.join(f'`{c}`' for c in others) or 'none'}.")
        declared = built
    left_out = [config for config in declared or [] if config not in {o.name for o in outputs}]
    if left_out:
        parts.append(f"Left out: {', '.join(f'`{c}`' for c in left_out)}: no rows in the files read, and `datasets` "
                     "cannot load a config with no rows.")
    empty = {}
    for output in outputs:
        for split in output.info.splits or []:
            if split not in output.splits:
                empty.setdefault(split, []).append(output.name)
    for split, configs in empty.items():
        parts.append(f"Split `{split}` of {', '.join(f'`{c}`' for c in configs)} had no rows in the files read, so "
                     "this repository has no such split.")
    if source and source["published"]:
        rows = []
        for key, published in source["published"].items():
            config, split = key.split("|", 1)
            built = _built_count(integrity, config, split or None)
            what = RELATION_MEASURE if any(
                "queries" in f for f in integrity["splits"] if f["config"] == config) else "rows"
            if config in source["not_compared"]:
                word = "not compared (other files)"
            elif built is None:
                word = "not built"
            elif built == published:
                word = "equal"
            else:
                word = f"differs by {abs(built - published):,} (a finding under Integrity)"
            rows.append([config, split or "all", what, f"{published:,}", "—" if built is None else f"{built:,}", word])
        parts.append("Published figures beside this build's:\n\n"
                     + _table(["config", "split", "counts", "published", "this build", "comparison"], rows))
    return "\n\n".join(parts)


def defects_section(benchmark: Benchmark, path: str, facts: CardFacts) -> str:
    """The defects the facts declare, then those the benchmark declares for `validate` (each once)."""
    notes = list(facts.known_defects)
    notes += [d.note for d in benchmark.known_defects(path) if d.note not in notes]
    return "\n".join(f"- {note}" for note in notes) or "None known."


def license_section(facts: CardFacts) -> str:
    text = facts.license_text
    if facts.license_link:
        text += f" ({facts.license_link})"
    return f"{text}. Hub licence id: `{facts.license}`."


def citation_section(facts: CardFacts) -> str:
    return "\n\n".join(f"```bibtex\n{entry.strip()}\n```" for entry in facts.citations) or "None published."


def read_template(family: str) -> tuple[dict, str]:
    """(family YAML, body) of the template `<family>.md`; a missing template is an error, never a silent fallback."""
    folder = os.environ.get(TEMPLATES_ENV)
    if folder:
        with open(os.path.join(folder, f"{family}.md"), encoding="utf-8") as f:
            text = f.read()
    else:
        text = resources.files("ragloaders.dataset_cards").joinpath(f"{family}.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2) if text.startswith("---\n") else ("", "", text)
    return load_yaml(front, f"{family}.md") or {}, body.lstrip("\n")


def front_matter(family_yaml: dict, facts: CardFacts, outputs: list[ConfigOutput]) -> DatasetCardData:
    data = card_data(outputs)
    values = dict(family_yaml)
    values.update(pretty_name=facts.pretty_name, license=facts.license, size_categories=[size_category(outputs)])
    if facts.license == "other":
        values.update(license_name=facts.license_name, license_link=facts.license_link)
    for key in ("source_datasets", "tags", "task_ids"):
        merged = list(values.get(key) or []) + [v for v in getattr(facts, key) if v not in (values.get(key) or [])]
        if merged:
            values[key] = merged
    for key, value in values.items():
        setattr(data, key, value)
    return data


def baselines_section(path: str, facts: CardFacts, derived: dict[str, str]) -> str:
    """Published baseline figures (the row of `path` in bold), how to reproduce them, how derived configs were made."""
    parts = []
    if facts.baselines:
        columns = list(next(iter(facts.baselines.values())))
        rows = [[f"**{row}**" if row == path else row, *(f"{values[c]:.4f}" for c in columns)]
                for row, values in facts.baselines.items()]
        parts.append(_table(["path", *columns], rows))
    if facts.baselines_note:
        parts.append(facts.baselines_note)
    parts += [f"- `{config}`: {how}" for config, how in derived.items()]
    return "\n\n".join(parts) or "—"


def render_card(
    benchmark: Benchmark,
    path: str,
    outputs: list[ConfigOutput],
    *,
    data_dir: str | None = None,
    integrity: dict | None = None,
    repo_id: str | None = None,
    derived: dict[str, str] | None = None,
    options: CardOptions | None = None,
    load_as: str | None = None,
    built: list[str] | None = None,
) -> str:
    """README.md for a folder built from `path` (of `benchmark`): YAML front matter, then the family template's
    sections; `derived` says how each config made from the data (not from the source files) was made; `options` are what
    the builder of their own data states (default: none). The load lines name `repo_id`, else the folder
    `load_as` (a build with `--out`), else a placeholder. `built`: the configs asked for, in a partial build."""
    facts = facts_for(benchmark, path, data_dir, options)
    family_yaml, body = read_template(facts.family)
    summary = facts.summary
    if facts.config_table is not None:
        summary += "\n\n" + facts.config_table([o.name for o in outputs])
    sections = {
        "path": path,
        "data_name": folder_name(data_dir) or "—",
        "pretty_name": facts.pretty_name,
        "summary": f"{summary}{paragraph_end(summary)}{configs_sentence(outputs)}",
        "repository": repo_id or load_as or REPO_PLACEHOLDER,
        "homepage": facts.homepage or "—",
        "load": load_section(repo_id or load_as or REPO_PLACEHOLDER, outputs, folder=not repo_id and bool(load_as)),
        "fields": fields_section(outputs, facts.field_notes),
        "splits": splits_section(outputs),
        "integrity": integrity_section(integrity),
        "sources": sources_section(facts, data_dir, (integrity or {}).get("source")),
        "build": build_section(outputs, integrity, configs_of(path), facts.own_data, built),
        "defects": defects_section(benchmark, path, facts),
        "license": license_section(facts),
        "citation": citation_section(facts),
        "baselines": baselines_section(path, facts, derived or {}),
    }
    text = string.Template(body).substitute(sections)
    marker = BUILT_FROM.format(path=path)
    return f"---\n{front_matter(family_yaml, facts, outputs).to_yaml()}\n---\n\n{text.rstrip()}\n\n{marker}\n"
