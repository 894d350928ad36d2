"""BEIR: 18 retrieval datasets (cqadupstack as its 12 forums), each as `corpus`, `queries` and `qrels`."""

from ...core.facts import Benchmark, LazyBuilders, Sample
from .catalogue import DATASETS
from .facts import card_facts, eval_conventions, known_defects, published_counts


def builder_class() -> type:
    """BeirBuilder, imported (with `datasets`) when a builder is first asked for."""
    from .builder import BeirBuilder

    return BeirBuilder


BENCHMARK = Benchmark(
    name="beir",
    builders=LazyBuilders(DATASETS, builder_class),
    card_facts=card_facts,
    published_counts=published_counts,
    eval_conventions=eval_conventions,
    known_defects=known_defects,
    samples=(Sample("beir/nfcorpus", "beir"),),
)
