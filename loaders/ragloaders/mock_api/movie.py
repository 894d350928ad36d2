"""The movie domain: `movie_movies`, `movie_persons` (keyed by normalised name) and `movie_years`.

As the official server: the search ranks the keys themselves, split on whitespace and not normalised (so it is
case-sensitive; the query is normalised), with BM25Okapi, and returns at most 10 records; by-id lookups take the
last record holding that id (of records under a repeated key, the server sees only the key's last; here any
record); `get_year_info` takes years 1990-2021 (Python's `int()` of the text) and looks up the
text as given.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .rows import keyed, record, row
from .search import OkapiIndex, okapi_arrays
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
    """One JSON object of the source (a table keyed by `key`): its records by key, by id, and its search."""

    def __init__(self, tables: Tables, config: str, key: str, order: dict[str, tuple[str, ...]], *,
                 searchable: bool = True):
        self.table, self.keys = keyed(tables, config, key)
        self.key, self.order = key, order
        self.ids = keyed(tables, config, "id")[1] if "id" in self.table.column_names else None
        self.index = None
        if searchable:
            arrays = tables.store.get(f"{config}.search", lambda: self._search_arrays(self.table.column(key)))
            self.doc_rows = arrays["doc_rows"]
            self.index = OkapiIndex(arrays)

    def _search_arrays(self, column: pa.ChunkedArray) -> dict[str, Any]:
        """One document per distinct key (the server's order: the JSON object's), split on whitespace as it is;
        each document's record: the one under the key's words joined by one space (as the server looks it up),
        else the key's own (where the server fails)."""
        last = {key: index for index, key in enumerate(column.to_pylist()) if key is not None}
        keys = list(last)
        doc_rows = [last.get(" ".join(key.split()), last[key]) for key in keys]
        return {**okapi_arrays([key.split() for key in keys]), "doc_rows": np.asarray(doc_rows, dtype=np.int64)}

    def record(self, index: int) -> dict[str, Any]:
        return record(row(self.table, index), (self.key,), order=self.order)

    def search(self, query: str) -> list[dict[str, Any]]:
        assert self.index is not None
        return [self.record(int(self.doc_rows[doc])) for doc in self.index.top(query)]

    def get(self, key: Any) -> dict[str, Any] | None:
        index = self.keys.last(key)
        return None if index is None else self.record(index)

    def by_identifier(self, identifier: int) -> dict[str, Any] | None:
        index = None if self.ids is None else self.ids.last(identifier)
        return None if index is None else self.record(index)


class MovieDomain:
    def __init__(self, tables: Tables):
        self.movies = _Records(tables, "movie_movies", "key", KEY_ORDER["movie_movies"])
        self.persons = _Records(tables, "movie_persons", "key", KEY_ORDER["movie_persons"])
        self.years = _Records(tables, "movie_years", "year", KEY_ORDER["movie_years"], searchable=False)

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
