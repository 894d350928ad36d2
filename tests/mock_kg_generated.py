"""Generated CRAG mock-KG files (`mock_api/cragkg/`), shaped exactly as the mock API server reads them.

Only `finance/company_name.dict` has a real sample (tests/data); every other file is LFS-only and
made up here, labelled as generated, in the form `mock_api/cragkg/*.py` reads it:

- finance/*.sqlite: SqliteDict files, i.e. sqlite table "unnamed" (key TEXT PRIMARY KEY, value BLOB),
  each value `pickle.dumps(obj, HIGHEST_PROTOCOL)` as sqlitedict writes it, written with sqlite3;
- movie/*.json: one JSON object each (`json.dump`), keyed by normalised name or by year;
- music/*.pickle: `pickle.dump` of dicts, and of a pandas DataFrame for grammy_df;
- open/kg.{0,1}.jsonl.bz2: one `[entity, attributes]` JSON array per line;
- sports/soccer_team_match_stats.pkl: `DataFrame.to_pickle` with a MultiIndex (league, season, team,
  game) and the columns of the server notebook's output; sports/nba.sqlite: a plain sqlite file
  with every declared table, `game` and `play_by_play` with the notebook's columns.

`write_cragkg` returns the number of source entries of each config (counted from what it wrote).
"""

from __future__ import annotations

import bz2
import datetime
import json
import pickle
import random
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).parent / "data"
COMPANY_CUT = DATA / "crag" / "mock_api" / "cragkg" / "finance" / "company_name.dict"
ODD_KEYS = ("00123", "BRK.B", "Émile ‘quoted’", "tab\there", "line\u2028sep", "emoji 🙂", "back\\slash")
NBA_TABLES = (
    "common_player_info", "draft_combine_stats", "draft_history", "game", "game_info", "game_summary",
    "inactive_players", "line_score", "officials", "other_stats", "play_by_play", "player", "team", "team_details",
    "team_history", "team_info_common",
)
GAME_COLUMNS = [
    ("season_id", "TEXT"), ("team_id_home", "TEXT"), ("team_abbreviation_home", "TEXT"), ("team_name_home", "TEXT"),
    ("game_id", "TEXT"), ("game_date", "TIMESTAMP"), ("matchup_home", "TEXT"), ("wl_home", "TEXT"),
    ("min", "INTEGER"), ("fgm_home", "REAL"), ("pts_home", "REAL"), ("plus_minus_home", "INTEGER"),
    ("team_name_away", "TEXT"), ("pts_away", "REAL"), ("season_type", "TEXT"),
]
PLAY_COLUMNS = [
    ("game_id", "TEXT"), ("eventnum", "INTEGER"), ("eventmsgtype", "INTEGER"), ("period", "INTEGER"),
    ("wctimestring", "TEXT"), ("pctimestring", "TEXT"), ("homedescription", "TEXT"), ("player1_id", "TEXT"),
    ("score", None),
]


