"""crag/mock_kg on generated files shaped as CRAG's mock API server reads them, plus the real company_name.dict cut."""

from __future__ import annotations

import bz2
import csv
import dataclasses
import functools
import http.server
import json
import logging
import math
import os
import pickle
import shutil
import sqlite3
from pathlib import Path

import datasets
import duckdb
import pytest
import ragloaders
from conftest import assert_names, assert_source_error
from local_http import serve_in_thread
from mock_api_generated import ODD_MOVIES, extend_movie
from mock_kg_generated import COMPANY_CUT, ODD_KEYS, sqlitedict_file
from ragloaders.benchmarks.crag_mock_kg import builder as mock_kg_builder
from ragloaders.benchmarks.crag_mock_kg import catalogue as mock_kg_catalogue
from ragloaders.benchmarks.crag_mock_kg import facts as mock_kg_facts
from ragloaders.benchmarks.crag_mock_kg import sqlite as mock_kg_sqlite
from ragloaders.benchmarks.crag_mock_kg.files import scan_json_text
from ragloaders.core.errors import MissingSourceError, SourceError
from ragloaders.publish.validate import integrity

PATH = "crag/mock_kg"
CONFIGS = [table.config for table in mock_kg_catalogue.TABLES]


@pytest.fixture(scope="module")
def kg(mock_kg_build) -> tuple[Path, dict[str, int]]:
    """The session's generated cragkg folder (read only: tests copy what they change) and its entries per config."""
    return mock_kg_build.kg, mock_kg_build.counts


@pytest.fixture(scope="module")
def built(mock_kg_build) -> Path:
    """The session's build of it (`build_folder`, what `ragloaders build --out` runs)."""
    return mock_kg_build.out


def load(config: str, data_dir: Path, cache: Path) -> datasets.Dataset:
    return ragloaders.load(PATH, config, split="train", data_dir=str(data_dir), cache_dir=str(cache))


def rows_by(dataset: datasets.Dataset, key: str) -> dict:
    return {row[key]: row for row in dataset}


# --- the hub folder ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_config_loads_with_plain_datasets_and_counts_equal_the_source(kg, built):
    _, counts = kg
    assert sorted(counts) == sorted(CONFIGS)
    for config in CONFIGS:
        if counts[config] == 0:  # an empty source table cannot be a loadable split: left out, with a warning
            assert not (built / config).exists()
            continue
        dataset = datasets.load_dataset(str(built), config, split="train")
        assert dataset.num_rows == counts[config], config
        table = mock_kg_catalogue.BY_CONFIG[config]
        if table.reader is mock_kg_catalogue.Reader.SQLITE_TABLE:  # nba tables keep the file's column order
            assert set(table.key) <= set(dataset.features), config
        else:  # the key the API looks rows up by comes first
            assert list(dataset.features)[: len(table.key)] == list(table.key), config


def test_card_counts_and_lists_only_the_tables_this_build_wrote(kg, built):
    _, counts = kg
    written = sorted(config for config in CONFIGS if counts[config])
    assert len(written) < len(CONFIGS)  # the generated files hold an empty table: left out of the build
    card = (built / "README.md").read_text(encoding="utf-8")
    assert f"{len(CONFIGS)} tables" not in card and f"{len(CONFIGS)} configs" not in card
    summary = card[card.index("# CRAG mock knowledge graphs"):card.index("CRAG ([code]")]
    assert f"\n\nThis build has {len(written)} configs (each is listed under Splits).\n" in summary
    rows = [line for line in summary.splitlines() if line.startswith("| `")]
    assert all(row.endswith(" |") for row in rows)  # no sentence in a table cell
    assert sorted(row.split("`")[1] for row in rows) == written  # a table left out is not listed as held
    left_out = sorted(set(CONFIGS) - set(written))
    assert f"Left out: {', '.join(f'`{c}`' for c in left_out)}: no rows in the files read" in card


