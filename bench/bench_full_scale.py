"""BEIR and mmRAG at their published sizes (not a test): the corpus build beside the floors measured in the same run.

    PYTHONPATH=loaders python bench/bench_full_scale.py beir [--docs 8800000] [--work DIR] [--rounds 1] [--keep]
    PYTHONPATH=loaders python bench/bench_full_scale.py mmrag [--gb 4.94] [--work DIR] [--rounds 1] [--keep]

beir: a generated corpus.jsonl of --docs documents (bench_beir.generate_corpus; 8.8M = msmarco's size, ~4 GB);
floor = pyarrow's threaded JSON reader writing an Arrow IPC stream; contenders = the `corpus` builder's
`download_and_prepare()` and `ragloaders build --configs corpus --out` (the Parquet folder and its card).

mmrag: a generated processed_documents.json of --gb GiB (bench_mmrag.generate; 4.94 GiB = the real file's 5.3 GB,
~3.2M chunks); floor = `json.load` of a cut (the first tenth of the same records, as a JSON array; its time
multiplied by the full file's size over the cut's: json.load of the whole file needs ~4x its size in memory) and
the bare ijson C parser over the whole file; contenders as for beir.

Each contender runs in a fresh process, alternated in a rotating order round after round, the load average printed
with each figure (fullscale.py: peak RSS is the process's own, peak disk the largest size of its scratch folder:
cache, output and work files). The generated input is deleted at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_beir import generate_corpus  # noqa: E402
from bench_mmrag import generate as generate_mmrag  # noqa: E402
from fullscale import Contender, rotate, table  # noqa: E402

LOADERS = os.path.join(HERE, os.pardir, "loaders")

PYARROW_FLOOR = """
import sys, pyarrow as pa, pyarrow.json as pj
schema = pa.schema([("_id", pa.string()), ("title", pa.string()), ("text", pa.string()),
                    ("metadata", pa.struct([("url", pa.string())]))])
reader = pj.open_json(sys.argv[1], read_options=pj.ReadOptions(block_size=1 << 20, use_threads=True),
                      parse_options=pj.ParseOptions(explicit_schema=schema))
import os
os.makedirs(sys.argv[2], exist_ok=True)
with pa.OSFile(sys.argv[2] + "/floor.arrow", "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
    for batch in reader:
        writer.write_batch(batch)
"""
JSON_LOAD = """
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    records = json.load(f)
"""
IJSON = """
import sys, ijson
with open(sys.argv[1], "rb") as f:
    for record in ijson.get_backend("yajl2_c").items(f, "item", buf_size=1 << 20):
        pass
"""
BUILDER = """
import sys, ragloaders
ragloaders.builder(sys.argv[1], "corpus", data_dir=sys.argv[2], cache_dir=sys.argv[3]).download_and_prepare()
"""


def ragloaders_contenders(path: str, data_dir: str) -> list[Contender]:
    env = {"PYTHONPATH": LOADERS}
    return [
        Contender("ragloaders `corpus` download_and_prepare (Arrow cache)",
                  [sys.executable, "-c", BUILDER, path, data_dir, "{scratch}/cache"], env),
        Contender("`ragloaders build --configs corpus --out` (Parquet + card)",
                  [sys.executable, "-m", "ragloaders", "build", path, "--configs", "corpus", "--data-dir", data_dir,
                   "--out", "{scratch}/out"], {**env, "HF_DATASETS_CACHE": "{scratch}/hf"}),
    ]


def beir(args: argparse.Namespace, data: str) -> tuple[list[Contender], int, str]:
    corpus = os.path.join(data, "corpus.jsonl")
    if not os.path.exists(corpus):
        start = time.perf_counter()
        generate_corpus(corpus + ".partial", args.docs)
        os.replace(corpus + ".partial", corpus)
        print(f"generated in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    size = os.path.getsize(corpus)
    contenders = [Contender("pyarrow.json.open_json, threads, to an Arrow IPC stream (floor)",
                            [sys.executable, "-c", PYARROW_FLOOR, corpus, "{scratch}/out"], floor=True),
                  *ragloaders_contenders("beir/nfcorpus", data)]
    return contenders, size, f"{args.docs:,} documents, {size / 1e6:,.0f} MB corpus.jsonl"


def mmrag(args: argparse.Namespace, data: str) -> tuple[list[Contender], int, str]:
    path = os.path.join(data, "processed_documents.json")
    cut = os.path.join(os.path.dirname(data), "cut", "processed_documents.json")
    info_path = os.path.join(os.path.dirname(data), "mmrag.json")
    if not os.path.exists(info_path):
        os.makedirs(os.path.dirname(cut), exist_ok=True)
        start = time.perf_counter()
        rows = generate_mmrag(path, int(args.gb * (1 << 30)), None)
        cut_rows = generate_mmrag(cut, int(args.gb * (1 << 30)) // 10, None)  # same seed: the first records
        json.dump({"rows": rows, "cut_rows": cut_rows}, open(info_path, "w"))
        print(f"generated in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    info = json.load(open(info_path))
    size, cut_size = os.path.getsize(path), os.path.getsize(cut)
    contenders = [Contender(f"json.load of the first {cut_size / size:.0%} (x {size / cut_size:.1f}) (floor)",
                            [sys.executable, "-c", JSON_LOAD, cut], floor=True, scale=size / cut_size,
                            input_bytes=cut_size),
                  Contender("ijson yajl2_c, parse only, whole file", [sys.executable, "-c", IJSON, path]),
                  *ragloaders_contenders("mmrag", data)]
    return contenders, size, f"{info['rows']:,} chunks, {size / 1e6:,.0f} MB processed_documents.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmark", choices=("beir", "mmrag"))
    parser.add_argument("--docs", type=int, default=8_800_000, help="beir: documents (default msmarco's 8.8M)")
    parser.add_argument("--gb", type=float, default=4.94, help="mmrag: GiB of JSON (default the real file's 5.3 GB)")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ragloaders-bench-full"))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the generated input for another run")
    args = parser.parse_args()
    work = os.path.join(args.work, args.benchmark)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    contenders, size, what = (beir if args.benchmark == "beir" else mmrag)(args, data)
    print(f"{what}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
    results = rotate(contenders, args.rounds, work, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"{what}, {args.rounds} round(s), best of the rounds:\n")
    print(table(contenders, results, size))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