def sqlitedict_file(path: Path, items: list[tuple[str, object]]) -> None:
    """A SqliteDict file as sqlitedict 2.1 writes it (its default table and pickle protocol); an existing one gets
    `items` added at its end, as sqlitedict's `__setitem__` of new keys adds them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE IF NOT EXISTS "unnamed" (key TEXT PRIMARY KEY, value BLOB)')
        db.executemany('REPLACE INTO "unnamed" (key, value) VALUES (?, ?)',
                       [(key, sqlite3.Binary(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))) for key, value in items])
    db.close()


def price_history(rng: random.Random, days: int, minutes: bool = False) -> dict:
    start = datetime.datetime(2024, 2, 22, 9, 30) if minutes else datetime.datetime(2023, 2, 28)
    step = datetime.timedelta(minutes=1) if minutes else datetime.timedelta(days=1)
    rows = {}
    for i in range(days):
        when = (start + i * step).strftime("%Y-%m-%d %H:%M:%S EST")
        low = rng.uniform(10, 500)
        rows[when] = {"Open": low * 1.01, "High": low * 1.02, "Low": low, "Close": np.float64(low * 1.015),
                      "Volume": rng.randint(0, 50_000_000)}
    return rows


def finance(root: Path, rng: random.Random, tickers: list[str]) -> dict[str, int]:
    folder = root / "finance"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(COMPANY_CUT, folder / "company_name.dict")
    sqlitedict_file(folder / "finance_price.sqlite", [(t, price_history(rng, 5)) for t in tickers])
    sqlitedict_file(folder / "finance_detailed_price.sqlite", [(t, price_history(rng, 12, True)) for t in tickers])
    dividends = [(t, {"2019-12-19 00:00:00 EST": 0.058, "2020-03-19 00:00:00 EST": 0.2} if i % 2 else {})
                 for i, t in enumerate(tickers)]
    sqlitedict_file(folder / "finance_dividend.sqlite", dividends)
    caps = [(t, rng.uniform(1e6, 1e12)) for t in tickers] + [("NOCAP", float("nan")), ("INTCAP", 12345)]
    sqlitedict_file(folder / "finance_marketcap.sqlite", caps)
    info = [(t, {"address1": "1 Meta Way", "zip": "94025", "fullTimeEmployees": 67317, "forwardEps": 22.95,
                 "forwardPE": np.float64(21.199127), "companyOfficers": [{"name": "Mr. X", "age": 39, "maxAge": 1}],
                 "nothing": None, "missing": float("nan")}) for t in tickers]
    sqlitedict_file(folder / "finance_info.sqlite", info)
    with open(COMPANY_CUT, encoding="utf-8") as f:
        companies = sum(1 for _ in f) - 1
    return {"finance_company": companies, "finance_price": len(tickers), "finance_detailed_price": len(tickers),
            "finance_dividend": len(tickers), "finance_marketcap": len(caps), "finance_info": len(tickers)}


OSCAR = {"year_ceremony": 1971, "ceremony": 43, "category": "ACTRESS", "name": "Glenda Jackson",
         "film": "Women in Love", "winner": True}


def movie_record(i: int) -> dict:
    record = {"budget": 25_000_000 + i, "genres": [{"id": 27, "name": "Horror"}], "id": 14564 + i,
              "original_language": "en", "original_title": f"Rings {i}", "release_date": "2017-02-01",
              "revenue": 83080890, "title": f"Rings {i}", "rating": 5.8 if i % 3 else 6,
              "cast": [{"gender": 1, "id": 1464589, "name": "Matilda Lutz", "character": "Julia", "order": 0}],
              "crew": [{"name": "Debra Zane", "job": "Casting", "id": 495}]}
    if i % 4 == 0:
        record["oscar_awards"] = [OSCAR]
        record["length"] = 102  # a field the server's docstring does not list: kept in `other`
    return record


def movie(root: Path, count: int) -> dict[str, int]:
    folder = root / "movie"
    folder.mkdir(parents=True, exist_ok=True)
    movies = {f"rings {i}": movie_record(i) for i in range(count)}
    movies["lock stock and two smoking barrels"] = {**movie_record(100), "id": 100}
    persons = {f"person {i} {key}": {"acted_movies": [137113, i], "id": 2949449 + i, "birthday": None,
                                      "name": f"Person {i}"} for i, key in enumerate(ODD_KEYS)}
    persons["glenda jackson"] = {"acted_movies": [653364], "directed_movies": [], "id": 115573,
                                 "oscar_awards": [OSCAR], "birthday": "1936-05-09", "name": "Glenda Jackson"}
    years = {str(year): {"movie_list": [872243, 1080889 + year], "oscar_awards": [OSCAR] if year % 2 else []}
             for year in range(1990, 2022)}
    for name, obj in (("movie_db.json", movies), ("person_db.json", persons), ("year_db.json", years)):
        with open(folder / name, "w", encoding="utf-8") as f:
            json.dump(obj, f)
    return {"movie_movies": len(movies), "movie_persons": len(persons), "movie_years": len(years)}


def grammy_frame() -> pd.DataFrame:
    """CRAG's Grammy frame in small: `artist` and `workers` are object columns holding both None and NaN, as the
    frame pickled by pandas 1/2 does (pandas 3's string dtype would turn None into NaN)."""
    return pd.DataFrame({
        "year": [2019, 2019, 1998, 1998, 2016],
        "title": ["62nd Annual GRAMMY Awards (2019)"] * 2 + ["40th Annual GRAMMY Awards (1997)"] * 2 + ["58th"],
        "category": ["Record Of The Year", "Best New Artist", "Best New Artist", "Song Of The Year",
                     "Album Of The Year"],
        "nominee": ["Bad Guy", "Billie Eilish", "Lauryn Hill", "My Heart Will Go On", "25"],
        "artist": pd.Series(["Billie Eilish", np.nan, None, "Celine Dion", "Adele"], dtype=object),
        "workers": pd.Series(["Finneas O'Connell, producer", np.nan, None, "James Horner", "Greg Kurstin"],
                             dtype=object),
        "winner": [True, True, True, True, True],
    })


def music(root: Path, count: int) -> dict[str, int]:
    folder = root / "music"
    folder.mkdir(parents=True, exist_ok=True)
    artists = {f"Artist {i}": {"country": "NO" if i % 2 else None, "birth_date": "1987", "end_date": None,
                               "members": [f"m{i}", "Adam Levine", "Adam Levine"]} for i in range(count)}
    artists["Maroon 5"] = {"country": "US", "birth_date": "1994", "end_date": None,
                           "members": {"James Valentine", "PJ Morton", "Adam Levine"}, "type": "Group"}
    for key in ODD_KEYS:
        artists[key] = {"country": np.str_("XW"), "birth_date": datetime.date(1990, 1, 2), "end_date": np.nan,
                        "members": np.array(["a", "b"])}
    songs = {f"Song {i}": {"author": f"Author {i}", "country": "XW", "date": "2023-09-21"} for i in range(count)}
    works = {f"Artist {i}": [f"Work {i}.{j}" for j in range(i % 5)] for i in range(count)}
    ranks = {str(rank): [{"Date": "2024-02-28", "Song": f"Song {rank}", "Artist": "Beyonce", "Peak Position": "1"},
                         {"Date": "2024-02-21", "Song": f"Song {rank + 1}", "Artist": "X"}] for rank in range(1, 101)}
    hot = {f"Song {i}": {"2024-02-28": ["2024-02-28", f"Song {i}", "Beyonce", "1", "-", "1", "2"],
                         "2024-02-21": ("2024-02-21", f"Song {i}", "Beyonce", "5", "7", "5", "-")}
           for i in range(count)}
    for name, obj in (("artist_dict_simplified.pickle", artists), ("song_dict_simplified.pickle", songs),
                      ("artist_work_dict.pickle", works), ("rank_dict_hot100.pickle", ranks),
                      ("song_dict_hot100.pickle", hot)):
        with open(folder / name, "wb") as f:
            pickle.dump(obj, f)
    with open(folder / "grammy_df.pickle", "wb") as f:
        pickle.dump(grammy_frame(), f)
    return {"music_artists": len(artists), "music_songs": len(songs), "music_artist_works": len(works),
            "music_billboard_ranks": len(ranks), "music_billboard_songs": len(hot), "music_grammy": 5}


def open_kg(root: Path, count: int) -> dict[str, int]:
    folder = root / "open"
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for part in range(2):
        lines = []
        for i in range(count):
            entity = f"Entity {part}.{i}" if i else ("Florida City, Florida" if part == 0 else ODD_KEYS[2])
            attributes = {"summary_text": f"[generated, not CRAG data] {entity} is a city.\nSecond line.",
                          "summary_structured": {"name": entity, "official_name": f"City of {entity}",
                                                 "nested": {"a": [1, 2.5, None]}},
                          "raw_mediawiki": "{{Infobox settlement\n| name = " + entity + "\n}}"}
            lines.append(json.dumps([entity, attributes], ensure_ascii=part == 0))
            total += 1
        with bz2.open(folder / f"kg.{part}.jsonl.bz2", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return {"open_entities": total}


def soccer_frame(count: int) -> pd.DataFrame:
    rows, index = [], []
    for i in range(count):
        team = "Everton" if i == 0 else f"Team {i}"
        game = f"2024-03-{1 + i % 28:02d} Manchester Utd-{team}"
        index.append(("ENG-Premier League" if i % 7 else None, "2324", team, game))
        rows.append({"date": pd.Timestamp(f"2024-03-{1 + i % 28:02d}"), "time": "12:30:00",
                     "round": f"Matchweek {i}", "day": "Sat", "venue": "Away" if i % 2 else "Home",
                     "result": "L", "GF": ["0", 1, 2.0][i % 3], "GA": 2 if i % 2 else "2",
                     "opponent": "Manchester Utd", "xG": 1.6 if i % 5 else np.nan, "xGA": 2.7, "Poss": 49 + i % 3,
                     "Attendance": 73601.0 if i % 4 else np.nan, "Captain": "James Tarkowski",
                     "Formation": "4-4-1-1", "Referee": "Simon Hooper", "match_report": f"/en/matches/{i:08x}",
                     "Notes": None})
    frame = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["league", "season", "team", "game"]))
    frame["GF"] = frame["GF"].astype(object)
    frame["GA"] = frame["GA"].astype(object)
    return frame