def test_card_examples_run_in_duckdb_over_the_parquet(built):
    card = (built / "README.md").read_text(encoding="utf-8")
    assert "CC BY-NC 4.0" in card and "yang2024crag" in card and "/finance/get_price_history" in card
    connection = duckdb.connect()
    answers = {}
    for table in mock_kg_catalogue.TABLES:
        if table.example and (built / table.config).exists():
            answers[table.config] = connection.execute(
                table.example.format(parquet=f"'{built}/{table.config}/train-*.parquet'")).fetchall()
    assert answers["finance_company"] == [("AAPL",)]  # the real cut
    assert answers["open_entities"] == [(
        "[generated, not CRAG data] Florida City, Florida is a city.\nSecond line.", "City of Florida City, Florida")]
    assert answers["finance_info"] == [("22.95", "21.199127")]
    assert answers["music_billboard_ranks"] == [("Song 1", "Beyonce")]
    assert answers["sports_nba_game"] == [("0012200049", "Chicago Bulls", 127.0, "Milwaukee Bucks", 104.0)]
    assert answers["movie_movies"][0][0] == "Rings 100"


def test_validate_reports_rows_per_config_and_repeated_keys(kg, tmp_path):
    root, counts = kg
    report = integrity(PATH, data_dir=str(root), cache_dir=str(tmp_path / "c"))
    rows = {facts["config"]: facts["rows"] for facts in report["splits"]}
    assert rows == counts  # an empty source table too: 0 rows
    assert report["ok"], report["errors"]
    # a JSON object that names one year twice: refused, as every JSON ragloaders reads
    copy = tmp_path / "cragkg"
    shutil.copytree(root / "movie", copy / "movie")
    text = (copy / "movie" / "year_db.json").read_text()
    (copy / "movie" / "year_db.json").write_text(text[:-1] + ', "1992": {"movie_list": [1]}}')
    with pytest.raises(SourceError) as caught:
        load("movie_years", copy, tmp_path / "c2")
    assert_source_error(caught.value, "movie/year_db.json", "'1992'", "duplicate", record=counts["movie_years"] + 1)
    assert caught.value.path == str(copy / "movie" / "year_db.json")
    for number, (text, record, facts) in enumerate([
        ('{"a": {"name": "A", "id": 1, "id": 2}}', 1, ["'id'", "duplicate"]),
        ('{"a": {"name": "A", "oscar_awards": [{"name": "x", "name": "y"}]}}', 1, ["'name'", "duplicate"]),
        ('{"a": {"name": "A"}, "b": {"name": "x\\ud800"}}', 2, ["'b'", "surrogate"]),
        ('{"a": {"name": "A"}, "b\\udc00": {"name": "x"}}', 2, ["'b\\udc00'", "surrogate"]),
        ('{"a": {"name": "A"}, "b": {"name": "x"}} {"c": {}}', None, ["JSON", "member 2"]),
    ]):
        (copy / "movie" / "person_db.json").write_text(text)
        with pytest.raises(SourceError) as caught:
            load("movie_persons", copy, tmp_path / f"p{number}")
        assert_source_error(caught.value, "movie/person_db.json", *facts, record=record)
        assert caught.value.path == str(copy / "movie" / "person_db.json")
    # a valid pair, the text `\\ud800` (an escaped backslash) and '?' itself are read as they are
    (copy / "movie" / "person_db.json").write_text('{"a": {"name": "\\ud83d\\ude00 \\\\ud800 ?"}}')
    assert load("movie_persons", copy, tmp_path / "ok")["name"] == ["\U0001f600 \\ud800 ?"]
    # text that looks like a key (`\": `) sends the file to the exact parser, which reads it as it is
    (copy / "movie" / "person_db.json").write_text('{"a": {"name": "say \\": x", "id": 1}}')
    assert load("movie_persons", copy, tmp_path / "ok2")["name"] == ['say ": x']


def test_sqlite_with_a_write_ahead_log_is_refused_and_left_as_it_is(kg, tmp_path):
    root, _ = kg
    nba = domain_copy(root, tmp_path, "sports") / "sports" / "nba.sqlite"
    writer = sqlite3.connect(nba)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.executemany('INSERT INTO "player" VALUES (?, ?, ?)', [(f"wal-{i}", 1.0, None) for i in range(50)])
    writer.commit()  # committed, still in nba.sqlite-wal (the connection stays open: no checkpoint on close)
    wal = Path(str(nba) + "-wal")
    before = (nba.read_bytes(), wal.read_bytes())
    assert wal.stat().st_size > 0
    with pytest.raises(SourceError) as caught:
        load("sports_nba_player", nba.parent.parent, tmp_path / "c")
    assert_source_error(caught.value, "sports/nba.sqlite-wal", str(nba), "wal_checkpoint")
    assert caught.value.path == str(wal)
    assert (nba.read_bytes(), wal.read_bytes()) == before
    writer.close()


