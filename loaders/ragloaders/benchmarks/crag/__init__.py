"""CRAG (Meta's Comprehensive RAG benchmark): questions with the web pages a search returned for them."""

from ...core.facts import Benchmark, LazyBuilders, Sample
from .catalogue import BUILDER_PARAMETERS, TASKS
from .facts import card_facts, eval_conventions, known_defects, published_counts, releases


def builder_class() -> type:
    """CragBuilder, imported (with `datasets`) when a builder is first asked for."""
    from .builder import CragBuilder

    return CragBuilder


BENCHMARK = Benchmark(
    name="crag",
    builders=LazyBuilders([f"crag/{task}" for task in TASKS], builder_class),
    builder_parameters=BUILDER_PARAMETERS,
    card_facts=card_facts,
    published_counts=published_counts,
    eval_conventions=eval_conventions,
    known_defects=known_defects,
    releases=releases,
    samples=(Sample("crag/task_1_and_2", "crag"),),
)
