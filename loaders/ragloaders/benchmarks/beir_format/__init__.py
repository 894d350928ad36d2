"""`beir-format`: any folder (or zip) in BEIR's file layout, the user's own data, built like a catalogued set."""

from ...core.facts import Benchmark, LazyBuilders, Sample
from .facts import PATH, card_facts, eval_conventions, known_defects


def builder_class() -> type:
    """BeirFormatBuilder, imported (with `datasets`) when a builder is first asked for."""
    from .builder import BeirFormatBuilder

    return BeirFormatBuilder


BENCHMARK = Benchmark(
    name=PATH,
    builders=LazyBuilders([PATH], builder_class),
    card_facts=card_facts,
    known_defects=known_defects,
    eval_conventions=eval_conventions,
    samples=(Sample(PATH, "beir/nfcorpus.zip"),),  # BEIR's own zip read as a user's: the zip form, one top folder
)