# --- values, byte for byte ---------------------------------------------------------------------------------


def test_company_csv_is_the_real_cut_as_text(kg, tmp_path):
    root, _ = kg
    dataset = load("finance_company", root, tmp_path)
    with open(COMPANY_CUT, newline="", encoding="utf-8") as f:
        source = list(csv.reader(f))[1:]
    assert [[str(r["index"]), r["Name"], r["Symbol"]] for r in dataset] == source


def test_sqlitedict_values(kg, tmp_path):
    root, _ = kg
    price = rows_by(load("finance_price", root, tmp_path), "ticker")
    with sqlite3.connect(root / "finance" / "finance_price.sqlite") as db:
        source = {k: pickle.loads(v) for k, v in db.execute('SELECT key, value FROM "unnamed"')}
    assert list(price) == list(source) and set(ODD_KEYS) <= set(price)
    for ticker, history in source.items():
        assert [(p["date"], p["Open"], p["High"], p["Low"], p["Close"], p["Volume"]) for p in price[ticker]["prices"]] \
            == [(d, v["Open"], v["High"], v["Low"], float(v["Close"]), v["Volume"]) for d, v in history.items()]
    caps = rows_by(load("finance_marketcap", root, tmp_path), "ticker")
    assert caps["NOCAP"]["market_cap"] is None and caps["INTCAP"]["market_cap"] == 12345.0
    dividends = rows_by(load("finance_dividend", root, tmp_path), "ticker")
    assert dividends["AAPL"]["dividends"] == [{"date": "2019-12-19 00:00:00 EST", "dividend": 0.058},
                                              {"date": "2020-03-19 00:00:00 EST", "dividend": 0.2}]
    assert dividends["META"]["dividends"] == []
    info = json.loads(rows_by(load("finance_info", root, tmp_path), "ticker")["META"]["info"])
    assert info == {"address1": "1 Meta Way", "zip": "94025", "fullTimeEmployees": 67317, "forwardEps": 22.95,
                    "forwardPE": 21.199127, "companyOfficers": [{"name": "Mr. X", "age": 39, "maxAge": 1}],
                    "nothing": None, "missing": None}


def test_json_objects_keep_every_field(kg, tmp_path):
    root, _ = kg
    movies = rows_by(load("movie_movies", root, tmp_path), "key")
    source = json.loads((root / "movie" / "movie_db.json").read_text())
    assert list(movies) == list(source)
    first = movies["rings 0"]
    assert json.loads(first["other"]) == {"length": 102}
    expected = {key: value for key, value in source["rings 0"].items() if key != "length"}
    assert {key: first[key] for key in expected} == expected
    assert type(first["rating"]) is float and first["rating"] == 6 and first["cast"][0]["gender"] == 1
    assert movies["rings 1"]["oscar_awards"] is None and movies["rings 1"]["other"] is None
    persons = rows_by(load("movie_persons", root, tmp_path), "key")
    assert {f"person {i} {key}" for i, key in enumerate(ODD_KEYS)} <= set(persons)


def test_record_json_keeps_each_movie_record_exactly(kg, tmp_path):
    """record_json is each member's value as the file holds it: `json.loads` gives back the same keys in the same
    order (nested too), nulls where written null and no key where none was, 7 vs 7.0, the same text; strict JSON.
    movie_db.json goes through yajl, person_db.json (with `\\ud800` text) through the exact Python parser."""
    def exact(value):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def refuse(constant):
        raise AssertionError(f"{constant} is not strict JSON")

    root, _ = kg
    copy = domain_copy(root, tmp_path, "movie")
    extend_movie(copy)
    files = {"movie_movies": "movie_db.json", "movie_persons": "person_db.json", "movie_years": "year_db.json"}
    surrogate_text = {config: scan_json_text(str(copy / "movie" / name))[1] for config, name in files.items()}
    assert surrogate_text == {"movie_movies": False, "movie_persons": True, "movie_years": False}
    for config, name in files.items():
        source = json.loads((copy / "movie" / name).read_text(encoding="utf-8"))
        rows = load(config, copy, tmp_path / config)
        assert rows.features["record_json"] == datasets.Value("large_string")
        key = mock_kg_catalogue.BY_CONFIG[config].key[0]
        assert [row[key] for row in rows] == list(source)
        for row in rows:
            assert row["record_json"] == exact(source[row[key]]), (config, row[key])
            assert exact(json.loads(row["record_json"], parse_constant=refuse)) == exact(source[row[key]])
        typed = rows_by(rows, key)
        if config == "movie_movies":  # the typed columns beside it are kept (and lose what record_json keeps)
            assert typed["odd order"]["rating"] == 7.0 and typed["odd order"]["budget"] is None
            assert typed["null fields"]["cast"][0]["character"] is None
    assert '"rating":7,' in exact(ODD_MOVIES["odd order"]) and '"budget":null' in exact(ODD_MOVIES["odd order"])
    (copy / "movie" / "movie_db.json").write_text('{"a": {"title": "A", "rating": NaN}}')
    with pytest.raises(SourceError) as caught:  # json.load reads NaN
        load("movie_movies", copy, tmp_path / "nan")
    assert_source_error(caught.value, "movie/movie_db.json", "JSON", "member 0")


