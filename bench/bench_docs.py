"""Documents by id: `ragloaders.docs` against a Python dict of the corpus, ir_datasets' docstore and Dataset.filter.

Run by hand (a few minutes at 1M documents, ~20 at --docs 8800000 on a loaded machine; needs ~2 GB of free disk,
~13 GB and ~9 GB of memory (the dict) at 8.8M, and ir_datasets:
`pip install 'ir_datasets>=0.5,<0.7'`, which the venv has; 0.6.3 was measured):

    PYTHONPATH=loaders python bench/bench_docs.py [--docs 1000000] [--workdir /tmp/ragloaders-bench-docs]

A generated BEIR-layout folder (bench_beir.generate_corpus: ids with leading zeros, ~450 bytes a line) is read as
`beir-format`. Every contender runs in its own fresh process, in the same run, on the same corpus and the same random
ids: the time to make its store (the corpus build is measured first, as the baseline of the index build), the time to
open a kept store, `get_many` of 10,000 random ids, 1,000 single lookups, disk, and RssAnon (anonymous resident
memory, /proc/self/status: the memory-mapped data's clean pages are not in it) added by opening the store. Lookup
times are the best of 3 repetitions in the process (each store as warm as the others). Ratios are against the dict
of the corpus made from the Dataset (what users write).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_beir import generate_corpus  # noqa: E402

COMMON = """
import json, os, random, sys, time
def anon():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("RssAnon:"))
WORK, DOCS = sys.argv[1], int(sys.argv[2])
ids = json.load(open(os.path.join(WORK, "ids.json")))
many, single = ids["many"], ids["single"]
import ragloaders
data = dict(data_dir=os.path.join(WORK, "beir"), cache_dir=os.path.join(WORK, "cache"))
def report(**figures):
    print(json.dumps(figures))
def best_of_3(lookup):
    times = []
    for _ in range(3):
        start = time.perf_counter()
        lookup()
        times.append(time.perf_counter() - start)
    return min(times)
