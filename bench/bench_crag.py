"""CRAG builder benchmark on generated files of realistic shape (not a test).

    PYTHONPATH=loaders python bench/bench_crag.py [--work DIR] [--mb 520] [--task3-mb 160] [--skip-generate]

Generates (once; kept in --work for reruns):
- a task 1&2 file `crag_task_1_and_2_dev_v5.jsonl.bz2` of at least --mb MB compressed: records shaped like
  CRAG's (every field, splits 0/1 mixed, 5 pages of 50-150 KB HTML each, a third of the records listing one
  page twice), each page a random slice of the real HTML in tests/data/crag (see PageMaker); and the first
  half of it (a prefix at a bz2 stream boundary) for the memory check;
- a task 3 file: a tar of 3 JSONL members, 50 pages per record, bz2, cut into `.part0..3`.

Compression uses 2 processes, each compressing whole lines into its own bz2 stream (a multi-stream file, which
both Python's bz2 and indexed_bzip2 read). Each measurement runs in a fresh process (peak RSS = its ru_maxrss),
with its own empty datasets cache, in one run; results go to stdout and <work>/results.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from multiprocessing import Pool

import numpy as np
import orjson

REAL_SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "data", "crag",
                           "dev_data.jsonl.bz2")
T12 = "crag_task_1_and_2_dev_v5.jsonl.bz2"
T3 = "crag_task_3_dev_v5.tar.bz2"
RECORDS_PER_CHUNK = {"task_1_and_2": 16, "task_3": 2}
DOMAINS = ("finance", "music", "movie", "sports", "open")
TYPES = ("simple", "simple_w_condition", "comparison", "aggregation", "set", "false_premise", "post-processing",
         "multi-hop")
DYNAMISM = ("static", "slow-changing", "fast-changing", "real-time")


class PageMaker:
    """HTML pages of a given size: random slices of the official example file's 38 distinct real pages (15 MB),
    or with BENCH_CRAG_HTML=synthetic, from 20,000 paragraphs over an 8,000-word Zipf vocabulary."""

    def __init__(self, seed: int = 12345):
        rng = np.random.default_rng(seed)
        letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
        freq = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2, 2.0, 2.0, 1.9,
                         1.5, 1.0, 0.8, 0.15, 0.15, 0.1, 0.07])
        self.words = np.array(["".join(rng.choice(letters, size=rng.integers(2, 11), p=freq / freq.sum()))
                               for _ in range(8_000)], dtype=object)
        cum = np.cumsum(1.0 / np.arange(1, len(self.words) + 1) ** 1.3)
        self.cum = cum / cum[-1]
        self.classes = ["".join(rng.choice(list("abcdef0123456789"), 6)) for _ in range(400)]
        self.pool = [self._paragraph(rng) for _ in range(20_000)]
        self.real_html = ""
        if os.environ.get("BENCH_CRAG_HTML", "real") == "real":
            import bz2

            with bz2.open(REAL_SAMPLE) as f:
                pages = {p["page_result"] for line in f for p in orjson.loads(line)["search_results"]}
            self.real_html = "".join(sorted(pages))

    def text(self, rng: np.random.Generator, words: int) -> str:
        return " ".join(self.words[np.searchsorted(self.cum, rng.random(words))].tolist())

    def _paragraph(self, rng: np.random.Generator) -> str:
        text, css = self.text(rng, int(rng.integers(20, 250))), self.classes[rng.integers(0, len(self.classes))]
        kind = rng.integers(0, 4)
        if kind == 0:
            return f'<p class="{css}">{text}</p>\n'
        if kind == 1:
            link = f"https://www.{self.words[rng.integers(0, 2000)]}.com/{self.words[rng.integers(0, 8000)]}"
            return f'<div class="{css}"><a href="{link}">{text[:60]}</a></div>\n'
        if kind == 2:
            return f'<li><span class="{css}">{text}</span></li>\n'
        return f'<script>window.__d{css}={{"k":"{text[:80]}","n":{int(rng.integers(0, 10**6))}}};</script>\n'

    def page(self, rng: np.random.Generator, size: int) -> str:
        if self.real_html:  # a slice of the real pages: bz2 sees real HTML (runs, boilerplate, scripts)
            start = int(rng.integers(0, len(self.real_html) - size))
            return self.real_html[start:start + size]
        parts, total = [], 0
        while total < size:
            part = self.pool[rng.integers(0, len(self.pool))]
            parts.append(part)
            total += len(part)
        head = f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{self.text(rng, 6)}</title>'
        return head + "</head><body>\n" + "".join(parts)[:size] + "</body></html>"


_MAKER: PageMaker | None = None


def record(rng: np.random.Generator, pages: int) -> dict:
    assert _MAKER is not None
    results = []
    for _ in range(pages):
        if results and rng.random() < 0.07:  # the same page listed twice (about a third of the records)
            results.append(dict(results[int(rng.integers(0, len(results)))]))
            continue
        name = _MAKER.text(rng, 8)
        results.append({
            "page_name": name, "page_url": f"https://www.{name.replace(' ', '-')[:40]}.com/{uuid.uuid4().hex[:12]}",
            "page_snippet": _MAKER.text(rng, int(rng.integers(100, 300))),
            "page_result": _MAKER.page(rng, int(rng.integers(50_000, 150_000))),
            "page_last_modified": " Tue, 27 Feb 2024 22:55:55 GMT" if rng.random() < 0.4 else "",
        })
    return {
        "interaction_id": str(uuid.UUID(int=int(rng.integers(0, 2**63)))), "query_time": "03/13/2024, 08:29:31 PT",
        "domain": DOMAINS[rng.integers(0, 5)], "question_type": TYPES[rng.integers(0, 8)],
        "static_or_dynamic": DYNAMISM[rng.integers(0, 4)], "query": _MAKER.text(rng, 12) + "?",
        "answer": _MAKER.text(rng, 4) if rng.random() < 0.95 else "nan", "alt_ans": [],
        "split": int(rng.integers(0, 2)), "popularity": ("head", "torso", "tail")[rng.integers(0, 3)],
        "search_results": results,
    }


def _init_worker() -> None:
    global _MAKER
    _MAKER = PageMaker()


def jsonl_chunk(args: tuple[str, int]) -> bytes:
    task, index = args
    rng = np.random.default_rng(index + (10**6 if task == "task_3" else 0))
    pages = 5 if task == "task_1_and_2" else 50
    return b"".join(orjson.dumps(record(rng, pages)) + b"\n" for _ in range(RECORDS_PER_CHUNK[task]))


def compressed_chunk(args: tuple[str, int]) -> tuple[int, bytes]:
    import bz2

    raw = jsonl_chunk(args)
    return len(raw), bz2.compress(raw, 9)


def generate_task_1_and_2(folder: str, target_mb: int) -> dict:
    path, half = os.path.join(folder, "full", T12), os.path.join(folder, "half", T12)
    if os.path.isfile(path) and os.path.isfile(half):
        return json.load(open(os.path.join(folder, "generated.json")))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.makedirs(os.path.dirname(half), exist_ok=True)
    start, raw_bytes, records, half_at = time.time(), 0, 0, None
    with open(path + ".partial", "wb") as out, Pool(2, initializer=_init_worker) as pool:
        for raw, data in pool.imap(compressed_chunk, (("task_1_and_2", i) for i in range(10**6))):
            if half_at is None and out.tell() >= target_mb << 19:
                half_at = (out.tell(), records, raw_bytes)
            out.write(data)
            raw_bytes, records = raw_bytes + raw, records + RECORDS_PER_CHUNK["task_1_and_2"]
            if out.tell() >= target_mb << 20:
                break
            print(f"\r  task 1&2: {out.tell() >> 20} MB compressed, {records} records", end="", file=sys.stderr)
        pool.terminate()
    os.replace(path + ".partial", path)
    with open(path, "rb") as src, open(half, "wb") as dst:
        dst.write(src.read(half_at[0]))
    info = {"bytes": os.path.getsize(path), "raw_bytes": raw_bytes, "records": records, "half_bytes": half_at[0],
            "half_records": half_at[1], "half_raw_bytes": half_at[2], "seconds": round(time.time() - start)}
    json.dump(info, open(os.path.join(folder, "generated.json"), "w"))
    print(file=sys.stderr)
    return info


def _compress_piece(data: bytes) -> bytes:
    import bz2

    return bz2.compress(data, 9)


def generate_task_3(folder: str, target_mb: int, ratio: float) -> dict:
    if os.path.isfile(os.path.join(folder, f"{T3}.part3")):
        return json.load(open(os.path.join(folder, "generated.json")))
    os.makedirs(folder, exist_ok=True)
    start = time.time()
    chunks = max(3, int(target_mb * ratio * (1 << 20) / (50 * 100_000 * RECORDS_PER_CHUNK["task_3"])))
    tar_path = os.path.join(folder, "t3.tar")
    with tarfile.open(tar_path, "w") as tar, Pool(2, initializer=_init_worker) as pool:
        per_member = -(-chunks // 3)
        for member in range(3):
            with tempfile.TemporaryFile(dir=folder) as content:
                indices = range(member * per_member, min(chunks, (member + 1) * per_member))
                for data in pool.imap(jsonl_chunk, (("task_3", i) for i in indices)):
                    content.write(data)
                info = tarfile.TarInfo(f"crag_task_3_dev_v5/crag_task_3_dev_v5_{member}.jsonl")
                info.size = content.tell()
                content.seek(0)
                tar.addfile(info, content)
    raw_bytes = os.path.getsize(tar_path)
    joined = os.path.join(folder, T3)
    with open(tar_path, "rb") as src, open(joined, "wb") as out, Pool(2) as pool:
        pieces = iter(lambda: src.read(32 << 20), b"")
        for data in pool.imap(_compress_piece, pieces):
            out.write(data)
    os.remove(tar_path)
    size = os.path.getsize(joined)
    part = -(-size // 4)
    with open(joined, "rb") as src:
        for index in range(4):
            with open(os.path.join(folder, f"{T3}.part{index}"), "wb") as dst:
                dst.write(src.read(part))
    os.remove(joined)
    info = {"bytes": size, "raw_bytes": raw_bytes, "records": chunks * RECORDS_PER_CHUNK["task_3"],
            "seconds": round(time.time() - start)}
    json.dump(info, open(os.path.join(folder, "generated.json"), "w"))
    return info


# --- measurements, each in its own process ---------------------------------------------------------------


def _use_python_bz2() -> None:
    import bz2

    from ragloaders.benchmarks.crag import builder as crag

    crag.open_bz2 = lambda source, *, name, threads=None: io.BufferedReader(bz2.BZ2File(source), 1 << 20)


def _no_spool() -> None:
    from ragloaders.benchmarks.crag import builder as crag
    from ragloaders.core.builder import RagBuilder

    crag.CragBuilder._download_and_prepare = RagBuilder._download_and_prepare


def measure(kind: str, path: str, config: str, data_dir: str, options: list[str]) -> dict:
    if "python-bz2" in options:
        _use_python_bz2()
    if "no-spool" in options:
        _no_spool()
    import ragloaders
    from ragloaders.benchmarks.crag import builder as crag

    start = time.time()
    cpu_start = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    result: dict = {}
    if kind == "decompress":
        source = ragloaders.builder(path, config, data_dir=data_dir).source_in(data_dir)
        total = 0
        for _, stream in source.streams():
            while chunk := stream.read(1 << 20):
                total += len(chunk)
        result["decompressed_bytes"] = total
    elif kind == "build":
        cache = tempfile.mkdtemp(prefix="bench-crag-cache-", dir=os.path.dirname(data_dir))
        try:
            dataset = ragloaders.load(path, config, data_dir=data_dir, cache_dir=cache)
            result["rows"] = {split: d.num_rows for split, d in dataset.items()}
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    elif kind == "build-all":
        # The whole `ragloaders build`: every config, Parquet, card. Options "np=N" set --num-proc.
        from ragloaders.cli import main as cli

        work = tempfile.mkdtemp(prefix="bench-crag-build-", dir=os.path.dirname(data_dir))
        num_proc = [o.split("=", 1)[1] for o in options if o.startswith("np=")]
        try:
            code = cli(["build", path, "--data-dir", data_dir, "--out", os.path.join(work, "out"),
                        "--cache-dir", os.path.join(work, "cache"), *(["--num-proc", num_proc[0]] if num_proc else [])])
            if code != 0:
                raise RuntimeError(f"build exited {code}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    elif kind == "stream":
        dataset = ragloaders.load(path, config, data_dir=data_dir, streaming=True)
        result["rows"] = {split: sum(1 for _ in d.iter(batch_size=crag.BATCH_ROWS)) for split, d in dataset.items()}
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["seconds"] = round(time.time() - start, 2)
    result["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime - cpu_start, 2)
    result["peak_rss_mb"] = round(usage.ru_maxrss / 1024)
    result["load_after"] = round(os.getloadavg()[0], 1)
    return result


def run(kind: str, path: str, config: str, data_dir: str, *options: str) -> dict:
    command = [sys.executable, __file__, "--measure", kind, path, config, data_dir, *options]
    load = os.getloadavg()[0]
    env = {**os.environ, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    completed = subprocess.run(command, capture_output=True, text=True, env=env)
    if completed.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{completed.stderr[-3000:]}")
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    result.update(kind=kind, path=path, config=config, data=os.path.basename(os.path.dirname(data_dir + "/")),
                  options=list(options), load_before=round(load, 1))
    print(json.dumps(result), file=sys.stderr)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ragloaders-bench-crag"))
    parser.add_argument("--mb", type=int, default=520, help="task 1&2 compressed size (MB)")
    parser.add_argument("--task3-mb", type=int, default=160, help="task 3 compressed size (MB)")
    parser.add_argument("--only", nargs="*", help="run only these measurement names")
    parser.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        kind, path, config, data_dir, *options = args.measure
        print(json.dumps(measure(kind, path, config, data_dir, options)))
        return
    t12 = generate_task_1_and_2(os.path.join(args.work, "t12"), args.mb)
    ratio = t12["raw_bytes"] / t12["bytes"]
    t3 = generate_task_3(os.path.join(args.work, "t3"), args.task3_mb, ratio)
    print(json.dumps({"task_1_and_2": t12, "task_3": t3}), file=sys.stderr)
    full, half, t3dir = (os.path.join(args.work, "t12", "full"), os.path.join(args.work, "t12", "half"),
                         os.path.join(args.work, "t3"))
    plan = {
        "decompress python-bz2": ("decompress", "crag/task_1_and_2", "records", full, "python-bz2"),
        "decompress indexed": ("decompress", "crag/task_1_and_2", "records", full),
        "default indexed": ("build", "crag/task_1_and_2", "records", full),
        "default python-bz2": ("build", "crag/task_1_and_2", "records", full, "python-bz2"),
        "default indexed two-pass": ("build", "crag/task_1_and_2", "records", full, "no-spool"),
        "default indexed half": ("build", "crag/task_1_and_2", "records", half),
        "queries indexed": ("build", "crag/task_1_and_2", "queries", full),
        "search_results indexed": ("build", "crag/task_1_and_2", "search_results", full),
        "corpus indexed": ("build", "crag/task_1_and_2", "corpus", full),
        "default streaming": ("stream", "crag/task_1_and_2", "records", full),
        "whole build": ("build-all", "crag/task_1_and_2", "records", full),
        "whole build num_proc 1": ("build-all", "crag/task_1_and_2", "records", full, "np=1"),
        "whole build num_proc 2": ("build-all", "crag/task_1_and_2", "records", full, "np=2"),
        "whole build num_proc 4": ("build-all", "crag/task_1_and_2", "records", full, "np=4"),
        "whole build half": ("build-all", "crag/task_1_and_2", "records", half),
        "task3 whole build": ("build-all", "crag/task_3", "records", t3dir),
        "task3 whole build num_proc 2": ("build-all", "crag/task_3", "records", t3dir, "np=2"),
        "task3 whole build num_proc 4": ("build-all", "crag/task_3", "records", t3dir, "np=4"),
        "task3 decompress": ("decompress", "crag/task_3", "records", t3dir),
        "task3 default": ("build", "crag/task_3", "records", t3dir),
        "task3 corpus": ("build", "crag/task_3", "corpus", t3dir),
    }
    results_path = os.path.join(args.work, "results.json")
    results = json.load(open(results_path)) if os.path.isfile(results_path) else {}
    results["generated"] = {"task_1_and_2": t12, "task_3": t3}
    for name, spec in plan.items():
        if args.only and name not in args.only:
            continue
        results[name] = run(*spec)
        json.dump(results, open(results_path, "w"), indent=1)
    report(results)


def report(results: dict) -> None:
    generated = results["generated"]
    sizes = {"t12": generated["task_1_and_2"]["bytes"], "full": generated["task_1_and_2"]["bytes"],
             "half": generated["task_1_and_2"]["half_bytes"], "t3": generated["task_3"]["bytes"]}
    print("| measurement | seconds | peak RSS (MB) | s per GB compressed | rows |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        if name == "generated":
            continue
        per_gb = r["seconds"] / (sizes[r["data"]] / 1e9)
        print(f"| {name} | {r['seconds']} | {r['peak_rss_mb']} | {per_gb:.0f} | {r.get('rows', '')} |")
    pairs = (("default python-bz2", "default indexed"), ("decompress python-bz2", "decompress indexed"),
             ("default indexed two-pass", "default indexed"), ("whole build", "default indexed"),
             ("whole build num_proc 1", "default indexed"), ("whole build num_proc 2", "default indexed"),
             ("whole build num_proc 4", "default indexed"), ("task3 whole build", "task3 default"),
             ("whole build half", "default indexed half"), ("task3 whole build num_proc 2", "task3 default"),
             ("task3 whole build num_proc 4", "task3 default"))
    for slow, fast in pairs:
        if slow in results and fast in results:
            print(f"{slow} / {fast}: {results[slow]['seconds'] / results[fast]['seconds']:.2f}x")


if __name__ == "__main__":
    main()
