"""`ragloaders build`: a hub-ready folder of Parquet files and a README whose YAML describes them."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from functools import partial
from typing import Any

import datasets
import pyarrow as pa
from datasets.table import InMemoryTable
from huggingface_hub.utils import tqdm

from ..api import builder, check_num_proc, configs_of
from ..benchmarks import benchmark_of
from ..core.batch_spool import SpooledSplit
from ..core.deep_folders import make_folders
from ..core.errors import UsageError
from ..core.facts import Benchmark
from ..core.memory import release_freed_memory
from ..core.preview import did_you_mean, preview
from .build_cache import BuildCache, build_cache, inputs_of, release_prepared
from .cached_split import CachedSplit
from .cards import CardOptions, check_options, render_card
from .output_folder import Altered, OutputFolder
from .parquet import ConfigOutput, ParquetPlan, SplitOutput, plan_parquet, plan_spooled, write_parquet
from .validate import integrity_of, source_of
from .validate_report import describe
from .write_behind import WriteBehind

logger = logging.getLogger(__name__)


def chosen_configs(path: str, configs: list[str] | None) -> list[str]:
    """The configs of `path` a build writes, in their declared order: `configs` (`build --configs A,B`), or every
    one when None; an unknown name (or none at all) is a one-line ValueError naming the valid ones."""
    declared = configs_of(path)
    if configs is None:
        return declared
    unknown = [name for name in configs if name not in declared]
    if unknown or not configs:
        named = f"unknown config(s) {', '.join(unknown)}" if unknown else "no config named"
        raise UsageError(f"--configs: {named}{did_you_mean(unknown[0], declared) if unknown else ''}; the configs of "
                         f"{path} are {', '.join(declared)}")
    return [name for name in declared if name in configs]


def build_identity(path: str, data_dir: str | None, cache_dir: str | None, repo_id: str | None,
                   card: CardOptions | None = None, config_kwargs: dict[str, Any] | None = None,
                   derived: list[str] | None = None, configs: list[str] | None = None) -> dict:
    """What a built folder was built from (kept in its manifest): the builders' cache hashes cover the code, the
    config parameters (`config_kwargs`, e.g. CRAG's release) and the source files; what the builder stated on the
    card (`card`), if anything; the configs made from the data beside them (`derived`: `--with`), if any. `configs`:
    only those are built (`--configs`; default all)."""
    with contextlib.ExitStack() as scratch:  # (a builder takes a lock file in its cache: never datasets' default)
        where = cache_dir if cache_dir is not None else scratch.enter_context(
            tempfile.TemporaryDirectory(prefix="ragloaders-identity-"))
        hashes = {config: builder(path, config, data_dir=data_dir, cache_dir=where, **(config_kwargs or {})).hash
                  for config in chosen_configs(path, configs)}
    stated_on_card = (card or CardOptions()).given()
    return {"path": path, "repo_id": repo_id, "builders": hashes,
            **({"card": stated_on_card} if stated_on_card else {}),
            **({"with": sorted(derived)} if derived else {})}


def build_folder(path: str, out: str, *, data_dir: str | None = None, cache_dir: str | None = None,
                 into_existing: bool = False, altered: Altered = "refuse", option: str = "--out",
                 card: CardOptions | None = None, **options: Any) -> list[ConfigOutput]:
    """Build `path` into the folder `out` (see `write_folder` for what it holds and `options`).

    ragloaders replaces only what it wrote (output_folder.py has the rules): the build is written into its own
    hidden sibling folder under a lock on `out`, then swapped into place in one step, so a kill leaves the old
    complete folder or the new one. An existing `out` that ragloaders did not write is refused unless
    `into_existing`; its entries that are not ragloaders' are kept either way. `altered` says what happens to
    files ragloaders wrote that were changed since: "refuse" the build, or "set_aside" into a kept folder.
    `option` names the folder in errors (`--out`, `--staging-dir`). `card`: what the builder of their own data
    (beir-format) states on its card (default: nothing stated). `configs` (in `options`): only those are built.

    Without `cache_dir`, the configs are prepared in a private folder inside the work folder (build_cache.py) into
    a compressed batch spool in place of datasets' Arrow cache (core/batch_spool.py), each spool file deleted as
    soon as its rows are in the Parquet, and the folder removed before the swap: the build's disk stays about the
    size of its output, and it leaves no Arrow cache behind. With `cache_dir`, they are prepared there and kept
    (`load` with that cache_dir reads them again).
    """
    card = card or CardOptions()
    check_num_proc(options.get("num_proc"))
    chosen_configs(path, options.get("configs"))  # an unknown path or config is refused before the folder is touched
    benchmark = benchmark_of(path)
    check_options(benchmark, path, card)
    with OutputFolder(out, data_dir=data_dir, cache_dir=cache_dir, into_existing=into_existing, altered=altered,
                      option=option) as folder:
        with build_cache(folder.work, cache_dir) as cache:
            identity = build_identity(path, data_dir, cache.cache_dir, options.get("repo_id"), card,
                                      options.get("config_kwargs"), list(options.get("extra_tables") or {}),
                                      options.get("configs"))
            outputs = write_folder(benchmark, path, folder.work, data_dir=data_dir, card=card, cache=cache,
                                   **options)
        folder.commit(identity)
    return outputs


def write_folder(
    benchmark: Benchmark,
    path: str,
    staging: str,
    *,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    num_proc: int | None = None,
    repo_id: str | None = None,
    extra_tables: dict[str, dict[str, pa.Table]] | None = None,
    extra_notes: dict[str, str] | None = None,
    card: CardOptions | None = None,
    config_kwargs: dict[str, Any] | None = None,
    load_as: str | None = None,
    configs: list[str] | None = None,
    cache: BuildCache | None = None,
) -> list[ConfigOutput]:
    """Prepare every config of `path` (of `benchmark`) once and write `staging/<config>/<split>-*.parquet` plus
    `staging/README.md` (into a new folder: `build_folder` swaps it into place). `repo_id` goes into the card's
    `load_dataset` lines; the card shows the integrity report of the prepared configs. `extra_tables`
    ({config: {split: table}}, e.g. BM25's `top_ranked`) are written beside the built configs, and
    `extra_notes` ({config: how it was made}) go into the card, and so do `card`, what the builder of their own data
    states (beir-format). `config_kwargs` are the builders' config parameters (CRAG's `release`); `load_as` is what
    the card's load lines name when there is no `repo_id` (the folder). `configs`: only those configs are prepared
    and written (default: all), and the card says which. `cache`: where to prepare (build_cache; it overrides
    `cache_dir`); in a private one, each config is prepared into a batch spool that goes as its Parquet is written,
    and a config whose pass can make later configs' rows writes them into their spools as it goes (`write_ahead`).
    A config's Parquet is written on a thread of its own while the next configs are prepared, and those prepared
    meanwhile are written beside it (write_behind.py); a config that reads one not yet written waits for it.
    """
    cache = cache or BuildCache(cache_dir, private=False)
    outputs, prepared, files = [], {}, {}
    chosen = chosen_configs(path, configs)
    builders = {config: builder(path, config, data_dir=data_dir, cache_dir=cache.cache_dir, **(config_kwargs or {}))
                for config in chosen}
    if cache.private:
        for config, dataset_builder in builders.items():
            dataset_builder.spool_into(os.path.join(cache.cache_dir, "spool", config))
        for done, config in enumerate(chosen, start=1):
            if hasattr(builders[config], "write_ahead"):
                builders[config].write_ahead({later: builders[later] for later in chosen[done:]})
    behind: WriteBehind[tuple[ConfigOutput, dict[str, CachedSplit]] | None] = WriteBehind()

    written_here: list[tuple[str, tuple[ConfigOutput, dict[str, CachedSplit]] | None]] = []
    """Configs written by this thread while the thread's write ran: their bookkeeping comes after that one's."""

    def written() -> None:
        """The bookkeeping of the config being written on the thread, once it is done, then of those written here
        beside it."""
        if (finished := behind.finish()) is not None:
            record(*finished)
        for config, output in written_here:
            record(config, output)
        written_here.clear()

    def record(config: str, output: tuple[ConfigOutput, dict[str, CachedSplit]] | None) -> None:
        """The bookkeeping of a config once written (in the order of `chosen`)."""
        if output is not None:
            files[config] = {split: [os.path.join(staging, name) for name in split_output.files]
                             for split, split_output in output[0].splits.items()}
        release_prepared(builders, chosen, chosen.index(config) + 1, files, cache)
        if output is None:  # no rows at all (an empty source table): a config with no split does not load
            logger.warning("%s %s: the source has no rows; the config is left out of the folder", path, config)
            return
        outputs.append(output[0])
        prepared[config] = output[1]

    try:
        for config in tqdm(chosen, desc=f"Building {path}", unit="config"):
            dataset_builder = builders[config]
            unrecorded = {behind.config, *(name for name, _ in written_here)}
            if unrecorded & set(inputs_of(dataset_builder)) and not written_ahead(dataset_builder):
                written()  # it reads a config written but not yet handed over (release_prepared): once it is
            dataset_builder.download_and_prepare(num_proc=num_proc)
            plans = planned_splits(dataset_builder)
            if behind.running:  # an earlier config is still being written: this one is written here, beside it
                written_here.append((config, write_config(dataset_builder, plans, staging)))
            else:
                written()
                behind.start(config, partial(write_config, dataset_builder, plans, staging))
        written()
    except BaseException:
        behind.abandon()
        raise
    if not outputs:  # (every config left out: its source has no rows) a folder of nothing is no build
        which = (f"none of the configs built ({', '.join(chosen)}) has a row" if len(chosen) > 1 else
                 f"the config built ({chosen[0]}) has no row")
        raise UsageError(f"{path}: {which} in its source: nothing to publish")
    for config, tables in (extra_tables or {}).items():
        if config in prepared:
            raise UsageError(f"{path} already has a config {preview(config)}")
        outputs.append(write_table_config(staging, config, tables))
    with open(os.path.join(staging, "README.md"), "w", encoding="utf-8") as f:
        source = source_of(benchmark, path, builders, sha256=True)
        if configs is not None:  # a partial build: the configs not asked for are neither built nor compared
            source["published"] = {key: count for key, count in source["published"].items()
                                   if key.split("|", 1)[0] in chosen}
        integrity = integrity_of(benchmark, path, prepared, source=source)
        report_findings(path, integrity)
        f.write(render_card(benchmark, path, outputs, data_dir=data_dir, integrity=integrity, repo_id=repo_id,
                            derived=extra_notes, options=card, load_as=load_as,
                            built=None if configs is None else chosen))
    return outputs


def written_ahead(dataset_builder: datasets.DatasetBuilder) -> bool:
    """Whether an earlier config's pass wrote every row of this config already (RagBuilder.rows_written_ahead): its
    preparation reads none of its `prepared_inputs`."""
    ahead = getattr(dataset_builder, "rows_written_ahead", None)
    return ahead is not None and ahead()


def report_findings(path: str, integrity: dict) -> None:
    """Log each finding of a build's integrity report (the card lists them too) as `ragloaders validate` rates it:
    a declared upstream property or defect is a warning, anything else a structural error (validate exits 1)."""
    for found in integrity["warnings"]:
        logger.warning("%s %s [known upstream defect: %s]", path, describe(found), found["note"])
    for found in integrity["errors"]:
        logger.warning("%s: structural error %s (`ragloaders validate` exits 1 on it)", path,
                       describe(found))


def write_config(dataset_builder: datasets.DatasetBuilder, plans: dict[str, ParquetPlan], staging: str,
                 stop: threading.Event | None = None) -> tuple[ConfigOutput, dict[str, CachedSplit]] | None:
    """Write the splits of a prepared config that have rows (`plans`: `planned_splits`) as
    `staging/<config>/<split>-*.parquet`; return what was written and those splits for the integrity report, or
    None when no split has rows. `stop`: see write_parquet.

    The datasets were only planned from (parquet.plan_parquet) and let go before any row is written: every page
    their memory maps read (record batch headers, string offsets) counts in RSS while a map is open. The rows are
    then read from the Arrow cache files with plain reads for the Parquet, and from the Parquet written for the
    integrity report (CachedSplit.written_as), so the Arrow cache may go once the config is written. A config
    prepared into a batch spool (`spool_into`) is planned from the spool, whose files go as the Parquet is written."""
    config = dataset_builder.config.name
    kept = {split: plan.rows if isinstance(plan.rows, CachedSplit) else None for split, plan in plans.items()}
    if not plans:
        return None
    output = ConfigOutput(config, dataset_builder.info)
    folder = os.path.join(staging, config)
    make_folders(folder)
    for split, plan in plans.items():
        files = write_parquet(plan, folder, split, stop)
        if isinstance(plan.rows, SpooledSplit):
            plan.rows.discard()  # what the writer did not read: nothing, as it reads every row
        if kept[split] is None:
            kept[split] = CachedSplit.of_parquet(files, plan.schema, plan.num_rows)
        else:
            kept[split].written_as(files)
        output.splits[split] = SplitOutput(
            split, plan.num_rows, plan.nbytes, [os.path.relpath(f, staging) for f in files],
            sum(os.path.getsize(f) for f in files),
        )
        release_freed_memory()  # the Parquet writer's buffers, before the next split
    return output, kept


def planned_splits(dataset_builder: datasets.DatasetBuilder) -> dict[str, ParquetPlan]:
    """The ParquetPlan of each split with rows of a prepared config (a split with no rows cannot be published:
    datasets cannot load an empty Parquet split), from its batch spool when it was prepared into one, else from its
    datasets (let go before returning: that closes their memory maps)."""
    spool = getattr(dataset_builder, "batch_spool", None)
    if spool is None:
        splits = {split: dataset for split, dataset in dataset_builder.as_dataset().items() if dataset.num_rows}
        return {split: plan_parquet(dataset, CachedSplit(dataset)) for split, dataset in splits.items()}
    schema = dataset_builder.info.features.arrow_schema
    plans = {}
    for split, info in dataset_builder.info.splits.items():
        spooled = SpooledSplit(spool, split, schema)
        if info.num_examples:
            plans[split] = plan_spooled(spooled, schema, info.num_examples)
        else:
            spooled.discard()
    return plans


def write_table_config(staging: str, config: str, tables: dict[str, pa.Table]) -> ConfigOutput:
    """A config made outside the builders ({split: Arrow table}) written as `staging/<config>/<split>-*.parquet`."""
    splits = {split: datasets.Dataset(InMemoryTable(table)) for split, table in tables.items() if table.num_rows}
    if not splits:
        raise UsageError(f"{config}: no rows in any split")
    output = ConfigOutput(config, datasets.DatasetInfo(features=next(iter(splits.values())).features))
    folder = os.path.join(staging, config)
    make_folders(folder)
    for split, dataset in splits.items():
        files = write_parquet(dataset, folder, split)
        output.splits[split] = SplitOutput(split, dataset.num_rows, dataset.data.nbytes,
                                           [os.path.relpath(f, staging) for f in files],
                                           sum(os.path.getsize(f) for f in files))
    return output
