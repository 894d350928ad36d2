"""CRAG's mock API: ragloaders' server against the official one on the same generated KG (run by hand, never in
the tests).

    PYTHONPATH=loaders:tests python bench/bench_mock_api.py --scale 8 --work /tmp/mock-api-bench

Writes a generated `cragkg` folder (tests/mock_kg_generated's shapes; `--scale 1` is about 130 MB of source files,
8 about 1 GB), builds it with `ragloaders build crag/mock_kg`, then in one run, one server at a time, each in its
own process on 127.0.0.1:
- the official server (`../shared/reference/crag_mock_api/server.py` under uvicorn, KG_BASE_DIRECTORY set);
- `ragloaders serve crag/mock_kg --from BUILD`, first with an empty cache (it converts the Parquet to memory-mapped
  Arrow files and builds its indexes, each on the first call that reads it), then again (the start a user sees
  every later time).
Measured: start-up to the first answer (from process start), then the first call of each endpoint and the time
from process start until every endpoint has answered once, peak RSS (the process's VmHWM, read before it is
stopped, so after the whole call mix), and p50 / p99 latency per endpoint over one fixed mix of calls (the same
bodies, in the same order, for both; one keep-alive HTTP client). Prints one JSON report.
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import pickle
import random
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
REFERENCE = HERE.parent.parent / "shared" / "reference" / "crag_mock_api"
PYTHONPATH = os.pathsep.join([str(HERE.parent / "loaders"), str(HERE.parent / "tests")])


def words(rng: random.Random, vocabulary: list[str], count: int) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(count))


def write_kg(root: Path, scale: int, seed: int = 0) -> dict:
    """The generated cragkg folder at `scale`; returns what it holds (entries per file, bytes)."""
    import pandas as pd
    from mock_kg_generated import (
        COMPANY_CUT,
        grammy_frame,
        movie_record,
        nba,
        price_history,
        soccer_frame,
        sqlitedict_file,
    )

    rng = random.Random(seed)
    vocabulary = [f"{rng.randrange(36 ** 5):x}"[:rng.randint(3, 8)] for _ in range(20_000)]
    counts = {}
    finance = root / "finance"
    finance.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(COMPANY_CUT, finance / "company_name.dict")
    tickers = [f"T{i:05d}" for i in range(400 * scale)]
    sqlitedict_file(finance / "finance_price.sqlite", [(t, price_history(rng, 250)) for t in tickers])
    sqlitedict_file(finance / "finance_detailed_price.sqlite", [(t, price_history(rng, 1000, True)) for t in tickers])
    sqlitedict_file(finance / "finance_dividend.sqlite", [(t, {"2020-03-19 00:00:00 EST": 0.2}) for t in tickers])
    sqlitedict_file(finance / "finance_marketcap.sqlite", [(t, rng.uniform(1e6, 1e12)) for t in tickers])
    sqlitedict_file(finance / "finance_info.sqlite", [(t, {"forwardEps": 1.5, "forwardPE": 20.25, "sector": "x"})
                                                      for t in tickers])
    counts["tickers"] = len(tickers)
    movie = root / "movie"
    movie.mkdir(parents=True, exist_ok=True)
    movies = {}
    for i in range(10_000 * scale):
        record = movie_record(i)
        record["cast"] = record["cast"] * 10
        movies[words(rng, vocabulary, rng.randint(1, 4))] = record
    persons = {words(rng, vocabulary, 2): {"acted_movies": [i, i + 1], "id": i, "birthday": "1970-01-01",
                                           "name": f"P {i}"} for i in range(20_000 * scale)}
    years = {str(y): {"movie_list": list(range(y, y + 500)), "oscar_awards": []} for y in range(1990, 2022)}
    for name, obj in (("movie_db.json", movies), ("person_db.json", persons), ("year_db.json", years)):
        (movie / name).write_text(json.dumps(obj), encoding="utf-8")
    counts.update(movies=len(movies), persons=len(persons))
    music = root / "music"
    music.mkdir(parents=True, exist_ok=True)
    artists = {words(rng, vocabulary, rng.randint(1, 3)): {"country": "US", "birth_date": "1980-01-01",
                                                           "end_date": None, "members": ["a", "b"]}
               for _ in range(50_000 * scale)}
    songs = {words(rng, vocabulary, rng.randint(1, 4)): {"author": "x", "country": "US", "date": "2001-01-01"}
             for _ in range(80_000 * scale)}
    artist_names, song_names = list(artists), list(songs)
    works = {name: song_names[i:i + 5] for i, name in enumerate(artist_names)}
    ranks = {str(r): [{"Date": f"2024-{1 + w // 4:02d}-{1 + w % 4 * 7:02d}", "Song": rng.choice(song_names),
                       "Artist": rng.choice(artist_names)} for w in range(40)] for r in range(1, 101)}
    hot = {name: {"2024-02-28": ["2024-02-28", name, "x", "1", "-", "1", "2"]} for name in song_names[:20_000]}
    for name, obj in (("artist_dict_simplified.pickle", artists), ("song_dict_simplified.pickle", songs),
                      ("artist_work_dict.pickle", works), ("rank_dict_hot100.pickle", ranks),
                      ("song_dict_hot100.pickle", hot)):
        (music / name).write_bytes(pickle.dumps(obj))
    grammy = pd.concat([grammy_frame()] * 200, ignore_index=True)
    (music / "grammy_df.pickle").write_bytes(pickle.dumps(grammy))
    counts.update(artists=len(artists), songs=len(songs))
    open_folder = root / "open"
    open_folder.mkdir(parents=True, exist_ok=True)
    entities = []
    for part in range(2):
        lines = []
        for i in range(10_000 * scale):
            entity = words(rng, vocabulary, rng.randint(1, 3)).title() + f" {part}.{i}"
            entities.append(entity)
            attributes = {"summary_text": words(rng, vocabulary, 150), "summary_structured": {"name": entity},
                          "raw_mediawiki": words(rng, vocabulary, 50)}
            lines.append(json.dumps([entity, attributes]))
        with bz2.open(open_folder / f"kg.{part}.jsonl.bz2", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    counts["entities"] = len(entities)
    sports = root / "sports"
    sports.mkdir(parents=True, exist_ok=True)
    soccer_frame(2_000).to_pickle(sports / "soccer_team_match_stats.pkl")
    nba(sports / "nba.sqlite", games=2_000 * scale, plays_per_game=200)
    counts["nba_games"] = 2_000 * scale
    counts["bytes"] = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {"counts": counts, "samples": {"movies": list(movies)[:50], "persons": list(persons)[:50],
                                          "artists": artist_names[:50], "songs": song_names[:50],
                                          "entities": entities[:50], "tickers": tickers[:50]}}


def call_mix(samples: dict, rng: random.Random, per_endpoint: int) -> list[tuple[str, str, dict]]:
    """(kind, path, body): the same list for both servers. kind: lookup or search."""
    mix: list[tuple[str, str, dict]] = []

    def add(kind: str, path: str, bodies: list[dict], count: int = per_endpoint) -> None:
        mix.extend((kind, path, bodies[i % len(bodies)]) for i in range(count))

    def first_words(names: list[str]) -> list[dict]:
        return [{"query": name.split()[0]} for name in names] + [{"query": name} for name in names]

    add("search", "/open/search_entity_by_name", first_words(samples["entities"]))
    add("search", "/movie/get_movie_info", first_words(samples["movies"]))
    add("search", "/movie/get_person_info", first_words(samples["persons"]))
    add("search", "/finance/get_company_name", [{"query": q} for q in ("apple", "inc", "acquisition corp", "bank")])
    add("search", "/music/search_artist_entity_by_name", first_words(samples["artists"]))
    add("search", "/music/search_song_entity_by_name", first_words(samples["songs"]))
    add("lookup", "/open/get_entity", [{"query": e} for e in samples["entities"]] + [{"query": "missing"}])
    add("lookup", "/movie/get_movie_info_by_id", [{"query": 14564 + i} for i in range(0, 10_000, 200)])
    add("lookup", "/movie/get_year_info", [{"query": str(y)} for y in range(1990, 2022)])
    for endpoint in ("get_price_history", "get_detailed_price_history", "get_market_capitalization", "get_info"):
        add("lookup", f"/finance/{endpoint}", [{"query": t} for t in samples["tickers"]])
    add("lookup", "/finance/get_ticker_by_name", [{"query": "Apple Inc. Common Stock"}, {"query": "nope"}])
    for endpoint in ("get_artist_birth_date", "get_members", "get_artist_all_works"):
        add("lookup", f"/music/{endpoint}", [{"query": a} for a in samples["artists"]])
    add("lookup", "/music/get_song_author", [{"query": s} for s in samples["songs"]])
    add("lookup", "/music/get_billboard_rank_date", [{"rank": r, "date": None} for r in range(1, 101)])
    add("lookup", "/music/grammy_get_award_count_by_artist", [{"query": q} for q in ("Adele", "Billie", "x")])
    add("lookup", "/sports/soccer/get_games_on_date", [{"date": "2024-03-0" + str(d), "team_name": None}
                                                       for d in range(1, 10)])
    add("lookup", "/sports/nba/get_games_on_date", [{"date": f"2022-10-{11 + d}", "team_name": "Chicago Bulls"}
                                                    for d in range(20)], max(4, per_endpoint // 4))
    add("lookup", "/sports/nba/get_play_by_play_data_by_game_ids",
        [{"game_ids": [f"{12200049 + g:010d}"]} for g in range(0, 2000, 97)], max(4, per_endpoint // 4))
    rng.shuffle(mix)
    return mix


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def run_server(command: list[str], env: dict, cwd: str | None, mix: list, label: str, calls: int | None = None) -> dict:
    """Start-up to the first answer, then the first call of each endpoint, then the first `calls` of the mix
    (all by default) timed per endpoint; peak RSS after all of them."""
    import requests

    port = free_port()
    command = [part.replace("{port}", str(port)) for part in command]
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    session = requests.Session()
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{label} exited: {process.stderr.read().decode()[-2000:]}")
            try:
                if session.post(url + "/finance/get_ticker_by_name", json={"query": "x"}, timeout=5).ok:
                    break
            except requests.ConnectionError:
                time.sleep(0.05)
        startup = time.perf_counter() - start
        first_calls = {}
        for _, path, body in mix:  # one call of each endpoint, in the mix's order: what a first call of it costs
            if path not in first_calls:
                began = time.perf_counter()
                session.post(url + path, json=body, timeout=600)
                first_calls[path] = 1000 * (time.perf_counter() - began)
        every_endpoint = time.perf_counter() - start
        latencies: dict[str, list[float]] = {}
        statuses: dict[str, int] = {}
        kinds = {}
        for kind, path, body in mix[:calls]:
            began = time.perf_counter()
            response = session.post(url + path, json=body, timeout=600)
            latencies.setdefault(path, []).append(time.perf_counter() - began)
            statuses[path] = max(statuses.get(path, 0), response.status_code)
            kinds[path] = kind
        peak = peak_mb(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=60)
    per_endpoint = {path: {"kind": kinds[path], "p50_ms": 1000 * statistics.median(values),
                           "p99_ms": 1000 * sorted(values)[min(len(values) - 1, int(0.99 * len(values)))],
                           "calls": len(values), "worst_status": statuses[path]}
                    for path, values in latencies.items()}
    return {"startup_s": startup, "every_endpoint_answered_s": every_endpoint, "first_call_ms": first_calls,
            "peak_rss_mb": peak, "endpoints": per_endpoint}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=8)
    parser.add_argument("--work", default="/tmp/mock-api-bench")
    parser.add_argument("--calls", type=int, default=40, help="calls per endpoint (NBA: a quarter)")
    args = parser.parse_args()
    work = Path(args.work)
    kg, built = work / f"cragkg-{args.scale}", work / f"built-{args.scale}"
    facts_path = work / f"facts-{args.scale}.json"
    if not facts_path.exists():
        shutil.rmtree(kg, ignore_errors=True)
        began = time.perf_counter()
        facts = write_kg(kg, args.scale)
        facts["generate_s"] = time.perf_counter() - began
        facts_path.write_text(json.dumps(facts))
    facts = json.loads(facts_path.read_text())
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    if not (built / "README.md").exists():
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ragloaders", "build", "crag/mock_kg", "--data-dir", str(kg), "--out",
                        str(built), "--cache-dir", str(work / f"datasets-cache-{args.scale}")], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        facts["build_s"] = time.perf_counter() - began
        facts_path.write_text(json.dumps(facts))
    mix = call_mix(facts["samples"], random.Random(1), args.calls)
    official = run_server([sys.executable, "-m", "uvicorn", "server:app", "--port", "{port}", "--log-level",
                           "warning"], {**env, "KG_BASE_DIRECTORY": str(kg)}, str(REFERENCE), mix, "official")
    cache = work / f"mock-api-cache-{args.scale}"
    shutil.rmtree(cache, ignore_errors=True)
    ours_command = [sys.executable, "-m", "ragloaders", "serve", "crag/mock_kg", "--from", str(built), "--port",
                    "{port}", "--cache-dir", str(cache)]
    ours_cold = run_server(ours_command, env, None, mix, "ragloaders (empty cache)", calls=0)
    ours = run_server(ours_command, env, None, mix, "ragloaders")
    report = {"scale": args.scale, "source_bytes": facts["counts"]["bytes"], "counts": facts["counts"],
              "build_s": facts.get("build_s"), "official": official, "ours_first_start": ours_cold, "ours": ours}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
