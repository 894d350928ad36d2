"""mmRAG: queries with graded chunk relevance over text, tables and a knowledge graph, and its chunk corpus."""

from ...core.facts import Benchmark, LazyBuilders, Sample
from .catalogue import PATH
from .facts import card_facts, eval_conventions, published_counts


def builder_class() -> type:
    """MmragBuilder, imported (with `datasets`) when a builder is first asked for."""
    from .builder import MmragBuilder

    return MmragBuilder


BENCHMARK = Benchmark(
    name="mmrag",
    builders=LazyBuilders([PATH], builder_class),
    card_facts=card_facts,
    published_counts=published_counts,
    eval_conventions=eval_conventions,
    samples=(Sample("mmrag", "mmrag"),),
)
