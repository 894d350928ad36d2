"""CRAG's mock knowledge graphs (`mock_api/cragkg/`) as `datasets` tables: `crag/mock_kg`.

One config per table (catalogue), one split, `train`. The mock API server loads these files whole, with
`pickle.load` among others; here they are read without running any code from them and in bounded batches:
shapes (catalogue shapes as Arrow), values (a key's value as row values), sqlite (SqliteDict and nba.sqlite),
files (JSON, JSON lines, pickled dicts, the company CSV), frames (pickled DataFrames), builder.
"""

from ...core.facts import Benchmark, LazyBuilders, Sample
from . import facts


def builder_class() -> type:
    """MockKgBuilder, imported (with `datasets`) when a builder is first asked for."""
    from .builder import MockKgBuilder

    return MockKgBuilder


BENCHMARK = Benchmark(
    name="crag_mock_kg",
    builders=LazyBuilders([facts.PATH], builder_class),
    card_facts=facts.card_facts,
    published_counts=facts.published_counts,
    known_defects=facts.known_defects,
    keys=facts.keys,
    samples=(Sample(facts.PATH, "crag_mock_kg"),),
)
