"""BEIR's builder: BEIR's layout (core/formats/beir.py) with the catalogue's facts about each path."""

from __future__ import annotations

from ...core.formats.beir import BeirLayout, BeirLayoutBuilder
from .catalogue import DATASETS
from .facts import card_facts


class BeirBuilder(BeirLayoutBuilder):
    CARD_FACTS = staticmethod(card_facts)

    def layout_of(self, path: str, data_dir: str | None) -> BeirLayout:
        return DATASETS[path].layout
