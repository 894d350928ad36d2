"""CRAG (Meta's Comprehensive RAG benchmark): questions with the web pages a search returned for them."""

from ...core.facts import Benchmark, Sample
from . import mock_kg_facts
from .builder import BUILDERS
from .facts import card_facts, eval_conventions, known_defects, published_counts, releases
from .mock_kg import MockKgBuilder
from .mock_kg_facts import with_mock_kg

BENCHMARK = Benchmark(
    name="crag",
    builders={**BUILDERS, mock_kg_facts.PATH: MockKgBuilder},
    card_facts=with_mock_kg(mock_kg_facts.card_facts, card_facts),
    published_counts=with_mock_kg(mock_kg_facts.published_counts, published_counts),
    eval_conventions=eval_conventions,
    known_defects=with_mock_kg(mock_kg_facts.known_defects, known_defects),
    keys=mock_kg_facts.keys,
    releases=releases,
    samples=(Sample("crag/task_1_and_2", "crag"),),
)
