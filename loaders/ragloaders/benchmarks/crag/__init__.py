"""CRAG (Meta's Comprehensive RAG benchmark): questions with the web pages a search returned for them."""

from ...core.facts import Benchmark
from .builder import BUILDERS
from .facts import card_facts, known_defects, published_counts

BENCHMARK = Benchmark(
    name="crag",
    builders=BUILDERS,
    card_facts=card_facts,
    published_counts=published_counts,
    known_defects=known_defects,
)
