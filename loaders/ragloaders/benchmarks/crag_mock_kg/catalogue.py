"""CRAG's mock knowledge graphs as data: one entry per config of `crag/mock_kg`.

Each entry says which file of `mock_api/cragkg/` the table comes from, how the mock API server reads
that file, the key the API looks things up by, and the shape of the value stored under each key.
Where the shape was derived from (facebookresearch/CRAG, `mock_api/`):

- finance: `cragapi/finance.py` reads `company_name.dict` as CSV (`Name`, `Symbol`) and the five
  `.sqlite` files with SqliteDict (one pickled value per ticker); the value shapes are the docstring
  examples of `get_price_history`, `get_detailed_price_history`, `get_dividends_history`, the float of
  `get_market_capitalization` and the yfinance `info` dict of `get_info` (keys vary per ticker: JSON).
- movie: `cragapi/movie.py` `json.load`s three JSON objects keyed by normalised name (movies, persons)
  or year; the fields are those its docstrings list ("MAY contain"), typed as the notebook
  `apiwrapper/example_call.ipynb` shows them (e.g. cast `gender` is an integer there).
- music: `cragapi/music.py` `pickle.load`s five dicts and a DataFrame; the fields are those the code
  reads (`artist_dict[name]['country'|'birth_date'|'end_date'|'members']`, `song_dict[name]['author'|
  'country'|'date']`, `rank_dict_hot[str(rank)]` -> list of {'Date', 'Song', 'Artist'},
  `song_dict_hot[song][date]` -> a row of strings indexed 3..6); the Grammy DataFrame's columns come
  from the file.
- open: `cragapi/open.py` reads `[entity, attributes]` lines; attributes are `summary_text`,
  `summary_structured` (a dict whose keys vary: JSON) and `raw_mediawiki` (server.py's docstring).
- sports: `cragapi/sports.py` reads the soccer DataFrame (MultiIndex league, season, team, game) and
  queries `game` and `play_by_play` of nba.sqlite; those columns, and every other table's, come from
  the file.

Record fields the code does not name (a movie's `length`, say) are kept in the JSON column `other`
rather than failing the build: the field lists above could not be checked against the real files.

The typed columns of a movie record keep neither the order of its keys, nor whether a null field was absent or written
null, nor an integer written in a float field (`"rating": 7`, read back as 7.0). So the movie tables also keep each
record whole as JSON text, `record_json` (large_string): the member's value as parsed, written again by
`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, which keeps its key order, its nulls and absent keys,
its integers and floats (a float written back by its shortest repr: `json.loads` gives the same number) and its text
(escapes such as `\\u00e9` are written as the characters they stand for). It is not the member's bytes (the streaming
reader does not see them); `json.loads(record_json)` equals what Python's `json.load` of the file gives for that
member, which is what the mock API serves. The market cap and dividend tables keep `record_json` too, for the same
reason: yfinance's `marketCap` is an integer (7, not 7.0) where the typed float column would read 7.0, and a
SqliteDict value is the unpickled object written as JSON (NaN as null).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

STRING, TEXT, INT, FLOAT, BOOL = pa.string(), pa.large_string(), pa.int64(), pa.float64(), pa.bool_()
SPLIT = "train"
"""The one split of every config: what `load_dataset(repo, config)` of a single-table dataset gives everywhere."""
FOLDER = "mock_api/cragkg"
"""Where the files sit in the CRAG repository; `data_dir` is this folder (or holds some of its domain folders)."""


@dataclass(frozen=True)
class Scalar:
    """A value of one Arrow type (null allowed). Floats accept integers; NaN, pandas' missing value, is null."""

    arrow: pa.DataType


@dataclass(frozen=True)
class Json:
    """Any value of plain types, stored as JSON text (for shapes that vary per row)."""


@dataclass(frozen=True)
class ListOf:
    item: Shape


@dataclass(frozen=True)
class Record:
    """A dict with these keys (each may be missing: null). `other`: undeclared keys go, as a JSON object, to the
    field `other` (null when there are none); without it an undeclared key is an error."""

    fields: tuple[tuple[str, Shape], ...]
    other: bool = False


@dataclass(frozen=True)
class Entries:
    """A dict {key: value} as a list of structs in the dict's order: `{key_name: key, value_name: value}`, or the
    key beside the fields of a Record value when `value_name` is None."""

    key_name: str
    value: Shape
    value_name: str | None = None


Shape = Scalar | Json | ListOf | Record | Entries

