"""The layers of the package, read from its import statements: imports point down only, and there is no cycle.

cli -> mock_api -> publish -> lookup -> eval -> api (load, builder) -> benchmarks -> core. Every import counts, also
one inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ragloaders

PACKAGE = Path(ragloaders.__file__).parent
LAYERS = ("core", "benchmarks", "api", "eval", "lookup", "publish", "mock_api", "entry")
"""Lowest first: a module may import its own layer and the layers before it."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The ragloaders modules `path` imports (absolute names)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t.split(".")[0] == "ragloaders" and t in MODULES)
    found.discard(name)
    return found


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return LAYERS.index("entry")  # ragloaders, ragloaders.cli, ragloaders.__main__


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def test_the_layers_exist():
    assert {"ragloaders.core.errors", "ragloaders.benchmarks.beir", "ragloaders.publish.build"} <= set(MODULES)


def test_imports_point_down_only():
    assert upward_imports(GRAPH) == []


def test_an_upward_import_is_seen():
    graph = {"ragloaders.core.bad": {"ragloaders.publish.build"}}
    assert upward_imports(graph) == ["ragloaders.core.bad imports ragloaders.publish.build"]


def test_no_import_cycle():
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in GRAPH[start]:
            if nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen)):
                return True
        return False

    def is_package_of(a: str, b: str) -> bool:  # a package's __init__ importing its own submodules is no cycle
        return b.startswith(a + ".") or a.startswith(b + ".")

    cycles = sorted(
        f"{module} <-> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if not is_package_of(module, target) and reaches(target, module, set())
    )
    assert cycles == []


def benchmark_package(module: str) -> str | None:
    """`beir` for ragloaders.benchmarks.beir and its modules; None outside a benchmark package."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "benchmarks" else None


def cross_benchmark_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one benchmark package into another: what benchmarks share lives in core (e.g. core/formats)."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if benchmark_package(module) and benchmark_package(target) not in (None, benchmark_package(module))
    )


def test_no_benchmark_imports_another():
    assert cross_benchmark_imports(GRAPH) == []


def test_an_import_between_benchmarks_is_seen():
    graph = {"ragloaders.benchmarks.crag.builder": {"ragloaders.benchmarks.beir.catalogue", "ragloaders.core.readers",
                                                    "ragloaders.benchmarks.crag.catalogue"},
             "ragloaders.benchmarks": {"ragloaders.benchmarks.beir", "ragloaders.benchmarks.mmrag"}}
    assert cross_benchmark_imports(graph) == [
        "ragloaders.benchmarks.crag.builder imports ragloaders.benchmarks.beir.catalogue"]
