"""Writes `cragkg/` here: the bundled, generated CRAG mock knowledge graph (see README.md).

Run from the repository root: `python tests/data/crag_mock_kg/write.py`. It replaces `cragkg/` with what
tests/mock_kg_generated.write_cragkg makes (6 entries per table, every nba.sqlite table with rows, seed 0);
tests/test_mock_kg_sample.py checks that the bundled files are what this script writes.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # tests/, for mock_kg_generated

from mock_kg_generated import write_cragkg  # noqa: E402

COUNT = 6
"""Entries per generated table: small enough to ship (about 230 KB), every reader kind and odd key included."""


def write(root: Path) -> dict[str, int]:
    """Write the sample's `cragkg/` under `root` (a new folder); config -> source entries."""
    return write_cragkg(root, count=COUNT, seed=0, empty_nba_tables=())


if __name__ == "__main__":
    target = HERE / "cragkg"
    shutil.rmtree(target, ignore_errors=True)
    for config, entries in write(target).items():
        print(f"{config}\t{entries}")