S, T, I, F, B = Scalar(STRING), Scalar(TEXT), Scalar(INT), Scalar(FLOAT), Scalar(BOOL)  # noqa: E741
OSCAR = ListOf(Record((("year_ceremony", I), ("ceremony", I), ("category", S), ("name", S), ("film", S),
                       ("winner", B))))
PRICES = Entries("date", Record((("Open", F), ("High", F), ("Low", F), ("Close", F), ("Volume", I))))


@dataclass(frozen=True)
class SourceFile:
    """A file of `mock_api/cragkg/` with the size and sha256 its Git LFS pointer publishes."""

    relpath: str
    size: int
    sha256: str

    def url(self, base: str) -> str:
        return f"{base}/{FOLDER}/{self.relpath}"


SOURCE_FILES = {f.relpath: f for f in (
    SourceFile("finance/company_name.dict", 614_789,
               "e92fcfb64911508705b59af046cfff8b4edc38ddd6dff391c27870f2cac94ca6"),
    SourceFile("finance/finance_price.sqlite", 136_196_096,
               "05fa78f8d319ae2a7f5990b50f8b6f1d17be1f650bf5fb814721e1fc2d4a56ac"),
    SourceFile("finance/finance_detailed_price.sqlite", 717_529_088,
               "6833ea730d6c7bf14532566b450562f153e06ff0fdd04551722552371448fec2"),
    SourceFile("finance/finance_dividend.sqlite", 10_448_896,
               "5e18259fd76d39f8b06801db911d28a152e54e2fa77abe12dffbd66474e81fe2"),
    SourceFile("finance/finance_marketcap.sqlite", 303_104,
               "3357344b67e039dc424c54d19f561ff2c97b7507df74d0388430984b62ca89cf"),
    SourceFile("finance/finance_info.sqlite", 34_877_440,
               "30e80405de86ded41cfde9020409c0c192042eb58f40de78cff77f896c4e7894"),
    SourceFile("movie/movie_db.json", 189_194_170, "673de2da21bd594a8acb8cdb7765346f07ccf4d4a88a74942416d1748c12964b"),
    SourceFile("movie/person_db.json", 45_103_919, "85992666f528e05193cc3c97bde43e8c24a25ad59bd1a0d359df050799f79c79"),
    SourceFile("movie/year_db.json", 1_150_550, "05d32ffc43e749ab6e38484b04ec6c6b0f60830f306f514309812c3cba4ed91b"),
    SourceFile("music/artist_dict_simplified.pickle", 136_772_303,
               "7f935fc9b76b26b52843d2f52c46aaff00f1193b6e5bc9b1529d1ae9456b6a2a"),
    SourceFile("music/song_dict_simplified.pickle", 234_549_979,
               "bb8e988448b76518eb0e16ae894afa982187f972956dd12bd8e787b1a9f732f4"),
    SourceFile("music/artist_work_dict.pickle", 97_658_647,
               "bc6db55ab0e32e13769a2473e14050f0828eea82aef5f6e279ef6f9543a54ffc"),
    SourceFile("music/rank_dict_hot100.pickle", 29_121_007,
               "965cf61f1daae796d274ed90a20e724c00568eb2586339e148d97606cb608e1e"),
    SourceFile("music/song_dict_hot100.pickle", 4_084_771,
               "a5d5943fdd69a5c7730dbc3419730559abd4ba31704cf7bc3ea48ab2e98ded4c"),
    SourceFile("music/grammy_df.pickle", 731_396, "4c6ee52e6b083a980063ee290eb0b2d6926e1478c0d696380218ca19da34f166"),
    SourceFile("open/kg.0.jsonl.bz2", 26_290_049, "3c25a6533bab6d13254f627ddb2f69f60a127233ec51990c9109bf88e800ee30"),
    SourceFile("open/kg.1.jsonl.bz2", 17_313_388, "a636adabb4b5af258f734bf2ad1a24a82ef84f451aaaec5e5324c4ce5753971a"),
    SourceFile("sports/nba.sqlite", 2_902_269_952, "2ff9d5943b32c0fb247a3e7d6b1b8f268d37baf88668ecf83418169234a32d1f"),
    SourceFile("sports/soccer_team_match_stats.pkl", 462_407,
               "86c78cb0e43f294f94d329083b4cfd31f05efed23d3ba51ed9e40dbcad656724"),
)}

