"""The open domain: `open_search_entity_by_name`, `open_get_entity` (table `open_entities`).

As the official server: entities are keyed by their exact name (the last row of a name repeated across kg.0 and
kg.1 wins, at the place of its first); a search normalises names, ranks the distinct normalised names with
BM25Okapi (search.OkapiIndex, sorted as the server sorts them) and returns the entities of the top 10, at most 10.
"""

from __future__ import annotations

from typing import Any

from .rows import key_rows, record, row
from .search import OkapiIndex, normalise
from .tables import Tables

KEY = ("entity",)


class OpenDomain:
    def __init__(self, tables: Tables):
        self.table = tables["open_entities"]
        self.rows = key_rows(self.table, "entity")
        by_name: dict[str, list[str]] = {}
        for entity in self.rows:
            by_name.setdefault(normalise(entity), []).append(entity)
        self.names = sorted(by_name)
        self.entities_of = by_name
        self.index = OkapiIndex([name.split() for name in self.names])

    def search_entity_by_name(self, query: str) -> list[str]:
        found: list[str] = []
        for doc in self.index.top(query):
            found += self.entities_of[self.names[doc]]
        return found[:10]

    def get_entity(self, entity: str) -> dict[str, Any] | None:
        index = self.rows.get(entity)
        return None if index is None else record(row(self.table, index), KEY, json_fields=("summary_structured",))
