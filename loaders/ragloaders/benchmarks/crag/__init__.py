"""CRAG (Meta's Comprehensive RAG benchmark): questions with the web pages a search returned for them."""

from ...core.facts import Benchmark, Sample
from .builder import BUILDERS
from .facts import card_facts, eval_conventions, known_defects, published_counts, releases

BENCHMARK = Benchmark(
    name="crag",
    builders=BUILDERS,
    card_facts=card_facts,
    published_counts=published_counts,
    eval_conventions=eval_conventions,
    known_defects=known_defects,
    releases=releases,
    samples=(Sample("crag/task_1_and_2", "crag"),),
)