class Reader(Enum):
    """How a file is read."""

    CSV = "csv"
    """the company CSV"""
    SQLITEDICT = "sqlitedict"
    """a SqliteDict file (table `unnamed`: key TEXT, value BLOB = a pickle)"""
    JSON_OBJECT = "json_object"
    """one JSON object, a row per member"""
    JSONL_PAIRS = "jsonl_pairs"
    """JSON lines of `[key, value]`"""
    PICKLE_DICT = "pickle_dict"
    """a pickled dict, a row per item"""
    PICKLE_FRAME = "pickle_frame"
    """a pickled pandas DataFrame"""
    SQLITE_TABLE = "sqlite_table"
    """one table of a plain sqlite file"""


OTHER = "other"
"""The JSON column of a Record's undeclared fields."""
NONE_CELLS = "none_cells"
"""The column naming, per row of a DataFrame table, the cells that were Python's None (MockKgTable.none_cells)."""
RECORD_JSON = "record_json"
"""The column holding a JSON object member's whole value as JSON text (see the module docstring)."""


@dataclass(frozen=True)
class MockKgTable:
    """One config of `crag/mock_kg`."""

    config: str
    files: tuple[str, ...]
    reader: Reader
    key: tuple[str, ...]
    """The column(s) the mock API looks rows up by (`ragloaders validate` reports values that repeat); () if none."""
    value: Shape | None = None
    """The shape of the value under each key (dict-like readers); None: columns come from the file."""
    value_column: str | None = None
    """The column holding the value; None: the value is a Record whose fields are the columns."""
    endpoints: tuple[str, ...] = ()
    """The mock API endpoints this table replaces."""
    example: str = ""
    """A DuckDB query over the published Parquet (`{parquet}` stands for the config's files)."""
    holds: str = ""
    sqlite_table: str | None = None
    none_cells: str | None = None
    """A DataFrame only: the name of a column listing, per row, the object columns whose cell is Python's None; the
    other nulls were NaN (or pandas' NA). The mock API's `str(value)` tells them apart ("None" vs "nan")."""
    record_json: bool = False
    """Also keep each member's whole value as JSON text, in the column RECORD_JSON (JSON_OBJECT and SQLITEDICT
    readers): what a typed column loses, 7 vs 7.0 above all."""

    @property
    def domain(self) -> str:
        return self.config.split("_", 1)[0]


def _dict_table(config: str, files: str | tuple[str, ...], reader: Reader, key: str, value: Shape,
                value_column: str | None = None, **facts: object) -> MockKgTable:
    files = (files,) if isinstance(files, str) else files
    return MockKgTable(config, files, reader, (key,), value, value_column, **facts)  # type: ignore[arg-type]


