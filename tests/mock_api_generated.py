"""A generated `cragkg` folder for the mock API's parity tests, and the calls to compare on it.

tests/mock_kg_generated.write_cragkg's files (120 entries per table: the music search of the official server
needs ~80 distinct names before any term passes its idf > 4 rule), plus entries made to hit the searches' edge
cases: names that normalise alike, names that tie, a name repeated across the two open KG files, keys that differ
only in case or spacing, a Grammy row with no nominee, a band without members.
"""

from __future__ import annotations

import bz2
import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
from mock_kg_generated import ODD_KEYS, grammy_frame, sqlitedict_file, write_cragkg

COUNT = 120
SAME_NAMES = ("Foo_Bar", "foo bar!", "FOO BAR", "Foo-Bar")
TIES = ("Twin Peak", "Peak Twin", "Twin  Peak")


def _extend_open(root: Path) -> None:
    for part, extra in ((0, [*SAME_NAMES[:2], *TIES, "Repeated Entity"]),
                        (1, [*SAME_NAMES[2:], "Repeated Entity", "entity", "ENTITY 0.1"])):
        path = root / "open" / f"kg.{part}.jsonl.bz2"
        with bz2.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
        for name in extra:
            lines.append(json.dumps([name, {"summary_text": f"{name} (part {part})", "summary_structured": {"p": part},
                                            "raw_mediawiki": ""}]))
        with bz2.open(path, "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


ODD_OSCAR = {"winner": False, "film": None, "name": "Zoë Ünïcødé", "category": "ACTOR", "ceremony": 70,
             "year_ceremony": 1998}
"""An Oscar award with its keys in reverse order and an explicit null."""
ODD_MOVIES = {
    "odd order": {"crew": [{"id": 7, "job": "Director", "name": "Zoë"}], "title": "Odd Order", "rating": 7,
                  "id": 990001, "cast": [{"order": 0, "character": None, "name": "Ünïcødé 🙂", "id": 5, "gender": 2}],
                  "budget": None, "genres": [{"name": "Drama", "id": 18}], "release_date": "2001-01-01", "revenue": 0,
                  "original_language": "fr", "original_title": "L’ordre étrange", "oscar_awards": [ODD_OSCAR]},
    "null fields": {"title": None, "id": 990002, "rating": 7.0, "release_date": None, "genres": None, "crew": [],
                    "cast": [{"name": "A", "id": 1}, {"id": 2, "name": "B", "character": "", "gender": None,
                                                       "order": 1}]},
    "absent fields": {"id": 990003},
    "extra fields": {"zeta": None, "title": "Extra", "id": 990004, "rating": -0.0, "length": 1.0, "revenue": 2**62,
                     "tags": [{"k": [1, 2.5, None, {"z": 1, "a": 2}], "": "empty key"}], "alpha": True},
    "amélie 🙂 ünïcødé": {"title": "Amélie é 🙂 😀 \u2028", "id": 990005, "rating": 1e-7,
                          "budget": 12345678901234},
    "no id": {"title": "No Id", "rating": 5},
}
"""Movie records whose answers show what typed columns lose: keys out of the usual order (nested ones too), a key
written null beside one absent, an integer in a float field (`rating` 7 and 7.0), undeclared fields, text beyond
ASCII (raw in movie_db.json, which is written with ensure_ascii=False)."""
ODD_PERSONS = {
    "odd person": {"name": "Odd Person", "birthday": None, "id": 990010, "directed_movies": None, "acted_movies": [],
                   "oscar_awards": [ODD_OSCAR, {"year_ceremony": 1999}]},
    "zoë 🙂 person": {"oscar_awards": None, "name": "Zoë 🙂 \\ud800 is text", "id": 990011, "height": 1.8},
    "nobody": {},
}
"""Person records likewise; the `\\ud800` text sends person_db.json to the exact (Python) JSON parser."""
ODD_YEARS = {"1995": {"oscar_awards": None, "movie_list": []},
             "1996": {"movie_list": [1], "extra": {"b": 1, "a": None}}, "2003": {}}


def extend_movie(root: Path) -> None:
    """Add to the movie files of `root`: keys that tie in the search, a repeated id, and the odd records above."""
    folder = root / "movie"
    movies = json.loads((folder / "movie_db.json").read_text(encoding="utf-8"))
    for i, key in enumerate(("twin peaks", "peaks twin", "Twin Peaks Upper", "the twin")):
        movies[key] = {"title": key.title(), "id": 900 + i, "release_date": "1990-04-08", "rating": 8.5 + i / 10,
                       "genres": [], "cast": [], "crew": []}
    movies["another rings 3"] = {"title": "Same id", "id": 14567, "rating": 1.5}
    movies.update(ODD_MOVIES)
    (folder / "movie_db.json").write_text(json.dumps(movies, ensure_ascii=False), encoding="utf-8")
    for name, odd in (("person_db.json", ODD_PERSONS), ("year_db.json", ODD_YEARS)):
        records = json.loads((folder / name).read_text(encoding="utf-8"))
        records.update(odd)
        (folder / name).write_text(json.dumps(records), encoding="utf-8")


def _extend_music(root: Path) -> None:
    folder = root / "music"
    artists = pickle.loads((folder / "artist_dict_simplified.pickle").read_bytes())
    for name in (*SAME_NAMES, *TIES):
        artists[name] = {"country": "", "birth_date": "", "end_date": "2001", "members": None}
    (folder / "artist_dict_simplified.pickle").write_bytes(pickle.dumps(artists))
    songs = pickle.loads((folder / "song_dict_simplified.pickle").read_bytes())
    for name in TIES:
        songs[name] = {"author": "", "country": None, "date": "1999"}
    (folder / "song_dict_simplified.pickle").write_bytes(pickle.dumps(songs))
    grammy = grammy_frame()
    extra = pd.DataFrame({"year": [1998, 1957, 2019], "title": ["x", "y", "z"],
                          "category": ["Best New Artist", "Best New Artist", "Song Of The Year"],
                          "nominee": pd.Series([np.nan, "Early One", None], dtype=object),
                          "artist": pd.Series(["Lauryn Hill", None, "Billie"], dtype=object),
                          "workers": pd.Series([None, np.nan, "Billie Eilish, songwriter"], dtype=object),
                          "winner": [True, False, True]})
    (folder / "grammy_df.pickle").write_bytes(pickle.dumps(pd.concat([grammy, extra], ignore_index=True)))


INTEGER_CAPS = {"CAP7": 7, "CAPBIG": 2**53 + 1, "CAPNEG": -3, "CAPZERO": 0, "CAPFLOAT7": 7.0}
"""Market caps stored as integers (yfinance's `marketCap` is one) beside a float that equals one: 7 vs 7.0, and an
integer no float64 holds exactly."""
INTEGER_DIVIDENDS = {"DIVINT": {"2021-01-04 00:00:00 EST": 3, "2021-04-01 00:00:00 EST": 0.25,
                                "2021-07-01 00:00:00 EST": 3.0}}
"""A dividend history mixing integers and floats, in the source's (unsorted) date order."""


def _extend_finance(root: Path) -> None:
    folder = root / "finance"
    sqlitedict_file(folder / "finance_marketcap.sqlite", list(INTEGER_CAPS.items()))
    sqlitedict_file(folder / "finance_dividend.sqlite", list(INTEGER_DIVIDENDS.items()))


def write_parity_kg(root: Path) -> None:
    """Write the parity tests' cragkg folder under `root`."""
    write_cragkg(root, count=COUNT)
    _extend_finance(root)
    _extend_open(root)
    extend_movie(root)
    _extend_music(root)


def calls() -> list[tuple[str, dict]]:
    """(path, request body) pairs covering every endpoint: hits, odd keys, misses, ties, empty and wrong bodies."""
    names = ["florida", "Florida City, Florida", "entity", "Entity 0.3", "entity 1 7", "foo bar", "FOO_BAR", "twin",
             "peak twin", "twin peaks", "rings", "rings 3", "rings 100", "glenda", "person 2", "apple", "inc",
             "Apple Inc.", "acquisition corp", "artist 3", "artist", "song 7", "song", "maroon 5", "maroon", "", " ",
             "!!!", "nothing matches this", "Émile", "emoji 🙂", *ODD_KEYS]
    tickers = ["META", "AAPL", "T0003", "NOCAP", "INTCAP", "nope", "", *ODD_KEYS, *INTEGER_CAPS, *INTEGER_DIVIDENDS]
    people = ["Artist 3", "Artist 4", "Maroon 5", "Foo_Bar", "Twin Peak", "Adele", "Billie Eilish", "Lauryn Hill",
              "Bad Guy", "25", "", "nan", "None", "e", "n", "on", "Non", "a",
              "Song 3", "Song 200", "Twin  Peak", "Early One", *ODD_KEYS]
    found: list[tuple[str, dict]] = [("/", {})]
    for path in ("/open/search_entity_by_name", "/finance/get_company_name", "/movie/get_person_info",
                 "/movie/get_movie_info", "/music/search_artist_entity_by_name", "/music/search_song_entity_by_name"):
        found += [(path, {"query": name}) for name in names]
    found += [("/open/get_entity", {"query": name}) for name in
              ["Florida City, Florida", "Entity 0.3", "Repeated Entity", "Foo_Bar", "florida", "", *ODD_KEYS]]
    for path in ("/finance/get_ticker_by_name",):
        found += [(path, {"query": name}) for name in ["Apple Inc. Common Stock", "apple", "", *ODD_KEYS]]
    for endpoint in ("get_price_history", "get_detailed_price_history", "get_dividends_history",
                     "get_market_capitalization", "get_eps", "get_pe_ratio", "get_info"):
        found += [(f"/finance/{endpoint}", {"query": ticker}) for ticker in tickers]
    found += [("/movie/get_year_info", {"query": year}) for year in
              ["1990", "1991", "2021", "1989", "2022", "abc", "", " 1995", "01995", "1_995"]]
    for endpoint in ("get_movie_info_by_id", "get_person_info_by_id"):
        found += [(f"/movie/{endpoint}", {"query": q}) for q in
                  [100, 14564, 14567, 115573, 2949449, 900, "100", 1.0, -1, 10**20, "x", 1.5, None, [1],
                   *range(990001, 990006), 990010, 990011]]
    found += [("/movie/get_year_info", {"query": year}) for year in ODD_YEARS]
    found += [("/movie/get_movie_info", {"query": name}) for name in [*ODD_MOVIES, "amélie", "Odd", "fields"]]
    found += [("/movie/get_person_info", {"query": name}) for name in [*ODD_PERSONS, "zoë", "person"]]
    for endpoint in ("get_artist_birth_place", "get_artist_birth_date", "get_members", "get_lifespan",
                     "get_artist_all_works", "grammy_get_award_count_by_artist", "grammy_get_award_date_by_artist",
                     "get_song_author", "get_song_release_country", "get_song_release_date",
                     "grammy_get_award_count_by_song"):
        found += [(f"/music/{endpoint}", {"query": name}) for name in people]
    for endpoint in ("grammy_get_best_artist_by_year", "grammy_get_best_song_by_year", "grammy_get_best_album_by_year"):
        found += [(f"/music/{endpoint}", {"query": year}) for year in
                  [2019, 1998, 2016, 1957, 1956, 2020, "1998", 0]]
    found.append(("/music/grammy_get_all_awarded_artists", {}))
    found += [("/music/get_billboard_rank_date", body) for body in
              [{"rank": 1}, {"rank": 1, "date": "2024-02-28"}, {"rank": "7", "date": "2024-02-21"},
               {"rank": 100, "date": "1999-01-01"}, {"rank": 0}, {"rank": 101, "date": None}, {"rank": 3, "date": ""}]]
    found += [("/music/get_billboard_attributes", {"date": date, "attribute": attribute, "song_name": song})
              for date in ("2024-02-28", "2024-02-21", "2000-01-01")
              for attribute in ("rank_last_week", "weeks_in_chart", "top_position", "rank", "other")
              for song in ("Song 3", "Song 999")]
    teams = [None, "Everton", "Team 3", "Team 7", "Nobody", ""]
    for date in ("2024-03-01", "2024-03", "2024", "2024-03-09", "2023", "2024-3-1", "2024-03-01-00", "", "x"):
        found += [("/sports/soccer/get_games_on_date", {"date": date, "team_name": team}) for team in teams]
    for date in ("2022-10-11", "2022-10", "2022", "2022-10-12", "2021", "2022-10-11-x", "", "2022-1"):
        found += [("/sports/nba/get_games_on_date", {"date": date, "team_name": team}) for team in
                  (None, "Chicago Bulls", "Milwaukee Bucks", "Nobody", "chicago bulls")]
    found += [("/sports/nba/get_play_by_play_data_by_game_ids", {"game_ids": ids}) for ids in
              [["0012200049"], ["0012200050", "0012200049"], [], ["nope"], ["0012200049", "0012200049"]]]
    # bodies the official server refuses (422)
    found += [("/open/search_entity_by_name", {}), ("/open/search_entity_by_name", {"query": 5}),
              ("/music/get_billboard_rank_date", {"date": "2024-02-28"}),
              ("/sports/nba/get_play_by_play_data_by_game_ids", {"game_ids": "0012200049"}),
              ("/sports/nba/get_play_by_play_data_by_game_ids", {"game_ids": [1]}),
              ("/sports/soccer/get_games_on_date", {"team_name": "Everton"})]
    return found
