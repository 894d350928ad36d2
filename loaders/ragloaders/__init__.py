"""Hugging Face `datasets` builders and a hub publisher for BEIR, CRAG and mmRAG."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.errors import DownloadError, MissingSourceError, SourceError, UsageError
from .core.version import VERSION as __version__

if TYPE_CHECKING:
    from .api import builder, load, registry
    from .lookup import docs, pairs
    from .mock_api import CragMockAPI

__all__ = ["builder", "load", "registry", "docs", "pairs", "CragMockAPI", "SourceError", "MissingSourceError",
           "DownloadError", "UsageError", "__version__"]


def __getattr__(name: str) -> Any:
    """`builder`, `load`, `registry`, `docs`, `pairs` and `CragMockAPI`, each imported when first used: they import
    `datasets` and pyarrow, which `import ragloaders` and the command line's set-up do without."""
    if name == "builder":
        from .api import builder as found
    elif name == "load":
        from .api import load as found
    elif name == "registry":
        from .api import registry as found
    elif name == "docs":
        from .lookup import docs as found
    elif name == "pairs":
        from .lookup import pairs as found
    elif name == "CragMockAPI":
        from .mock_api import CragMockAPI as found
    else:
        raise AttributeError(f"module 'ragloaders' has no attribute {name!r}")
    globals()[name] = found
    return found


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