TABLES: tuple[MockKgTable, ...] = (
    MockKgTable(
        "finance_company", ("finance/company_name.dict",), Reader.CSV, ("Name",),
        endpoints=("/finance/get_company_name", "/finance/get_ticker_by_name"),
        holds="company names with their ticker (`index`: the first, unnamed column of the CSV)",
        example="SELECT Symbol FROM {parquet} WHERE Name = 'Apple Inc. Common Stock'",
    ),
    _dict_table("finance_price", "finance/finance_price.sqlite", Reader.SQLITEDICT, "ticker", PRICES, "prices",
                endpoints=("/finance/get_price_history",),
                holds="one year of daily Open, High, Low, Close, Volume per ticker",
                example="SELECT p.date, p.Close FROM {parquet}, UNNEST(prices) AS t(p) WHERE ticker = 'META'"),
    _dict_table("finance_detailed_price", "finance/finance_detailed_price.sqlite", Reader.SQLITEDICT, "ticker",
                PRICES, "prices", endpoints=("/finance/get_detailed_price_history",),
                holds="the last 5 days of 1-minute Open, High, Low, Close, Volume per ticker",
                example="SELECT len(prices) FROM {parquet} WHERE ticker = 'META'"),
    _dict_table("finance_dividend", "finance/finance_dividend.sqlite", Reader.SQLITEDICT, "ticker",
                Entries("date", F, "dividend"), "dividends", endpoints=("/finance/get_dividends_history",),
                record_json=True,
                holds="dividends paid, by date, per ticker",
                example="SELECT d.date, d.dividend FROM {parquet}, UNNEST(dividends) AS t(d) WHERE ticker = 'META'"),
    _dict_table("finance_marketcap", "finance/finance_marketcap.sqlite", Reader.SQLITEDICT, "ticker", F, "market_cap",
                endpoints=("/finance/get_market_capitalization",), record_json=True,
                holds="market capitalisation per ticker",
                example="SELECT market_cap FROM {parquet} WHERE ticker = 'META'"),
    _dict_table("finance_info", "finance/finance_info.sqlite", Reader.SQLITEDICT, "ticker", Json(), "info",
                endpoints=("/finance/get_info", "/finance/get_eps", "/finance/get_pe_ratio"),
                holds="the yfinance `info` object per ticker, as JSON text (its keys vary per ticker)",
                example="SELECT json_extract(info, '$.forwardEps') AS eps, json_extract(info, '$.forwardPE') AS pe "
                        "FROM {parquet} WHERE ticker = 'META'"),
    _dict_table(
        "movie_movies", "movie/movie_db.json", Reader.JSON_OBJECT, "key",
        Record((("title", S), ("id", I), ("release_date", S), ("original_title", S), ("original_language", S),
                ("budget", I), ("revenue", I), ("rating", F), ("genres", ListOf(Record((("id", I), ("name", S))))),
                ("oscar_awards", OSCAR),
                ("cast", ListOf(Record((("name", S), ("id", I), ("character", S), ("gender", I), ("order", I))))),
                ("crew", ListOf(Record((("name", S), ("id", I), ("job", S)))))), other=True),
        endpoints=("/movie/get_movie_info", "/movie/get_movie_info_by_id"),
        holds="movies, keyed by the normalised title the API searches (BM25) over",
        example="SELECT title, release_date, budget FROM {parquet} WHERE id = 100", record_json=True,
    ),
    _dict_table(
        "movie_persons", "movie/person_db.json", Reader.JSON_OBJECT, "key",
        Record((("name", S), ("id", I), ("acted_movies", ListOf(I)), ("directed_movies", ListOf(I)),
                ("birthday", S), ("oscar_awards", OSCAR)), other=True),
        endpoints=("/movie/get_person_info", "/movie/get_person_info_by_id"),
        holds="people of the movie domain, keyed by normalised name",
        example="SELECT name, birthday, len(acted_movies) FROM {parquet} WHERE id = 100", record_json=True,
    ),
    _dict_table("movie_years", "movie/year_db.json", Reader.JSON_OBJECT, "year",
                Record((("movie_list", ListOf(I)), ("oscar_awards", OSCAR)), other=True),
                endpoints=("/movie/get_year_info",), holds="per year: its movie ids and that year's Oscar awards",
                example="SELECT len(movie_list) FROM {parquet} WHERE year = '1992'", record_json=True),
    _dict_table("music_artists", "music/artist_dict_simplified.pickle", Reader.PICKLE_DICT, "artist",
                Record((("country", S), ("birth_date", S), ("end_date", S), ("members", ListOf(S))), other=True),
                endpoints=("/music/search_artist_entity_by_name", "/music/get_artist_birth_place",
                           "/music/get_artist_birth_date", "/music/get_members", "/music/get_lifespan"),
                holds="artists and bands: country, birth (or start) date, end date, members",
                example="SELECT country, birth_date, end_date FROM {parquet} WHERE artist = 'Adele'"),
    _dict_table("music_songs", "music/song_dict_simplified.pickle", Reader.PICKLE_DICT, "song",
                Record((("author", S), ("country", S), ("date", S)), other=True),
                endpoints=("/music/search_song_entity_by_name", "/music/get_song_author",
                           "/music/get_song_release_country", "/music/get_song_release_date"),
                holds="songs: author, release country, release date",
                example="SELECT author, country, date FROM {parquet} WHERE song = 'I Can Feel It'"),
    _dict_table("music_artist_works", "music/artist_work_dict.pickle", Reader.PICKLE_DICT, "artist", ListOf(S), "works",
                endpoints=("/music/get_artist_all_works",), holds="the titles of every work of an artist",
                example="SELECT unnest(works) FROM {parquet} WHERE artist = 'Adele'"),
    _dict_table("music_billboard_ranks", "music/rank_dict_hot100.pickle", Reader.PICKLE_DICT, "rank",
                ListOf(Record((("Date", S), ("Song", S), ("Artist", S)), other=True)), "entries",
                endpoints=("/music/get_billboard_rank_date",),
                holds="per Billboard Hot 100 rank (as a string, '1'..'100'): the song and artist at that rank, by date",
                example="SELECT e.Song, e.Artist FROM {parquet}, UNNEST(entries) AS t(e) "
                        "WHERE rank = '1' AND e.Date = '2024-02-28'"),
    _dict_table("music_billboard_songs", "music/song_dict_hot100.pickle", Reader.PICKLE_DICT, "song",
                Entries("date", ListOf(S), "row"), "charts", endpoints=("/music/get_billboard_attributes",),
                holds="per song on the Hot 100: its chart row (strings) on each chart date; the API reads row[3] as "
                      "the rank and row[4..6] as last week / top position / weeks in chart, in another order when "
                      "row[6] is '-'",
                example="SELECT c.row FROM {parquet}, UNNEST(charts) AS t(c) "
                        "WHERE song = 'Texas Hold ''Em' AND c.date = '2024-02-28'"),
    MockKgTable("music_grammy", ("music/grammy_df.pickle",), Reader.PICKLE_FRAME, (),
                endpoints=("/music/grammy_get_best_artist_by_year", "/music/grammy_get_award_count_by_artist",
                           "/music/grammy_get_award_count_by_song", "/music/grammy_get_best_song_by_year",
                           "/music/grammy_get_award_date_by_artist", "/music/grammy_get_best_album_by_year",
                           "/music/grammy_get_all_awarded_artists"),
                holds="Grammy awards, one row per nomination, with the DataFrame's own columns, then `none_cells`: "
                      "the columns whose cell is None rather than NaN", none_cells=NONE_CELLS,
                example="SELECT nominee FROM {parquet} WHERE category = 'Best New Artist' AND year = 1998"),
    _dict_table("open_entities", ("open/kg.0.jsonl.bz2", "open/kg.1.jsonl.bz2"), Reader.JSONL_PAIRS, "entity",
                Record((("summary_text", T), ("summary_structured", Json()), ("raw_mediawiki", T)), other=True),
                endpoints=("/open/search_entity_by_name", "/open/get_entity"),
                holds="Wikipedia-like entities: lead text, the infobox as a JSON object, the MediaWiki source",
                example="SELECT summary_text, json_extract_string(summary_structured, '$.official_name') "
                        "FROM {parquet} WHERE entity = 'Florida City, Florida'"),
    MockKgTable("sports_soccer_team_matches", ("sports/soccer_team_match_stats.pkl",), Reader.PICKLE_FRAME,
                ("league", "season", "team", "game"), endpoints=("/sports/soccer/get_games_on_date",),
                holds="one row per team per match (the DataFrame's MultiIndex league, season, team, game, then its "
                      "columns); the API skips rows whose league is null",
                example="SELECT * FROM {parquet} WHERE team = 'Everton' AND CAST(date AS DATE) = DATE '2024-03-09'"),
)