def nba(path: Path, games: int, plays_per_game: int, empty: tuple[str, ...] = ("team_info_common",)) -> dict[str, int]:
    path.parent.mkdir(parents=True, exist_ok=True)
    counts = {}
    with sqlite3.connect(path) as db:
        for table in NBA_TABLES:
            if table == "game":
                columns = GAME_COLUMNS
            elif table == "play_by_play":
                columns = PLAY_COLUMNS
            else:
                columns = [("id", "TEXT"), ("value", "REAL"), ("note", None)]
            definition = ", ".join(f'"{name}" {kind or ""}'.rstrip() for name, kind in columns)
            db.execute(f'CREATE TABLE "{table}" ({definition})')
            if table == "game":
                rows = [("12022", "1610612741", "CHI", "Chicago Bulls", f"{12200049 + g:010d}",
                         f"2022-10-{11 + g % 20} 00:00:00", "CHI vs. MIL", "W" if g % 2 else "L", 240,
                         50.0 if g % 3 else None, 127.0, 23 if g % 2 else -23, "Milwaukee Bucks", 104.0,
                         "Pre Season") for g in range(games)]
            elif table == "play_by_play":
                rows = [(f"{12200049 + g:010d}", e, 12, 1 + e % 4, "8:04 PM", "12:00",
                         None if e % 3 else f"Jump Ball {e} ‘quoted’ 🙂", str(203500 + e),
                         [None, 5, "5 - 7", 2.5][e % 4])
                        for g in range(games) for e in range(plays_per_game)]
            elif table in empty:
                rows = []
            else:
                rows = [(f"{table}-{i}", [1, 2.5][i % 2], ["a", 1, None][i % 3]) for i in range(3)]
            if rows:
                db.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(rows[0]))})', rows)
            counts[f"sports_nba_{table}"] = len(rows)
    db.close()
    return counts


def sports(root: Path, count: int, nba_games: int, plays: int, empty: tuple[str, ...]) -> dict[str, int]:
    folder = root / "sports"
    folder.mkdir(parents=True, exist_ok=True)
    soccer_frame(count).to_pickle(folder / "soccer_team_match_stats.pkl")
    return {"sports_soccer_team_matches": count, **nba(folder / "nba.sqlite", nba_games, plays, empty)}


def write_cragkg(root: Path, *, count: int = 20, seed: int = 0,
                 empty_nba_tables: tuple[str, ...] = ("team_info_common",)) -> dict[str, int]:
    """Write every file of `cragkg/` under `root`; return config -> number of source entries. The nba.sqlite
    tables named in `empty_nba_tables` are made with their columns and no row (the card leaves such a table out)."""
    rng = random.Random(seed)
    tickers = ["META", "AAPL", *ODD_KEYS, *(f"T{i:04d}" for i in range(count))]
    counts: dict[str, int] = {}
    counts.update(finance(root, rng, tickers))
    counts.update(movie(root, count))
    counts.update(music(root, count))
    counts.update(open_kg(root, count))
    counts.update(sports(root, count, nba_games=count, plays=7, empty=empty_nba_tables))
    return counts