def test_pickled_dicts(kg, tmp_path):
    root, _ = kg
    artists = rows_by(load("music_artists", root, tmp_path), "artist")
    assert artists["Artist 0"]["members"] == ["m0", "Adam Levine", "Adam Levine"]  # a list: as it is
    assert artists["Maroon 5"]["members"] == ["Adam Levine", "James Valentine", "PJ Morton"]  # a set: sorted
    assert json.loads(artists["Maroon 5"]["other"]) == {"type": "Group"}
    odd = artists[ODD_KEYS[3]]
    assert (odd["country"], odd["birth_date"], odd["end_date"], odd["members"]) == ("XW", "1990-01-02", None,
                                                                                     ["a", "b"])
    songs = rows_by(load("music_billboard_songs", root, tmp_path), "song")
    assert songs["Song 3"]["charts"] == [
        {"date": "2024-02-28", "row": ["2024-02-28", "Song 3", "Beyonce", "1", "-", "1", "2"]},
        {"date": "2024-02-21", "row": ["2024-02-21", "Song 3", "Beyonce", "5", "7", "5", "-"]}]
    ranks = rows_by(load("music_billboard_ranks", root, tmp_path), "rank")
    assert ranks["7"]["entries"][0] == {"Date": "2024-02-28", "Song": "Song 7", "Artist": "Beyonce",
                                        "other": '{"Peak Position":"1"}'}


def test_dataframes(kg, tmp_path):
    root, _ = kg
    grammy = load("music_grammy", root, tmp_path)
    assert grammy.features["year"].dtype == "int64" and grammy.features["winner"].dtype == "bool"
    assert grammy["workers"] == ["Finneas O'Connell, producer", None, None, "James Horner", "Greg Kurstin"]
    soccer = load("sports_soccer_team_matches", root, tmp_path)
    assert list(soccer.features)[:6] == ["league", "season", "team", "game", "date", "time"]
    assert soccer["GF"][:3] == ['"0"', "1", "2.0"] and soccer["GA"][:2] == ['"2"', "2"]
    assert soccer["league"][0] is None and soccer["league"][1] == "ENG-Premier League"
    assert soccer["xG"][0] is None and soccer["Attendance"][0] is None and soccer["Notes"][0] is None


def test_nba_tables_keep_their_columns_and_types(kg, tmp_path):
    root, _ = kg
    game = load("sports_nba_game", root, tmp_path)
    types = {name: feature.dtype for name, feature in game.features.items()}
    assert types["game_id"] == "string" and types["min"] == "int64" and types["pts_home"] == "float64"
    assert types["fgm_home"] == "float64" and game["fgm_home"][0] is None  # a NULL in a REAL column
    assert game["game_id"][0] == "0012200049" and game["game_date"][0] == "2022-10-11 00:00:00"
    plays = load("sports_nba_play_by_play", root, tmp_path)
    assert plays.features["score"].dtype == "string"  # NULL, integer, text and real values: JSON text
    assert plays["score"][:4] == [None, "5", '"5 - 7"', "2.5"]
    assert plays["homedescription"][0] == "Jump Ball 0 ‘quoted’ 🙂"


# --- hostile and damaged input ------------------------------------------------------------------------------


