"""Where ragloaders keeps what it caches for a user (mock API tables, push staging folders, judge verdicts) when no
folder is given: `$XDG_CACHE_HOME/ragloaders`, or `~/.cache/ragloaders` (the rule huggingface_hub follows for its
own cache)."""

from __future__ import annotations

import os


def user_cache_dir(*parts: str) -> str:
    """The ragloaders cache folder, or `parts` joined under it (e.g. `user_cache_dir("judge")`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ragloaders", *parts)
