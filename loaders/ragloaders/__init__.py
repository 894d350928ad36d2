"""Hugging Face `datasets` builders and a hub publisher for BEIR, CRAG and mmRAG."""

from .api import builder, load, registry
from .core.errors import DownloadError, MissingSourceError, SourceError

__version__ = "0.2.0"
__all__ = ["builder", "load", "registry", "SourceError", "MissingSourceError", "DownloadError", "__version__"]