NBA_FILE = "sports/nba.sqlite"
NBA_TABLES = (
    "common_player_info", "draft_combine_stats", "draft_history", "game", "game_info", "game_summary",
    "inactive_players", "line_score", "officials", "other_stats", "play_by_play", "player", "team", "team_details",
    "team_history", "team_info_common",
)
"""The tables of nba.sqlite. The server queries `game` and `play_by_play`; the columns of `game` in the notebook's
output are those of the Kaggle "NBA Database" (wyattowalsh/basketball), whose sqlite holds these 16 tables. A table
of the file that is not listed is reported by the build (it has no config); a listed table missing from the file is
an error when its config is built."""
NBA_FACTS = {
    "game": dict(key=("game_id",), endpoints=("/sports/nba/get_games_on_date",),
                 holds="one row per NBA game with both teams' box score",
                 example="SELECT game_id, team_name_home, pts_home, team_name_away, pts_away FROM {parquet} "
                         "WHERE game_date LIKE '2022-10-11%' AND 'Chicago Bulls' IN (team_name_home, team_name_away)"),
    "play_by_play": dict(key=(), endpoints=("/sports/nba/get_play_by_play_data_by_game_ids",),
                         holds="one row per play-by-play event of a game",
                         example="SELECT * FROM {parquet} WHERE game_id IN ('0022200547', '0029600027')"),
}
TABLES += tuple(
    MockKgTable(f"sports_nba_{name}", (NBA_FILE,), Reader.SQLITE_TABLE, sqlite_table=name,
                **{"key": (), "holds": f"the `{name}` table of nba.sqlite, with its own columns",
                   **NBA_FACTS.get(name, {})})
    for name in NBA_TABLES
)
BY_CONFIG = {table.config: table for table in TABLES}
