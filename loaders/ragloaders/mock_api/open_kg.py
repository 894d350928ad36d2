"""The open domain: `open_search_entity_by_name`, `open_get_entity` (table `open_entities`).

As the official server: entities are keyed by their exact name (the last row of a name repeated across kg.0 and
kg.1 wins); a search normalises names, ranks the distinct normalised names (sorted) with BM25Okapi
(search.OkapiIndex, ordered as the server orders them) and returns the entities of the top 10 (each name's
entities in the files' order), at most 10.
"""

from __future__ import annotations

from typing import Any

from .name_arrays import distinct_in_order, grouped_by_name, normalised, postings_from_joined
from .rows import keyed, record, row
from .search import OkapiIndex, with_okapi_idf
from .tables import Tables

KEY = ("entity",)


class OpenDomain:
    def __init__(self, tables: Tables):
        self.table, self.keys = keyed(tables, "open_entities", "entity")
        self.where = tables.where("open_entities")

        def build() -> dict[str, Any]:
            entities = distinct_in_order(self.table.column("entity"))
            names, grouped = grouped_by_name(entities, normalised(entities))
            return {**with_okapi_idf(postings_from_joined(names)), "entities": grouped}

        arrays = tables.store.get("open_entities.search", build)
        self.entities = arrays["entities"]
        self.index = OkapiIndex(arrays)

    def search_entity_by_name(self, query: str) -> list[str]:
        found: list[str] = []
        for doc in self.index.top(query):
            found += self.entities[doc].as_py()
        return found[:10]

    def get_entity(self, entity: str) -> dict[str, Any] | None:
        index = self.keys.last(entity)
        return None if index is None else record(row(self.table, index), KEY, self.where,
                                                  json_fields=("summary_structured",))
