"""`ragloaders eval` of a large TREC run beside the plain pytrec_eval baseline, measured in one run (not a test).

    PYTHONPATH=loaders python bench/bench_eval.py [--work DIR] [--queries 1000] [--depth 1000] [--docs 1000000]
        [--rounds 3] [--tree NAME=LOADERS ...]

Generates (once; kept in --work) a BEIR-layout folder (--docs short documents, --queries queries, qrels/test.tsv
with 1-5 relevant documents per query) and a TREC run of --queries x --depth lines (`qid Q0 docid rank score tag`,
scores descending, 1% of the document ids not in the corpus). The `beir-format` build of the folder is prepared
once per tree before the clock starts, so each figure is the scoring alone.

Contenders, each in a fresh process, alternated in a rotating order round after round, the load average printed
with each figure:
- `baseline`: read the run in a plain Python loop (`line.split()`, a dict per query) and call pytrec_eval's
  RelevanceEvaluator with the measures `ragloaders eval` computes (BEIR's set, and recip_rank on the top 10);
- `ragloaders eval [tree]`: `ragloaders eval beir-format --data-dir FOLDER --run RUN --split test` (the CLI).
Peak RSS is each process's ru_maxrss. Every contender runs with its compiled modules kept (PYTHONPYCACHEPREFIX in
--work, PYTHONDONTWRITEBYTECODE dropped), as an installed package has them, and runs once before the clock.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

BASELINE = r"""
import sys, time, pytrec_eval
start = time.time()
run = {}
with open(sys.argv[1]) as f:
    for line in f:
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
qrels = {}
with open(sys.argv[2]) as f:
    next(f)
    for line in f:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
measures = {"ndcg_cut.1,3,5,10,100", "recall.1,3,5,10,100", "map_cut.100", "P.10"}
pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
top10 = {q: dict(sorted(d.items(), key=lambda i: (i[1], i[0]), reverse=True)[:10]) for q, d in run.items()}
pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
print(time.time() - start)
"""


def generate(folder: str, queries: int, depth: int, docs: int) -> dict:
    info_path = os.path.join(folder, "generated.json")
    if os.path.isfile(info_path):
        return json.load(open(info_path))
    data = os.path.join(folder, "data")
    os.makedirs(os.path.join(data, "qrels"), exist_ok=True)
    rng = random.Random(7)
    with open(os.path.join(data, "corpus.jsonl"), "w") as f:
        for i in range(docs):
            f.write(json.dumps({"_id": f"d{i:07d}", "title": "", "text": f"document {i}"}) + "\n")
    with open(os.path.join(data, "queries.jsonl"), "w") as f:
        for q in range(queries):
            f.write(json.dumps({"_id": f"q{q}", "text": f"query {q}"}) + "\n")
    with open(os.path.join(data, "qrels", "test.tsv"), "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in range(queries):
            for doc in rng.sample(range(docs), rng.randint(1, 5)):
                f.write(f"q{q}\td{doc:07d}\t{rng.randint(1, 2)}\n")
    run = os.path.join(folder, "run.trec")
    with open(run, "w") as f:
        for q in range(queries):
            ranked = rng.sample(range(docs), depth)
            lines = []
            for rank, doc in enumerate(ranked, 1):
                doc_id = f"d{doc:07d}" if rng.random() > 0.01 else f"missing{doc}"
                lines.append(f"q{q} Q0 {doc_id} {rank} {100 - rank * 0.01:.4f} bench\n")
            f.write("".join(lines))
    info = {"queries": queries, "depth": depth, "docs": docs, "run_bytes": os.path.getsize(run),
            "lines": queries * depth}
    json.dump(info, open(info_path, "w"))
    return info


WRAPPER = ("import resource, subprocess, sys\n"
           "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\nsys.exit(code)")
"""Runs one command and prints its peak RSS (the only child this process waits for)."""


def measure(command: list[str], env: dict) -> dict:
    load = os.getloadavg()[0]
    start = time.time()
    completed = subprocess.run([sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, env=env)
    seconds = time.time() - start
    if completed.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{completed.stderr[-3000:]}")
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(int(completed.stdout.split()[-1]) / 1024),
            "load_before": round(load, 1), "load_after": round(os.getloadavg()[0], 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ragloaders-bench-eval"))
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a loaders folder to measure")
    args = parser.parse_args()
    folder = os.path.join(args.work, f"{args.queries}x{args.depth}-{args.docs}")
    info = generate(folder, args.queries, args.depth, args.docs)
    print(json.dumps(info), file=sys.stderr)
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": os.path.join(HERE, os.pardir, "loaders")}
    data, run = os.path.join(folder, "data"), os.path.join(folder, "run.trec")
    compiled = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    compiled["PYTHONPYCACHEPREFIX"] = os.path.join(args.work, "pycache")
    baseline = [sys.executable, "-c", BASELINE, run, os.path.join(data, "qrels", "test.tsv")]
    subprocess.run(baseline, capture_output=True, env=compiled, check=True)
    contenders = {"baseline": (baseline, compiled)}
    for name, tree in trees.items():
        env = {**compiled, "PYTHONPATH": tree, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
        cache = os.path.join(folder, f"cache-{name}")
        command = [sys.executable, "-m", "ragloaders", "eval", "beir-format", "--data-dir", data, "--run", run,
                   "--split", "test", "--cache-dir", cache]
        subprocess.run(command, capture_output=True, env=env, check=True)  # the build (once) and the compiled modules
        contenders[f"ragloaders eval [{name}]"] = (command, env)
    results: dict[str, list[dict]] = {}
    names = list(contenders)
    for round_ in range(args.rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            result = measure(*contenders[name])
            results.setdefault(name, []).append(result)
            print(f"round {round_ + 1} {name}: {json.dumps(result)}", file=sys.stderr)
    best = {name: min(runs, key=lambda r: r["seconds"]) for name, runs in results.items()}
    print(f"run: {info['lines']:,} lines ({info['run_bytes'] / 1e6:.0f} MB), corpus {info['docs']:,} documents")
    print("| contender | best s | x baseline | load avg before/after | peak RSS MB |")
    print("|---|---|---|---|---|")
    for name, r in best.items():
        print(f"| {name} | {r['seconds']} | {r['seconds'] / best['baseline']['seconds']:.2f} | "
              f"{r['load_before']}/{r['load_after']} | {r['peak_rss_mb']} |")


if __name__ == "__main__":
    main()