def domain_copy(root: Path, tmp_path: Path, domain: str) -> Path:
    copy = tmp_path / "cragkg"
    shutil.copytree(root / domain, copy / domain)
    return copy


class Runs:
    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return os.system, self.args


def test_a_malicious_pickle_is_refused_and_never_runs(kg, tmp_path):
    root, _ = kg
    marker = tmp_path / "ran"
    copy = domain_copy(root, tmp_path, "music")
    with open(copy / "music" / "artist_dict_simplified.pickle", "wb") as f:
        pickle.dump({"Adele": {"country": "GB"}, "evil": Runs(f"touch {marker}")}, f)
    with pytest.raises(SourceError) as caught:
        load("music_artists", copy, tmp_path / "c")
    assert_source_error(caught.value, "music/artist_dict_simplified.pickle", "posix.system")
    assert caught.value.path == str(copy / "music" / "artist_dict_simplified.pickle")
    copy = domain_copy(root, tmp_path / "2", "finance")
    sqlitedict_file(copy / "finance" / "finance_info.sqlite", [("EVIL", Runs(f"touch {marker}"))])
    with pytest.raises(SourceError) as caught:
        load("finance_info", copy, tmp_path / "c")
    assert_source_error(caught.value, "finance/finance_info.sqlite", "'EVIL'", "posix.system")
    assert not marker.exists()


@pytest.mark.parametrize("config,file,value,where", [
    ("music_artists", "music/artist_dict_simplified.pickle", {"A": {"birth_date": b"1987"}},
     "key 'A') at `birth_date`"),
    ("music_artists", "music/artist_dict_simplified.pickle", {"A": {"members": "not a list"}}, "at `members`"),
    ("music_artists", "music/artist_dict_simplified.pickle", {"A": {"x": {1: "int key"}}},
     "a dict key or set item of type int (1): only strings are read as keys"),
    ("music_artists", "music/artist_dict_simplified.pickle", {"A": {"x": 1 + 2j}}, "complex"),
    ("music_artists", "music/artist_dict_simplified.pickle", {7: {}}, "a dict key or set item of type int (7)"),
    ("music_artist_works", "music/artist_work_dict.pickle", {"A": ["w", 3.5]}, "at `[1]`: expected a string"),
    ("music_songs", "music/song_dict_simplified.pickle", ["not", "a dict"], "expected a pickled dict"),
])
def test_a_value_of_the_wrong_type_names_file_and_key(kg, tmp_path, config, file, value, where):
    root, _ = kg
    copy = domain_copy(root, tmp_path, "music")
    with open(copy / file, "wb") as f:
        pickle.dump(value, f)
    with pytest.raises(SourceError) as caught:
        load(config, copy, tmp_path / "c")
    assert caught.value.path == str(copy / file) and where in str(caught.value)


def test_a_cyclic_or_exploding_pickle_is_a_source_error(kg, tmp_path):
    root, _ = kg
    copy = domain_copy(root, tmp_path, "music")
    cycle: list = ["a"]
    cycle.append(cycle)
    with open(copy / "music" / "artist_dict_simplified.pickle", "wb") as f:
        pickle.dump({"A": {"country": "GB", "links": {"self": cycle}}}, f)  # `other` is JSON: any shape but this
    with pytest.raises(SourceError) as caught:
        load("music_artists", copy, tmp_path / "c")
    assert_source_error(caught.value, "music/artist_dict_simplified.pickle", "item 1", "'A'",
                        "other['links']['self'][1]", "cycle", record=1)
    shared: list = ["x"]
    for _ in range(40):
        shared = [shared, shared]  # 2**40 items once expanded
    with open(copy / "music" / "rank_dict_hot100.pickle", "wb") as f:
        pickle.dump({"1": [{"Date": "d", "Song": "s", "Artist": "a", "deep": shared}]}, f)
    with pytest.raises(SourceError) as caught:
        load("music_billboard_ranks", copy, tmp_path / "c")
    assert_source_error(caught.value, "music/rank_dict_hot100.pickle", "64 units per byte")
    assert caught.value.path == str(copy / "music" / "rank_dict_hot100.pickle")