"""

CONTENDERS = {
    "corpus build (ragloaders.load, the baseline of the index build)": """
        start = time.perf_counter()
        ragloaders.load("beir-format", "corpus", **data)
        report(build=time.perf_counter() - start)
    """,
    "ragloaders.docs": """
        from ragloaders.lookup.id_index import IdIndex
        ragloaders.load("beir-format", "corpus", **data)
        start = time.perf_counter()
        first = ragloaders.docs("beir-format", **data)
        made = time.perf_counter() - start
        table = first.table
        start = time.perf_counter()
        IdIndex.build(table.column("_id"), "bench")
        index_alone = time.perf_counter() - start
        disk = os.path.getsize(first.kept_at)
        del first
        report(make=made, index_build=index_alone, disk=disk)
    """,
    "ragloaders.docs (kept)": """
        ragloaders.load("beir-format", "corpus", **data)  # datasets' own open, off the clock
        before = anon()
        start = time.perf_counter()
        store = ragloaders.docs("beir-format", **data)
        opened = time.perf_counter() - start
        after = anon()
        got_many = best_of_3(lambda: store.get_many(many))
        got_single = best_of_3(lambda: [store[doc_id] for doc_id in single])
        assert [r["_id"] for r in store.get_many(many)] == many
        report(open=opened, anon=after - before, get_many=got_many, single=got_single)
    """,
    "dict of the corpus from the Dataset (baseline)": """
        dataset = ragloaders.load("beir-format", "corpus", split="corpus", **data)
        before = anon()
        start = time.perf_counter()
        store = {row["_id"]: row for row in dataset.to_list()}
        made = time.perf_counter() - start
        after = anon()
        got_many = best_of_3(lambda: [store.get(doc_id) for doc_id in many])
        got_single = best_of_3(lambda: [store[doc_id] for doc_id in single])
        report(make=made, open=made, anon=after - before, get_many=got_many, single=got_single)
    """,
    "ir_datasets PickleLz4FullStore": """
        from typing import NamedTuple
        from ir_datasets.indices import PickleLz4FullStore
        class Doc(NamedTuple):
            doc_id: str
            title: str
            text: str
            url: str
        dataset = ragloaders.load("beir-format", "corpus", split="corpus", **data)
        path = os.path.join(WORK, "irds", "docs.pklz4")
        def documents():
            for batch in dataset.data.table.to_batches(10_000):
                columns = batch.to_pydict()
                for doc_id, title, text, metadata in zip(columns["_id"], columns["title"], columns["text"],
                                                          columns["metadata"]):
                    yield Doc(doc_id, title, text, metadata)
        made = 0.0
        if sys.argv[3] == "build":
            start = time.perf_counter()
            PickleLz4FullStore(path, documents, Doc, "doc_id", ["doc_id"], count_hint=DOCS).build()
            report(make=time.perf_counter() - start,
                   disk=sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)))
            raise SystemExit
        before = anon()
        start = time.perf_counter()
        store = PickleLz4FullStore(path, documents, Doc, "doc_id", ["doc_id"], count_hint=DOCS)
        store.get(single[0])
        opened = time.perf_counter() - start
        after = anon()
        got_many = best_of_3(lambda: store.get_many(many))
        got_single = best_of_3(lambda: [store.get(doc_id) for doc_id in single])
        assert len(store.get_many(many)) == len(set(many))
        report(open=opened, anon=after - before, get_many=got_many, single=got_single)
    """,
    "Dataset.filter on the id": """
        dataset = ragloaders.load("beir-format", "corpus", split="corpus", **data)
        wanted = set(many)
        start = time.perf_counter()
        found = dataset.filter(lambda batch: [i in wanted for i in batch], input_columns="_id", batched=True,
                               keep_in_memory=True, batch_size=10_000)
        got_many = time.perf_counter() - start
        start = time.perf_counter()
        for doc_id in single[:3]:
            dataset.filter(lambda batch: [i == doc_id for i in batch], input_columns="_id", batched=True,
                           keep_in_memory=True, batch_size=10_000)
        got_single = (time.perf_counter() - start) / 3 * len(single)
        assert found.num_rows == len(wanted)
        report(get_many=got_many, single=got_single, note="single: 3 lookups, times 1000/3")
    """,
}


def run(name: str, work: str, docs: int, mode: str = "") -> dict:
    print(f"{name}{' (' + mode + ')' if mode else ''}: load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
    script = COMMON + textwrap.dedent(CONTENDERS[name])
    done = subprocess.run([sys.executable, "-c", script, work, str(docs), mode], capture_output=True, text=True,
                          env={**os.environ, "HF_HOME": os.path.join(work, "hf"), "HF_DATASETS_OFFLINE": "1"})
    if done.returncode:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000, help="documents (8841823: msmarco's size)")
    parser.add_argument("--workdir", default="/tmp/ragloaders-bench-docs")
    args = parser.parse_args()
    work = os.path.join(args.workdir, str(args.docs))
    shutil.rmtree(os.path.join(work, "cache"), ignore_errors=True)
    shutil.rmtree(os.path.join(work, "irds"), ignore_errors=True)
    folder = os.path.join(work, "beir")
    if not os.path.exists(os.path.join(folder, "corpus.jsonl")):
        os.makedirs(os.path.join(folder, "qrels"), exist_ok=True)
        generate_corpus(os.path.join(folder, "corpus.jsonl"), args.docs)
        with open(os.path.join(folder, "queries.jsonl"), "w") as f:
            f.write('{"_id": "q1", "text": "w1 w2"}\n')
        with open(os.path.join(folder, "qrels", "test.tsv"), "w") as f:
            f.write("query-id\tcorpus-id\tscore\nq1\t00000000\t1\n")
    rng = random.Random(1)
    with open(os.path.join(work, "ids.json"), "w") as f:
        json.dump({"many": [f"{rng.randrange(args.docs):08d}" for _ in range(10_000)],
                   "single": [f"{rng.randrange(args.docs):08d}" for _ in range(1_000)]}, f)
    names = list(CONTENDERS)
    results = {names[0]: run(names[0], work, args.docs)}
    results[names[1]] = run(names[1], work, args.docs)
    results[names[2]] = run(names[2], work, args.docs)
    results[names[3]] = run(names[3], work, args.docs)
    irds = run(names[4], work, args.docs, "build")
    results[names[4]] = {**run(names[4], work, args.docs), **irds}
    results[names[5]] = run(names[5], work, args.docs)
    build = results[names[0]]["build"]
    print(f"load average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1 / 5 / 15 min)")
    print(f"{args.docs:,} documents; corpus build {build:.2f} s; ragloaders index build "
          f"{results[names[1]]['index_build']:.2f} s alone ({results[names[1]]['index_build'] / build:.2f}× the "
          f"corpus build), first docs() {results[names[1]]['make']:.2f} s, kept index "
          f"{results[names[1]]['disk'] / args.docs:.1f} bytes/doc on disk")
    baseline = results[names[3]]
    print("| contender | make s | open s | get_many 10k ms | × dict | 1,000 single ms | × dict | RssAnon MB (B/doc) "
          "| disk MB |\n|---|---|---|---|---|---|---|---|---|")
    for name in names[1:]:
        r = {**results.get(name, {})}
        if name == names[1]:
            r.update(results[names[2]])
            name = "ragloaders.docs (first open builds the index; then kept)"
        elif name == names[2]:
            continue

        def cell(key: str, scale: float = 1.0, digits: int = 2, r: dict = r) -> str:
            return f"{r[key] * scale:.{digits}f}" if key in r else "—"

        def ratio(key: str, r: dict = r) -> str:
            return f"{r[key] / baseline[key]:.2f}" if key in r else "—"

        anon = f"{r['anon'] / 1e6:.0f} ({r['anon'] / args.docs:.1f})" if "anon" in r else "—"
        disk = f"{r['disk'] / 1e6:.0f}" if "disk" in r else "—"
        print(f"| {name} | {cell('make')} | {cell('open', digits=3)} | {cell('get_many', 1000, 1)} | "
              f"{ratio('get_many')} | {cell('single', 1000, 1)} | {ratio('single')} | {anon} | {disk} |")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
