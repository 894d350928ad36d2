"""The movie domain: `movie_movies`, `movie_persons` (keyed by normalised name) and `movie_years`.

As the official server: the search ranks the keys themselves, split on whitespace and not normalised (so it is
case-sensitive; the query is normalised), with BM25Okapi, and returns at most 10 records; by-id lookups take the
last record holding that id (the build refuses a key given twice, so every record is one the server sees);
`get_year_info` takes years 1990-2021 (Python's `int()` of the text) and looks up the
text as given.

A record is answered from its `record_json` column, parsed by `json.loads` as the server's `json.load` parsed the
file: the same keys in the same order, the same nulls, the same integers and floats. (The build refuses NaN,
Infinity and out-of-range numbers in these files, so no answer holds one.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .name_arrays import distinct_in_order, last_rows, postings_from_joined, whitespace_joined
from .rows import cell, json_value, keyed
from .search import OkapiIndex, with_okapi_idf
from .tables import Tables

FIRST_YEAR, LAST_YEAR = 1990, 2021
RECORD_JSON = "record_json"


class _Records:
    """One JSON object of the source (a table keyed by `key`): its records by key, by id, and its search."""

    def __init__(self, tables: Tables, config: str, key: str, *, searchable: bool = True):
        self.table, self.keys = keyed(tables, config, key)
        self.where = tables.where(config)
        self.key = key
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
        keys = distinct_in_order(column)
        joined = whitespace_joined(keys)
        as_joined = last_rows(column, keys, joined)
        doc_rows = np.where(as_joined >= 0, as_joined, last_rows(column, keys, keys))
        return {**with_okapi_idf(postings_from_joined(joined)), "doc_rows": doc_rows}

    def record(self, index: int) -> Any:
        """The source's record at row `index`, as `json.load` of the file gave it."""
        return json_value(cell(self.table, RECORD_JSON, index), self.where, RECORD_JSON)

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
        self.movies = _Records(tables, "movie_movies", "key")
        self.persons = _Records(tables, "movie_persons", "key")
        self.years = _Records(tables, "movie_years", "year", searchable=False)

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
