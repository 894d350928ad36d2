"""`beir-format`: any folder (or zip) in BEIR's file layout, the user's own data, built like a catalogued set."""

from ...core.facts import Benchmark, Sample
from .builder import BeirFormatBuilder
from .facts import PATH, card_facts, eval_conventions, known_defects

BENCHMARK = Benchmark(
    name=PATH,
    builders={PATH: BeirFormatBuilder},
    card_facts=card_facts,
    known_defects=known_defects,
    eval_conventions=eval_conventions,
    samples=(Sample(PATH, "beir/nfcorpus.zip"),),  # BEIR's own zip read as a user's: the zip form, one top folder
)
