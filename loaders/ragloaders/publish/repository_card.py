"""A repository `validate` reads instead of a benchmark path (a built folder or a hub repo id): which targets are
one, its card (checked against the YAML budget by the caller), the path a ragloaders card says it was built from,
and the data files the card declares per config and split."""

from __future__ import annotations

import os

from ..api import registry
from ..core.card_yaml import front_matter, load_yaml
from ..core.hub_repository import CARD as README
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


def declared_files(repository: str, card: str | None) -> dict[tuple[str, str], str]:
    """(config, split) -> the data files the card's `configs:` declares for it (joined by ", "), as a finding names
    them; {} without a card or a declaration. The card must have passed `check_card`."""
    try:
        configs = (load_yaml(front_matter(card or ""), README) or {}).get("configs") or []
    except AttributeError:  # front matter that is not a mapping: datasets says so when it reads the card
        return {}
    files = {}
    for config in configs if isinstance(configs, list) else []:
        declared = config.get("data_files") if isinstance(config, dict) else None
        entries = declared if isinstance(declared, list) else [{"split": "train", "path": declared}]
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("split"), str):
                paths = entry.get("path")
                paths = [paths] if isinstance(paths, str) else [p for p in paths or [] if isinstance(p, str)]
                files[(str(config.get("config_name")), entry["split"])] = ", ".join(
                    os.path.join(repository, p) for p in paths)
    return files
