"""Every benchmark this package serves, each one package that registers one `Benchmark`."""

from __future__ import annotations

from ..core.facts import Benchmark
from .beir import BENCHMARK as BEIR
from .beir_format import BENCHMARK as BEIR_FORMAT
from .crag import BENCHMARK as CRAG
from .crag_mock_kg import BENCHMARK as CRAG_MOCK_KG
from .mmrag import BENCHMARK as MMRAG

BENCHMARKS: tuple[Benchmark, ...] = (BEIR, CRAG, CRAG_MOCK_KG, MMRAG, BEIR_FORMAT)


def benchmark_of(path: str) -> Benchmark:
    """The benchmark that serves `path`, as the registry names it (KeyError if none does)."""
    for benchmark in BENCHMARKS:
        if path in benchmark.builders:
            return benchmark
    raise KeyError(path)
