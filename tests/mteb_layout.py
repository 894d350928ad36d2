"""mteb's retrieval-repository contract (mteb 2.x `mteb/abstasks/retrieval_dataset_loaders.py`), written out as
checks, and hand-made repositories in that layout for tests.

mteb decides by config *name* (`get_dataset_config_names`): `corpus`, `queries` (or `query`, which wins when
present), qrels from the config `default` if one exists else `qrels`, optional `top_ranked` and `instruction`.
For each config it takes the requested split if the config has it, else the config's only split, else it fails.
"""

from __future__ import annotations

import os

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

STRING_TYPES = (pa.string(), pa.large_string())
ID_COLUMNS = ("_id", "id")


def split_for(folder: str, config: str, requested: str) -> str:
    """mteb's `_get_split`: the requested split, or the config's only split."""
    splits = datasets.get_dataset_split_names(folder, config_name=config)
    if requested in splits:
        return requested
    assert len(splits) == 1, f"{folder} {config}: no split {requested!r} and not exactly one split ({splits})"
    return splits[0]


def qrels_config(configs: list[str]) -> str | None:
    """mteb's `_load_qrels` choice: `default` if present, else `qrels`, else none."""
    return "default" if "default" in configs else ("qrels" if "qrels" in configs else None)


def _is_string(schema: pa.Schema, column: str) -> bool:
    return column in schema.names and schema.field(column).type in STRING_TYPES


def check_role(role: str, schema: pa.Schema, where: str) -> None:
    """The columns and types mteb reads from a config playing `role`."""
    names = schema.names
    if role in ("corpus", "queries"):
        id_column = next((c for c in ID_COLUMNS if c in names), None)
        assert id_column is not None, f"{where}: no `_id` / `id` column in {names}"
        assert _is_string(schema, id_column), f"{where}: `{id_column}` is {schema.field(id_column).type}, not string"
        assert _is_string(schema, "text"), f"{where}: no string `text` column in {names}"
        if "title" in names:
            assert _is_string(schema, "title"), f"{where}: `title` is not a string"
    elif role == "qrels":
        for column in ("query-id", "corpus-id"):
            assert _is_string(schema, column), f"{where}: `{column}` missing or not a string ({names})"
        assert "score" in names and pa.types.is_integer(schema.field("score").type), f"{where}: integer `score`"
    elif role == "top_ranked":
        assert _is_string(schema, "query-id"), f"{where}: `query-id` missing or not a string"
        assert "corpus-ids" in names, f"{where}: no `corpus-ids` column in {names}"
        kind = schema.field("corpus-ids").type
        assert (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and kind.value_type in STRING_TYPES, (
            f"{where}: `corpus-ids` is {kind}, not a list of strings")
    elif role == "instruction":
        for column in ("query-id", "instruction"):
            assert _is_string(schema, column), f"{where}: `{column}` missing or not a string"


def roles(configs: list[str]) -> dict[str, str]:
    """role -> the config mteb loads for it (only the roles this repository has)."""
    chosen = {"corpus": "corpus" if "corpus" in configs else None,
              "queries": "query" if "query" in configs else ("queries" if "queries" in configs else None),
              "qrels": qrels_config(configs),
              "top_ranked": "top_ranked" if "top_ranked" in configs else None,
              "instruction": "instruction" if "instruction" in configs else None}
    return {role: config for role, config in chosen.items() if config}


def check_contract(folder: str, cache_dir: str) -> dict[str, dict[str, str]]:
    """Assert the contract for every split mteb could be asked for (each split of the qrels, else of the queries);
    returns {requested split: {role: split loaded}}."""
    configs = datasets.get_dataset_config_names(folder)
    chosen = roles(configs)
    assert {"corpus", "queries"} <= chosen.keys(), f"{folder}: configs {configs} lack corpus or queries"
    anchor = chosen.get("qrels") or chosen["queries"]
    loaded: dict[str, dict[str, str]] = {}
    for requested in datasets.get_dataset_split_names(folder, config_name=anchor):
        loaded[requested] = {}
        for role, config in chosen.items():
            split = split_for(folder, config, requested)
            data = datasets.load_dataset(folder, config, split=split, cache_dir=cache_dir)
            check_role(role, data.data.schema, f"{folder} {config}/{split}")
            loaded[requested][role] = split
    return loaded


def write_repository(root: str, tables: dict[str, dict[str, pa.Table]], default: str | None = None) -> str:
    """A hub repository by hand: `<config>/<split>-00000-of-00001.parquet` per table, and a README.md whose
    `configs:` YAML lists them (`default` marks that config `default: true`)."""
    configs = []
    for config, splits in tables.items():
        os.makedirs(os.path.join(root, config), exist_ok=True)
        files = []
        for split, table in splits.items():
            name = f"{config}/{split}-00000-of-00001.parquet"
            pq.write_table(table, os.path.join(root, name))
            files.append({"split": split, "path": name})
        configs.append({"config_name": config, "data_files": files, **({"default": True} if config == default else {})})
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
        f.write("---\n" + yaml.safe_dump({"configs": configs}, sort_keys=False) + "---\n\nHand-made for a test.\n")
    return root


def beir_tables(corpus: list[tuple[str, str]], queries: list[tuple[str, str]],
                qrels: dict[str, list[tuple[str, str, int]]]) -> dict[str, dict[str, pa.Table]]:
    """corpus / queries / qrels tables in BEIR's layout (one `corpus` and `queries` split; qrels per split)."""
    def entities(rows: list[tuple[str, str]], title: bool) -> pa.Table:
        columns = {"_id": [i for i, _ in rows], **({"title": [""] * len(rows)} if title else {}),
                   "text": [t for _, t in rows]}
        return pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()})

    return {
        "corpus": {"corpus": entities(corpus, True)},
        "queries": {"queries": entities(queries, False)},
        "qrels": {split: pa.table({"query-id": pa.array([q for q, _, _ in rows], pa.string()),
                                   "corpus-id": pa.array([d for _, d, _ in rows], pa.string()),
                                   "score": pa.array([s for _, _, s in rows], pa.int32())})
                  for split, rows in qrels.items()},
    }
