"""The movie domain: `movie_movies`, `movie_persons` (keyed by normalised name) and `movie_years`.

As the official server: the search ranks the keys themselves, split on whitespace and not normalised (so it is
case-sensitive; the query is normalised), with BM25Okapi, and returns at most 10 records; by-id lookups take the
last record holding that id; `get_year_info` takes years 1990-2021 (Python's `int()` of the text) and looks up the
text as given.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .rows import key_rows, record, row
from .search import OkapiIndex
from .tables import Tables

FIRST_YEAR, LAST_YEAR = 1990, 2021
KEY_ORDER = {
    "movie_movies": {"": ("budget", "genres", "id", "original_language", "original_title", "release_date", "revenue",
                          "title", "rating", "cast", "crew", "oscar_awards"),
                     "cast": ("gender", "id", "name", "character", "order"), "crew": ("name", "job", "id")},
    "movie_persons": {"": ("acted_movies", "directed_movies", "id", "oscar_awards", "birthday", "name")},
    "movie_years": {"": ("movie_list", "oscar_awards")},
}
"""The order of a record's keys in CRAG's movie JSON as its example outputs show them (the table does not keep it);
keys not listed follow in the table's order."""


class _Records:
    """One JSON object of the source (a table keyed by `key`): its records by key, by id, and its search index."""

    def __init__(self, table: pa.Table, key: str, order: dict[str, tuple[str, ...]], *, searchable: bool = True):
        self.table, self.key, self.order = table, key, order
        self.rows = key_rows(table, key)
        self.keys = list(self.rows)
        self.index = OkapiIndex([name.split() for name in self.keys]) if searchable else None
        self.by_id: dict[int, int] = {}
        if "id" in table.column_names:
            identifiers = table.column("id")
            for index in self.rows.values():  # each key's last record, keys in order of first occurrence
                identifier = identifiers[index].as_py()
                if identifier is not None:
                    self.by_id[identifier] = index

    def record(self, index: int) -> dict[str, Any]:
        return record(row(self.table, index), (self.key,), order=self.order)

    def search(self, query: str) -> list[dict[str, Any]]:
        assert self.index is not None
        found = []
        for doc in self.index.top(query):
            key = self.keys[doc]
            # the server looks the record up by the key's words joined by one space (it fails when none is so)
            found.append(self.record(self.rows.get(" ".join(key.split()), self.rows[key])))
        return found

    def get(self, key: Any) -> dict[str, Any] | None:
        index = self.rows.get(key)
        return None if index is None else self.record(index)

    def by_identifier(self, identifier: int) -> dict[str, Any] | None:
        index = self.by_id.get(identifier)
        return None if index is None else self.record(index)


class MovieDomain:
    def __init__(self, tables: Tables):
        self.movies = _Records(tables["movie_movies"], "key", KEY_ORDER["movie_movies"])
        self.persons = _Records(tables["movie_persons"], "key", KEY_ORDER["movie_persons"])
        self.years = _Records(tables["movie_years"], "year", KEY_ORDER["movie_years"], searchable=False)

    def get_person_info(self, person_name: str) -> list[dict[str, Any]]:
        return self.persons.search(person_name)

    def get_movie_info(self, movie_name: str) -> list[dict[str, Any]]:
        return self.movies.search(movie_name)

    def get_year_info(self, year: str) -> dict[str, Any] | None:
        """None for a year outside 1990-2021 or not a number (the official server answers 500 there)."""
        try:
            number = int(year)
        except ValueError:
            return None
        if not FIRST_YEAR <= number <= LAST_YEAR:
            return None
        return self.years.get(str(year))

    def get_movie_info_by_id(self, movie_id: int) -> dict[str, Any] | None:
        return self.movies.by_identifier(movie_id)

    def get_person_info_by_id(self, person_id: int) -> dict[str, Any] | None:
        return self.persons.by_identifier(person_id)
