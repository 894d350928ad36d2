"""bzip2 decompression speed: Python's bz2 against indexed_bzip2 with 1 and 2 threads.

Generates (once, in --workdir) a ~300 MB JSONL-of-HTML file by repeating the real CRAG example
records with fresh ids, compresses it with Python's bz2 (level 9, one stream, like the official
files) and cuts the result into three `.part<N>` files. Then times, best of --repeat, reading the
whole decompressed stream in 1 MiB reads; MB/s are of decompressed output and the ratio is against
Python's bz2 measured in the same run.

    PYTHONPATH=loaders python bench/bench_bz2.py [--sample PATH] [--megabytes 300] [--repeat 2]
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import BinaryIO

import indexed_bzip2
from ragloaders.core.compressed import open_bz2, open_joined, order_parts
from ragloaders.core.readers.lines import iter_lines

CHUNK = 1 << 20


def generate(sample: str, workdir: str, megabytes: int) -> tuple[str, list[str], int]:
    target = os.path.join(workdir, f"crag_like_{megabytes}mb.jsonl.bz2")
    parts = [f"{target}.part{i}" for i in (1, 2, 3)]
    if not all(os.path.exists(path) for path in [target, *parts]):
        with bz2.open(sample) as lines:
            records = [json.loads(line) for line in lines]
        compressor, written = bz2.BZ2Compressor(9), 0
        with open(target + ".tmp", "wb") as out:
            copy = 0
            while written < megabytes * 1_000_000:
                for record in records:
                    fresh = {**record, "interaction_id": f"{copy}-{record['interaction_id']}"}
                    line = json.dumps(fresh).encode() + b"\n"
                    out.write(compressor.compress(line))
                    written += len(line)
                copy += 1
            out.write(compressor.flush())
        os.replace(target + ".tmp", target)
        data_size = os.path.getsize(target)
        with open(target, "rb") as source:
            for path in parts:
                with open(path, "wb") as part:
                    part.write(source.read(data_size // 3 + 1))
    with bz2.open(target) as stream:
        size = sum(len(chunk) for chunk in iter(lambda: stream.read(CHUNK), b""))
    return target, parts, size


def drain(stream: BinaryIO) -> int:
    total = 0
    while chunk := stream.read(CHUNK):
        total += len(chunk)
    return total


def timed(read: Callable[[], int]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds of this process (all threads), bytes read."""
    start, cpu = time.perf_counter(), time.process_time()
    size = read()
    return time.perf_counter() - start, time.process_time() - cpu, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", default="tests/data/crag/dev_data.jsonl.bz2")
    parser.add_argument("--workdir", default="/tmp/ragloaders-bench-bz2")
    parser.add_argument("--megabytes", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    path, parts, size = generate(args.sample, args.workdir, args.megabytes)
    print(f"{size / 1e6:.0f} MB decompressed, {os.path.getsize(path) / 1e6:.0f} MB bz2, {os.cpu_count()} cpus, "
          f"load average before the run: {os.getloadavg()[0]:.1f}\n", flush=True)

    def python_bz2() -> int:
        with bz2.open(path) as stream:
            return drain(stream)

    def indexed(threads: int) -> Callable[[], int]:
        def read() -> int:
            with indexed_bzip2.open(path, parallelization=threads) as stream:
                return drain(stream)
        return read

    def ours(threads: int) -> Callable[[], int]:
        def read() -> int:
            with open_bz2(path, name=path, threads=threads) as stream:
                return drain(stream)
        return read

    def ours_parts() -> int:
        with open_joined(order_parts(parts)) as joined, open_bz2(joined, name=path) as stream:
            return drain(stream)

    def ours_lines() -> int:
        with open_bz2(path, name=path) as stream:
            return sum(len(line) + 1 for _, line in iter_lines(stream, path))

    cases: dict[str, Callable[[], int]] = {
        "Python bz2 (BZ2File.read)": python_bz2,
        "indexed_bzip2, 1 thread": indexed(1),
        "indexed_bzip2, 2 threads": indexed(2),
        "open_bz2(path), threads=1": ours(1),
        "open_bz2(path), default (2 threads)": ours(2),
        "open_bz2(open_joined(3 parts)), 2 threads": ours_parts,
        "open_bz2 + iter_lines, 2 threads": ours_lines,
    }
    if shutil.which("lbzip2"):
        cases["lbzip2 -dc -n2 (subprocess)"] = lambda: drain(
            subprocess.Popen(["lbzip2", "-dc", "-n2", path], stdout=subprocess.PIPE).stdout  # type: ignore[arg-type]
        )
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeat):  # rounds interleave the cases, so a burst of load hits all of them alike
        for name, read in cases.items():
            seconds, cpu, got = timed(read)
            assert got == size, f"{name}: {got} bytes, expected {size}"
            best[name] = min(best.get(name, (seconds, cpu)), (seconds, cpu))
    print(f"load average after the run: {os.getloadavg()[0]:.1f}\n", flush=True)
    print("| reader | wall s | CPU s | MB/s out | vs Python bz2 |")
    print("|---|---|---|---|---|")
    baseline = best["Python bz2 (BZ2File.read)"][0]
    for name, (seconds, cpu) in best.items():
        print(f"| {name} | {seconds:.2f} | {cpu:.2f} | {size / 1e6 / seconds:.0f} | {baseline / seconds:.2f}x |")


if __name__ == "__main__":
    main()
