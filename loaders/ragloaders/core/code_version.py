"""The digest of this package's source, without importing `datasets`: part of every prepared cache's identity (a
code change never serves rows built by old code) and of the records `eval` keeps of those caches."""

from __future__ import annotations

import functools
import hashlib
import os


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of this package's source, so that a code change never serves rows built by old code."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder, subfolders, names in os.walk(package):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    digest.update(os.path.relpath(path, package).encode() + b"\0" + f.read())
    return digest.hexdigest()
