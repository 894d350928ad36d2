"""The sports domain: soccer matches (`sports_soccer_team_matches`) and NBA games and plays (`sports_nba_game`,
`sports_nba_play_by_play`).

As the official server, whose answers are pandas' `to_json(date_format='iso')` of the rows found (columns, then
rows; floats to 10 significant digits; soccer rows keyed by their (league, season, team, game) tuple written as
text, NBA rows by 0, 1, ...), which pandas writes here too:

- soccer: rows with a league; the team (optional) matched exactly; the date `YYYY-MM-DD`, `YYYY-MM` or `YYYY`
  compared with the match date written so; another number of `-`-separated parts, no rows, or an unknown team:
  null.
- NBA games: the rows of table `game` whose `game_date`, as SQLite's strftime reads it, written `YYYY-MM-DD`,
  `YYYY-MM` or `YYYY` (by the number of parts of the date given) equals the date, and (optionally) whose home or
  away team is the team, in table order; a date of 4 parts or more matches every game; no rows: null.
- NBA plays: the rows of `play_by_play` whose `game_id` is one of those given (found by binary search over the
  column's sorted order, kept in the cache), in table order, each once; none: null.

The official server pastes the date, team and game ids into SQL: a `'` in any of them breaks the query and it
answers null (or, in a crafted value, runs other SQL). Here a `'` in any of them answers null, and nothing is run.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .rows import keyed, take_rows
from .tables import Tables, looks_like_json

SOCCER_INDEX = ["league", "season", "team", "game"]
DATE_FORMS = {3: "%Y-%m-%d", 2: "%Y-%m", 1: "%Y"}
"""Number of `-`-separated parts of the date asked for -> how the game's date is written to compare with it."""


def _decoded(tables: Tables, config: str, table: pa.Table) -> dict[str, bool]:
    """Which columns hold JSON text (decided once, kept in the store: it reads every value)."""
    found = tables.store.get(f"{config}.json_columns", lambda: {
        "columns": [name for name in table.column_names if looks_like_json(table.column(name))]})["columns"]
    return {name: name in found for name in table.column_names}


def _python_rows(table: pa.Table, json_columns: dict[str, bool]) -> list[tuple]:
    columns = []
    for name in table.column_names:
        values = table.column(name).to_pylist()
        if json_columns.get(name):
            values = [None if value is None else json.loads(value) for value in values]
        columns.append(values)
    return list(zip(*columns))


def _as_read_sql(table: pa.Table, json_columns: dict[str, bool]) -> Any:
    """The rows as `pandas.read_sql` gives them from SQLite (same value conversion), as the server's JSON."""
    if table.num_rows == 0:
        return None
    names = table.column_names
    connection = sqlite3.connect(":memory:")
    try:
        quoted = ", ".join('"' + name.replace('"', '""') + '"' for name in names)
        connection.execute(f"CREATE TABLE found ({quoted})")
        connection.executemany(f"INSERT INTO found VALUES ({', '.join('?' * len(names))})",
                               _python_rows(table, json_columns))
        frame = pd.read_sql("SELECT * FROM found", connection)
    finally:
        connection.close()
    return json.loads(frame.to_json(date_format="iso"))


class SportsDomain:
    def __init__(self, tables: Tables):
        soccer = tables["sports_soccer_team_matches"]
        json_columns = _decoded(tables, "sports_soccer_team_matches", soccer)
        soccer = soccer.filter(pc.is_valid(soccer.column("league")))
        frame = soccer.to_pandas()
        for name, is_json in json_columns.items():
            if is_json:
                frame[name] = pd.Series([None if v is None else json.loads(v) for v in frame[name]], dtype=object,
                                        index=frame.index)
        self.soccer = frame.set_index(SOCCER_INDEX)
        self.soccer_dates = {parts: self.soccer["date"].dt.strftime(form) for parts, form in DATE_FORMS.items()}
        self.games = tables["sports_nba_game"]
        self.game_json = _decoded(tables, "sports_nba_game", self.games)
        self.game_dates = self._game_dates(self.games.column("game_date"))
        self.plays = tables["sports_nba_play_by_play"]
        self.play_json = _decoded(tables, "sports_nba_play_by_play", self.plays)
        self.play_games = keyed(tables, "sports_nba_play_by_play", "game_id")[1]

    @staticmethod
    def _game_dates(dates: pa.ChunkedArray) -> dict[int, pa.Array]:
        """Each game's date written as SQLite's strftime writes it, for each form (null where it cannot read it)."""
        distinct = pc.unique(dates).to_pylist()
        connection = sqlite3.connect(":memory:")
        try:
            written = {form: {value: connection.execute("SELECT strftime(?, ?)", (form, value)).fetchone()[0]
                              for value in distinct}
                       for form in DATE_FORMS.values()}
        finally:
            connection.close()
        values = dates.to_pylist()
        return {parts: pa.array([written[form][value] for value in values], type=pa.string())
                for parts, form in DATE_FORMS.items()}

    def soccer_get_games_on_date(self, date: str, team_name: str | None = None) -> Any:
        parts = len(date.split("-"))
        if parts not in DATE_FORMS or not _has_utf8(date, team_name):
            return None
        mask = (self.soccer_dates[parts] == date).to_numpy(dtype=bool, na_value=False)
        if team_name is not None:
            mask = mask & np.asarray(self.soccer.index.get_level_values("team") == team_name, dtype=bool)
        found = self.soccer[mask]
        return json.loads(found.to_json(date_format="iso")) if len(found) else None

    def nba_get_games_on_date(self, date: str, team_name: str | None = None) -> Any:
        if "'" in date or (team_name is not None and "'" in team_name) or not _has_utf8(date, team_name):
            return None
        parts = len(date.split("-"))
        mask = pc.equal(self.game_dates[parts], date) if parts in DATE_FORMS else \
            pa.array(np.ones(self.games.num_rows, dtype=bool))
        if team_name is not None:
            mask = pc.and_(mask, pc.or_(pc.equal(self.games.column("team_name_home"), team_name),
                                        pc.equal(self.games.column("team_name_away"), team_name)))
        return _as_read_sql(self.games.filter(mask), self.game_json)

    def nba_get_play_by_play_data_by_game_ids(self, game_ids: list[str]) -> Any:
        if any("'" in game_id for game_id in game_ids):
            return None
        # each id once: the rows of an id given 10,000 times were gathered 10,000 times (SQL's `IN` matches once)
        found = [self.play_games.rows(game_id) for game_id in dict.fromkeys(game_ids)]
        rows = np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)  # table order, once each
        return _as_read_sql(take_rows(self.plays, rows), self.play_json)


def _has_utf8(*texts: str | None) -> bool:
    """Whether each text (None aside) has a UTF-8 form. One with a lone surrogate (JSON's "\\ud800") equals no row:
    the official server answers null, where Arrow, which holds UTF-8 only, cannot compare it at all."""
    try:
        for text in texts:
            if text is not None:
                text.encode()
    except UnicodeEncodeError:
        return False
    return True
