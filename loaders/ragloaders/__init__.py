"""Hugging Face `datasets` builders and a hub publisher for BEIR, CRAG and mmRAG."""

from .api import builder, load, registry
from .core.errors import DownloadError, MissingSourceError, SourceError, UsageError
from .core.version import VERSION as __version__
from .lookup import docs, pairs
from .mock_api import CragMockAPI

__all__ = ["builder", "load", "registry", "docs", "pairs", "CragMockAPI", "SourceError", "MissingSourceError",
           "DownloadError", "UsageError", "__version__"]
