"""Decodes one pickle the way `crag/mock_kg` does, in a child process under a memory limit; prints the outcome.

    python pickle_child.py LIMIT_BYTES [--seconds BASE PER_MB] [--memory BASE PER_BYTE] KIND PATH [KIND PATH ...]

KIND is `frame` (a pickled DataFrame: frame_table), `series` (its values as a frame column) or `dict` (a
pickled dict: the rows of a config whose value is
JSON text, so that any value shape is tried). The address-space limit is set after everything is imported and one
small pickle of each kind is decoded, so LIMIT_BYTES is what decoding may add on top. Prints one JSON line per
file, in order: {"rows": n} or {"error": "<exception type>", "message": ...}, with "seconds": the CPU time the
decoding took; a crash ends the output early. With --seconds, a file's decoding is stopped (the error "timeout")
once it has used BASE + PER_MB seconds per MB of the file of CPU time (checked between Python bytecodes: one long C
call, such as repr() of a huge value, overruns it, which the caller's wall-clock limit catches). With --memory, a
file's decoding may add at most BASE + PER_BYTE bytes per byte of the file to the address space it starts with
(within LIMIT_BYTES in all).
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import signal
import sys
import tempfile
import time

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


class Timeout(BaseException):
    """The file's CPU time is used up (a BaseException: no reader's `except Exception` may swallow it)."""


def out_of_time(signum: int, frame: object) -> None:
    raise Timeout


def main() -> None:
    limit, files = int(sys.argv[1]), sys.argv[2:]
    options: dict[str, tuple[float, float]] = {}
    while files[:1] in (["--seconds"], ["--memory"]):
        options[files[0]], files = (float(files[1]), float(files[2])), files[3:]
    seconds, memory = options.get("--seconds"), options.get("--memory")
    warm_up()
    bound = virtual_memory() + limit
    resource.setrlimit(resource.RLIMIT_AS, (bound, bound))
    signal.signal(signal.SIGPROF, out_of_time)
    for kind, path in zip(files[0::2], files[1::2]):
        size = os.path.getsize(path)
        if seconds is not None:
            signal.setitimer(signal.ITIMER_PROF, seconds[0] + seconds[1] * size / 1e6)
        if memory is not None:
            own = min(bound, virtual_memory() + int(memory[0] + memory[1] * size))
            resource.setrlimit(resource.RLIMIT_AS, (own, bound))
        start = time.process_time()
        try:
            outcome: dict = {"rows": decode(kind, path)}
        except SourceError as e:
            outcome = {"error": "SourceError", "message": str(e)[:2000]}
        except Timeout:
            outcome = {"error": "timeout"}
        except BaseException as e:  # noqa: BLE001 (any other type is what the tests look for)
            outcome = {"error": type(e).__name__, "message": str(e)[:500]}
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            resource.setrlimit(resource.RLIMIT_AS, (bound, bound))
        outcome["seconds"] = time.process_time() - start
        print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
