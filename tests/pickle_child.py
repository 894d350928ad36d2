"""Decodes one pickle the way `crag/mock_kg` does, in a child process under a memory limit; prints the outcome.

    python pickle_child.py LIMIT_BYTES KIND PATH [KIND PATH ...]

KIND is `frame` (a pickled DataFrame: frame_table), `series` (its values as a frame column) or `dict` (a
pickled dict: the rows of a config whose value is
JSON text, so that any value shape is tried). The address-space limit is set after everything is imported and one
small pickle of each kind is decoded, so LIMIT_BYTES is what decoding may add on top. Prints one JSON line per
file, in order: {"rows": n} or {"error": "<exception type>", "message": ...}; a crash ends the output early.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import sys
import tempfile

import pyarrow as pa

pa.set_memory_pool(pa.system_memory_pool())  # no allocator arenas reserved on first use, under the limit

from ragloaders.benchmarks.crag_mock_kg import catalogue, files, frames  # noqa: E402
from ragloaders.core.errors import SourceError  # noqa: E402

TABLE = catalogue.BY_CONFIG["finance_info"]  # key -> JSON text: every value shape is accepted


def decode(kind: str, path: str) -> int:
    if kind == "frame":
        return frames.frame_table(path).num_rows
    if kind == "series":  # a Series' values through the frame column conversion
        from ragloaders.core import pickled_values, safe_pickle

        with open(path, "rb") as f:
            data = f.read()
        budget = safe_pickle.Budget(path, len(data))
        series = safe_pickle.loads(data, name=path, budget=budget)
        if not isinstance(series, pickled_values.Series):
            raise SourceError(path, "not a Series")
        return len(frames._column_array(series.values, "values", path, budget))
    return sum(1 for _ in files.iter_pickle_dict(path, TABLE))


def virtual_memory() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def warm_up() -> None:
    import pandas  # only to write the warm-up pickles; decoding never imports it

    with tempfile.TemporaryDirectory() as folder:
        frame = os.path.join(folder, "f.pkl")
        pandas.DataFrame({"a": [1.5], "b": ["x"], "c": pandas.Categorical(["y"])}).to_pickle(frame)
        decode("frame", frame)
        mapping = os.path.join(folder, "d.pkl")
        with open(mapping, "wb") as f:
            pickle.dump({"k": {"v": [1, "x"]}}, f)
        decode("dict", mapping)


def main() -> None:
    limit, files = int(sys.argv[1]), sys.argv[2:]
    warm_up()
    bound = virtual_memory() + limit
    resource.setrlimit(resource.RLIMIT_AS, (bound, bound))
    for kind, path in zip(files[0::2], files[1::2]):
        try:
            outcome: dict = {"rows": decode(kind, path)}
        except SourceError as e:
            outcome = {"error": "SourceError", "message": str(e)}
        except BaseException as e:  # noqa: BLE001 (any other type is what the tests look for)
            outcome = {"error": type(e).__name__, "message": str(e)[:500]}
        print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
