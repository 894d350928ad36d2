"""BEIR: 18 retrieval datasets (cqadupstack as its 12 forums), each as `corpus`, `queries` and `qrels`."""

from ...core.facts import Benchmark, Sample
from .builder import BeirBuilder
from .catalogue import DATASETS
from .facts import card_facts, eval_conventions, known_defects, published_counts

BENCHMARK = Benchmark(
    name="beir",
    builders={path: BeirBuilder for path in DATASETS},
    card_facts=card_facts,
    published_counts=published_counts,
    eval_conventions=eval_conventions,
    known_defects=known_defects,
    samples=(Sample("beir/nfcorpus", "beir"),),
)