def test_json_and_jsonl_errors_name_file_and_place(kg, tmp_path):
    root, _ = kg
    copy = domain_copy(root, tmp_path, "movie")
    movie_file = copy / "movie" / "movie_db.json"
    movie_file.write_text('{"a": {"title": "A", "budget": "25M"}}')
    with pytest.raises(SourceError) as caught:
        load("movie_movies", copy, tmp_path / "c")
    assert_source_error(caught.value, "movie/movie_db.json", "member 1", "'a'", "`budget`", "integer", "'25M'",
                        record=1)
    movie_file.write_text('{"a": {"title": "A"}, "b": {"title":')
    with pytest.raises(SourceError) as caught:
        load("movie_movies", copy, tmp_path / "c2")
    assert_source_error(caught.value, "movie/movie_db.json", "JSON", "member 1")
    movie_file.write_text('{"a": {"title": "A"}, "b": {"title": "B" "year": 1999}, "c": {"title": "' + "x" * 10**6
                          + '"}}')
    with pytest.raises(SourceError) as caught:
        load("movie_movies", copy, tmp_path / "c2b")
    assert_source_error(caught.value, "movie/movie_db.json", "JSON", "member 1", '"B" "year"')
    assert len(str(caught.value)) < 400
    movie_file.write_text('[{"title": "A"}]')
    with pytest.raises(SourceError) as caught:
        load("movie_movies", copy, tmp_path / "c3")
    assert_source_error(caught.value, "movie/movie_db.json", "JSON object", "'['")
    copy = domain_copy(root, tmp_path / "o", "open")
    part = copy / "open" / "kg.1.jsonl.bz2"
    part.write_bytes(bz2.compress(b'["x", {"summary_text": "t"}]\n{"not": "a pair"}\n'))
    with pytest.raises(SourceError) as caught:
        load("open_entities", copy, tmp_path / "c4")
    assert_source_error(caught.value, "open/kg.1.jsonl.bz2", "JSON array", "{'not': 'a pair'}", line=2)
    assert caught.value.path == str(part)
    part.write_bytes(bz2.compress(b'["x", {"summary_text": "t"}]\n["y", {"summary_text": 3}]\n'))
    with pytest.raises(SourceError) as caught:
        load("open_entities", copy, tmp_path / "c4b")
    assert_source_error(caught.value, "open/kg.1.jsonl.bz2", "line 2", "'y'", "summary_text", line=2)
    part.write_bytes(bz2.compress(b'["x", {"summary_text": "t"}]\n' * 100)[:-20])
    with pytest.raises(SourceError) as caught:
        load("open_entities", copy, tmp_path / "c5")
    assert_source_error(caught.value, "open/kg.1.jsonl.bz2", "bzip2", "truncated")
    part.write_bytes(bz2.compress(b'["x", {"summary_text": NaN}]\n'))  # Python's json writes NaN: read as null
    assert load("open_entities", copy, tmp_path / "c6")["summary_text"][-1] is None
    for number, (line, facts) in enumerate([  # the shared JSON rules, with or without a NaN on the line
        (b'["x", {"summary_text": "a", "summary_text": "b"}]', ["'summary_text'", "duplicate"]),
        (b'["x", {"summary_text": NaN, "summary_text": "b"}]', ["'summary_text'", "duplicate"]),
        (b'["x", {"summary_text": "\\ud800"}]', ["surrogate"]),
        (b'["x", {"summary_text": "\\ud800", "n": NaN}]', ["surrogate"]),
        ('["x", {"summary_text": "t"}]'.encode("utf-16-le"), ["JSON"]),  # Python's json would read it
        (b'\xef\xbb\xbf["x", {"summary_text": NaN}]', ["JSON"]),  # a BOM, but not at the file's start
    ]):
        part.write_bytes(bz2.compress(b'["y", {"summary_text": "t"}]\n' + line + b"\n"))
        with pytest.raises(SourceError) as caught:
            load("open_entities", copy, tmp_path / f"d{number}")
        assert_source_error(caught.value, "open/kg.1.jsonl.bz2", *facts, line=2)
        assert caught.value.path == str(part)
    part.write_bytes(bz2.compress(b'\xef\xbb\xbf["x", {"summary_text": NaN}]\n'))  # at the file's start: skipped
    assert load("open_entities", copy, tmp_path / "c7")["summary_text"][-1] is None


