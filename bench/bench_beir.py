"""BEIR corpus build: time and peak RSS of ragloaders against pyarrow alone and datasets' json loader.

Run by hand (takes a few minutes; needs ~3 GB of free disk):

    python bench/bench_beir.py [--docs 1000000] [--workdir /tmp/ragloaders-bench]

Every contender runs in its own fresh process on the same generated file, in the same run, and
the figures are reported as ratios against the pyarrow floor measured in that run (the machines
are shared and noisy; absolute seconds mean little): the best time against the floor's best, and the
median over rounds of the time against the floor of the same round (paired, so that one lucky floor run
does not decide), and the CPU time (user + system, workers included) against the floor's in the same round.
The clock starts after the imports. Peak RSS is the largest resident set of the process and of any worker
it started (imports included).

To compare two versions of the code in one run (A/B), give each one's package folder:

    git worktree add /tmp/before <commit>
    PYTHONPATH=loaders python bench/bench_beir.py --only pyarrow "ragloaders build (" --rounds 6 \\
        --code /tmp/before/loaders loaders
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import textwrap

VOCABULARY = [f"w{i}" for i in range(5000)] + ["the", "of", "and", "cancer", "protein", "été", "東京"]


def generate_corpus(path: str, docs: int, seed: int = 0) -> None:
    """A BEIR-like corpus.jsonl: ~450 bytes a line, ids with leading zeros, a url in metadata."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(docs):
            text = " ".join(rng.choices(VOCABULARY, k=rng.randint(50, 90)))
            title = " ".join(rng.choices(VOCABULARY, k=rng.randint(0, 8)))
            record = {"_id": f"{i:08d}", "title": title, "text": text, "metadata": {"url": f"https://x.org/{i}"}}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


WARM = """
try:  # datasets imports scipy.io (when installed) on its first builder: an import, kept off the clock like the others
    import scipy.io  # noqa: F401
except ImportError:
    pass
"""
FLOOR = """
    schema = pa.schema([("_id", pa.string()), ("title", pa.string()), ("text", pa.string()),
                        ("metadata", pa.struct([("url", pa.string())]))])
    reader = pj.open_json(CORPUS, read_options=pj.ReadOptions(block_size=1 << 20, use_threads=THREADS),
                          parse_options=pj.ParseOptions(explicit_schema=schema))
    with pa.OSFile(OUT + "/floor.arrow", "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        rows = 0
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
"""
CONTENDERS = {
    # name: (imports, not timed; the build, timed). The first is the floor the ratios are taken against.
    "pyarrow floor (open_json -> Arrow IPC stream, default threads)": (
        "import pyarrow as pa, pyarrow.json as pj", FLOOR.replace("THREADS", "True")),
    "pyarrow floor (open_json -> Arrow IPC stream, 1 thread)": (
        "import pyarrow as pa, pyarrow.json as pj", FLOOR.replace("THREADS", "False")),
    "ragloaders build (builder.download_and_prepare)": ("import ragloaders" + WARM, """
        builder = ragloaders.builder("beir/nfcorpus", "corpus", data_dir=DATA_DIR, cache_dir=OUT)
        builder.download_and_prepare()
        rows = builder.info.splits["corpus"].num_examples
    """),
    "ragloaders.load corpus (build + memory-mapped Dataset)": ("import ragloaders" + WARM, """
        rows = ragloaders.load("beir/nfcorpus", "corpus", split="corpus", data_dir=DATA_DIR, cache_dir=OUT).num_rows
    """),
    "ragloaders build, num_proc=1": ("import ragloaders" + WARM, """
        builder = ragloaders.builder("beir/nfcorpus", "corpus", data_dir=DATA_DIR, cache_dir=OUT)
        builder.download_and_prepare(num_proc=1)
        rows = builder.info.splits["corpus"].num_examples
    """),
    "ragloaders build, num_proc=2": ("import ragloaders" + WARM, """
        builder = ragloaders.builder("beir/nfcorpus", "corpus", data_dir=DATA_DIR, cache_dir=OUT)
        builder.download_and_prepare(num_proc=2)
        rows = builder.info.splits["corpus"].num_examples
    """),
    "ragloaders build, num_proc=4": ("import ragloaders" + WARM, """
        builder = ragloaders.builder("beir/nfcorpus", "corpus", data_dir=DATA_DIR, cache_dir=OUT)
        builder.download_and_prepare(num_proc=4)
        rows = builder.info.splits["corpus"].num_examples
    """),
    "ragloaders.load corpus, num_proc=2": ("import ragloaders" + WARM, """
        rows = ragloaders.load("beir/nfcorpus", "corpus", split="corpus", data_dir=DATA_DIR, cache_dir=OUT,
                               num_proc=2).num_rows
    """),
    'datasets.load_dataset("json")': ("import datasets" + WARM, """
        rows = datasets.load_dataset("json", data_files=CORPUS, split="train", cache_dir=OUT).num_rows
    """),
    "beir GenericDataLoader (dict in memory)": ("from beir.datasets.data_loader import GenericDataLoader", """
        rows = len(GenericDataLoader(corpus_file=CORPUS, query_file=CORPUS).load_corpus())
    """),
}

