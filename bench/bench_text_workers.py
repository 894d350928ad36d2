"""HTML to text for CRAG's `corpus`: in this process, on 2 threads (`map_ahead`), and in 2 worker processes
(`core.html_text_workers.texts_in_order`), on the real pages of the example file repeated (not a test).

Resiliparse 2.x holds the GIL while it extracts, so 2 threads take turns; the worker processes do not. Each
contender in a fresh process, rotating order, best of the rounds; wall and CPU seconds (the workers' included),
and the load average.

    PYTHONPATH=loaders python bench/bench_text_workers.py [--copies 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, os.pardir, "tests", "data", "crag", "dev_data.jsonl.bz2")
CHILD = """
import bz2, json, resource, sys, time
from ragloaders.core.html_text import html_to_text
from ragloaders.core.html_text_workers import texts_in_order
from ragloaders.core.readers.threads import map_ahead
with bz2.open(sys.argv[2]) as f:
    pages = [p["page_result"] for line in f for p in json.loads(line)["search_results"]] * int(sys.argv[3])
batches = [[None if h is None else h.encode() for h in pages[i:i + 8]] for i in range(0, len(pages), 8)]
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
start, used = time.time(), cpu()
if sys.argv[1] == "one thread":
    texts = [html_to_text(h) for h in pages if h is not None]
elif sys.argv[1] == "two threads":
    texts = list(map_ahead(html_to_text, [h for h in pages if h is not None], threads=2))
else:
    texts = [t for _, batch in texts_in_order((0, b) for b in batches) for t in batch]
html_mb = sum(len(h or "") for h in pages) / 1e6
print(json.dumps({"seconds": time.time() - start, "cpu": cpu() - used, "html_mb": html_mb}))
"""
CONTENDERS = ["one thread", "two threads", "two worker processes"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[dict]] = {}
    for round_ in range(args.rounds):
        for name in CONTENDERS[round_ % 3:] + CONTENDERS[:round_ % 3]:
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, "-c", CHILD, name, SAMPLE, str(args.copies)], capture_output=True,
                                  text=True, check=True, env={**os.environ})
            result = {**json.loads(done.stdout), "load": load}
            results.setdefault(name, []).append(result)
            print(f"round {round_ + 1} {name}: {result}", file=sys.stderr)
    best = {name: min(runs, key=lambda r: r["seconds"]) for name, runs in results.items()}
    base = best["one thread"]["seconds"]
    print(f"{best['one thread']['html_mb']:.0f} MB of real HTML ({args.copies} copies of the example's pages), "
          f"best of {args.rounds}:\n")
    print("| contender | s | CPU s | x one thread | load before |\n|---|---|---|---|---|")
    for name, r in best.items():
        print(f"| {name} | {r['seconds']:.2f} | {r['cpu']:.2f} | {r['seconds'] / base:.2f} | {r['load']:.1f} |")


if __name__ == "__main__":
    main()
