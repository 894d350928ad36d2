"""`ragloaders build`: a hub-ready folder of Parquet files and a README whose YAML describes them."""

from __future__ import annotations

import logging
import os
import shutil

from huggingface_hub.utils import tqdm

from ..api import builder, configs_of
from .cards import render_card
from .parquet import ConfigOutput, SplitOutput, write_parquet
from .validate import integrity_of, source_of

logger = logging.getLogger(__name__)


def build_folder(
    path: str,
    out: str,
    *,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    num_proc: int | None = None,
    repo_id: str | None = None,
) -> list[ConfigOutput]:
    """Prepare every config of `path` once and write `out/<config>/<split>-*.parquet` plus `out/README.md`.

    The folder is written under `out` + ".incomplete" and moved into place at the end, so an
    interrupted build never leaves a folder that looks complete. `repo_id` goes into the card's
    `load_dataset` lines; the card shows the integrity report of the prepared configs.
    """
    staging = out.rstrip("/") + ".incomplete"
    shutil.rmtree(staging, ignore_errors=True)
    outputs, prepared, builders = [], {}, {}
    for config in tqdm(configs_of(path), desc=f"Building {path}", unit="config"):
        dataset_builder = builder(path, config, data_dir=data_dir, cache_dir=cache_dir)
        dataset_builder.download_and_prepare(num_proc=num_proc)
        builders[config] = dataset_builder
        prepared[config] = dataset_builder.as_dataset()
        # A split with no rows cannot be published (datasets cannot load an empty Parquet split): leave it out.
        prepared[config] = type(prepared[config])({s: d for s, d in prepared[config].items() if d.num_rows})
        if not prepared[config]:  # no rows at all (an empty source table): a config with no split does not load
            logger.warning("%s %s: the source has no rows; the config is left out of %s", path, config, out)
            del prepared[config]
            continue
        output = ConfigOutput(config, dataset_builder.info)
        folder = os.path.join(staging, config)
        os.makedirs(folder, exist_ok=True)
        for split, dataset in prepared[config].items():
            files = write_parquet(dataset, folder, split)
            output.splits[split] = SplitOutput(
                split, dataset.num_rows, dataset.data.nbytes, [os.path.relpath(f, staging) for f in files],
                sum(os.path.getsize(f) for f in files),
            )
        outputs.append(output)
    with open(os.path.join(staging, "README.md"), "w", encoding="utf-8") as f:
        integrity = integrity_of(path, prepared, source=source_of(path, builders, sha256=True))
        f.write(render_card(path, outputs, data_dir=data_dir, integrity=integrity, repo_id=repo_id))
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.replace(staging, out)
    return outputs
