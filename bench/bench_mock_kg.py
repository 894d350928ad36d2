"""Memory and speed of `crag/mock_kg` on generated files of 1 GB and 2 GB (run by hand, never in the tests).

    PYTHONPATH=loaders:tests python bench/bench_mock_kg.py --sizes 1 2 --work /tmp/mock-kg-bench

Three sources read in bounded batches, each at both sizes:
- sports/nba.sqlite `play_by_play` (the real file is 2.9 GB): sqlite cursor batches;
- movie/movie_db.json (one JSON object; the real one is 189 MB): ijson over the top-level members;
- finance/finance_detailed_price.sqlite (SqliteDict; the real one is 718 MB): one pickle per row.
And one that is not bounded, for the record: a pickled dict (music/song_dict_simplified.pickle is 235 MB),
which the restricted unpickler loads whole as the server does.

Each contender runs in a fresh process; the clock starts after the imports; peak memory is the process's
VmHWM (not ru_maxrss, which a forked child inherits from its parent). The baseline of each source, measured
in the same run, is the bare parse: a sqlite3 cursor over every row, ijson.kvitems over every member, or
sqlite3 + pickle.loads of every value, with nothing kept.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # mock_kg_generated: the fixtures the tests use
PYTHONPATH = os.pathsep.join([str(HERE.parent / "loaders"), str(HERE.parent / "tests")])
GB = 1 << 30

PROBE = """
import json, os, sys, time
def peak_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024
{imports}
start = time.perf_counter()
{body}
print(json.dumps({{"seconds": time.perf_counter() - start, "peak_mb": peak_mb()}}))
"""
BUILD = dict(imports="import ragloaders", body="""
builder = ragloaders.builder("crag/mock_kg", sys.argv[1], data_dir=sys.argv[2], cache_dir=sys.argv[3])
builder.download_and_prepare()
""")
FLOORS = {
    "sports_nba_play_by_play": dict(imports="import sqlite3", body="""
db = sqlite3.connect(os.path.join(sys.argv[2], "sports", "nba.sqlite"))
cursor = db.execute("SELECT * FROM play_by_play")
while cursor.fetchmany(1000):
    pass
"""),
    "movie_movies": dict(imports="import ijson", body="""
with open(os.path.join(sys.argv[2], "movie", "movie_db.json"), "rb") as f:
    for _ in ijson.kvitems(f, "", use_float=True):
        pass
"""),
    "finance_detailed_price": dict(imports="import pickle, sqlite3", body="""
db = sqlite3.connect(os.path.join(sys.argv[2], "finance", "finance_detailed_price.sqlite"))
cursor = db.execute('SELECT key, value FROM "unnamed" ORDER BY rowid')
while rows := cursor.fetchmany(1000):
    for key, value in rows:
        pickle.loads(value)
"""),
    "music_songs": dict(imports="import pickle", body="""
with open(os.path.join(sys.argv[2], "music", "song_dict_simplified.pickle"), "rb") as f:
    pickle.load(f)
"""),
}


def run(code: dict, *args: str) -> dict:
    script = PROBE.format(**code)
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": PYTHONPATH, "HF_HUB_OFFLINE": "1"})
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def make_nba(path: Path, size: int) -> int:
    """200,000 varied rows, then the table doubled inside sqlite (`INSERT ... SELECT`) until the file reaches `size`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE "play_by_play" ("game_id" TEXT, "eventnum" INTEGER, "eventmsgtype" INTEGER, '
                   '"period" INTEGER, "wctimestring" TEXT, "pctimestring" TEXT, "homedescription" TEXT, '
                   '"visitordescription" TEXT, "player1_id" TEXT, "player1_name" TEXT, "score" TEXT, "margin" REAL)')
        db.executemany("INSERT INTO play_by_play VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [
            (f"{22200000 + i // 400:010d}", i, rng.randint(1, 18), 1 + i % 4, "8:04 PM", "11:42",
             f"Tatum 25' 3PT Jump Shot ({rng.randint(0, 40)} PTS) (Brown {rng.randint(0, 9)} AST)",
             None if i % 3 else "MISS Curry 26' 3PT Jump Shot", str(1628369 + i % 500), "Jayson Tatum",
             f"{rng.randint(0, 130)} - {rng.randint(0, 130)}", rng.uniform(-30, 30)) for i in range(200_000)])
        db.commit()
        rows = 200_000
        while path.stat().st_size < size:
            grow = min(rows, max(1, int(rows * (size - path.stat().st_size) / path.stat().st_size)) + 1)
            db.execute(f"INSERT INTO play_by_play SELECT * FROM play_by_play LIMIT {grow}")
            db.commit()
            rows += grow
    db.close()
    return rows