HARNESS = """
import os, resource, sys, time
CORPUS, DATA_DIR, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
{imports}
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
start, cpu_start = time.perf_counter(), cpu()
{body}
seconds, cpu_seconds = time.perf_counter() - start, cpu() - cpu_start
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(rows, seconds, cpu_seconds, peak * 1024)
"""
Result = tuple[int, float, float, int]
"""rows, seconds, CPU seconds (user + system, workers included), peak RSS in bytes"""


def run(imports: str, body: str, corpus: str, data_dir: str, out: str, code: str | None = None) -> Result | str:
    """One contender in a fresh process; `code`, a folder holding the `ragloaders` package to import instead."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    script = HARNESS.format(imports=imports, body=textwrap.dedent(body))
    env = {**os.environ, "HF_HOME": out + "/hf", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    if code:
        env["PYTHONPATH"] = code
    done = subprocess.run([sys.executable, "-c", script, corpus, data_dir, out], capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        return done.stderr.strip().splitlines()[-1]
    rows, seconds, cpu_seconds, peak = done.stdout.split()
    return int(rows), float(seconds), float(cpu_seconds), int(peak)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--workdir", default="/tmp/ragloaders-bench")
    parser.add_argument("--double", action="store_true", help="also run ragloaders on a corpus twice as large")
    parser.add_argument("--only", nargs="*", help="run only the contenders whose name starts with one of these")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every contender in turn")
    parser.add_argument("--code", nargs="*", default=[],
                        help="folders holding versions of the ragloaders package (e.g. a `git worktree`'s loaders/): "
                             "each ragloaders contender runs once per folder, in the same rounds")
    args = parser.parse_args()
    sizes = [args.docs, 2 * args.docs] if args.double else [args.docs]
    for docs in sizes:
        data_dir = os.path.join(args.workdir, f"beir-{docs}")
        corpus = os.path.join(data_dir, "corpus.jsonl")
        if not os.path.exists(corpus):
            os.makedirs(data_dir, exist_ok=True)
            generate_corpus(corpus, docs)
        size_mb = os.path.getsize(corpus) / 1e6
        print(f"\n{docs:,} docs, {size_mb:.0f} MB corpus.jsonl, {os.cpu_count()} cores")
        print("| contender | rows | best seconds | best × best floor | median × floor of its round (range) "
              "| median CPU × floor's | peak RSS MB |\n|---|---|---|---|---|---|---|")
        contenders = CONTENDERS if docs == args.docs else {
            k: v for k, v in CONTENDERS.items() if k.startswith(("pyarrow", "ragloaders"))}
        chosen = [(name, None) for name in contenders
                  if not args.only or name.startswith(("pyarrow floor (open_json -> Arrow IPC stream, default",
                                                       *args.only))]
        if args.code:
            chosen = [(name, code) for name, _ in chosen
                      for code in (args.code if name.startswith("ragloaders") else [None])]
        runs: dict[tuple[str, str | None], list[Result | str]] = {key: [] for key in chosen}
        for _ in range(args.rounds):  # interleaved, so that a noisy moment hits every contender alike
            for name, code in chosen:
                imports, body = contenders[name]
                runs[name, code].append(run(imports, body, corpus, data_dir, os.path.join(args.workdir, "out"), code))
        floor_runs = runs[chosen[0]]
        floor_best = min((r[1] for r in floor_runs if not isinstance(r, str)), default=float("nan"))
        for key in chosen:
            label = key[0] + (f" [{key[1]}]" if key[1] else "")
            failed = [r for r in runs[key] if isinstance(r, str)]
            if failed:
                print(f"| {label} | failed: {failed[0][:80]} | | | | | |")
                continue
            rows, seconds, _, _ = min(runs[key], key=lambda r: r[1])
            paired = [(r[1] / f[1], r[2] / f[2]) for r, f in zip(runs[key], floor_runs) if not isinstance(f, str)]
            times = sorted(wall for wall, _ in paired)
            print(f"| {label} | {rows:,} | {seconds:.2f} | {seconds / floor_best:.2f} | {statistics.median(times):.2f} "
                  f"({times[0]:.2f}-{times[-1]:.2f}) | {statistics.median(cpu for _, cpu in paired):.2f} "
                  f"| {max(r[3] for r in runs[key]) / 1e6:.0f} |", flush=True)


if __name__ == "__main__":
    main()
