"""BM25 baseline: time and peak memory on a climate-fever-sized generated corpus, against a tokenizing floor and
bm25s itself; and the nfcorpus fidelity figure (the official zip, `bm25` then `eval`).

Run by hand (the 5.4M-document run takes 15-30 minutes and ~12 GB of disk):

    PYTHONPATH=loaders python bench/bench_bm25.py [--docs 5400000] [--bm25s-docs 500000] [--variants]

Each contender runs in its own fresh process; the clock starts after the imports and after the corpus's Arrow
cache is built (an untimed process builds it first), so what is timed is the BM25 run itself. Figures are ratios
against the floor measured in the same run: one pass over the loaded corpus that lower-cases and splits every
title + text, which any BM25 over that text must do. Peak RSS is the process's `ru_maxrss`; peak anonymous
memory (RssAnon, sampled every 50 ms) leaves out the clean page cache of the memory-mapped Arrow file.
`--variants` also prints the nfcorpus nDCG@10 of tokenizer / stemmer / k1 / b / method choices (with bm25s).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NFCORPUS_DIR = os.path.join(ROOT, "tests", "data", "beir")
QUERIES = 1_535
"""climate-fever's test queries."""


def zipf_vocabulary(size: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Made-up words with Zipf probabilities (s = 1.07, as in English text), English stopwords at the top."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["the", "of", "and", "in", "to", "a", "is", "was", "for", "as", "by", "with", "on", "that", "it"]
    while len(words) < size:
        words.append("".join(rng.choices(letters, k=rng.randint(3, 11))))
    weights = 1 / np.arange(1, size + 1) ** 1.07
    return words, weights / weights.sum()


def _texts(rng: np.random.Generator, words: np.ndarray, p: np.ndarray, count: int, low: int, high: int) -> list[str]:
    lengths = rng.integers(low, high + 1, size=count)
    drawn = words[rng.choice(len(words), size=int(lengths.sum()), p=p)]
    return [" ".join(part) for part in np.split(drawn, np.cumsum(lengths)[:-1])]


def generate(folder: str, docs: int, seed: int = 0) -> None:
    """A BEIR folder shaped like climate-fever: `docs` documents of ~85 words (Wikipedia abstracts), 1,535
    queries of ~20 words from the same vocabulary, 4 judged documents per query."""
    os.makedirs(os.path.join(folder, "qrels"), exist_ok=True)
    vocabulary, p = zipf_vocabulary(300_000, seed)
    words = np.array(vocabulary, dtype=object)
    rng = np.random.default_rng(seed)
    with open(os.path.join(folder, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for start in range(0, docs, 20_000):
            count = min(20_000, docs - start)
            titles, texts = _texts(rng, words, p, count, 1, 4), _texts(rng, words, p, count, 40, 130)
            f.writelines(json.dumps({"_id": f"doc{start + i}", "title": title.title(), "text": text}) + "\n"
                         for i, (title, text) in enumerate(zip(titles, texts)))
    with open(os.path.join(folder, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q, text in enumerate(_texts(rng, words, p, QUERIES, 10, 30)):
            f.write(json.dumps({"_id": f"q{q}", "text": text}) + "\n")
    with open(os.path.join(folder, "qrels", "test.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in range(QUERIES):
            f.writelines(f"q{q}\tdoc{d}\t1\n" for d in rng.choice(docs, size=4, replace=False))


PATH = "beir/climate-fever"
CONTENDERS = {
    # name: (imports, not timed; the run, timed; sets `rows`)
    "floor: lower-case + split title + text (one pass)": ("import re, ragloaders", """
        split = re.compile(r"\\w+").findall
        table = ragloaders.load(PATH, "corpus", split="corpus", data_dir=DATA_DIR, cache_dir=CACHE).data.table
        rows = 0
        for offset in range(0, table.num_rows, 20_000):
            part = table.slice(offset, 20_000)
            for title, text in zip(part.column("title").to_pylist(), part.column("text").to_pylist()):
                rows += len(split(f"{title} {text}".lower()))
    """),
    "ragloaders bm25 (top 1000, TREC run)": ("from ragloaders.eval import bm25", """
        rows = bm25(PATH, out=OUT + "/run.trec", data_dir=DATA_DIR, cache_dir=CACHE).lines
    """),
    "bm25s 0.3 (Tokenizer + index + retrieve k=1000, same tokens)": (
        "import bm25s, Stemmer, ragloaders, numpy as np", """
        corpus = ragloaders.load(PATH, "corpus", split="corpus", data_dir=DATA_DIR, cache_dir=CACHE).data.table
        queries = ragloaders.load(PATH, "queries", split="queries", data_dir=DATA_DIR, cache_dir=CACHE).data.table
        texts = [f"{a} {b}" for a, b in zip(corpus.column("title").to_pylist(), corpus.column("text").to_pylist())]
        tokenizer = bm25s.tokenization.Tokenizer(splitter=r"\\w+", stopwords="en", stemmer=Stemmer.Stemmer("english"))
        ids = tokenizer.tokenize(texts, show_progress=False, return_as="ids")
        del texts
        retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        retriever.index((ids, tokenizer.get_vocab_dict()), show_progress=False)
        del ids
        query_ids = tokenizer.tokenize(queries.column("text").to_pylist(), update_vocab=False, show_progress=False,
                                       return_as="ids")
        docs, scores = retriever.retrieve(query_ids, k=1000, show_progress=False, n_threads=1)
        rows = int((scores > 0).sum())
    """),
}

HARNESS = """
import os, resource, sys, threading, time
PATH, DATA_DIR, CACHE, OUT = sys.argv[1:5]
peak_anon = [0]
def sample():
    while True:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    peak_anon[0] = max(peak_anon[0], int(line.split()[1]) * 1024)
        time.sleep(0.05)
threading.Thread(target=sample, daemon=True).start()
{imports}
start = time.perf_counter()
{body}
seconds = time.perf_counter() - start
print(rows, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, peak_anon[0])
"""


def run(imports: str, body: str, *args: str) -> tuple[int, float, int, int] | str:
    script = HARNESS.format(imports=imports, body=textwrap.dedent(body))
    env = {**os.environ, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "DISABLE_TQDM": "1"}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    rows, seconds, peak, anon = done.stdout.split()[-4:]
    return int(rows), float(seconds), int(peak), int(anon)


def prepare(workdir: str, docs: int) -> tuple[str, str]:
    data_dir = os.path.join(workdir, f"climate-fever-{docs}")
    folder = os.path.join(data_dir, "climate-fever")
    if not os.path.exists(os.path.join(folder, "qrels", "test.tsv")):
        generate(folder, docs)
    cache = os.path.join(data_dir, "cache")
    warm = "import ragloaders\nfor c in ('corpus', 'queries', 'qrels'): ragloaders.load(PATH, c, data_dir=DATA_DIR, " \
           "cache_dir=CACHE)\nrows = 0"
    run("", warm, PATH, data_dir, cache, workdir)
    return data_dir, cache


def bench_size(workdir: str, docs: int, names: list[str]) -> None:
    data_dir, cache = prepare(workdir, docs)
    size = os.path.getsize(os.path.join(data_dir, "climate-fever", "corpus.jsonl")) / 1e6
    print(f"\n{docs:,} docs ({size:,.0f} MB corpus.jsonl), {QUERIES:,} queries, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| contender | rows | seconds | × floor | peak RSS MB | peak RssAnon MB |\n|---|---|---|---|---|---|")
    floor = None
    for name in names:
        imports, body = CONTENDERS[name]
        out = tempfile.mkdtemp(prefix="out-", dir=workdir)  # `bm25 --out` never replaces a run: a new folder each
        try:
            result = run(imports, body, PATH, data_dir, cache, out)
        finally:
            shutil.rmtree(out)  # the folder this run made, with the run file it wrote
        if isinstance(result, str):
            print(f"| {name} | failed: {result[:100]} | | | | |", flush=True)
            continue
        rows, seconds, peak, anon = result
        floor = floor or seconds
        print(f"| {name} | {rows:,} | {seconds:.1f} | {seconds / floor:.2f} | {peak / 1e6:,.0f} | {anon / 1e6:,.0f} |",
              flush=True)


NFCORPUS = """
import json, tempfile
from ragloaders.eval import Bm25Settings, bm25, evaluate
"""
NFCORPUS_BODY = """
out = tempfile.mkdtemp() + "/nfcorpus.trec"
bm25("beir/nfcorpus", out=out, data_dir=DATA_DIR, cache_dir=CACHE, settings=Bm25Settings(multifield={multifield}))
report = evaluate("beir/nfcorpus", out, metrics="ndcg@10", data_dir=DATA_DIR, cache_dir=CACHE)
rows = round(report.metrics["NDCG@10"] * 1e6)
"""
PYSERINI_NFCORPUS = {False: 0.3218, True: 0.3254}
"""Pyserini's nfcorpus BM25 nDCG@10, flat and multifield (pyserini/2cr/beir.yaml)."""


def bench_nfcorpus(workdir: str, rounds: int = 3) -> None:
    """Flat and multifield on the official zip, alternating in one run: nDCG@10, seconds, memory, and multifield's
    cost as the ratio of the median times."""
    cache = os.path.join(workdir, "nfcorpus-cache")
    run("import ragloaders", "for c in ('corpus', 'queries', 'qrels'): ragloaders.load('beir/nfcorpus', c, "
        "data_dir=DATA_DIR, cache_dir=CACHE)\nrows = 0", "beir/nfcorpus", NFCORPUS_DIR, cache, workdir)
    print(f"\nnfcorpus (official zip), `bm25` then `eval`, {rounds} alternating rounds, load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| condition | NDCG@10 | Pyserini | seconds (median) | × flat | peak RSS MB | peak RssAnon MB |\n"
          "|---|---|---|---|---|---|---|")
    results: dict[bool, list] = {False: [], True: []}
    for _ in range(rounds):
        for multifield in (False, True):
            result = run(NFCORPUS, NFCORPUS_BODY.format(multifield=multifield), "beir/nfcorpus", NFCORPUS_DIR, cache,
                         workdir)
            if isinstance(result, str):
                print(f"nfcorpus failed: {result}")
                return
            results[multifield].append(result)
    median = {mf: sorted(r[1] for r in rs)[len(rs) // 2] for mf, rs in results.items()}
    for multifield, rs in results.items():
        ndcg, _, peak, anon = max(rs, key=lambda r: r[2])
        print(f"| {'multifield' if multifield else 'flat'} | {ndcg / 1e6:.4f} | {PYSERINI_NFCORPUS[multifield]} | "
              f"{median[multifield]:.2f} | {median[multifield] / median[False]:.2f} | {peak / 1e6:.0f} | "
              f"{anon / 1e6:.0f} |")


def variants() -> None:
    """nfcorpus nDCG@10 of BM25 choices, with bm25s on the official zip's test split."""
    import itertools
    import zipfile

    import bm25s
    import pytrec_eval
    import Stemmer

    with zipfile.ZipFile(os.path.join(NFCORPUS_DIR, "nfcorpus.zip")) as archive:
        corpus = [json.loads(line) for line in archive.read("nfcorpus/corpus.jsonl").splitlines()]
        queries = {q["_id"]: q["text"] for q in map(json.loads, archive.read("nfcorpus/queries.jsonl").splitlines())}
        qrels: dict[str, dict[str, int]] = {}
        for line in archive.read("nfcorpus/qrels/test.tsv").decode().splitlines()[1:]:
            query_id, doc_id, grade = line.split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(grade)
    texts, doc_ids, query_ids = [f"{d['title']} {d['text']}" for d in corpus], [d["_id"] for d in corpus], list(qrels)
    print("\n| splitter | stemmer | k1 | b | method | nDCG@10 |\n|---|---|---|---|---|---|")
    for splitter, stemmer, (k1, b), method in itertools.product(
            [r"(?u)\b\w\w+\b", r"\w+"], ["english", "porter"], [(0.9, 0.4), (1.2, 0.75), (1.5, 0.75)],
            ["lucene", "robertson"]):
        tokenizer = bm25s.tokenization.Tokenizer(splitter=splitter, stopwords="en", stemmer=Stemmer.Stemmer(stemmer))
        retriever = bm25s.BM25(k1=k1, b=b, method=method)
        retriever.index(tokenizer.tokenize(texts, show_progress=False, return_as="tuple"), show_progress=False)
        tokens = tokenizer.tokenize([queries[q] for q in query_ids], update_vocab=False, show_progress=False,
                                    return_as="ids")
        found, scores = retriever.retrieve(tokens, k=1000, show_progress=False, n_threads=1)
        run_ = {q: {doc_ids[j]: float(s) for j, s in zip(found[i], scores[i]) if s > 0}
                for i, q in enumerate(query_ids)}
        results = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run_)
        ndcg = sum(r["ndcg_cut_10"] for r in results.values()) / len(qrels)
        print(f"| `{splitter}` | {stemmer} | {k1} | {b} | {method} | {ndcg:.4f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=5_400_000)
    parser.add_argument("--bm25s-docs", type=int, default=500_000, help="size at which bm25s is compared (0: skip)")
    parser.add_argument("--workdir", default="/tmp/ragloaders-bench-bm25")
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--nfcorpus-only", action="store_true", help="only flat vs multifield on nfcorpus")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    bench_nfcorpus(args.workdir)
    if args.nfcorpus_only:
        return
    if args.variants:
        variants()
    names = list(CONTENDERS)
    if args.bm25s_docs:
        bench_size(args.workdir, args.bm25s_docs, names)
    bench_size(args.workdir, args.docs, names[:2])


if __name__ == "__main__":
    main()
