"""mmRAG: queries with graded chunk relevance over text, tables and a knowledge graph, and its chunk corpus."""

from ...core.facts import Benchmark, Sample
from .builder import BUILDERS
from .facts import card_facts, eval_conventions, published_counts

BENCHMARK = Benchmark(
    name="mmrag",
    builders=BUILDERS,
    card_facts=card_facts,
    published_counts=published_counts,
    eval_conventions=eval_conventions,
    samples=(Sample("mmrag", "mmrag"),),
)
