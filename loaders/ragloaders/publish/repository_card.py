"""A repository `validate` reads instead of a benchmark path (a built folder or a hub repo id): which targets are
one, its card (checked against the YAML budget by the caller), the path a ragloaders card says it was built from,
and the data files the card declares per config and split."""

from __future__ import annotations

import os
from typing import Any

from ..api import registry
from ..core.hub_repository import card_text
from .cards import BUILT_FROM_PATTERN


def built_from_card(card: str | None) -> str | None:
    """The benchmark path a ragloaders card says the repository was built from (its last line, `BUILT_FROM`), if it
    names a known path; None for any other card."""
    found = BUILT_FROM_PATTERN.findall(card or "")
    return found[-1] if found and found[-1] in registry() else None


def built_from(repository: str) -> str | None:
    """`built_from_card` of the repository's README.md."""
    return built_from_card(card_text(repository))


def declared_files(repository: str, metadata: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(config, split) -> the data files the card's `configs:` declares for it (joined by ", "), as a finding names
    them; {} without a declaration. `metadata`: the card's fields as `check_repository_yaml` gives them (checked to
    be the shape datasets reads: `configs` a list of mappings, each split entry a `split` and a path or paths)."""
    files = {}
    for config in metadata.get("configs") or []:
        declared = config.get("data_files")
        for entry in declared if isinstance(declared, list) else [{"split": "train", "path": declared}]:
            if isinstance(entry, dict):  # (a bare path of a list names no split of its own)
                paths = [entry["path"]] if isinstance(entry["path"], str) else entry["path"] or []
                files[(config["config_name"], entry["split"])] = ", ".join(os.path.join(repository, p) for p in paths)
    return files