def make_movies(path: Path, size: int) -> int:
    """Records of the generated fixtures' shape (cast and crew lengthened), each under its own key."""
    from mock_kg_generated import movie_record

    path.parent.mkdir(parents=True, exist_ok=True)
    variants = []
    for i in range(50):
        record = movie_record(i)
        record["cast"], record["crew"] = record["cast"] * 12, record["crew"] * 20
        variants.append(json.dumps(record))
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("{")
        while f.tell() < size:
            f.write(("," if count else "") + f'"rings {count}": ' + variants[count % len(variants)])
            count += 1
        f.write("}")
    return count


def make_detailed_prices(path: Path, size: int) -> int:
    """SqliteDict rows of 1,950 one-minute prices each (five days), 20 distinct pickles under distinct tickers."""
    from mock_kg_generated import price_history, sqlitedict_file

    rng = random.Random(0)
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlitedict_file(path, [])
    blobs = [pickle.dumps(price_history(rng, 1950, True), pickle.HIGHEST_PROTOCOL) for _ in range(20)]
    tickers = max(1, size // len(blobs[0]))
    with sqlite3.connect(path) as db:
        db.executemany('INSERT INTO "unnamed" (key, value) VALUES (?, ?)',
                       ((f"T{i:06d}", blobs[i % len(blobs)]) for i in range(tickers)))
    db.close()
    return tickers


def make_songs(path: Path, size: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    songs = {}
    per_song = 53  # bytes of pickle per item, measured
    for i in range(size // per_song):
        songs[f"Song title number {i}"] = {"author": f"Author {i % 50_000}", "country": "XW", "date": "2023-09-21"}
    with open(path, "wb") as f:
        pickle.dump(songs, f, protocol=4)
    return len(songs)


SOURCES = {
    "sports_nba_play_by_play": ("sports/nba.sqlite", make_nba),
    "movie_movies": ("movie/movie_db.json", make_movies),
    "finance_detailed_price": ("finance/finance_detailed_price.sqlite", make_detailed_prices),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 2], help="source sizes in GB")
    parser.add_argument("--pickle-mb", type=int, default=235, help="size of the pickled dict (0: skip)")
    parser.add_argument("--work", default=None, help="folder for the generated files (deleted at the end)")
    parser.add_argument("--only", nargs="*", help="configs to run")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="mock-kg-bench-"))
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print("| source | size | entries | floor s | build s | × floor | floor peak MB | build peak MB |")
    print("|---|---|---|---|---|---|---|---|")
    for config, (relpath, make) in SOURCES.items():
        if args.only and config not in args.only:
            continue
        for size in args.sizes:
            root = work / f"{config}-{size}" / "cragkg"
            entries = make(root / relpath, int(size * GB))
            floor = run(FLOORS[config], config, str(root), str(work / "cache"))
            build = run(BUILD, config, str(root), str(work / "cache"))
            real = (root / relpath).stat().st_size
            print(f"| {relpath} | {real / GB:.2f} GB | {entries:,} | {floor['seconds']:.1f} | {build['seconds']:.1f} | "
                  f"{build['seconds'] / floor['seconds']:.2f} | {floor['peak_mb']:.0f} | {build['peak_mb']:.0f} |",
                  flush=True)
            subprocess.run(["rm", "-rf", str(root.parent), str(work / "cache")], check=True)
    if args.pickle_mb and (not args.only or "music_songs" in args.only):
        root = work / "pickle" / "cragkg"
        entries = make_songs(root / "music" / "song_dict_simplified.pickle", args.pickle_mb << 20)
        floor = run(FLOORS["music_songs"], "music_songs", str(root), str(work / "cache"))
        build = run(BUILD, "music_songs", str(root), str(work / "cache"))
        real = (root / "music" / "song_dict_simplified.pickle").stat().st_size
        print(f"| music/song_dict_simplified.pickle (not bounded) | {real / (1 << 20):.0f} MB | {entries:,} | "
              f"{floor['seconds']:.1f} | {build['seconds']:.1f} | {build['seconds'] / floor['seconds']:.2f} | "
              f"{floor['peak_mb']:.0f} | {build['peak_mb']:.0f} |", flush=True)
    subprocess.run(["rm", "-rf", str(work)], check=True)


if __name__ == "__main__":
    main()
