"""Dataset cards: README.md with the YAML that makes a built folder load without code."""

from __future__ import annotations

from typing import TYPE_CHECKING

import datasets
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCardData

if TYPE_CHECKING:
    from .hub import ConfigOutput


def card_data(outputs: list[ConfigOutput]) -> DatasetCardData:
    data = DatasetCardData()
    MetadataConfigs({o.name: {"data_files": o.data_files} for o in outputs}).to_dataset_card_data(data)
    infos = {}
    for output in outputs:
        info = datasets.DatasetInfo(features=output.info.features, config_name=output.name)
        info.splits = datasets.SplitDict()
        for split in output.splits.values():
            info.splits.add(datasets.SplitInfo(split.name, num_bytes=split.num_bytes, num_examples=split.num_examples))
        infos[output.name] = info
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def render_card(path: str, outputs: list[ConfigOutput], *, data_dir: str | None = None) -> str:
    lines = [f"# {path}", "", "Built by ragloaders.", "", "| config | split | rows |", "|---|---|---|"]
    for output in outputs:
        for split in output.splits.values():
            lines.append(f"| {output.name} | {split.name} | {split.num_examples:,} |")
    return f"---\n{card_data(outputs).to_yaml()}\n---\n\n" + "\n".join(lines) + "\n"
