"""The music domain: artists, songs, works, Billboard Hot 100 and Grammy tables (`music_*`).

As the official server: name searches normalise names, rank the distinct normalised names with the idf > 4 BM25
(search.CutoffIndex) and return the names of the top 10, at most 10; lookups are exact; a missing or empty
country, birth date, author or release date is null; `get_members` is `list(set(members))`, whose order follows
Python's string hash seed (PYTHONHASHSEED), as the official server's does; Grammy counts match the name as a
substring of `str(value)` of every `nominee`, `artist` and `workers` cell, as the server does: a missing value is
"None" where the frame held None and "nan" where it held NaN (`none_cells` says which), so a search for "e" or
"nan" counts them as there.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from .name_arrays import distinct_in_order, grouped_by_name, normalised, postings_from_joined
from .rows import cell, keyed
from .search import CutoffIndex, with_cutoff_idf
from .tables import Tables, looks_like_json

FIRST_GRAMMY_YEAR, LAST_GRAMMY_YEAR = 1957, 2019
MISSING = "nan"
"""`str()` of a missing value that was NaN (pandas' missing value in an object column)."""
NONE = "None"
"""`str()` of a missing value that was Python's None (the build lists those cells in `none_cells`)."""
NONE_CELLS = "none_cells"


class _Names:
    """A search over the keys of one table: distinct normalised names, sorted, each with its keys."""

    def __init__(self, tables: Tables, config: str, column: pa.ChunkedArray):
        def build() -> dict[str, Any]:
            keys = distinct_in_order(column)
            names, grouped = grouped_by_name(keys, normalised(keys))
            return {**with_cutoff_idf(postings_from_joined(names)), "keys": grouped}

        arrays = tables.store.get(f"{config}.search", build)
        self.keys = arrays["keys"]
        self.index = CutoffIndex(arrays)

    def search(self, query: str) -> list[str]:
        found: list[str] = []
        for doc in self.index.top(query):
            found += self.keys[doc].as_py()
        return found[:10]


def _grammy_column(table: Any, name: str) -> list:
    values = table.column(name)
    items = values.to_pylist()
    if looks_like_json(values):
        return [None if item is None else json.loads(item) for item in items]
    return items


class MusicDomain:
    def __init__(self, tables: Tables):
        self.artists, self.artist_rows = keyed(tables, "music_artists", "artist")
        self.songs, self.song_rows = keyed(tables, "music_songs", "song")
        self.artist_names = _Names(tables, "music_artists", self.artists.column("artist"))
        self.song_names = _Names(tables, "music_songs", self.songs.column("song"))
        self.works, self.work_rows = keyed(tables, "music_artist_works", "artist")
        self.ranks, self.rank_rows = keyed(tables, "music_billboard_ranks", "rank")
        self.charts, self.chart_rows = keyed(tables, "music_billboard_songs", "song")
        grammy = tables["music_grammy"]
        self.grammy = {name: _grammy_column(grammy, name) for name in ("year", "category", "nominee", "artist",
                                                                          "workers")}
        nones = grammy.column(NONE_CELLS).to_pylist()
        self.grammy_text = {name: [(NONE if name in nones[row] else MISSING) if value is None else str(value)
                                   for row, value in enumerate(self.grammy[name])]
                            for name in ("nominee", "artist", "workers")}

    def search_artist_entity_by_name(self, query: str) -> list[str]:
        return self.artist_names.search(query)

    def search_song_entity_by_name(self, query: str) -> list[str]:
        return self.song_names.search(query)

    def get_billboard_rank_date(self, rank: int, date: str | None = None) -> list:
        index = self.rank_rows.last(str(rank))
        if index is None:
            return [None, None]
        entries = cell(self.ranks, "entries", index) or []
        if date:
            for entry in entries:
                if entry["Date"] == date:
                    return [[entry["Song"]], [entry["Artist"]]]
            return [[], []]
        return [[entry["Song"] for entry in entries], [entry["Artist"] for entry in entries]]

    def get_billboard_attributes(self, date: str, attribute: str, song_name: str) -> str | None:
        index = self.chart_rows.last(song_name)
        if index is None:
            return None
        for entry in cell(self.charts, "charts", index) or []:
            if entry["date"] == date:
                row = entry["row"]
                if len(row) < 7:
                    return None  # the official server fails (IndexError) on a row this short
                # the columns after the rank come in another order when there was no rank last week ('-')
                order = {"rank_last_week": 6, "weeks_in_chart": 5, "top_position": 4} if row[6] == "-" else \
                    {"rank_last_week": 4, "weeks_in_chart": 6, "top_position": 5}
                return row[order.get(attribute, 3)]
        return None

    def _by_year(self, year: int, category: str) -> list | None:
        if year < FIRST_GRAMMY_YEAR or year > LAST_GRAMMY_YEAR:
            return None
        return [nominee for kind, when, nominee in zip(self.grammy["category"], self.grammy["year"],
                                                       self.grammy["nominee"]) if kind == category and when == year]

    def grammy_get_best_artist_by_year(self, year: int) -> list | None:
        return self._by_year(year, "Best New Artist")

    def grammy_get_best_song_by_year(self, year: int) -> list | None:
        return self._by_year(year, "Song Of The Year")

    def grammy_get_best_album_by_year(self, year: int) -> list | None:
        return self._by_year(year, "Album Of The Year")

    def _rows_naming(self, artist_name: str) -> list[int]:
        """Rows whose nominee, artist or workers text holds the name: per column, in row order."""
        return [index for column in ("nominee", "artist", "workers")
                for index, text in enumerate(self.grammy_text[column]) if artist_name in text]

    def grammy_get_award_count_by_artist(self, artist_name: str) -> int:
        return len(self._rows_naming(artist_name))

    def grammy_get_award_count_by_song(self, song_name: str) -> int:
        return sum(1 for nominee in self.grammy["nominee"] if nominee == song_name)

    def grammy_get_award_date_by_artist(self, artist_name: str) -> list[int]:
        # the same set operations as the official server, so the years come out in the same order
        years = [self.grammy["year"][index] for index in list(set(self._rows_naming(artist_name)))]
        return [int(year) for year in list(set(years))]

    def grammy_get_all_awarded_artists(self) -> list:
        nominees = [nominee for kind, nominee in zip(self.grammy["category"], self.grammy["nominee"])
                    if kind == "Best New Artist" and nominee is not None]
        return list(dict.fromkeys(nominees))

    def _artist_field(self, artist_name: str, field: str) -> Any:
        index = self.artist_rows.last(artist_name)
        return None if index is None else cell(self.artists, field, index)

    def get_artist_birth_place(self, artist_name: str) -> str | None:
        return self._artist_field(artist_name, "country") or None

    def get_artist_birth_date(self, artist_name: str) -> str | None:
        return self._artist_field(artist_name, "birth_date") or None

    def get_members(self, band_name: str) -> list[str] | None:
        """`list(set(members))` of the members the build stored, as the official server's `list(set(...))` of the
        source's: a list in the source is stored in its order, a set sorted (ragloaders unpickles a set into a set of
        its own process, so the file's order is gone, and sorting makes every build of one file write the same row).

        Python iterates a set of strings in an order fixed by the strings' hashes (PYTHONHASHSEED) and, where two
        collide, by the order they were added. So for a list in the source ours is the server's order when both run
        with the same PYTHONHASHSEED; for a set the server added the items in the pickle's order, which the build
        does not have, and where two hashes collide the orders can differ. No fixed order could do better: the
        server's own order changes from one process to the next unless PYTHONHASHSEED is set. Sort the list if
        the order matters; None when the band is not in the table."""
        members = self._artist_field(band_name, "members")
        return None if members is None else list(set(members))

    def get_lifespan(self, artist_name: str) -> list:
        index = self.artist_rows.last(artist_name)
        if index is None:
            return [None, None]
        return [cell(self.artists, "birth_date", index), cell(self.artists, "end_date", index)]

    def _song_field(self, song_name: str, field: str) -> Any:
        index = self.song_rows.last(song_name)
        return None if index is None else cell(self.songs, field, index) or None

    def get_song_author(self, song_name: str) -> str | None:
        return self._song_field(song_name, "author")

    def get_song_release_country(self, song_name: str) -> str | None:
        return self._song_field(song_name, "country")

    def get_song_release_date(self, song_name: str) -> str | None:
        return self._song_field(song_name, "date")

    def get_artist_all_works(self, artist_name: str) -> list[str] | None:
        index = self.work_rows.last(artist_name)
        return None if index is None else cell(self.works, "works", index)