def test_sqlite_files_that_are_not_what_the_server_reads(kg, tmp_path, caplog):
    root, _ = kg
    copy = domain_copy(root, tmp_path, "finance")
    with sqlite3.connect(copy / "finance" / "finance_marketcap.sqlite") as db:
        db.execute("CREATE TABLE other (x)")
    db.close()
    with pytest.raises(SourceError) as caught:
        load("finance_marketcap", copy, tmp_path / "c")
    assert_source_error(caught.value, "finance/finance_marketcap.sqlite", "SqliteDict", "'unnamed'",
                        "['other', 'unnamed']")
    (copy / "finance" / "finance_price.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(SourceError) as caught:
        load("finance_price", copy, tmp_path / "c2")
    assert_source_error(caught.value, "finance/finance_price.sqlite", "database")
    nba = domain_copy(root, tmp_path / "n", "sports") / "sports" / "nba.sqlite"
    with sqlite3.connect(nba) as db:
        db.execute("DROP TABLE officials")
        db.execute('CREATE TABLE "new ""table""" (x)')
    db.close()
    with pytest.raises(SourceError) as caught:
        load("sports_nba_officials", nba.parent.parent, tmp_path / "c3")
    assert_source_error(caught.value, "sports/nba.sqlite", "'officials'", "'common_player_info'")
    with caplog.at_level(logging.WARNING):
        assert load("sports_nba_player", nba.parent.parent, tmp_path / "c4").num_rows == 3
    assert 'new "table"' in caplog.text and "not published" in caplog.text


def test_a_missing_file_says_which_file_the_config_needs(kg, tmp_path, monkeypatch):
    monkeypatch.delenv(mock_kg_facts.BASE_URL_ENV, raising=False)
    root, _ = kg
    only_finance = domain_copy(root, tmp_path, "finance")
    assert load("finance_marketcap", only_finance, tmp_path / "c").num_rows > 0
    with pytest.raises(MissingSourceError) as caught:
        load("movie_movies", only_finance, tmp_path / "c")
    url = mock_kg_catalogue.SOURCE_FILES["movie/movie_db.json"].url(mock_kg_facts.BASE_URL)
    assert_names(caught.value, only_finance, "movie_movies", "movie/movie_db.json", url, "data_dir")
    # the repository (or its mock_api folder) works as data_dir too
    repo = tmp_path / "repo"
    shutil.copytree(only_finance, repo / "mock_api" / "cragkg")
    assert load("finance_marketcap", repo, tmp_path / "c2").num_rows > 0


def test_a_missing_file_names_the_mirror_the_download_would_use(kg, tmp_path, monkeypatch):
    root, _ = kg
    only_finance = domain_copy(root, tmp_path, "finance")
    monkeypatch.setenv(mock_kg_facts.BASE_URL_ENV, "https://mirror.example/crag/")
    with pytest.raises(MissingSourceError) as caught:
        load("movie_movies", only_finance, tmp_path / "c")
    url = mock_kg_catalogue.SOURCE_FILES["movie/movie_db.json"].url("https://mirror.example/crag")
    assert_names(caught.value, only_finance, "movie_movies", "movie/movie_db.json", url)
    assert mock_kg_facts.BASE_URL not in str(caught.value)


@pytest.mark.parametrize("special", ["fifo", "symlink to /dev/zero"])
def test_a_kg_file_that_is_not_a_regular_file_is_named_never_opened(kg, tmp_path, special):
    """A FIFO (opening it would block) or a symlink to a device in the file's place is named as not a regular file,
    not reported as missing."""
    root, _ = kg
    only_finance = domain_copy(root, tmp_path, "finance")
    wanted = only_finance / "movie" / "movie_db.json"
    wanted.parent.mkdir(exist_ok=True)
    if special == "fifo":
        os.mkfifo(wanted)
    else:
        wanted.symlink_to("/dev/zero")
    with pytest.raises(MissingSourceError) as caught:
        load("movie_movies", only_finance, tmp_path / "c")
    assert_names(caught.value, "movie_movies", "movie/movie_db.json", wanted, "regular file")


# --- download ---------------------------------------------------------------------------------------------


@pytest.fixture
def mirror(kg, tmp_path, monkeypatch):
    """The generated files served over HTTP on 127.0.0.1, laid out as the repository (`mock_api/cragkg/...`)."""
    root, _ = kg
    served = tmp_path / "mirror"
    shutil.copytree(root / "finance", served / "mock_api" / "cragkg" / "finance")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serve_in_thread(server)
    monkeypatch.setenv(mock_kg_facts.BASE_URL_ENV, f"http://127.0.0.1:{server.server_port}")
    yield served / "mock_api" / "cragkg"
    server.shutdown()


def with_size(monkeypatch, relpath: str, size: int) -> None:
    files = dict(mock_kg_catalogue.SOURCE_FILES)
    files[relpath] = dataclasses.replace(files[relpath], size=size)
    monkeypatch.setattr(mock_kg_builder, "SOURCE_FILES", files)


def test_download_checks_size(mirror, monkeypatch, tmp_path):
    relpath = "finance/finance_marketcap.sqlite"
    size = os.path.getsize(mirror / relpath)
    with_size(monkeypatch, relpath, size)
    dataset = ragloaders.load(PATH, "finance_marketcap", split="train", cache_dir=str(tmp_path / "ok"))
    assert dataset.num_rows > 0 and not math.isnan(dataset["market_cap"][0])
    with_size(monkeypatch, relpath, size + 1)
    with pytest.raises(SourceError) as caught:
        ragloaders.load(PATH, "finance_marketcap", cache_dir=str(tmp_path / "bad"))
    assert_source_error(caught.value, relpath, str(size), str(size + 1))


def test_official_urls_and_sizes():
    downloads = mock_kg_builder.MockKgBuilder.downloads(mock_kg_catalogue.BY_CONFIG["open_entities"])
    assert [d.url for d in downloads] == [
        "https://github.com/facebookresearch/CRAG/raw/refs/heads/main/mock_api/cragkg/open/kg.0.jsonl.bz2",
        "https://github.com/facebookresearch/CRAG/raw/refs/heads/main/mock_api/cragkg/open/kg.1.jsonl.bz2"]
    assert [d.size for d in downloads] == [26_290_049, 17_313_388]
    used = {f for table in mock_kg_catalogue.TABLES for f in table.files}
    assert used == set(mock_kg_catalogue.SOURCE_FILES) and len(used) == 19


def test_tables_are_bounded(kg, monkeypatch):
    root, _ = kg
    monkeypatch.setattr(mock_kg_sqlite, "BATCH_ROWS", 4)
    builder = ragloaders.builder(PATH, "sports_nba_play_by_play", data_dir=str(root))
    generator = builder._split_generators(None)[0]
    sizes = [table.num_rows for _, table in builder._generate_tables(**generator.gen_kwargs)]
    assert sum(sizes) == 140 and max(sizes) == 4
    builder = ragloaders.builder(PATH, "movie_movies", data_dir=str(root))
    generator = builder._split_generators(None)[0]
    tables = [table for _, table in builder._generate_tables(**generator.gen_kwargs)]
    assert [t.num_rows for t in tables] == [4, 4, 4, 4, 4, 1]


def test_num_proc_gives_the_same_rows(kg, tmp_path):
    root, _ = kg
    for config in ("open_entities", "sports_nba_play_by_play"):  # two files split over workers; one sqlite table
        one = load(config, root, tmp_path / "one")
        two = ragloaders.load(PATH, config, split="train", data_dir=str(root), cache_dir=str(tmp_path / "two"),
                              num_proc=2)
        assert two.to_list() == one.to_list()


def test_the_mock_kg_is_its_own_benchmark_and_imports_no_other():
    import ast

    from ragloaders.benchmarks import benchmark_of, crag_mock_kg

    assert benchmark_of(PATH) is crag_mock_kg.BENCHMARK and PATH not in benchmark_of("crag/task_3").builders
    for source in Path(crag_mock_kg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 2:  # `from ..x import y`: a sibling benchmark
                raise AssertionError(f"{source.name} imports from ..{node.module}")
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(name.startswith("ragloaders.benchmarks.") for name in names), source.name


def test_a_build_of_configs_none_of_which_has_a_row_is_refused(kg, tmp_path, capsys):
    """It warned that each was left out, then failed on the card: `IndexError: list index out of range`."""
    from ragloaders.cli import main

    folder, counts = kg
    empty = sorted(config for config in CONFIGS if counts[config] == 0)
    assert empty  # the generated files hold an empty table
    out = tmp_path / "out"
    assert main(["build", PATH, "--data-dir", str(folder), "--configs", empty[0], "--out", str(out),
                 "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert f"ragloaders: error: {PATH}: the config built ({empty[0]}) has no row in its source: nothing to publish" \
        in err, err
    assert not out.exists()
