"""CRAG task 1&2 at full size on real pages (not a test): `records`, every config and the disk a build leaves
behind, beside the floor of decompressing the same file on 2 threads, all measured in one run.

    PYTHONPATH=loaders python bench/bench_crag_full.py [--work DIR] [--mb 40] [--rounds 2] [--tree NAME=LOADERS ...]
    PYTHONPATH=loaders python bench/bench_crag_full.py --task 3 [--fraction 0.1] [--rounds 1] [--keep]

Task 3 (`--task 3`): `generate_task3` writes --fraction of its 7.7 GB of bz2 in its v5 layout (a tar of JSONL
shards, bz2, cut into 4 `.partN` files in the published proportions), each record with the labels of a real one
and all 50 real pages (task 3 has up to 50 a question, ~2.7 MB of bz2 each as published), URLs distinct per copy;
contenders: indexed_bzip2 on 2 threads over the joined file (floor), `records`, `build --out`; then every figure
extrapolated linearly to the full size. The generated input is deleted at the end unless --keep.

The input: the 10 real records of tests/data/crag (50 pages, 15 MB of real HTML) repeated with fresh interaction
ids and each copy's page URLs made distinct (so every copy's pages are new corpus pages, their HTML still the real
one), compressed to about --mb MB of bz2 (one stream per ~20 MB of JSON, written by 2 processes).

Contenders, each in a fresh process with its own empty cache, alternated in a rotating order round after round
(a fixed order biases the middle slot on this machine), the load average printed with each figure:
- `decompress`: indexed_bzip2 on 2 threads reading the whole file (the floor), and `lbzip2 -dc -n2` if installed;
- `records`: the `records` builder's `download_and_prepare()` (the datasets cache only), timed as a whole process
  and, inside it, from after its imports and the builder's construction (as is the decoder's open and reads);
- `all`: `ragloaders build --out --cache-dir` (every config, then the Parquet folder and its card; the cache kept);
- `build`: `ragloaders build --out` without a cache dir (datasets' default cache pointed into the run's folder);
each for every --tree (a `loaders` folder: compare a branch against another in the same run). Peak disk is the
largest size of the run's folder (cache, output and the build's work folder beside it), polled every 0.2 s;
"left" is what stays in it beside the output (the cache).
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from multiprocessing import Pool

from fullscale import DiskPeak, folder_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
REAL_SAMPLE = os.path.join(HERE, os.pardir, "tests", "data", "crag", "dev_data.jsonl.bz2")
FILE = "crag_task_1_and_2_dev_v5.jsonl.bz2"


def _copy(args: tuple[list[bytes], int]) -> bytes:
    import orjson

    lines, copy = args
    out = []
    for number, line in enumerate(lines):
        record = orjson.loads(line)
        record["interaction_id"] = str(uuid.UUID(int=copy * 1000 + number))
        for page in record["search_results"]:
            if page["page_url"] is not None:
                page["page_url"] += f"#copy-{copy}"
        out.append(orjson.dumps(record) + b"\n")
    return bz2.compress(b"".join(out), 9)


def generate(folder: str, target_mb: int) -> dict:
    path = os.path.join(folder, FILE)
    info_path = os.path.join(folder, "generated.json")
    if os.path.isfile(path) and os.path.isfile(info_path):
        return json.load(open(info_path))
    os.makedirs(folder, exist_ok=True)
    with open(REAL_SAMPLE, "rb") as f:
        lines = [line for line in bz2.decompress(f.read()).split(b"\n") if line.strip()]
    copies = 0
    with open(path + ".partial", "wb") as out, Pool(2) as pool:
        for data in pool.imap(_copy, ((lines, copy) for copy in range(10**5))):
            out.write(data)
            copies += 1
            if out.tell() >= target_mb << 20:
                break
        pool.terminate()
    os.replace(path + ".partial", path)
    info = {"bytes": os.path.getsize(path), "records": copies * len(lines),
            "json_bytes": copies * sum(len(line) + 1 for line in lines)}
    json.dump(info, open(info_path, "w"))
    return info


TASK3 = "crag_task_3_dev_v5.tar.bz2"
TASK3_PART_BYTES = (2_147_483_648,) * 3 + (1_283_117_287,)
"""The published v5 parts: task 3 is 7.7 GB of bz2 (a tar of JSONL shards cut into 4 parts)."""
TASK3_RECORDS_PER_MEMBER = 5


def _task3_record(lines: list[bytes], copy: int) -> bytes:
    """A task-3-shaped record: the labels of real record `copy` % 10 and all 50 real pages (task 3 has up to 50 a
    question), their URLs made distinct per copy."""
    import orjson

    records = [orjson.loads(line) for line in lines]
    record = records[copy % len(records)]
    record["interaction_id"] = str(uuid.UUID(int=copy))
    record["search_results"] = [dict(page, page_url=None if page["page_url"] is None else
                                     page["page_url"] + f"#copy-{copy}")
                                for r in records for page in r["search_results"]]
    return orjson.dumps(record) + b"\n"


def _compress(data: bytes) -> bytes:
    return bz2.compress(data, 9)


def generate_task3(folder: str, fraction: float) -> dict:
    """`fraction` of task 3's bz2 size as its v5 layout: a tar of JSONL shards (TASK3_RECORDS_PER_MEMBER records
    each), bz2 (a stream per ~20 MB of tar, written by 2 processes), cut into 4 parts in the published
    proportions under `folder`/parts; the joined file under `folder`/joined for the decompression floor."""
    import tarfile

    info_path = os.path.join(folder, "generated.json")
    if os.path.isfile(info_path):
        return json.load(open(info_path))
    joined_dir, parts_dir = os.path.join(folder, "joined"), os.path.join(folder, "parts")
    os.makedirs(joined_dir, exist_ok=True)
    os.makedirs(parts_dir, exist_ok=True)
    joined = os.path.join(joined_dir, TASK3)
    target = int(sum(TASK3_PART_BYTES) * fraction)
    with open(REAL_SAMPLE, "rb") as f:
        lines = [line for line in bz2.decompress(f.read()).split(b"\n") if line.strip()]
    records = tar_bytes = 0
    pending: list = []
    with open(joined, "wb") as out, Pool(2) as pool:
        def send(data: bytes) -> None:
            nonlocal tar_bytes
            tar_bytes += len(data)
            for at in range(0, len(data), 20 << 20):
                pending.append(pool.apply_async(_compress, (data[at:at + (20 << 20)],)))
                while len(pending) > 4:
                    out.write(pending.pop(0).get())

        member = 0
        while out.tell() + 4 * (2 << 20) < target:
            content = b"".join(_task3_record(lines, records + n) for n in range(TASK3_RECORDS_PER_MEMBER))
            header = tarfile.TarInfo(f"crag_task_3_dev_v5/crag_task_3_dev_v5_{member}.jsonl")
            header.size, header.mtime = len(content), 0
            send(header.tobuf(tarfile.GNU_FORMAT) + content + bytes(-len(content) % tarfile.BLOCKSIZE))
            records += TASK3_RECORDS_PER_MEMBER
            member += 1
        send(bytes(2 * tarfile.BLOCKSIZE))
        for result in pending:
            out.write(result.get())
    size = os.path.getsize(joined)
    cut = [int(size * part / sum(TASK3_PART_BYTES)) for part in TASK3_PART_BYTES[:3]]
    with open(joined, "rb") as f:
        for number, length in enumerate([*cut, size - sum(cut)]):
            with open(os.path.join(parts_dir, f"{TASK3}.part{number}"), "wb") as part:
                part.write(f.read(length))
    info = {"bytes": size, "records": records, "json_bytes": tar_bytes, "fraction": fraction}
    json.dump(info, open(info_path, "w"))
    return info


def run(kind: str, data: str, tree: str, work: str) -> dict:
    load = os.getloadavg()[0]
    scratch = tempfile.mkdtemp(prefix="bench-crag-full-", dir=work)
    cache, out = os.path.join(scratch, "cache"), os.path.join(scratch, "out")
    env = {**os.environ, "PYTHONPATH": tree, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    if kind == "decompress":
        command = [sys.executable, "-c", "import indexed_bzip2 as b, sys, time\nstart = time.time()\n"
                   "f = b.open(sys.argv[1], parallelization=2)\n"
                   "n = 0\nwhile data := f.read(1 << 20): n += len(data)\nf.close()\n"
                   "print('INNER', time.time() - start)", data]
    elif kind == "lbzip2":
        command = ["sh", "-c", f"lbzip2 -dc -n2 '{data}' > /dev/null"]
    elif kind == "records":
        command = [sys.executable, "-c", "import ragloaders, sys, time\nbuilder = ragloaders.builder("
                   "'crag/task_1_and_2', 'records', data_dir=sys.argv[1], cache_dir=sys.argv[2])\nstart = time.time()\n"
                   "builder.download_and_prepare()\nprint('INNER', time.time() - start)", os.path.dirname(data), cache]
    else:
        command = [sys.executable, "-m", "ragloaders", "build", "crag/task_1_and_2",
                   "--data-dir", os.path.dirname(data), "--out", out]
        if kind == "all":
            command += ["--cache-dir", cache]
        else:
            env["HF_DATASETS_CACHE"] = cache
    start = time.time()
    with DiskPeak(scratch) as disk:
        completed = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.time() - start
    if completed.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{completed.stderr[-3000:]}")
    inner = [line.split()[1] for line in completed.stdout.splitlines() if line.startswith("INNER ")]
    result = {"seconds": round(seconds, 2), "load_before": round(load, 1), "load_after": round(os.getloadavg()[0], 1),
              "inner_seconds": round(float(inner[0]), 2) if inner else None,
              "output_bytes": folder_bytes(out), "left_bytes": folder_bytes(scratch) - folder_bytes(out),
              "peak_disk_bytes": disk.peak}
    shutil.rmtree(scratch, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ragloaders-bench-crag-full"))
    parser.add_argument("--mb", type=int, default=40, help="compressed size of the generated file (MB)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=PATH of a loaders folder to measure (default: this checkout's)")
    parser.add_argument("--kinds", default="decompress,lbzip2,records,all,build")
    parser.add_argument("--task", choices=("1_and_2", "3"), default="1_and_2")
    parser.add_argument("--fraction", type=float, default=0.1, help="task 3: the fraction of its size generated")
    parser.add_argument("--keep", action="store_true", help="task 3: keep the generated input")
    args = parser.parse_args()
    if args.task == "3":
        task3(args)
        return
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": os.path.join(HERE, os.pardir, "loaders")}
    info = generate(os.path.join(args.work, "data"), args.mb)
    print(json.dumps(info), file=sys.stderr)
    data = os.path.join(args.work, "data", FILE)
    kinds = [k for k in args.kinds.split(",") if k != "lbzip2" or shutil.which("lbzip2")]
    contenders = [(kind, None) for kind in kinds if kind in ("decompress", "lbzip2")]
    contenders += [(kind, name) for name in trees for kind in kinds if kind not in ("decompress", "lbzip2")]
    results: dict[str, list[dict]] = {}
    for round_ in range(args.rounds):
        shift = round_ % len(contenders)
        for kind, name in contenders[shift:] + contenders[:shift]:
            label = kind if name is None else f"{kind} [{name}]"
            result = run(kind, data, trees.get(name, next(iter(trees.values()))), args.work)
            results.setdefault(label, []).append(result)
            print(f"round {round_ + 1} {label}: {json.dumps(result)}", file=sys.stderr)
    report(info, results)


def task3(args: argparse.Namespace) -> None:
    """Task 3 at `--fraction` of its size: the decompression floor, `records` and `build --out` (fullscale.py's
    fresh-process runs, rotating order, peak RSS and disk), then each figure extrapolated to the full size."""
    sys.path.insert(0, HERE)
    from fullscale import Contender, rotate, table

    work = os.path.join(args.work, "task3")
    # Generated in a spawned process: a child started from this one would report this process's peak RSS (Linux
    # keeps the pre-exec high-water mark), which the generation raises to ~1 GB.
    import multiprocessing

    generator = multiprocessing.get_context("spawn").Process(target=generate_task3,
                                                             args=(os.path.join(work, "data"), args.fraction))
    generator.start()
    generator.join()
    if generator.exitcode != 0:
        raise SystemExit(f"generating the task 3 input failed ({generator.exitcode})")
    info = generate_task3(os.path.join(work, "data"), args.fraction)
    print(json.dumps(info), file=sys.stderr)
    joined = os.path.join(work, "data", "joined", TASK3)
    parts = os.path.join(work, "data", "parts")
    tree = dict(t.split("=", 1) for t in args.tree).get("this", os.path.join(HERE, os.pardir, "loaders"))
    env = {"PYTHONPATH": tree}
    contenders = [
        Contender("indexed_bzip2, 2 threads, the joined file (floor)", [sys.executable, "-c", DECOMPRESS, joined],
                  floor=True),
        Contender("`records` download_and_prepare (Arrow cache)", [
            sys.executable, "-c", "import ragloaders, sys\nragloaders.builder('crag/task_3', 'records', "
            "data_dir=sys.argv[1], cache_dir=sys.argv[2]).download_and_prepare()", parts, "{scratch}/cache"], env),
        Contender("every config, `ragloaders build --out` (Parquet + card)", [
            sys.executable, "-m", "ragloaders", "build", "crag/task_3", "--data-dir", parts, "--out",
            "{scratch}/out"], {**env, "HF_DATASETS_CACHE": "{scratch}/hf"}),
    ]
    results = rotate(contenders, args.rounds, work, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"task 3 at {args.fraction:g} of its size: {info['bytes'] / 1e6:,.0f} MB of bz2 in 4 parts, "
          f"{info['json_bytes'] / 1e6:,.0f} MB of tar, {info['records']} records of 50 pages; "
          f"{args.rounds} round(s), best of the rounds:\n")
    print(table(contenders, results, info["bytes"]))
    print(f"\nExtrapolated to task 3's {sum(TASK3_PART_BYTES) / 1e9:.2f} GB of bz2 "
          f"(x {sum(TASK3_PART_BYTES) / info['bytes']:.1f}, its bytes over the generated ones):\n")
    print("| contender | s | peak disk GB | output GB |\n|---|---|---|---|")
    for c in contenders:
        r = min(results[c.label], key=lambda r: r["seconds"])
        scale = sum(TASK3_PART_BYTES) / info["bytes"]
        print(f"| {c.label} | {r['seconds'] * scale:,.0f} | {r['peak_disk_bytes'] * scale / 1e9:.1f} "
              f"| {r['output_bytes'] * scale / 1e9:.1f} |")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


DECOMPRESS = ("import indexed_bzip2 as b, sys\nf = b.open(sys.argv[1], parallelization=2)\n"
              "while f.read(1 << 20): pass\nf.close()")


def report(info: dict, results: dict[str, list[dict]]) -> None:
    best = {label: min(runs, key=lambda r: r["seconds"]) for label, runs in results.items()}
    floor = best.get("decompress", {}).get("seconds")
    print(f"input: {info['bytes'] / 1e6:.1f} MB of bz2, {info['json_bytes'] / 1e6:.0f} MB of JSON, "
          f"{info['records']} records")
    print("| contender | best s | x decompress (2 threads) | load avg before/after | output MB | left in cache MB "
          "| peak disk MB | peak / output |")
    print("|---|---|---|---|---|---|---|---|")
    for label, r in best.items():
        ratio = f"{r['seconds'] / floor:.2f}" if floor else ""
        out = r["output_bytes"] / 1e6
        peak = f"{r['peak_disk_bytes'] / r['output_bytes']:.2f}" if r["output_bytes"] else ""
        print(f"| {label} | {r['seconds']} | {ratio} | {r['load_before']}/{r['load_after']} | {out:.1f} | "
              f"{r['left_bytes'] / 1e6:.1f} | {r['peak_disk_bytes'] / 1e6:.1f} | {peak} |")
    inner = {label: min(r["inner_seconds"] for r in runs) for label, runs in results.items()
             if runs[0].get("inner_seconds") is not None}
    if "decompress" in inner:
        print("\nTimed inside the process, after its imports (the decoder's open and reads; the records builder's "
              "download_and_prepare()), best of the rounds:")
        for label, seconds in inner.items():
            print(f"- {label}: {seconds} s, {seconds / inner['decompress']:.2f}x the decoding")
    for label in best:
        kind = label.split(" ", 1)[0]
        if kind in ("all", "build"):
            records = best.get(label.replace(kind, "records", 1))
            if records:
                print(f"{label} / {label.replace(kind, 'records', 1)}: "
                      f"{best[label]['seconds'] / records['seconds']:.2f}x")


if __name__ == "__main__":
    main()
